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
    /// Record `out.len()` events of `scenario` on the calling thread, each
    /// timed on its own with [`time_each`] (ticks into `out`). Returns
    /// `false` when the tracer has no such loop (the latency table skips
    /// it).
    fn run_timed(&self, _scenario: Scenario, _out: &mut [u64]) -> bool {
        false
    }
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

/// Runs `scenario` on `threads` threads, each recording `events_per_thread`
/// events after a warm-up, each event timed on its own; returns every
/// event's time in ticks of [`ticks`] (all threads), or
/// `None` when the tracer does not time single events.
///
/// The per-thread arrays are written before timing, so the measurement
/// itself takes no page fault.
pub fn measure_latency(
    tracer: &dyn Tracer,
    scenario: Scenario,
    threads: usize,
    events_per_thread: u64,
) -> Option<Vec<u64>> {
    let threads = threads.max(1);
    tracer.prepare(scenario);
    let barrier = Barrier::new(threads);
    let per_thread: Vec<Option<Vec<u64>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut out = vec![1u64; events_per_thread as usize];
                    let mut warm = vec![1u64; WARMUP_EVENTS as usize];
                    tracer.thread_init(index);
                    let supported = tracer.run_timed(scenario, &mut warm);
                    barrier.wait();
                    (supported && tracer.run_timed(scenario, &mut out)).then_some(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect()
    });
    tracer.after_run();
    per_thread
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .map(|v| v.concat())
}

/// The clock read of single-event timing: `lfence; rdtsc` on x86-64 (so
/// the read waits for the instructions before it), [`ticks`]
/// elsewhere.
#[inline(always)]
pub fn fenced_ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence (SSE2) and rdtsc are available on every x86-64 CPU.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        ticks()
    }
}

/// Calls `event(i)` for each `i` in `0..out.len()` and stores the ticks
/// each call took in `out[i]`. Inlined into each tracer's loop, so the
/// timed call site is the same as in [`Tracer::run`].
#[inline(always)]
pub fn time_each(out: &mut [u64], mut event: impl FnMut(u64)) {
    for (i, slot) in out.iter_mut().enumerate() {
        let start = fenced_ticks();
        event(i as u64);
        *slot = fenced_ticks().wrapping_sub(start);
    }
}

/// Ticks of [`fenced_ticks`] per nanosecond, measured over `window`.
pub fn ticks_per_ns(window: Duration) -> f64 {
    let (t0, i0) = (fenced_ticks(), Instant::now());
    std::thread::sleep(window);
    let (t1, i1) = (fenced_ticks(), Instant::now());
    (t1 - t0) as f64 / (i1 - i0).as_nanos().max(1) as f64
}

/// The `q` quantile (0..=1) of sorted values (nearest rank).
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    assert!(!sorted.is_empty(), "quantile of nothing");
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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

/// Reads the cycle counter (`rdtsc`), or a monotonic nanosecond clock where
/// there is none.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc is available on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
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
    fn quantiles_by_nearest_rank() {
        let v: Vec<u64> = (1..=10_000).collect();
        assert_eq!(quantile(&v, 0.5), 5_000);
        assert_eq!(quantile(&v, 0.99), 9_900);
        assert_eq!(quantile(&v, 0.9999), 9_999);
        assert_eq!(quantile(&v, 1.0), 10_000);
        assert_eq!(quantile(&[7], 0.0), 7);
    }

    #[test]
    fn time_each_times_every_call() {
        let mut out = [0u64; 5];
        let mut calls = Vec::new();
        time_each(&mut out, |i| calls.push(i));
        assert_eq!(calls, [0, 1, 2, 3, 4]);
        assert!(out.iter().all(|&t| t < 1 << 40), "{out:?}");
    }

    #[test]
    fn scenario_ids_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(s.id().parse::<Scenario>().unwrap(), s);
        }
    }
}
