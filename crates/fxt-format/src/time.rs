//! Ticks and nanoseconds: the one rule every reader of this workspace uses
//! to turn a record's timestamp into time.
//!
//! A timestamp is a count of ticks; the provider's initialization record
//! says how many ticks make a second. Without that record the
//! specification lets a reader assume 1 tick = 1 ns.
//!
//! **Zero ticks per second.** The specification gives no meaning to an
//! initialization record that says 0 (a clock that never advances; the
//! division is undefined). Every reader in this workspace treats it as if
//! the record were absent: 1 tick = 1 ns, the specification's own default.
//! The other choices lose more: reading 0 as 1 tick per second turns every
//! tick into a second (timestamps saturate, intervals grow a billionfold),
//! and dropping the provider's events (what Perfetto's importer does:
//! `TicksToNs` fails and each event counts as `fuchsia_timestamp_overflow`)
//! loses the trace. With the default the
//! events stay, in their order, with their durations in ticks: a demanding
//! user gets all of the data and at worst a wrong unit, which the clock
//! record that caused it explains.
//!
//! **Rounding.** Nanoseconds are `ticks × 10^9 / ticks_per_second` rounded
//! down, computed exactly in 128 bits so no product overflows; a result
//! past `u64::MAX` saturates (no clock running for a human lifetime gets
//! there, only damaged input).
//!
//! **Perfetto's rounding.** Perfetto's FXT importer does not compute that
//! exactly: it scales the ticks above the low 32 bits by `⌊10^9 · 2^32 /
//! ticks_per_second⌋`, rounded down once for every 2^32 ticks, so its
//! nanoseconds come up to `⌊ticks / 2^32⌋` ns early (19 µs for a 2.3 GHz
//! TSC ten hours after boot; none at 1 tick = 1 ns). What fxt writes in
//! nanoseconds for Perfetto to place beside FXT records (the samples'
//! packets) is stamped with [`ticks_to_ns_as_perfetto`], Perfetto's own
//! conversion, so that a sample lands in the slice its ticks are in.
//!
//! ```
//! use fxt_format::time::{ticks_to_ns, ticks_per_second_or_default};
//! assert_eq!(ticks_to_ns(5, 3_000_000_000), 1); // 1.67 ns, rounded down
//! assert_eq!(ticks_to_ns(3, 1_000), 3_000_000);
//! assert_eq!(ticks_to_ns(7, 0), 7); // no clock: 1 tick = 1 ns
//! assert_eq!(ticks_per_second_or_default(None), 1_000_000_000);
//! ```

/// Nanoseconds in a second.
pub const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// The ticks per second a reader assumes when a provider gave none (or
/// gave 0): 1 tick = 1 ns, the specification's default.
pub const DEFAULT_TICKS_PER_SECOND: u64 = NANOS_PER_SECOND;

/// The clock a provider's timestamps are read with: its initialization
/// record's ticks per second, or [`DEFAULT_TICKS_PER_SECOND`] when it sent
/// none or sent 0 (see the [module documentation](self) for why).
#[inline]
pub fn ticks_per_second_or_default(ticks_per_second: Option<u64>) -> u64 {
    match ticks_per_second {
        Some(tps) if tps > 0 => tps,
        _ => DEFAULT_TICKS_PER_SECOND,
    }
}

/// Converts `ticks` at `ticks_per_second` to nanoseconds, rounded down and
/// saturating at `u64::MAX`; 0 ticks per second reads as 1 tick = 1 ns (see
/// the [module documentation](self)).
///
/// Inlined where it is called, so that a reader converting every event's
/// time at the usual clock pays a compare, not a call.
#[inline]
pub fn ticks_to_ns(ticks: u64, ticks_per_second: u64) -> u64 {
    if ticks_per_second == NANOS_PER_SECOND {
        // The usual clock: skip the divisions.
        return ticks;
    }
    ticks_to_ns_divided(ticks, ticks_per_second)
}

