//! fastrace 0.7 (feature `enable`), reporting to a reporter that counts and
//! discards span records.
//!
//! fastrace records only under a local parent span, and a local parent keeps
//! at most 10 240 records (more are silently dropped), so the loop opens a
//! new root span every [`BATCH`] events; the root's cost is amortised over
//! the batch and is part of the measurement. Arguments are properties, which
//! fastrace stores as strings.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fastrace::collector::{Config, Reporter, SpanContext, SpanRecord};
use fastrace::local::LocalSpan;
use fastrace::{Event, Span};

use crate::harness::{Scenario, Tracer};

/// Events recorded under one root span (below fastrace's 10 240 cap).
pub const BATCH: u64 = 8_192;

/// The fastrace adapter.
#[derive(Debug)]
pub struct Fastrace {
    reported: Arc<AtomicU64>,
}

struct CountingReporter(Arc<AtomicU64>);

impl Reporter for CountingReporter {
    fn report(&mut self, spans: Vec<SpanRecord>) {
        let events: usize = spans.iter().map(|s| 1 + s.events.len()).sum();
        self.0.fetch_add(events as u64, Ordering::Relaxed);
    }
}

impl Fastrace {
    /// Installs the global reporter (once per process).
    pub fn new() -> Fastrace {
        let reported = Arc::new(AtomicU64::new(0));
        fastrace::set_reporter(CountingReporter(reported.clone()), Config::default());
        Fastrace { reported }
    }

    /// Span and event records reported so far (after [`Tracer::after_run`]).
    pub fn reported(&self) -> u64 {
        self.reported.load(Ordering::Relaxed)
    }
}

impl Default for Fastrace {
    fn default() -> Self {
        Fastrace::new()
    }
}

#[fastrace::trace]
#[inline(never)]
fn traced_fn() {
    black_box(());
}

#[inline(never)]
fn guarded_fn() {
    let _span = LocalSpan::enter_with_local_parent("guard");
    black_box(());
}

fn batch(scenario: Scenario, n: u64) {
    match scenario {
        Scenario::Instant => (0..n).for_each(|_| LocalSpan::add_event(Event::new("instant"))),
        Scenario::InstantArg => (0..n).for_each(|i| {
            let v = black_box(i);
            LocalSpan::add_event(Event::new("instant").with_property(|| ("value", v.to_string())))
        }),
        Scenario::Counter => (0..n).for_each(|i| {
            let v = black_box(i as i64);
            LocalSpan::add_event(Event::new("counter").with_property(|| ("series", v.to_string())))
        }),
        Scenario::DurationAttr => (0..n).for_each(|_| traced_fn()),
        Scenario::DurationGuard => (0..n).for_each(|_| guarded_fn()),
        Scenario::Disabled => (0..n).for_each(|_| LocalSpan::add_event(Event::new("off"))),
    }
}

impl Tracer for Fastrace {
    fn name(&self) -> &'static str {
        "fastrace"
    }

    fn supports(&self, _scenario: Scenario) -> bool {
        true
    }

    fn run(&self, scenario: Scenario, events: u64) {
        if scenario == Scenario::Disabled {
            // No local parent: every call site is a no-op.
            return batch(scenario, events);
        }
        let mut left = events;
        while left > 0 {
            let n = left.min(BATCH);
            let root = Span::root("batch", SpanContext::random());
            let _parent = root.set_local_parent();
            batch(scenario, n);
            left -= n;
        }
    }

    fn after_run(&self) {
        fastrace::flush();
    }
}
