//! The common harness: scenarios, the [`Tracer`] trait every adapter
//! implements, and the multi-threaded wall-clock measurement shared by the
//! `bench-table` binary and the criterion benches.

use std::fmt;
use std::str::FromStr;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// What one benchmarked event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// An instant event without arguments.
    Instant,
    /// An instant event with one `u64` argument.
    InstantArg,
    /// A counter event with one `i64` value.
    Counter,
    /// A call of an empty `#[inline(never)]` function traced by the tracer's
    /// function attribute (a duration: two clock reads, one record).
    DurationAttr,
    /// The same function traced by a scope guard (`trace_duration!`).
    DurationGuard,
    /// A call site whose tracing is off (no session, scopes off, level
    /// filtered out...). The baseline for it is an empty loop body.
    Disabled,
}

impl Scenario {
    /// Every scenario, in table order.
    pub const ALL: [Scenario; 6] = [
        Scenario::Instant,
        Scenario::InstantArg,
        Scenario::Counter,
        Scenario::DurationAttr,
        Scenario::DurationGuard,
        Scenario::Disabled,
    ];

    /// The short name used on command lines and in benchmark ids.
    pub const fn id(self) -> &'static str {
        match self {
            Scenario::Instant => "instant",
            Scenario::InstantArg => "instant-arg",
            Scenario::Counter => "counter",
            Scenario::DurationAttr => "duration-attr",
            Scenario::DurationGuard => "duration-guard",
            Scenario::Disabled => "disabled",
        }
    }

    /// A human description for the table.
    pub const fn describe(self) -> &'static str {
        match self {
            Scenario::Instant => "instant",
            Scenario::InstantArg => "instant + u64 arg",
            Scenario::Counter => "counter (1 i64)",
            Scenario::DurationAttr => "duration, attribute",
            Scenario::DurationGuard => "duration, guard macro",
            Scenario::Disabled => "disabled call site",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.id() == s)
            .ok_or_else(|| format!("unknown scenario {s:?}"))
    }
}

/// One tracer (or floor) under test.
///
/// Global set-up (starting a session, installing a subscriber) happens when
/// the adapter is constructed; the methods here are what every worker thread
/// runs. `run` owns the loop so that the measured call site is monomorphic
/// and inlined into it, exactly as in user code.
pub trait Tracer: Sync {
    /// The column name in the table.
    fn name(&self) -> &'static str;
    /// Whether this tracer has an equivalent of the scenario.
    fn supports(&self, scenario: Scenario) -> bool;
    /// Untimed preparation on the main thread before each measurement
    /// (turning a global switch on or off for the scenario).
    fn prepare(&self, _scenario: Scenario) {}
    /// Per-thread preparation before timing (thread index `0..threads`).
    fn thread_init(&self, _index: usize) {}
    /// Record `events` events of `scenario` on the calling thread.
    fn run(&self, scenario: Scenario, events: u64);
    /// Untimed work after each measurement on the main thread (flushing a
    /// frame, draining a queue) that keeps the tracer's memory bounded.
    fn after_run(&self) {}
    /// Untimed end of the process's measurements: collects the trace and
    /// returns a note for the table (records dropped...) or an empty string.
    fn finish(&self) -> String {
        String::new()
    }
}

/// Events each thread records, untimed, before the barrier (warms thread
/// locals, the first chunk, interning and lazy registration).
pub const WARMUP_EVENTS: u64 = 1_000;

/// Runs `scenario` on `threads` threads, each recording `events_per_thread`
/// events after a warm-up, and returns the wall time from the first thread's
/// start to the last thread's end.
///
/// Aggregate nanoseconds per event is `wall / (threads * events_per_thread)`.
pub fn measure(
    tracer: &dyn Tracer,
    scenario: Scenario,
    threads: usize,
    events_per_thread: u64,
) -> Duration {
    let threads = threads.max(1);
    tracer.prepare(scenario);
    let barrier = Barrier::new(threads);
    let spans: Vec<(Instant, Instant)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let barrier = &barrier;
                scope.spawn(move || {
                    tracer.thread_init(index);
                    tracer.run(scenario, WARMUP_EVENTS);
                    barrier.wait();
                    let start = Instant::now();
                    tracer.run(scenario, events_per_thread);
                    (start, Instant::now())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect()
    });
    tracer.after_run();
    let first = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("one thread at least");
    let last = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("one thread at least");
    last - first
}

/// Aggregate nanoseconds per event of a measurement.
pub fn ns_per_event(wall: Duration, threads: usize, events_per_thread: u64) -> f64 {
    wall.as_nanos() as f64 / (threads.max(1) as f64 * events_per_thread as f64)
}

/// The median of a non-empty list (mean of the middle two for even lengths).
pub fn median(values: &mut [f64]) -> f64 {
    assert!(!values.is_empty(), "median of nothing");
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Helper for criterion's `iter_custom`: splits `iters` events over
/// `threads` threads and returns the wall time scaled to exactly `iters`
/// events, so criterion reports aggregate time per event.
pub fn criterion_iter(
    tracer: &dyn Tracer,
    scenario: Scenario,
    threads: usize,
    iters: u64,
) -> Duration {
    let per_thread = iters.div_ceil(threads as u64).max(1);
    let wall = measure(tracer, scenario, threads, per_thread);
    let done = per_thread * threads as u64;
    Duration::from_nanos((wall.as_nanos() * iters as u128 / done as u128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn scenario_ids_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(s.id().parse::<Scenario>().unwrap(), s);
        }
    }
}
