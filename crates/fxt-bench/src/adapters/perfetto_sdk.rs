//! The official Perfetto SDK, `perfetto-sdk` 1.2 (Google's Rust bindings,
//! the C++ SDK vendored), in process: see [`crate::perfetto`] for the
//! backend and buffer sizes.
//!
//! Every measurement has a fresh tracing session: [`Tracer::prepare`]
//! starts one and [`Tracer::after_run`] stops it, reads its trace back and
//! counts the `TrackEvent`s in it against the events the threads recorded
//! (warm-up included); a shortfall is the cell's note.
//!
//! Instants are `track_event_instant!` (the argument a `u64` debug
//! argument), counters `track_event_counter!` on a registered counter
//! track, durations `scoped_track_event!` (a begin and an end event; the
//! SDK has no function attribute, so the attribute row opens the scope as
//! the function's first statement). Disabled is a category the session does
//! not enable.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use perfetto_sdk::track_event::TrackEventTrack;
use perfetto_sdk::track_event::{EventContext, TrackEventCounter, TrackEventDebugArg};
use perfetto_sdk::{
    scoped_track_event, track_event_categories, track_event_counter, track_event_instant,
};

use crate::harness::{Scenario, Tracer};
use crate::perfetto::{count_track_events, init, Capture, TrackEventCounts};

track_event_categories! {
    pub mod perfetto_te_ns {
        ("bench", "fxt-bench events", []),
        ("off", "never enabled", []),
    }
}

/// The category of every enabled benchmark call site.
const CATEGORY: &str = "bench";

thread_local! {
    /// The live session. Sessions are started and stopped by the untimed
    /// steps of the harness, all on the main thread; the SDK's session
    /// handle is not `Send`.
    static CAPTURE: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// The Perfetto SDK adapter.
#[derive(Debug, Default)]
pub struct PerfettoSdk {
    /// Events recorded in the live session (begin and end counted apart).
    expected: [AtomicU64; 4],
    /// Events missing from the traces read back so far, and their total.
    missing: AtomicU64,
    recorded: AtomicU64,
}

/// Indices of [`PerfettoSdk::expected`].
const BEGIN: usize = 0;
const END: usize = 1;
const INSTANT: usize = 2;
const COUNTER: usize = 3;

impl PerfettoSdk {
    /// Initializes the in-process producer and registers the categories
    /// (once per process).
    pub fn new() -> PerfettoSdk {
        init(|| perfetto_te_ns::register().expect("register the categories"));
        PerfettoSdk::default()
    }

    fn expect(&self, kind: usize, events: u64) {
        self.expected[kind].fetch_add(events, Ordering::Relaxed);
    }

    /// Stops the live session, if any, and checks its trace.
    fn collect(&self) {
        let Some(capture) = CAPTURE.with(|c| c.borrow_mut().take()) else {
            return;
        };
        let trace = capture.finish();
        let expected = TrackEventCounts {
            begin: self.expected[BEGIN].swap(0, Ordering::Relaxed),
            end: self.expected[END].swap(0, Ordering::Relaxed),
            instant: self.expected[INSTANT].swap(0, Ordering::Relaxed),
            counter: self.expected[COUNTER].swap(0, Ordering::Relaxed),
            other: 0,
        };
        let total = expected.begin + expected.end + expected.instant + expected.counter;
        let got = count_track_events(&trace).unwrap_or_else(|e| panic!("perfetto-sdk: {e}"));
        let lost = |want: u64, have: u64| want.saturating_sub(have);
        let missing = lost(expected.begin, got.begin)
            + lost(expected.end, got.end)
            + lost(expected.instant, got.instant)
            + lost(expected.counter, got.counter);
        assert!(
            got.begin <= expected.begin
                && got.end <= expected.end
                && got.instant <= expected.instant
                && got.counter <= expected.counter
                && got.other == 0,
            "perfetto-sdk: more events than recorded: {got:?}, expected {expected:?}"
        );
        self.missing.fetch_add(missing, Ordering::Relaxed);
        self.recorded.fetch_add(total, Ordering::Relaxed);
    }
}

#[inline(never)]
fn traced_fn() {
    scoped_track_event!("bench", "traced_fn");
    black_box(());
}

#[inline(never)]
fn guarded_fn() {
    scoped_track_event!("bench", "guard");
    black_box(());
}

impl Tracer for PerfettoSdk {
    fn name(&self) -> &'static str {
        "perfetto-sdk"
    }

    fn supports(&self, _scenario: Scenario) -> bool {
        true
    }

    fn prepare(&self, _scenario: Scenario) {
        self.collect();
        let capture = Capture::start(CATEGORY);
        CAPTURE.with(|c| *c.borrow_mut() = Some(capture));
    }

    fn run(&self, scenario: Scenario, events: u64) {
        match scenario {
            Scenario::Instant => {
                self.expect(INSTANT, events);
                (0..events).for_each(|_| track_event_instant!("bench", "instant"));
            }
            Scenario::InstantArg => {
                self.expect(INSTANT, events);
                (0..events).for_each(|i| {
                    let v = black_box(i);
                    track_event_instant!("bench", "instant", |ctx: &mut EventContext| {
                        ctx.add_debug_arg("value", TrackEventDebugArg::Uint64(v));
                    });
                });
            }
            Scenario::Counter => {
                self.expect(COUNTER, events);
                // Registered per call (not per event): the track is not
                // `Sync`, and the registration is amortised over the batch.
                let track = TrackEventTrack::register_counter_track(
                    "series",
                    TrackEventTrack::process_track_uuid(),
                )
                .expect("register a counter track");
                (0..events).for_each(|i| {
                    let v = black_box(i as i64);
                    track_event_counter!("bench", |ctx: &mut EventContext| {
                        ctx.set_track(&track);
                        ctx.set_counter(TrackEventCounter::Int64(v));
                    });
                });
            }
            Scenario::DurationAttr | Scenario::DurationGuard => {
                self.expect(BEGIN, events);
                self.expect(END, events);
                if scenario == Scenario::DurationAttr {
                    (0..events).for_each(|_| traced_fn());
                } else {
                    (0..events).for_each(|_| guarded_fn());
                }
            }
            Scenario::Disabled => {
                (0..events).for_each(|_| track_event_instant!("off", "off"));
            }
        }
    }

    fn after_run(&self) {
        self.collect();
    }

    fn finish(&self) -> String {
        self.collect();
        let missing = self.missing.load(Ordering::Relaxed);
        if missing > 0 {
            format!(
                "{missing} of {} events missing from the trace",
                self.recorded.load(Ordering::Relaxed)
            )
        } else {
            String::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::measure;

    /// Every event of every scenario is in the trace the session returns
    /// (read by the SDK's own protobuf decoder), on several threads.
    #[test]
    fn every_event_is_in_the_returned_trace() {
        let sdk = PerfettoSdk::new();
        for scenario in Scenario::ALL {
            measure(&sdk, scenario, 2, 5_000);
        }
        assert_eq!(sdk.finish(), "");
        assert_eq!(sdk.missing.load(Ordering::Relaxed), 0);
        // 2 threads x (5 000 + the warm-up): 6 scenarios, durations count
        // twice, disabled not at all.
        let per = 2 * (5_000 + crate::harness::WARMUP_EVENTS);
        assert_eq!(sdk.recorded.load(Ordering::Relaxed), per * 7);
    }
}
