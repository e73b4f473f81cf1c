//! Timestamps.
//!
//! On x86-64 with an invariant TSC (CPUID leaf `0x8000_0007`, EDX bit 8)
//! timestamps are raw `rdtsc` values; the ticks per second are calibrated
//! against the monotonic clock by taking a `(tsc, Instant)` pair when the
//! session starts and another when it is collected, so nothing stalls the
//! first event (the initialization record is written at collection time
//! anyway). A session shorter than [`MIN_CALIBRATION`] waits out the rest at
//! collection. Streaming mode writes the initialization record first, so it
//! calibrates for [`STREAM_CALIBRATION`] when the session starts.
//!
//! Elsewhere, when the TSC is not invariant, or when
//! [`crate::ClockSource::Monotonic`] / `FXT_CLOCK=monotonic` is chosen,
//! timestamps are nanoseconds of the monotonic clock since the first use of
//! fxt in the process (1 tick = 1 ns).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Shortest start-to-collection interval used to calibrate the TSC.
pub const MIN_CALIBRATION: Duration = Duration::from_millis(5);
/// Calibration time at the start of a streaming session.
pub const STREAM_CALIBRATION: Duration = Duration::from_millis(2);

/// Whether the live session's clock is the TSC. Read by [`now`]; written
/// when a session starts (Relaxed: a stale value for an event racing with
/// `start` only affects an event of the wrong session, which is dropped).
static USE_TSC: AtomicBool = AtomicBool::new(false);

#[cfg(not(target_os = "linux"))]
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds of the monotonic clock. On Linux, `CLOCK_MONOTONIC_RAW`
/// since boot: one clock for every process of the machine (and the clock
/// `perf_event_open` can stamp samples with), so `fxt record` puts traces
/// of processes that use it on one time base as they are. Elsewhere, since
/// the process first used fxt.
#[inline]
pub fn monotonic_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call;
        // CLOCK_MONOTONIC_RAW exists on every Linux fxt runs on (2.6.28+),
        // so the call cannot fail and `ts` is always written.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        epoch().elapsed().as_nanos() as u64
    }
}

/// The TSC. Only meaningful when [`tsc_usable`] said so.
#[inline(always)]
pub fn tsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86-64 processor and has no
        // preconditions; it reads a counter and writes nothing.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// Reads the clock of the kind given (`true` = TSC).
#[inline(always)]
pub fn read(use_tsc: bool) -> u64 {
    if use_tsc {
        tsc()
    } else {
        monotonic_ns()
    }
}

/// Ticks of the live session's clock (the last started session's, when none
/// is live).
#[inline]
pub fn now() -> u64 {
    read(USE_TSC.load(Ordering::Relaxed))
}

pub(crate) fn set_use_tsc(on: bool) {
    USE_TSC.store(on, Ordering::Relaxed);
    START_STEP.store(
        if on { tsc_ticks_per_ns_ceil() } else { 1 },
        Ordering::Relaxed,
    );
    NS_PER_TICK.store(
        if on {
            ns_per_tick_fixed(estimated_tsc_hz())
        } else {
            ONE_NS
        },
        Ordering::Relaxed,
    );
}

/// Nanoseconds in `ticks` of the live session's clock: exact on the
/// monotonic clock (a tick is a nanosecond), through the process's quick
/// measurement of the TSC's rate otherwise (within a few tenths of a
/// percent: the session's calibration, which comes at collection, is not
/// known yet when a record needs the figure).
///
/// A multiplication by a fixed-point factor set when the session starts:
/// no division and no lazy initialisation on the paths that call it per
/// event (a task's poll).
#[inline]
pub fn ticks_to_ns(ticks: u64) -> u64 {
    // Relaxed: see `USE_TSC`; the factor is the one of the same start.
    scale(ticks, NS_PER_TICK.load(Ordering::Relaxed))
}

/// Whether `ticks` of the live session's clock are at least `ns`
/// nanoseconds: `ticks_to_ns(ticks) >= ns`, compared in fixed point (no
/// rounding, no saturation to check: a multiplication and a compare).
#[inline]
pub fn ticks_at_least_ns(ticks: u64, ns: u64) -> bool {
    // Relaxed: see `ticks_to_ns`.
    at_least(ticks, NS_PER_TICK.load(Ordering::Relaxed), ns)
}

