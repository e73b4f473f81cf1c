//! The per-thread byte countdown to the next sampled allocation and the
//! small generator that draws it.
//!
//! Each thread counts down the bytes it allocates; an allocation that
//! takes the count below zero is sampled, and the next count is drawn
//! from an exponential distribution of the session's mean. The sample
//! points are then a Poisson process over the bytes allocated, so an
//! allocation of `size` bytes is sampled with probability
//! `1 - exp(-size / mean)` whatever came before it (what the readers'
//! estimator assumes: `fxt_format::samples::estimated_bytes`).
//!
//! A thread that takes samples faster than a cap raises its own mean
//! (`pace`): doubles it, for a window of [`WINDOW_SAMPLES`] samples
//! taken faster than the cap allows, as many times as brings the window's
//! rate under the cap; halves it back (down to the session's) for each
//! window taken at under a quarter of the cap. Before it raises its mean
//! a thread spends a credit of [`BURST_WINDOWS`] windows' worth of
//! samples over the cap, which windows under a quarter of the cap earn
//! back (a token bucket): a short burst (a program that allocates a few hundred MB as
//! fast as it can, then stops) keeps the session's mean, and over any
//! stretch a thread takes at most the cap's samples plus the credit. A
//! change is made at a sample point and the next count is drawn afresh
//! with the new mean: the process is memoryless, so an allocation is
//! still sampled with probability `1 - exp(-size / mean)` for the mean in
//! force when its bytes came, which its record carries (the mean is
//! chosen from what came before only). Readers weight each record by its
//! own mean: every estimate stays unbiased, with more variance where the
//! cap raised the mean. The cap is [`CAP_PER_SECOND`] samples a second
//! of wall time at the default mean, and as many times more as the
//! session's mean is below it (an explicit small mean asks for more
//! samples: the bytes a second it takes to reach the cap stay the same).
//!
//! The state is a `const` thread local without a destructor: usable from
//! any allocation, a thread-local destructor's included.

use core::cell::Cell;

use fxt_format::samples::MAX_ALLOC_SAMPLE_BYTES;

/// The samples a second (of wall time) a thread takes at most at the
/// default mean before it raises its own (see the module docs).
pub(crate) const CAP_PER_SECOND: u64 = 5_000;

/// Samples a window of the pace counts before it compares their rate
/// with the cap (enough that a thread at half the cap seldom takes its
/// window for one over it: the time of 16 exponential gaps is within a
/// factor 2 of its mean but rarely).
const WINDOW_SAMPLES: u32 = 16;

/// The credit of samples over the cap a thread may take, at the start of
/// a session or once earned back by windows under a quarter of the cap
/// (see [`pace`]), before the pace
/// raises its mean: what the cap allows in this many windows at the
/// default mean (51.2 ms): 256 samples at the default mean and as many
/// more as the cap at a smaller one (the same 128 MiB allocated at any
/// mean up to the default).
const BURST_WINDOWS: u64 = 16;

/// The most bytes a thread counts down before its slow path looks at the
/// session again ([`decide`]): a draw larger than this is counted down a
/// part of this size at a time, so that a thread whose count was drawn
/// in an earlier session (or at a large mean) notices a new session
/// within this many bytes.
pub(crate) const CHECK_BYTES: i64 = 1 << 20;

/// A thread's countdown.
struct Countdown {
    /// Bytes left in the current part of the count (negative: crossed).
    left: Cell<i64>,
    /// Bytes of the count past the current part (0: the part ends at the
    /// sample point).
    rest: Cell<i64>,
    /// The mean the count was drawn with (0: none drawn yet).
    mean: Cell<u64>,
    /// The session generation the count was drawn for (a new session
    /// draws afresh).
    generation: Cell<u32>,
    /// The generator's state (0: not seeded).
    rng: Cell<u64>,
    /// `left` was drawn with the session's mean times `2^shift`.
    shift: Cell<u32>,
    /// When the pace's window began, in nanoseconds (`u64::MAX`: not
    /// yet), and the samples taken in it.
    window_start: Cell<u64>,
    window_samples: Cell<u32>,
    /// Nanoseconds of the cap's time the thread may still take samples
    /// ahead of it before the pace raises its mean (see
    /// [`BURST_WINDOWS`]).
    credit: Cell<u64>,
}

