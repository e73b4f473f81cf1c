//! Ticks to nanoseconds for every event of a provider, as
//! [`ticks_to_ns`] converts them, without its two hardware divisions per
//! timestamp: the provider's ticks per second is the divisor of every
//! conversion, so it is divided by as a multiplication by its reciprocal
//! (Granlund and Montgomery, "Division by invariant integers using
//! multiplication", 1994, figure 4.1), found once per provider. A
//! division was a tenth of `fxt json`'s time on a trace whose clock is
//! not in nanoseconds; `fxt export` converts every event view's
//! timestamp with it too.

use fxt_format::time::{ticks_per_second_or_default, NANOS_PER_SECOND};

use crate::input::ticks_to_ns;

/// A provider's clock: its ticks per second and the divisor's reciprocal.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    tps: u64,
    /// The multiplier `m` of the division by `tps` (unused for 1).
    multiplier: u64,
    /// `ceil(log2(tps)) - 1`, the final shift (unused for 1).
    shift: u32,
}

impl Clock {
    /// The clock of `tps` ticks per second (0 reads as the default, as
    /// [`ticks_to_ns`] reads it).
    pub fn new(tps: u64) -> Self {
        let tps = ticks_per_second_or_default(Some(tps));
        if tps == 1 {
            return Clock {
                tps,
                multiplier: 0,
                shift: 0,
            };
        }
        // l = ceil(log2(tps)), 1..=64; m = floor(2^64 (2^l - tps) / tps) + 1
        // fits in 64 bits because 2^l - tps < tps.
        let l = 64 - (tps - 1).leading_zeros();
        let numerator = ((1u128 << l) - u128::from(tps)) << 64;
        let multiplier = (numerator / u128::from(tps) + 1) as u64;
        Clock {
            tps,
            multiplier,
            shift: l - 1,
        }
    }

    /// The ticks per second.
    pub fn ticks_per_second(&self) -> u64 {
        self.tps
    }

    /// `n / tps`, exactly.
    #[inline(always)]
    fn div(&self, n: u64) -> u64 {
        if self.tps == 1 {
            return n;
        }
        let high = ((u128::from(self.multiplier) * u128::from(n)) >> 64) as u64;
        (high + ((n - high) >> 1)) >> self.shift
    }

    /// `ticks` in nanoseconds: [`ticks_to_ns`]`(ticks, tps)`.
    #[inline(always)]
    pub fn ns(&self, ticks: u64) -> u64 {
        if self.tps == NANOS_PER_SECOND {
            return ticks;
        }
        // As `ticks_to_ns` computes it: whole seconds and the rest.
        let q = self.div(ticks);
        let r = ticks - q * self.tps;
        match (
            r.checked_mul(NANOS_PER_SECOND),
            q.checked_mul(NANOS_PER_SECOND),
        ) {
            (Some(rest), Some(whole)) => whole.saturating_add(self.div(rest)),
            _ => ticks_to_ns(ticks, self.tps),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_are_those_of_ticks_to_ns() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut clocks = vec![
            0,
            1,
            2,
            3,
            7,
            10,
            1000,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            2_600_010_893,
            19_200_000,
            24_000_000,
            1 << 32,
            (1 << 32) + 1,
            1 << 63,
            (1 << 63) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        for _ in 0..200 {
            let r = next();
            clocks.push(r >> (r % 64));
        }
        for tps in clocks {
            let clock = Clock::new(tps);
            let mut ticks = vec![0, 1, 2, tps, tps.wrapping_sub(1), tps.wrapping_add(1)];
            ticks.extend([u64::MAX, u64::MAX - 1, 1 << 63, 81_489_443_543_892]);
            ticks.extend([
                tps.wrapping_mul(1000),
                tps.wrapping_mul(1000).wrapping_sub(1),
            ]);
            for _ in 0..2000 {
                let r = next();
                ticks.push(r >> (r % 64));
            }
            for t in ticks {
                assert_eq!(
                    clock.ns(t),
                    ticks_to_ns(t, tps),
                    "{t} ticks at {tps} per second"
                );
            }
        }
    }
}
