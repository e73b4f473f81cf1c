//! Parquet's RLE / bit-packing hybrid, which holds both the repetition and
//! definition levels of a data page and its dictionary ids: runs of one
//! value as `(count << 1)` and the value, anything else in groups of eight
//! values packed `width` bits each, as `(groups << 1) | 1` and the bits.
//! A trace's columns are mostly long runs (one thread's rows, one name
//! after another, a level that never changes), so runs are found a block
//! at a time.

/// Values per bit-packed group.
const GROUP: usize = 8;
/// Groups per bit-packed run: a run's header then fits one byte, as the
/// Apache writers keep it.
const MOST_GROUPS: usize = 63;

/// Bits that hold every value up to `max`.
pub fn width_of(max: u64) -> u8 {
    (64 - max.leading_zeros()) as u8
}

/// Appends `v` as an unsigned LEB128 varint.
pub fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many values from the start of `values` equal the first (at least
/// one; `values` is not empty).
#[inline(always)]
fn run_length<T: Copy + Eq>(values: &[T]) -> usize {
    const BLOCK: usize = 16;
    let first = values[0];
    let mut n = 0;
    // Whole blocks compared without an early exit, which the compiler
    // turns into vector compares.
    for block in values.chunks_exact(BLOCK) {
        if !block.iter().fold(true, |all, &v| all & (v == first)) {
            break;
        }
        n += BLOCK;
    }
    n + values[n..].iter().take_while(|&&v| v == first).count()
}

/// A value that the hybrid encodes.
pub trait Level: Copy + Eq {
    /// The value as an unsigned number.
    fn get(self) -> u64;

    /// A whole group of values below 2, one bit each (`None`: not done
    /// faster than value by value).
    #[inline(always)]
    fn bits_of(_group: &[Self]) -> Option<u8> {
        None
    }
}

impl Level for u8 {
    fn get(self) -> u64 {
        u64::from(self)
    }

    /// Eight levels of 0 or 1 (a map's repetition levels) gathered by one
    /// multiplication: byte k's bit lands on bit 56 + k of the product,
    /// and no two partial products share a bit.
    #[inline(always)]
    fn bits_of(group: &[u8]) -> Option<u8> {
        let bytes: [u8; GROUP] = group.try_into().ok()?;
        let ones = u64::from_le_bytes(bytes) & 0x0101_0101_0101_0101;
        Some((ones.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8)
    }
}

impl Level for u32 {
    fn get(self) -> u64 {
        u64::from(self)
    }
}

impl Level for u64 {
    fn get(self) -> u64 {
        self
    }
}

compiled_twice! {
    /// Appends `values`, each below `2^width`, in the hybrid encoding.
    ///
    /// Only a run of at least a group's length can be written as a run (a
    /// shorter one costs more than its bits), so only those are looked for:
    /// every such run holds one of every eight positions tested, and holds
    /// the values four before or four after it. The runs are the longest
    /// ones, in order, each written as a run if what waits to be bit-packed
    /// before it can borrow from it the values its last group lacks.
    pub fn encode<T: Level>(values: &[T], width: u8, out: &mut Vec<u8>) => encode_any
}

/// [`encode`] for any processor.
#[inline(always)]
fn encode_any<T: Level>(values: &[T], width: u8, out: &mut Vec<u8>) {
    let mut packed_from = 0;
    // Values before `done` are in a run found or waiting to be packed.
    let mut done = 0;
    let mut at = 0;
    while at < values.len() {
        let Some((start, end)) = long_run_at(values, done, at) else {
            at += GROUP;
            continue;
        };
        let run = end - start;
        // Values waiting to be bit-packed come in whole groups before a
        // run: the run lends the last group what it lacks.
        let lend = (GROUP - (start - packed_from) % GROUP) % GROUP;
        if run >= lend + GROUP {
            bit_pack(&values[packed_from..start + lend], width, out);
            repeat(values[start].get(), run - lend, width, out);
            packed_from = end;
        }
        done = end;
        at = end;
    }
    bit_pack(&values[packed_from..], width, out);
}

/// The longest run of equal values that holds position `at`, if it is at
/// least a group long (it starts at `done` at the earliest: the value
/// before `done` ends a run or is not in one a group long).
///
/// Such a run holds the three values before `at` (if it starts three or
/// more before it) or the three after (if not, it ends six or more after
/// it): a position where neither is true is passed over without looking
/// for the run's ends (values that take turns, such as a map's
/// repetition levels of rows of one, one and two entries, have a value
/// four before and after, but never four alike in a row).
#[inline(always)]
fn long_run_at<T: Level>(values: &[T], done: usize, at: usize) -> Option<(usize, usize)> {
    let v = values[at];
    let alike = |from: usize| {
        values[from..from + 3]
            .iter()
            .fold(true, |all, &w| all & (w == v))
    };
    let before = at >= done + 3 && alike(at - 3);
    if !before && (at + 3 >= values.len() || !alike(at + 1)) {
        return None;
    }
    let mut start = at;
    while start > done && values[start - 1] == v {
        start -= 1;
    }
    let end = at + run_length(&values[at..]);
    (end - start >= GROUP).then_some((start, end))
}

/// Appends a run of `count` copies of `value`.
pub fn repeat(value: u64, count: usize, width: u8, out: &mut Vec<u8>) {
    varint((count as u64) << 1, out);
    let bytes = usize::from(width).div_ceil(8);
    out.extend_from_slice(&value.to_le_bytes()[..bytes]);
}

/// Appends `values` bit-packed, in runs of at most [`MOST_GROUPS`] groups;
/// the last group is padded with zeros (a reader takes only as many
/// values as the page holds).
#[inline(always)]
fn bit_pack<T: Level>(values: &[T], width: u8, out: &mut Vec<u8>) {
    for run in values.chunks(MOST_GROUPS * GROUP) {
        let groups = run.len().div_ceil(GROUP);
        varint(((groups as u64) << 1) | 1, out);
        for group in run.chunks(GROUP) {
            pack_group(group, width, out);
        }
    }
}

/// Appends one group: eight values of `width` bits are `width` bytes
/// (values missing from a short last group are zeros).
#[inline(always)]
pub fn pack_group<T: Level>(group: &[T], width: u8, out: &mut Vec<u8>) {
    if width == 1 {
        if let Some(bits) = T::bits_of(group) {
            out.push(bits);
            return;
        }
    }
    let width = u32::from(width);
    if width <= 8 {
        let mut bits: u64 = 0;
        for (k, v) in group.iter().enumerate() {
            bits |= v.get() << (k as u32 * width);
        }
        let at = out.len();
        out.extend_from_slice(&bits.to_le_bytes());
        out.truncate(at + width as usize);
        return;
    }
    if width <= 16 {
        let mut bits: u128 = 0;
        for (k, v) in group.iter().enumerate() {
            bits |= u128::from(v.get()) << (k as u32 * width);
        }
        // All sixteen bytes copied, the ones past the group's cut off: a
        // copy of one size, not a call per group.
        let at = out.len();
        out.extend_from_slice(&bits.to_le_bytes());
        out.truncate(at + width as usize);
        return;
    }
    // Wider values (dictionaries of over 65,536 entries, differences of
    // far-apart integers) into a 128-bit accumulator, eight bytes out
    // whenever it holds 64 bits; the group's last bytes (its 8 * width
    // bits end on a byte) copied whole and cut to length.
    let (mut bits, mut held) = (0u128, 0u32);
    for k in 0..GROUP {
        bits |= u128::from(group.get(k).map_or(0, |v| v.get())) << held;
        held += width;
        if held >= 64 {
            out.extend_from_slice(&(bits as u64).to_le_bytes());
            bits >>= 64;
            held -= 64;
        }
    }
    let at = out.len();
    out.extend_from_slice(&(bits as u64).to_le_bytes());
    out.truncate(at + held as usize / 8);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `n` values of `width` bits (the reading side, to check
    /// round trips of every shape of input).
    fn decode(mut bytes: &[u8], width: u8, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        while out.len() < n {
            let mut header = 0u64;
            let mut shift = 0;
            loop {
                let b = bytes[0];
                bytes = &bytes[1..];
                header |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b < 0x80 {
                    break;
                }
            }
            if header & 1 == 0 {
                let len = usize::from(width).div_ceil(8);
                let mut v = [0u8; 8];
                v[..len].copy_from_slice(&bytes[..len]);
                bytes = &bytes[len..];
                out.extend(std::iter::repeat_n(
                    u64::from_le_bytes(v),
                    (header >> 1) as usize,
                ));
            } else {
                let values = (header >> 1) as usize * 8;
                for k in 0..values {
                    let mut v = 0u64;
                    for b in 0..usize::from(width) {
                        let bit = k * usize::from(width) + b;
                        v |= u64::from(bytes[bit / 8] >> (bit % 8) & 1) << b;
                    }
                    out.push(v);
                }
                bytes = &bytes[values * usize::from(width) / 8..];
            }
        }
        assert!(bytes.is_empty(), "{} bytes left", bytes.len());
        out.truncate(n);
        out
    }

    /// The encoding as first written: every value looked at, every run
    /// measured (the output `encode` must keep, byte for byte).
    fn encode_value_by_value(values: &[u64], width: u8, out: &mut Vec<u8>) {
        let mut packed_from = 0;
        let mut i = 0;
        while i < values.len() {
            if values.get(i + 1) != Some(&values[i]) {
                i += 1;
                continue;
            }
            let run = run_length(&values[i..]);
            let lend = (GROUP - (i - packed_from) % GROUP) % GROUP;
            if run >= lend + GROUP {
                bit_pack(&values[packed_from..i + lend], width, out);
                repeat(values[i], run - lend, width, out);
                packed_from = i + run;
            }
            i += run;
        }
        bit_pack(&values[packed_from..], width, out);
    }

    #[test]
    fn only_long_runs_are_looked_for_and_the_bytes_are_the_same() {
        let mut next = crate::test_rng::xorshift(0x51_7cc1_b727_220au64);
        for round in 0..3000 {
            let len = (next() % 300) as usize;
            let kinds = 1 + next() % 4;
            let longest = 1 + next() % 20;
            let mut values = Vec::with_capacity(len);
            while values.len() < len {
                let v = next() % kinds;
                let run = (1 + next() % longest) as usize;
                values.extend(std::iter::repeat_n(v, run.min(len - values.len())));
            }
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            encode(&values, 2, &mut fast);
            encode_value_by_value(&values, 2, &mut slow);
            assert_eq!(fast, slow, "round {round}: {values:?}");
        }
    }

    #[test]
    fn the_specifications_examples() {
        // Parquet's Encodings.md: 0..7 packed 3 bits each.
        let mut out = Vec::new();
        encode(&[0u8, 1, 2, 3, 4, 5, 6, 7], 3, &mut out);
        assert_eq!(out, [0x03, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
        // Ten ones of width 1: a run.
        out.clear();
        encode(&[1u8; 10], 1, &mut out);
        assert_eq!(out, [10 << 1, 1]);
        // A run of a 17-bit value stores three bytes.
        out.clear();
        encode(&[0x1_2345u32; 300], 17, &mut out);
        assert_eq!(out, [0xd8, 0x04, 0x45, 0x23, 0x01]);
    }

    #[test]
    fn runs_after_odd_counts_lend_the_last_group_its_values() {
        let mut values = vec![1u32, 2, 3];
        values.extend([5; 20]);
        values.extend([0, 1]);
        let mut out = Vec::new();
        encode(&values, 3, &mut out);
        // Eight values packed (1, 2, 3 and five fives), a run of fifteen
        // fives, then two packed.
        assert_eq!(out[0], 0x03);
        assert_eq!(&out[4..6], [15 << 1, 5]);
        assert_eq!(out[6], 0x03);
        assert_eq!(out.len(), 10);
        assert_eq!(
            decode(&out, 3, values.len()),
            values.iter().map(|&v| u64::from(v)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_shape_round_trips() {
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for width in [0u8, 1, 2, 5, 8, 13, 16, 17, 24, 32, 33, 47, 63, 64] {
            for len in [0usize, 1, 7, 8, 9, 63, 504, 505, 1000, 5000] {
                let mask = u64::MAX.checked_shr(64 - u32::from(width)).unwrap_or(0);
                let mut values = Vec::with_capacity(len);
                while values.len() < len {
                    let v = next() & mask;
                    let run = 1 + (next() % 40) as usize;
                    values.extend(std::iter::repeat_n(v, run.min(len - values.len())));
                }
                let mut out = Vec::new();
                encode(&values, width, &mut out);
                let back = decode(&out, width, len);
                assert_eq!(back, values, "width {width} len {len}");
                // The build for any processor writes the same bytes.
                let mut any = Vec::new();
                encode_any(&values, width, &mut any);
                assert_eq!(any, out, "width {width} len {len}");
            }
        }
    }

    #[test]
    fn levels_of_one_bit_round_trip() {
        // Repetition levels as maps have them (0 then 1s), and noise.
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1du64);
        for len in [1usize, 7, 8, 9, 16, 63, 64, 505, 4096] {
            let maps: Vec<u8> = (0..len).map(|k| u8::from(k % 3 != 0)).collect();
            let noise: Vec<u8> = (0..len).map(|_| (next() & 1) as u8).collect();
            for values in [maps, noise] {
                let mut out = Vec::new();
                encode(&values, 1, &mut out);
                let back = decode(&out, 1, len);
                assert!(
                    back.iter().zip(&values).all(|(&a, &b)| a == u64::from(b)),
                    "len {len}: {values:?}"
                );
            }
        }
        assert_eq!(u8::bits_of(&[1, 0, 0, 1, 1, 1, 0, 1]), Some(0b1011_1001));
    }

    #[test]
    fn widths_hold_their_maximum() {
        assert_eq!(width_of(0), 0);
        assert_eq!(width_of(1), 1);
        assert_eq!(width_of(2), 2);
        assert_eq!(width_of(255), 8);
        assert_eq!(width_of(256), 9);
    }
}