thread_local! {
    static COUNTDOWN: Countdown = const {
        Countdown {
            left: Cell::new(0),
            rest: Cell::new(0),
            mean: Cell::new(0),
            generation: Cell::new(0),
            rng: Cell::new(0),
            shift: Cell::new(0),
            window_start: Cell::new(u64::MAX),
            window_samples: Cell::new(0),
            credit: Cell::new(0),
        }
    };
}

/// Counts `size` bytes down; `true` when they cross the end of the
/// current part of the count (the caller then calls [`decide`], which
/// also sees to a count drawn for another session): a thread-local
/// subtraction and a sign test.
#[inline(always)]
pub(crate) fn crossed(size: usize) -> bool {
    COUNTDOWN.with(|c| {
        // A size is at most `isize::MAX`, the count at most a part, and
        // once below 0 (until `decide` goes on: never on fxt's own
        // threads) it falls by the bytes allocated since: 2^63 bytes away
        // from wrapping.
        let left = c.left.get().wrapping_sub(size as i64);
        c.left.set(left);
        left < 0
    })
}

/// After [`crossed`], while nothing samples (an allocator that follows
/// the global generation counts down all the same): the count drawn
/// afresh at the mean it was drawn with (the default mean if none), for
/// the session it was drawn for. Like a count carried from an earlier
/// session, it is then a draw of an exponential at its mean when the next
/// session begins (memoryless), which [`decide`] treats as such; the
/// thread crosses again a part later at most.
pub(crate) fn idle() {
    COUNTDOWN.with(|c| {
        let mean = match c.mean.get() {
            0 => crate::config::DEFAULT_ALLOC_SAMPLE_BYTES,
            mean => mean,
        };
        set_count(c, draw(c, mean), mean);
    })
}

/// After [`crossed`]: whether the allocation of `size` bytes is sampled in
/// the session of `generation` whose mean is `base`: the mean the
/// thread's count was drawn with (what the sample's record carries), or 0
/// when it is not sampled.
///
/// Within a session, a part of the count that ends before the sample
/// point is followed by the next (the sample point stays where the draw
/// put it). A count drawn for another session (a thread's first
/// allocation in this one, or its first since the session started) was
/// still a draw of an exponential of its mean when the session began,
/// the bytes before it not counted (nothing samples between sessions):
/// memoryless, its sample point is as likely as a fresh draw's at that
/// mean from the session's start. So if this allocation reaches it, the
/// allocation is sampled at that mean (its record says so: estimates stay
/// unbiased); if it only reaches the end of a part, the session's bytes
/// so far had no sample point, and the count is drawn afresh at `base`
/// (this allocation checked against it). Either way a thread counts at
/// the session's mean within [`CHECK_BYTES`] of the session's start.
pub(crate) fn decide(size: usize, generation: u32, base: u64) -> u64 {
    COUNTDOWN.with(|c| {
        if c.generation.get() != generation {
            let carried = (c.rest.get() == 0 && c.mean.get() != 0).then(|| c.mean.get());
            c.generation.set(generation);
            c.shift.set(0);
            c.window_start.set(u64::MAX);
            c.window_samples.set(0);
            c.credit.set(burst_ns());
            if let Some(mean) = carried {
                set_count(c, draw(c, base), base);
                return mean;
            }
            set_count(c, draw(c, base), base);
            c.left.set(c.left.get().saturating_sub(size as i64));
        }
        if !next_part(c) {
            return 0;
        }
        let mean = c.mean.get();
        // Memoryless: the points past this allocation are as likely as
        // points from a fresh start.
        let next = raised(base, c.shift.get());
        set_count(c, draw(c, next), next);
        mean
    })
}

/// Moves the crossed count on to its next parts until one is left over;
/// `true` when none is (the sample point is reached).
fn next_part(c: &Countdown) -> bool {
    let (mut left, mut rest) = (c.left.get(), c.rest.get());
    while left < 0 && rest > 0 {
        let part = rest.min(CHECK_BYTES);
        left += part;
        rest -= part;
    }
    c.left.set(left);
    c.rest.set(rest);
    left < 0
}