/// `scale(ticks, factor) >= ns`: `floor(t * f / 2^32) >= ns` exactly when
/// `t * f >= ns * 2^32` (`ns` an integer), and both products fit 128
/// bits (a saturated `scale` is `u64::MAX`, at least any `ns`, as the
/// product then is).
#[inline(always)]
fn at_least(ticks: u64, factor: u64, ns: u64) -> bool {
    u128::from(ticks) * u128::from(factor) >= u128::from(ns) << NS_PER_TICK_SHIFT
}

/// `ticks` times the fixed-point `factor` (saturating).
#[inline(always)]
fn scale(ticks: u64, factor: u64) -> u64 {
    let ns = (u128::from(ticks) * u128::from(factor)) >> NS_PER_TICK_SHIFT;
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Fraction bits of [`NS_PER_TICK`].
const NS_PER_TICK_SHIFT: u32 = 32;

/// [`NS_PER_TICK`] of the monotonic clock: one tick is one nanosecond.
const ONE_NS: u64 = 1 << NS_PER_TICK_SHIFT;

/// Nanoseconds per tick of the live session's clock, in fixed point with
/// [`NS_PER_TICK_SHIFT`] fraction bits (exact for the monotonic clock).
static NS_PER_TICK: AtomicU64 = AtomicU64::new(ONE_NS);

/// The fixed-point nanoseconds per tick of a clock of `hz` ticks per
/// second (a rate under 1 Hz or not a number counts as 1 GHz).
fn ns_per_tick_fixed(hz: f64) -> u64 {
    if hz.is_nan() || hz < 1.0 {
        return ONE_NS;
    }
    (1e9 / hz * ONE_NS as f64) as u64
}

/// Ticks in one nanosecond of the live session's clock, rounded up (see
/// [`start_step`]).
static START_STEP: AtomicU64 = AtomicU64::new(1);

/// The least distance, in ticks, between two duration starts on one
/// thread that puts them on distinct nanoseconds for a reader converting
/// ticks to nanoseconds by truncation (Perfetto: `ticks * 1e9 /
/// ticks_per_second`, rounded down): at least one nanosecond's worth.
#[inline(always)]
pub fn start_step() -> u64 {
    START_STEP.load(Ordering::Relaxed)
}

/// TSC ticks per nanosecond, rounded up, with a 2 % margin over a quick
/// measurement (50 µs, once per process): an upper bound of the rate the
/// session's calibration will find.
fn tsc_ticks_per_ns_ceil() -> u64 {
    ((estimated_tsc_hz() / 1e9 * 1.02).ceil() as u64).clamp(1, 64)
}

/// The TSC's rate, measured once per process over 50 µs (within a few
/// tenths of a percent; the session's calibration refines it).
fn estimated_tsc_hz() -> f64 {
    static HZ: OnceLock<f64> = OnceLock::new();
    *HZ.get_or_init(|| {
        let (t0, i0) = (tsc(), Instant::now());
        while i0.elapsed() < Duration::from_micros(50) {
            std::hint::spin_loop();
        }
        let (t1, ns) = (tsc(), i0.elapsed().as_nanos() as f64);
        t1.wrapping_sub(t0) as f64 / ns.max(1.0) * 1e9
    })
}

/// Whether this processor has an invariant TSC (x86-64 only).
pub fn tsc_usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(detect_invariant_tsc)
}

#[cfg(target_arch = "x86_64")]
#[allow(unused_unsafe)]
fn detect_invariant_tsc() -> bool {
    use core::arch::x86_64::__cpuid;
    // SAFETY: `cpuid` exists on every x86-64 processor; leaf 0x8000_0000
    // reports the highest extended leaf, so we only query 0x8000_0007 when
    // it exists.
    let max_ext = unsafe { __cpuid(0x8000_0000) }.eax;
    if max_ext < 0x8000_0007 {
        return false;
    }
    // SAFETY: as above; the leaf exists.
    let edx = unsafe { __cpuid(0x8000_0007) }.edx;
    edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_invariant_tsc() -> bool {
    false
}

/// A session's clock: which counter, and the calibration start point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) use_tsc: bool,
    start_tsc: u64,
    start: Instant,
    /// Set when calibrated up front (streaming).
    fixed_ticks_per_second: Option<u64>,
}

