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
//! The state is a `const` thread local without a destructor: usable from
//! any allocation, a thread-local destructor's included.

use core::cell::Cell;

/// A thread's countdown.
struct Countdown {
    /// Bytes left before the next sample (negative: crossed).
    left: Cell<i64>,
    /// The session generation `left` was drawn for (a new session draws
    /// afresh).
    generation: Cell<u32>,
    /// The generator's state (0: not seeded).
    rng: Cell<u64>,
}

thread_local! {
    static COUNTDOWN: Countdown = const {
        Countdown {
            left: Cell::new(0),
            generation: Cell::new(0),
            rng: Cell::new(0),
        }
    };
}

/// Counts `size` bytes down; `true` when they cross the next sample point
/// or the count was drawn for another session than `generation` (the
/// caller then calls [`decide`]).
#[inline(always)]
pub(crate) fn crossed(size: usize, generation: u32) -> bool {
    COUNTDOWN.with(|c| {
        // A size is at most `isize::MAX`, the count at most a draw, and
        // once below 0 (until `decide` draws again: never on fxt's own
        // threads) it falls by the bytes allocated since: 2^63 bytes away
        // from wrapping.
        let left = c.left.get().wrapping_sub(size as i64);
        c.left.set(left);
        left < 0 || c.generation.get() != generation
    })
}

/// After [`crossed`]: whether the allocation of `size` bytes is sampled in
/// the session of `generation` at mean `mean`. A thread's first allocation
/// in a session only draws its first count (and checks the allocation
/// against it); a sampled allocation draws the next.
pub(crate) fn decide(size: usize, generation: u32, mean: u64) -> bool {
    COUNTDOWN.with(|c| {
        if c.generation.get() != generation {
            c.generation.set(generation);
            let left = draw(c, mean).saturating_sub(size as i64);
            c.left.set(left);
            if left >= 0 {
                return false;
            }
        } else if c.left.get() >= 0 {
            return false;
        }
        // Memoryless: the points past this allocation are as likely as
        // points from a fresh start.
        c.left.set(draw(c, mean));
        true
    })
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
            if crossed(1, 7) && decide(1, 7, 64) {
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
            assert!(crossed(1 << 30, 8) && decide(1 << 30, 8, 64));
        }
    }
}