/// Sets the count to `count` bytes drawn at `mean`: its first part of at
/// most [`CHECK_BYTES`], the rest after it.
fn set_count(c: &Countdown, count: i64, mean: u64) {
    let part = count.min(CHECK_BYTES);
    c.left.set(part);
    c.rest.set(count - part);
    c.mean.set(mean);
}

/// After a sampled allocation recorded at `now_ns` (nanoseconds of the
/// session's clock) in a session of mean `base`: counts it in the pace's
/// window and, at the window's end, raises or lowers the thread's mean
/// (the next count, drawn by [`decide`] at the old one, drawn again at
/// the new one).
pub(crate) fn pace(now_ns: u64, base: u64) {
    COUNTDOWN.with(|c| {
        let start = c.window_start.get();
        let samples = c.window_samples.get() + 1;
        if start == u64::MAX {
            c.window_start.set(now_ns);
            c.window_samples.set(0);
            return;
        }
        let window = window_ns(base);
        let elapsed = now_ns.saturating_sub(start);
        let shift = c.shift.get();
        let slow = elapsed >= window.saturating_mul(4);
        let full = samples >= WINDOW_SAMPLES;
        let credit = c.credit.get();
        let next = if full && elapsed.saturating_add(credit) < window {
            // Over the cap, the credit spent: doubled as many times as
            // brings the window's rate under the cap (at least half of
            // it), so that a thread far over it gets there in one window.
            c.credit.set(0);
            let steps = (window / elapsed.max(1)).ilog2() + 1;
            (shift + steps).min(highest_shift(base))
        } else if slow || full {
            // The cap's time the window's samples take, against the time
            // they came in: a window ahead of the cap spends credit, one
            // under a quarter of it (the mean lowered) earns credit back.
            // Between the two it stays: a thread the cap holds earns
            // none, and paces as it would without a credit once the one
            // it started with is spent.
            let due = window * u64::from(samples) / u64::from(WINDOW_SAMPLES);
            if slow || elapsed < due {
                let balance = (credit + elapsed).saturating_sub(due);
                c.credit.set(balance.min(burst_ns()));
            }
            shift.saturating_sub(u32::from(slow))
        } else {
            c.window_samples.set(samples);
            return;
        };
        c.window_start.set(now_ns);
        c.window_samples.set(0);
        if next != shift {
            c.shift.set(next);
            let mean = raised(base, next);
            set_count(c, draw(c, mean), mean);
        }
    })
}

/// The time [`WINDOW_SAMPLES`] samples take at the cap, for a session of
/// mean `base`: at the default mean and above, those samples at
/// [`CAP_PER_SECOND`]; below it, as much shorter as the mean is smaller.
fn window_ns(base: u64) -> u64 {
    let default = crate::config::DEFAULT_ALLOC_SAMPLE_BYTES;
    let at_default = u64::from(WINDOW_SAMPLES) * 1_000_000_000 / CAP_PER_SECOND;
    // At most 2^23 times 2^19: no overflow.
    at_default * base.min(default) / default
}

/// The credit a thread starts a session with, in nanoseconds of the
/// cap's time: [`BURST_WINDOWS`] windows at the default mean, whatever
/// the session's (see [`window_ns`]).
fn burst_ns() -> u64 {
    BURST_WINDOWS * window_ns(crate::config::DEFAULT_ALLOC_SAMPLE_BYTES)
}

/// The mean `base` raised `shift` times (doubled each; `shift` at most
/// [`highest_shift`]).
fn raised(base: u64, shift: u32) -> u64 {
    base << shift
}

/// The most times the mean `base` is doubled: as long as it stays at most
/// `MAX_ALLOC_SAMPLE_BYTES` (the largest mean a session takes).
fn highest_shift(base: u64) -> u32 {
    (MAX_ALLOC_SAMPLE_BYTES / base.max(1))
        .checked_ilog2()
        .unwrap_or(0)
}

/// The mean the thread's count was drawn with, in a session of mean
/// `base`.
#[cfg(test)]
fn current_mean(base: u64) -> u64 {
    COUNTDOWN.with(|c| raised(base, c.shift.get()))
}

