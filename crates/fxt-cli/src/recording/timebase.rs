//! One time base for an archive of several processes: nanoseconds of
//! `CLOCK_MONOTONIC_RAW` since boot.
//!
//! A process traced with the TSC writes raw TSC values and its own
//! calibration of their rate; one that uses the monotonic clock writes
//! `CLOCK_MONOTONIC_RAW` nanoseconds with 10^9 ticks per second (see
//! `fxt_runtime`'s clock). Several calibrations are not one time base, so
//! the recorder measures the TSC against `CLOCK_MONOTONIC_RAW` itself, at
//! the start and at the end of the recording (two [`Anchor`]s, each the
//! best of several tight reads), and maps every TSC value through the line
//! between them: the invariant TSC is one counter for every core and
//! process, so this puts every process on the raw clock's nanoseconds to
//! within the anchors' error (the width of their clock reads), whatever
//! each process calibrated.

use std::time::{Duration, Instant};

/// A TSC value and the `CLOCK_MONOTONIC_RAW` nanoseconds read around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// The TSC.
    pub tsc: u64,
    /// `CLOCK_MONOTONIC_RAW`, nanoseconds (the middle of the two reads
    /// around the TSC read).
    pub ns: u64,
}

/// `CLOCK_MONOTONIC_RAW` in nanoseconds.
pub fn raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call; the clock id
    // exists on every Linux this builds for (2.6.28+).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The TSC (x86-64 only).
#[cfg(target_arch = "x86_64")]
fn tsc() -> u64 {
    // SAFETY: `rdtsc` exists on every x86-64 CPU and only reads a counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// An anchor: of 16 tries, the one whose two clock reads were closest
/// (least disturbed by an interrupt or preemption). `None` without a TSC.
pub fn anchor() -> Option<Anchor> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut best: Option<(u64, Anchor)> = None;
        for _ in 0..16 {
            let a = raw_ns();
            let t = tsc();
            let b = raw_ns();
            let width = b.saturating_sub(a);
            if best.is_none_or(|(w, _)| width < w) {
                best = Some((
                    width,
                    Anchor {
                        tsc: t,
                        ns: a + width / 2,
                    },
                ));
            }
        }
        best.map(|(_, anchor)| anchor)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// The shortest time between a recording's two anchors: the TSC rate
/// measured between them is the more precise the farther apart they are,
/// and a short recording should not pay for a bad one.
pub const MIN_ANCHOR_GAP: Duration = Duration::from_millis(20);

/// The end anchor of a recording whose start anchor was taken at
/// `started`: no sooner than [`MIN_ANCHOR_GAP`] after it (sleeping the
/// rest).
pub fn end_anchor(started: Instant) -> Option<Anchor> {
    if let Some(rest) = MIN_ANCHOR_GAP.checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    anchor()
}

/// How a provider's timestamps become the archive's nanoseconds.
#[derive(Debug, Clone, Copy)]
pub struct TimeBase {
    /// The TSC line through two anchors, when there are two apart.
    line: Option<(Anchor, Anchor)>,
}

/// Ticks per second of the monotonic clock (`CLOCK_MONOTONIC_RAW` ns).
pub const NS: u64 = 1_000_000_000;

impl TimeBase {
    /// The time base through `start` and `end`.
    pub fn new(start: Option<Anchor>, end: Option<Anchor>) -> TimeBase {
        let line = match (start, end) {
            (Some(a), Some(b)) if b.tsc > a.tsc && b.ns > a.ns => Some((a, b)),
            _ => None,
        };
        TimeBase { line }
    }

    /// Whether TSC timestamps are mapped through anchors (one time base);
    /// without them they are only scaled by each provider's own rate.
    pub fn anchored(&self) -> bool {
        self.line.is_some()
    }

    /// The archive's nanoseconds of a provider's `ticks` at
    /// `ticks_per_second`: the monotonic clock's as they are, the TSC's
    /// through the anchors' line.
    pub fn map(&self, ticks_per_second: u64, ticks: u64) -> u64 {
        if ticks_per_second == NS {
            return ticks;
        }
        match self.line {
            Some((a, b)) => {
                let dt = i128::from(ticks) - i128::from(a.tsc);
                let ns =
                    i128::from(a.ns) + dt * i128::from(b.ns - a.ns) / i128::from(b.tsc - a.tsc);
                ns.clamp(0, i128::from(u64::MAX)) as u64
            }
            None => (u128::from(ticks) * u128::from(NS) / u128::from(ticks_per_second.max(1)))
                .min(u128::from(u64::MAX)) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_through_anchors() {
        let tb = TimeBase::new(
            Some(Anchor {
                tsc: 1_000,
                ns: 10_000,
            }),
            Some(Anchor {
                tsc: 3_001_000,
                ns: 1_010_000,
            }),
        );
        assert!(tb.anchored());
        // 3 ticks per ns, whatever the provider calibrated.
        assert_eq!(tb.map(2_999_000_000, 1_000), 10_000);
        assert_eq!(tb.map(3_100_000_000, 1_501_000), 510_000);
        // Before the first anchor, extrapolated; never below zero.
        assert_eq!(tb.map(3_000_000_000, 0), 9_667);
        // The monotonic clock is the archive's clock already.
        assert_eq!(tb.map(NS, 123), 123);
        // Without anchors, each provider's own rate.
        assert_eq!(TimeBase::new(None, None).map(2 * NS, 100), 50);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn anchors_follow_the_raw_clock() {
        let a = anchor().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let b = anchor().unwrap();
        let tb = TimeBase::new(Some(a), Some(b));
        // A fresh anchor maps to its own raw time within a microsecond.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let c = anchor().unwrap();
        let mapped = tb.map(3_000_000_000, c.tsc);
        assert!(mapped.abs_diff(c.ns) < 1_000, "{mapped} vs {}", c.ns);
    }
}