/// [`ticks_to_ns`] at a clock other than 1 tick = 1 ns.
#[inline(never)]
fn ticks_to_ns_divided(ticks: u64, ticks_per_second: u64) -> u64 {
    let tps = ticks_per_second_or_default(Some(ticks_per_second));
    if tps == NANOS_PER_SECOND {
        // No clock (0 ticks per second): 1 tick = 1 ns.
        return ticks;
    }
    // Whole seconds and the rest, each in 64 bits (two divisions instead
    // of a 128-bit one, which is a slow library call): with ticks = q·tps
    // + r, ⌊ticks·10⁹/tps⌋ = q·10⁹ + ⌊r·10⁹/tps⌋, and r·10⁹ < tps·10⁹ fits
    // for any clock under 18 GHz.
    let (q, r) = (ticks / tps, ticks % tps);
    if let (Some(rest), Some(whole)) = (
        r.checked_mul(NANOS_PER_SECOND),
        q.checked_mul(NANOS_PER_SECOND),
    ) {
        return whole.saturating_add(rest / tps);
    }
    let ns = u128::from(ticks) * u128::from(NANOS_PER_SECOND) / u128::from(tps);
    u64::try_from(ns).unwrap_or(u64::MAX)
}

/// Converts `ticks` at `ticks_per_second` to nanoseconds as Perfetto's FXT
/// importer does (`TicksToNs` in its `fuchsia_trace_utils.cc`; see the
/// [module documentation](self)): the ticks above the low 32 bits times
/// `⌊10^9 · 2^32 / ticks_per_second⌋`, plus the low 32 bits' nanoseconds
/// rounded down. At most `⌊ticks / 2^32⌋` ns below [`ticks_to_ns`], never
/// above, equal to it at 1 tick = 1 ns or below 2^32 ticks; never
/// decreasing as the ticks grow, so that what is in order in ticks stays
/// in order. 0 ticks per second reads as 1 tick = 1 ns (Perfetto drops
/// such events); a result past `u64::MAX` saturates (Perfetto drops those
/// too).
pub fn ticks_to_ns_as_perfetto(ticks: u64, ticks_per_second: u64) -> u64 {
    let tps = ticks_per_second_or_default(Some(ticks_per_second));
    // Each fits: 10^9 · 2^32 < 2^62, and the low word's product < 2^62.
    let per_high_tick = (NANOS_PER_SECOND << 32) / tps;
    let high = (ticks >> 32).saturating_mul(per_high_tick);
    let low = (ticks & 0xffff_ffff) * NANOS_PER_SECOND / tps;
    high.saturating_add(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanosecond_clock_is_identity() {
        for t in [0, 1, 999, 1 << 40, u64::MAX] {
            assert_eq!(ticks_to_ns(t, 1_000_000_000), t);
        }
    }

    #[test]
    fn truncates_toward_zero() {
        // 3 GHz: 1 tick = 1/3 ns.
        assert_eq!(ticks_to_ns(2, 3_000_000_000), 0);
        assert_eq!(ticks_to_ns(3, 3_000_000_000), 1);
        assert_eq!(ticks_to_ns(5, 3_000_000_000), 1);
        assert_eq!(ticks_to_ns(6, 3_000_000_000), 2);
        // 3 ticks per second: 1 tick = 333_333_333.33 ns.
        assert_eq!(ticks_to_ns(1, 3), 333_333_333);
        assert_eq!(ticks_to_ns(2, 3), 666_666_666);
        assert_eq!(ticks_to_ns(3, 3), 1_000_000_000);
        // A 24 MHz counter (a common ARM generic timer): 1 tick = 41.67 ns.
        assert_eq!(ticks_to_ns(1, 24_000_000), 41);
        assert_eq!(ticks_to_ns(24_000_000, 24_000_000), 1_000_000_000);
    }

    #[test]
    fn exact_where_a_64_bit_product_would_overflow() {
        // ticks × 10^9 exceeds u64 for these; the result still fits.
        let tps = 19_200_000; // 19.2 MHz
        let ticks = u64::MAX / 1_000; // about 1.8e16
        assert!(ticks.checked_mul(1_000_000_000).is_none());
        assert_eq!(ticks_to_ns(ticks, tps), 960_767_920_505_705_781);
        // Faster than 1 GHz shrinks: u64::MAX ticks at 2 GHz is half.
        assert_eq!(ticks_to_ns(u64::MAX, 2_000_000_000), u64::MAX / 2);
        assert_eq!(ticks_to_ns(u64::MAX, u64::MAX), 1_000_000_000);
    }

    /// The 128-bit reference the two 64-bit divisions must equal.
    fn reference(ticks: u64, tps: u64) -> u64 {
        let ns = u128::from(ticks) * u128::from(NANOS_PER_SECOND) / u128::from(tps);
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    proptest::proptest! {
        #[test]
        fn equals_the_128_bit_division(
            ticks in proptest::prelude::any::<u64>(),
            tps in 1u64..u64::MAX,
            small in 1u64..50_000_000_000,
        ) {
            proptest::prop_assert_eq!(ticks_to_ns(ticks, tps), reference(ticks, tps));
            proptest::prop_assert_eq!(ticks_to_ns(ticks, small), reference(ticks, small));
            proptest::prop_assert_eq!(ticks_to_ns(ticks >> 20, small), reference(ticks >> 20, small));
        }
    }

    #[test]
    fn saturates_past_u64() {
        assert_eq!(ticks_to_ns(u64::MAX, 1), u64::MAX);
        assert_eq!(ticks_to_ns(u64::MAX, 999_999_999), u64::MAX);
        // The last tick count that still fits at 1 tick per second.
        let last = u64::MAX / 1_000_000_000;
        assert_eq!(ticks_to_ns(last, 1), last * 1_000_000_000);
        assert_eq!(ticks_to_ns(last + 1, 1), u64::MAX);
    }

    #[test]
    fn zero_ticks_per_second_reads_as_nanoseconds() {
        assert_eq!(ticks_to_ns(0, 0), 0);
        assert_eq!(ticks_to_ns(7, 0), 7);
        assert_eq!(ticks_to_ns(u64::MAX, 0), u64::MAX);
        assert_eq!(
            ticks_per_second_or_default(Some(0)),
            DEFAULT_TICKS_PER_SECOND
        );
        assert_eq!(ticks_per_second_or_default(None), DEFAULT_TICKS_PER_SECOND);
        assert_eq!(ticks_per_second_or_default(Some(1)), 1);
        assert_eq!(ticks_per_second_or_default(Some(u64::MAX)), u64::MAX);
    }

    /// Pinned to what Perfetto's trace processor (v58.2) made of a trace
    /// `fxt record` wrote: a slice at tick 81 599 379 044 252 of a
    /// 2 300 129 261 Hz clock began at 35 475 997 108 833 ns there (13 509
    /// ns before the exact conversion), and lasted 101 571 627 ns.
    #[test]
    fn as_perfetto_is_what_the_trace_processor_showed() {
        let (tps, begin, end) = (2_300_129_261, 81_599_379_044_252, 81_599_612_672_123);
        assert_eq!(ticks_to_ns_as_perfetto(begin, tps), 35_475_997_108_833);
        assert_eq!(ticks_to_ns(begin, tps), 35_475_997_122_342);
        let dur = ticks_to_ns_as_perfetto(end, tps) - ticks_to_ns_as_perfetto(begin, tps);
        assert_eq!(dur, 101_571_627);
        // Below 2^32 ticks and at 1 tick = 1 ns it is the exact conversion.
        assert_eq!(
            ticks_to_ns_as_perfetto(u64::from(u32::MAX), tps),
            ticks_to_ns(u64::from(u32::MAX), tps)
        );
        assert_eq!(ticks_to_ns_as_perfetto(u64::MAX, 1_000_000_000), u64::MAX);
        assert_eq!(ticks_to_ns_as_perfetto(u64::MAX, 0), u64::MAX);
        // Overflow saturates where Perfetto fails the event.
        assert_eq!(ticks_to_ns_as_perfetto(u64::MAX, 1), u64::MAX);
    }

    proptest::proptest! {
        /// Never above the exact conversion, at most one ns per 2^32 ticks
        /// below it (for clocks of at least 1 MHz with results in range),
        /// and never decreasing from one tick to the next, across the low
        /// word's wrap as anywhere.
        #[test]
        fn as_perfetto_is_early_by_at_most_a_ns_per_high_tick_and_in_order(
            ticks in 0u64..(1 << 52),
            tps in 1_000_000u64..20_000_000_000,
            wrap in 1u64..(1 << 20),
        ) {
            let exact = ticks_to_ns(ticks, tps);
            let perfetto = ticks_to_ns_as_perfetto(ticks, tps);
            proptest::prop_assert!(perfetto <= exact);
            proptest::prop_assert!(exact - perfetto <= ticks >> 32);
            let at_wrap = wrap << 32;
            proptest::prop_assert!(
                ticks_to_ns_as_perfetto(at_wrap - 1, tps) <= ticks_to_ns_as_perfetto(at_wrap, tps)
            );
            proptest::prop_assert!(
                ticks_to_ns_as_perfetto(ticks, tps) <= ticks_to_ns_as_perfetto(ticks + 1, tps)
            );
        }
    }
}