impl Clock {
    /// Starts a session clock; `calibrate_now` measures the TSC rate at once
    /// (for ~2 ms) instead of at collection.
    pub(crate) fn start(want_tsc: bool, calibrate_now: bool) -> Clock {
        let use_tsc = want_tsc && tsc_usable();
        let mut c = Clock {
            use_tsc,
            start_tsc: if use_tsc { tsc() } else { 0 },
            start: Instant::now(),
            fixed_ticks_per_second: None,
        };
        if !use_tsc {
            c.fixed_ticks_per_second = Some(1_000_000_000);
        } else if calibrate_now {
            while c.start.elapsed() < STREAM_CALIBRATION {
                std::hint::spin_loop();
            }
            c.fixed_ticks_per_second = Some(c.measure());
        }
        c
    }

    /// Ticks per second known now, without waiting: the calibrated value
    /// if there is one, else the quick estimate (for a crash-safe file's
    /// initialization record, corrected later; see `crate::session`).
    pub(crate) fn provisional_ticks_per_second(&self) -> u64 {
        self.fixed_ticks_per_second
            .unwrap_or_else(|| estimated_tsc_hz().round() as u64)
    }

    fn measure(&self) -> u64 {
        let (t, i) = (tsc(), Instant::now());
        let secs = i.duration_since(self.start).as_secs_f64();
        let ticks = t.wrapping_sub(self.start_tsc) as f64;
        if secs <= 0.0 || ticks <= 0.0 {
            return 1_000_000_000;
        }
        (ticks / secs).round() as u64
    }

    /// Ticks per second, for the initialization record. Waits until
    /// [`MIN_CALIBRATION`] has passed since the start, if needed.
    pub(crate) fn ticks_per_second(&self) -> u64 {
        if let Some(t) = self.fixed_ticks_per_second {
            return t;
        }
        let elapsed = self.start.elapsed();
        if elapsed < MIN_CALIBRATION {
            std::thread::sleep(MIN_CALIBRATION - elapsed);
        }
        self.measure()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_point_factor_converts_as_the_division_does() {
        for hz in [1e9, 2.1e9, 2_995_200_123.0, 3.6e9, 1e6] {
            let factor = ns_per_tick_fixed(hz);
            for ticks in [0u64, 1, 7, 3_000, 2_995_200_123, 1 << 40, u64::MAX >> 8] {
                let exact = (ticks as f64 * 1e9 / hz).min(u64::MAX as f64);
                let got = scale(ticks, factor) as f64;
                // Off by at most one part in 2^30 of the value, plus the
                // truncation's nanosecond.
                assert!(
                    (exact - got).abs() <= exact / (1u64 << 30) as f64 + 1.0,
                    "{hz} Hz, {ticks} ticks: {got} ns, not {exact}"
                );
            }
        }
    }

    #[test]
    fn the_monotonic_clock_converts_exactly() {
        for ticks in [0, 1, 999, u64::MAX] {
            assert_eq!(scale(ticks, ONE_NS), ticks);
        }
        assert_eq!(ns_per_tick_fixed(f64::NAN), ONE_NS);
        assert_eq!(ns_per_tick_fixed(0.0), ONE_NS);
    }

    /// The long-poll check in fixed point says what converting and
    /// comparing says, at the edges (exactly at the threshold, one off,
    /// saturated conversions).
    #[test]
    fn at_least_compares_as_the_conversion_does() {
        let factors = [
            ONE_NS,
            ns_per_tick_fixed(2.1e9),
            ns_per_tick_fixed(1e6),
            1,
            u64::MAX,
        ];
        let ticks = [0u64, 1, 7, 21_000_000, 2_995_200_123, 1 << 40, u64::MAX];
        for factor in factors {
            for t in ticks {
                let ns = scale(t, factor);
                let near = [ns.saturating_sub(1), ns, ns.saturating_add(1)];
                for n in near.into_iter().chain([0, 1, 10_000_000, u64::MAX]) {
                    assert_eq!(
                        at_least(t, factor, n),
                        ns >= n,
                        "{t} ticks at {factor:#x}: {ns} ns against {n}"
                    );
                }
            }
        }
    }
}