/// An exponential draw of mean `mean` bytes, at least 1.
fn draw(c: &Countdown, mean: u64) -> i64 {
    let u = next_unit(c);
    // -ln(1 - u) for u in [0, 1): exponential of mean 1. `1 - u` is
    // exact (u is a multiple of 2^-53), so `ln` loses nothing to
    // `ln_1p`, and costs the C library less.
    let e = -(1.0 - u).ln();
    ((e * mean as f64) as i64).max(1)
}

/// A uniform draw in `[0, 1)` from the thread's xorshift64* generator,
/// seeded from the thread's address space position and the clock.
fn next_unit(c: &Countdown) -> f64 {
    let mut x = c.rng.get();
    if x == 0 {
        let here = c as *const Countdown as u64;
        x = (here ^ crate::clock::read(false).rotate_left(32)) | 1;
    }
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c.rng.set(x);
    let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One-byte allocations at mean 64 are sampled about once in 64 (a
    /// Poisson process over the bytes), and a new session draws afresh.
    /// 2^20 draws: the count's standard deviation is about 126 around
    /// 16384, so the bound (10%) is 13 deviations away.
    #[test]
    fn samples_one_allocation_per_mean_bytes() {
        let n = 1 << 20;
        let mut sampled = 0u64;
        for _ in 0..n {
            if crossed(1) && decide(1, 7, 64) != 0 {
                sampled += 1;
            }
        }
        let expected = n as f64 / 64.0;
        assert!(
            (sampled as f64 - expected).abs() < expected * 0.1,
            "{sampled} sampled, {expected} expected"
        );
        // An allocation far larger than the mean is always sampled.
        for _ in 0..100 {
            assert!(crossed(1 << 30) && decide(1 << 30, 8, 64) == 64);
        }
    }

    /// A thread whose count was drawn in a session at 1 GiB notices a new
    /// session at 64 bytes within [`CHECK_BYTES`] of it: 4 MiB of 1-byte
    /// allocations then are sampled at the new mean about once in 64
    /// (the count's standard deviation is about 220 around 49 152 past
    /// the first mebibyte, so the bounds are over 20 away).
    #[test]
    fn a_new_session_counts_at_its_own_mean() {
        assert!(!(crossed(1) && decide(1, 20, 1 << 30) != 0));
        let (n, mut at_new, mut other) = (4usize << 20, 0u64, 0u64);
        for _ in 0..n {
            if crossed(1) {
                match decide(1, 21, 64) {
                    0 => {}
                    64 => at_new += 1,
                    _ => other += 1,
                }
            }
        }
        let least = (n - CHECK_BYTES as usize) as u64 / 64;
        assert!(
            at_new > least * 9 / 10 && at_new < (n as u64 / 64) * 11 / 10,
            "{at_new} sampled at the new mean"
        );
        assert!(other <= 1, "{other} sampled at the old one");
    }

    /// Sessions at 4 KiB, each after one at 1 MiB: each starts with the
    /// count drawn in the one before (noticed at its first crossing), yet
    /// the sampled estimate of their bytes, each sample weighted by the
    /// mean `decide` says, stays within 5% of the truth (800 MiB: some
    /// 200 000 samples at 4 KiB, and the bytes counted by the carried
    /// counts, about a mebibyte a session at 1 MiB, a deviation near 1%).
    #[test]
    fn a_count_carried_into_a_session_stays_unbiased() {
        use fxt_format::samples::estimated_bytes;
        let (size, sessions) = (256usize, 200u32);
        let (mut estimate, mut truth) = (0.0, 0u64);
        for s in 0..sessions {
            for _ in 0..(2 << 20) / size {
                if crossed(size) {
                    decide(size, 1_000 + 2 * s, 1 << 20);
                }
            }
            for _ in 0..(4 << 20) / size {
                truth += size as u64;
                if crossed(size) {
                    let mean = decide(size, 1_001 + 2 * s, 4 << 10);
                    if mean != 0 {
                        estimate += estimated_bytes(size as u64, mean);
                    }
                }
            }
        }
        let truth = truth as f64;
        assert!(
            (estimate - truth).abs() < truth * 0.05,
            "{estimate} estimated, {truth} allocated"
        );
    }

    /// Sessions at 4 KiB, each after one at 1 MiB and 2 MiB allocated
    /// while nothing sampled through an allocator that follows the global
    /// generation (its crossings draw the count afresh, [`idle`]): each
    /// starts with the count drawn while idle, at the earlier session's
    /// mean, yet the estimate of their bytes stays within 5% of the truth
    /// (as in the test above).
    #[test]
    fn a_count_drawn_while_idle_stays_unbiased() {
        use fxt_format::samples::estimated_bytes;
        let (size, sessions) = (256usize, 200u32);
        let (mut estimate, mut truth, mut idle_crossings) = (0.0, 0u64, 0u32);
        for s in 0..sessions {
            for _ in 0..(2 << 20) / size {
                if crossed(size) {
                    decide(size, 2_000 + 2 * s, 1 << 20);
                }
            }
            for _ in 0..(2 << 20) / size {
                if crossed(size) {
                    idle();
                    idle_crossings += 1;
                }
            }
            for _ in 0..(4 << 20) / size {
                truth += size as u64;
                if crossed(size) {
                    let mean = decide(size, 2_001 + 2 * s, 4 << 10);
                    if mean != 0 {
                        estimate += estimated_bytes(size as u64, mean);
                    }
                }
            }
        }
        assert!(
            idle_crossings >= sessions,
            "{idle_crossings} idle crossings"
        );
        let truth = truth as f64;
        assert!(
            (estimate - truth).abs() < truth * 0.05,
            "{estimate} estimated, {truth} allocated"
        );
    }

    /// A thread allocating 64 KiB blocks at 40 GB a second of simulated
    /// time (80 000 samples a second at the default mean, 16 times the
    /// cap): the pace raises its mean (by 16 to 32 times), and the sampled
    /// estimate of the bytes allocated, each sample weighted by the mean
    /// `decide` says it was taken at, stays within 12% of the truth
    /// (about 2 000 samples of 32 GiB at a mean near 12 MiB: a standard
    /// deviation near 2%, the bound 6 away). Then at 0.4 GB a second (a
    /// fifth of the cap at the session's mean) the mean comes back down
    /// to the session's.
    #[test]
    fn a_capped_thread_raises_its_mean_and_stays_unbiased() {
        use fxt_format::samples::estimated_bytes;
        let base = crate::config::DEFAULT_ALLOC_SAMPLE_BYTES;
        let size = 64usize << 10;
        let (generation, mut now) = (9, 1_000u64);
        let run = |n: u64, step: u64, now: &mut u64| {
            let (mut estimate, mut samples, mut highest) = (0.0, 0u64, base);
            for _ in 0..n {
                *now += step;
                if !crossed(size) {
                    continue;
                }
                let mean = decide(size, generation, base);
                if mean != 0 {
                    estimate += estimated_bytes(size as u64, mean);
                    samples += 1;
                    highest = highest.max(mean);
                    pace(*now, base);
                }
            }
            (estimate, samples, highest)
        };
        let n = 1u64 << 19;
        let (estimate, samples, highest) = run(n, 1_562, &mut now);
        let truth = (n * size as u64) as f64;
        assert!(
            (estimate - truth).abs() < truth * 0.12,
            "{estimate} estimated, {truth} allocated ({samples} samples)"
        );
        assert!(highest >= base * 8, "the mean rose to {highest} only");
        // 0.82 s at the cap is some 4 100 samples (80 000 a second at the
        // session's mean would be 65 000).
        assert!(samples < 8_000, "{samples} samples");
        let (_, slow, _) = run(1 << 16, 156_200, &mut now);
        assert!(slow > 50, "{slow} samples");
        assert_eq!(current_mean(base), base);
    }

    /// A thread allocating 1 GB a second (about 1 900 samples a second at
    /// the default mean, under half the cap) keeps the session's mean:
    /// a window of 16 comes faster than the cap about once in a
    /// thousand, and the next brings the mean back, so under 1% of its
    /// samples are at another mean (expected: about 0.1%).
    #[test]
    fn a_thread_under_the_cap_keeps_the_sessions_mean() {
        let base = crate::config::DEFAULT_ALLOC_SAMPLE_BYTES;
        let (size, generation) = (4usize << 10, 11);
        let (mut now, mut samples, mut raised) = (1_000u64, 0u32, 0u32);
        for _ in 0..1 << 20 {
            now += 4_096;
            if crossed(size) {
                let mean = decide(size, generation, base);
                if mean != 0 {
                    samples += 1;
                    raised += u32::from(mean != base);
                    pace(now, base);
                }
            }
        }
        assert!(samples > 5_000, "{samples} samples");
        assert!(raised * 100 < samples, "{raised} of {samples} raised");
    }

    /// Allocates `n` blocks of `size` bytes, one every `step` ns of
    /// simulated time from `*now`, in the session `generation` of mean
    /// `base`; the samples taken, and those at another mean than `base`.
    fn paced(
        n: u64,
        (size, step): (usize, u64),
        (generation, base): (u32, u64),
        now: &mut u64,
    ) -> (u64, u64) {
        let (mut samples, mut raised) = (0, 0);
        for _ in 0..n {
            *now += step;
            if crossed(size) {
                let mean = decide(size, generation, base);
                if mean != 0 {
                    samples += 1;
                    raised += u64::from(mean != base);
                    pace(*now, base);
                }
            }
        }
        (samples, raised)
    }

    /// A burst far over the cap that ends within the credit keeps the
    /// session's mean: at 16 KiB, 64 KiB blocks at 40 GB a second of
    /// simulated time (2.5 million samples a second, 16 times the cap at
    /// that mean), 64 MiB of them (about 1 000 samples, under the 8 192
    /// of the credit), all taken at the session's mean; the same rate
    /// kept up then raises it.
    #[test]
    fn a_burst_within_the_credit_keeps_the_sessions_mean() {
        let (base, size) = (16u64 << 10, 64usize << 10);
        let mut now = 1_000u64;
        let (samples, raised) = paced(1 << 10, (size, 1_562), (12, base), &mut now);
        assert!(samples > 900, "{samples} samples");
        assert_eq!(raised, 0, "{raised} of {samples} at a raised mean");
        let (samples, raised) = paced(1 << 15, (size, 1_562), (12, base), &mut now);
        assert!(raised > 0, "none of {samples} raised");
        assert!(
            current_mean(base) >= base * 8,
            "the mean rose to {}",
            current_mean(base)
        );
    }

    /// The credit is earned back under the cap, and a new session starts
    /// with all of it: after a burst that spent it (and raised the mean),
    /// 5 s of allocating under the cap bring both back, and the same
    /// burst again keeps the session's mean; so does one that starts a
    /// new session right after the credit was spent (but for one sample
    /// at most, at the count carried in from the session before).
    #[test]
    fn the_credit_comes_back_under_the_cap_and_with_a_new_session() {
        let (base, size) = (16u64 << 10, 64usize << 10);
        let burst = (size, 1_562);
        let mut now = 1_000u64;
        paced(1 << 14, burst, (13, base), &mut now);
        assert!(
            current_mean(base) > base,
            "the burst did not raise the mean"
        );
        // 0.2 GB a second: a fiftieth of the cap at that mean.
        paced(1 << 14, (size, 320_000), (13, base), &mut now);
        assert_eq!(current_mean(base), base);
        let (samples, raised) = paced(1 << 10, burst, (13, base), &mut now);
        assert!(samples > 900 && raised == 0, "{raised} of {samples} raised");
        paced(1 << 14, burst, (13, base), &mut now);
        assert!(
            current_mean(base) > base,
            "the burst did not raise the mean"
        );
        let (samples, raised) = paced(1 << 10, burst, (14, base), &mut now);
        assert!(
            samples > 900 && raised <= 1,
            "{raised} of {samples} raised in a new session"
        );
    }

    /// A small explicit mean moves the cap up with it: 8 KiB blocks at
    /// mean 8 KiB, 250 000 a second (2 GB a second: 250 000 samples a
    /// second, 50 times the cap at the default mean) keep the session's
    /// mean.
    #[test]
    fn the_cap_scales_with_a_small_mean() {
        let (base, size, generation) = (8u64 << 10, 8usize << 10, 10);
        let mut now = 1_000u64;
        for _ in 0..1 << 16 {
            now += 4_000;
            if crossed(size) {
                let mean = decide(size, generation, base);
                if mean != 0 {
                    assert_eq!(mean, base);
                    pace(now, base);
                }
            }
        }
    }
}
