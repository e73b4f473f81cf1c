//! Parquet's DELTA_BINARY_PACKED encoding of integers: the first value,
//! then the differences between neighbours in blocks of 128, each block
//! its least difference and four miniblocks of 32 differences above it,
//! bit-packed as narrow as the miniblock's widest. A trace's integers are
//! timestamps that grow by a little, ids that count up, pids and tids that
//! repeat: a few bits a value, where PLAIN takes 64 and a general
//! compressor has to find the pattern again in every page.

use super::hybrid::{varint, width_of};

/// Differences per block.
const BLOCK: usize = 128;
/// Miniblocks per block.
const MINIBLOCKS: usize = 4;
/// Differences per miniblock.
const MINIBLOCK: usize = BLOCK / MINIBLOCKS;

/// `v` zigzag-coded: small magnitudes of either sign are small numbers.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// An integer type of a delta-coded column.
pub trait Delta: Copy + Ord + Into<i64> {
    /// Appends one block of the differences between `values`' neighbours
    /// (two to [`BLOCK`] + 1 values).
    fn block(values: &[Self], out: &mut Vec<u8>);
}

impl Delta for i64 {
    #[inline(always)]
    fn block(values: &[i64], out: &mut Vec<u8>) {
        let mut deltas = [0i64; BLOCK];
        let (from, to) = (&values[..values.len() - 1], &values[1..]);
        let deltas = &mut deltas[..from.len()];
        for ((d, &a), &b) in deltas.iter_mut().zip(from).zip(to) {
            *d = b.wrapping_sub(a);
        }
        // Without a branch per value (differences of interleaved series
        // go up and down at random).
        let least = deltas
            .iter()
            .fold(i64::MAX, |least, &d| if d < least { d } else { least });
        block_of(deltas, least, u64::MAX, out);
    }
}

/// Differences wrap at 32 bits, as readers of the type compute them; the
/// least is found among 32-bit lanes, which a vector compares four at a
/// time where 64-bit ones take several instructions each.
impl Delta for i32 {
    #[inline(always)]
    fn block(values: &[i32], out: &mut Vec<u8>) {
        let mut narrow = [0i32; BLOCK];
        let mut deltas = [0i64; BLOCK];
        let (from, to) = (&values[..values.len() - 1], &values[1..]);
        let narrow = &mut narrow[..from.len()];
        for ((d, &a), &b) in narrow.iter_mut().zip(from).zip(to) {
            *d = b.wrapping_sub(a);
        }
        let least = narrow
            .iter()
            .fold(i32::MAX, |least, &d| if d < least { d } else { least });
        let deltas = &mut deltas[..narrow.len()];
        for (wide, &d) in deltas.iter_mut().zip(narrow.iter()) {
            *wide = i64::from(d);
        }
        block_of(deltas, i64::from(least), u64::from(u32::MAX), out);
    }
}

compiled_twice! {
    /// Appends the blocks of the differences between `values`' neighbours
    /// (`values[0]`: the column's first value, or the last value of the
    /// block before); `range` widened to hold them, found as each block
    /// is encoded, while its values are in the core's cache (a pass of
    /// its own over a row group's values reads them from memory again).
    fn blocks<T: Delta>(values: &[T], range: (T, T), out: &mut Vec<u8>) -> (T, T)
        => blocks_any
}

/// [`blocks`] for any processor.
#[inline(always)]
fn blocks_any<T: Delta>(values: &[T], mut range: (T, T), out: &mut Vec<u8>) -> (T, T) {
    let pairs = values.len().saturating_sub(1);
    for start in (0..pairs).step_by(BLOCK) {
        let block = &values[start..(start + BLOCK).min(pairs) + 1];
        range = widen(range, &block[1..]);
        T::block(block, out);
    }
    range
}

/// Appends `values` of a column of 64-bit integers; their least and
/// greatest (none if there are none).
pub fn encode(values: &[i64], out: &mut Vec<u8>) -> Option<(i64, i64)> {
    encode_with(values, out)
}

/// [`encode`] of a column of 32-bit integers.
pub fn encode32(values: &[i32], out: &mut Vec<u8>) -> Option<(i32, i32)> {
    encode_with(values, out)
}

/// [`encode`] of either type.
fn encode_with<T: Delta>(values: &[T], out: &mut Vec<u8>) -> Option<(T, T)> {
    header(values.len(), values.first().map_or(0, |&v| v.into()), out);
    let &first = values.first()?;
    Some(blocks(values, (first, first), out))
}

/// `range` widened to hold `values`, without a branch per value (a column
/// of interleaved series goes up and down at random).
#[inline(always)]
fn widen<T: Copy + Ord>(range: (T, T), values: &[T]) -> (T, T) {
    values
        .iter()
        .fold(range, |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// A column of integers delta-coded as its values arrive, a block at a
/// time while the block's values are in the core's cache: a row group's
/// values are never held whole, written to memory and read back from it
/// to be encoded.
pub struct Coded {
    /// The values coded so far, less one (the differences in `blocks`).
    pub(crate) differences: usize,
    /// The column's first value.
    pub(crate) first: i64,
    /// The blocks after the header.
    pub(crate) blocks: Vec<u8>,
    /// The least and greatest value (none if there are none).
    pub(crate) range: Option<(i64, i64)>,
    /// Whether the column holds 32-bit integers.
    pub(crate) narrow: bool,
}

impl Coded {
    /// A column of no values yet, of 32-bit integers if `narrow`.
    pub fn new(narrow: bool) -> Coded {
        Coded {
            differences: 0,
            first: 0,
            blocks: Vec::new(),
            range: None,
            narrow,
        }
    }

    /// Codes `values` (the values after those coded, the last of those
    /// coded first if any were) up to the last whole block, or all of
    /// them if `all`; how many of `values` are done with (all but the
    /// last one coded, which the next block starts from).
    pub fn code<T: Delta>(&mut self, values: &[T], all: bool) -> usize {
        let pairs = values.len().saturating_sub(1);
        let upto = if all { pairs } else { pairs / BLOCK * BLOCK };
        let Some(&first) = values.first() else {
            return 0;
        };
        if self.range.is_none() {
            self.first = first.into();
            self.range = Some((self.first, self.first));
        }
        if upto == 0 {
            return 0;
        }
        let (lo, hi) = self.range.unwrap_or_default();
        let start = (first, first);
        let (least, greatest) = blocks(&values[..=upto], start, &mut self.blocks);
        self.range = Some((lo.min(least.into()), hi.max(greatest.into())));
        self.differences += upto;
        upto
    }

    /// The coded column's values, and a new column for the next row
    /// group, with room for as many blocks.
    pub fn take(&mut self) -> Coded {
        let room = self.blocks.len();
        let next = Coded {
            blocks: Vec::with_capacity(room),
            ..Coded::new(self.narrow)
        };
        std::mem::replace(self, next)
    }

    /// Appends the page's values: the header, then the blocks.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        let count = if self.range.is_some() {
            self.differences + 1
        } else {
            0
        };
        header(count, self.first, out);
        out.extend_from_slice(&self.blocks);
    }
}

/// The page's header: block size, miniblocks, values, the first value.
fn header(len: usize, first: i64, out: &mut Vec<u8>) {
    varint(BLOCK as u64, out);
    varint(MINIBLOCKS as u64, out);
    varint(len as u64, out);
    varint(zigzag(first), out);
}

/// Appends one block: its `least` difference, then its differences above
/// it (cut to `mask`) in miniblocks as narrow as each one's widest.
#[inline(always)]
fn block_of(deltas: &[i64], least: i64, mask: u64, out: &mut Vec<u8>) {
    varint(zigzag(least), out);
    let widths_at = out.len();
    out.extend_from_slice(&[0; MINIBLOCKS]);
    for (m, mini) in deltas.chunks(MINIBLOCK).enumerate() {
        // Each difference above the least, and zeros after the last.
        // Their bits gathered as they are made, not read back.
        let (mut above, mut all) = ([0u64; MINIBLOCK], 0);
        for (a, &d) in above.iter_mut().zip(mini) {
            *a = d.wrapping_sub(least) as u64 & mask;
            all |= *a;
        }
        let width = width_of(all);
        out[widths_at + m] = width;
        pack_miniblock(&above, u32::from(width), out);
    }
}

/// Appends a miniblock's values packed `width` bits each, least
/// significant bit first: `4 * width` bytes, by the packer of that width
/// (every shift and word position fixed: no count carried from value to
/// value).
#[inline(always)]
fn pack_miniblock(values: &[u64; MINIBLOCK], width: u32, out: &mut Vec<u8>) {
    macro_rules! widths {
        ($($w:literal)*) => {
            match width {
                $($w => pack_width::<$w>(values, out),)*
                _ => {}
            }
        };
    }
    widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28
        29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55
        56 57 58 59 60 61 62 63 64);
}

/// Appends 32 values below `2^W` packed `W` bits each: value `k` at bit
/// `k * W`, its high bits in the next word when it crosses one; the words
/// copied out whole and the copy cut to `4 * W` bytes (an odd `W` ends
/// halfway through a word).
#[inline(always)]
fn pack_width<const W: usize>(values: &[u64; MINIBLOCK], out: &mut Vec<u8>) {
    let mut words = [0u64; MINIBLOCK];
    macro_rules! each {
        ($($k:literal)*) => {$({
            let (word, at) = ($k * W / 64, $k * W % 64);
            words[word] |= values[$k] << at;
            if at + W > 64 {
                words[word + 1] |= values[$k] >> (64 - at);
            }
        })*};
    }
    each!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    // The words' bytes laid out in place, then appended at once (one
    // check of the room, one copy of a length known here).
    let mut bytes = [0u8; 8 * MINIBLOCK];
    for (to, w) in bytes.chunks_exact_mut(8).zip(&words[..(4 * W).div_ceil(8)]) {
        to.copy_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&bytes[..4 * W]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`encode`] as the build for any processor writes it.
    fn any_build<T: Delta>(values: &[T], out: &mut Vec<u8>) {
        header(values.len(), values.first().map_or(0, |&v| v.into()), out);
        if let Some(&first) = values.first() {
            blocks_any(values, (first, first), out);
        }
    }

    /// Reads an unsigned varint from the front of `bytes`.
    fn read_varint(bytes: &mut &[u8]) -> u64 {
        let mut v = 0;
        let mut shift = 0;
        loop {
            let b = bytes[0];
            *bytes = &bytes[1..];
            v |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                return v;
            }
        }
    }

    fn unzigzag(v: u64) -> i64 {
        (v >> 1) as i64 ^ -((v & 1) as i64)
    }

    /// Decodes as the format's readers do, at `bits` bits.
    fn decode(mut bytes: &[u8], bits: u32) -> Vec<i64> {
        assert_eq!(read_varint(&mut bytes), BLOCK as u64);
        assert_eq!(read_varint(&mut bytes), MINIBLOCKS as u64);
        let total = read_varint(&mut bytes) as usize;
        let mut out = vec![unzigzag(read_varint(&mut bytes))];
        while out.len() < total {
            let least = unzigzag(read_varint(&mut bytes));
            let widths: Vec<u32> = bytes[..MINIBLOCKS].iter().map(|&w| u32::from(w)).collect();
            bytes = &bytes[MINIBLOCKS..];
            for width in widths {
                if out.len() >= total {
                    break;
                }
                let len = MINIBLOCK * width as usize / 8;
                let packed = &bytes[..len];
                bytes = &bytes[len..];
                for k in 0..MINIBLOCK {
                    let mut v = 0u64;
                    for b in 0..width as usize {
                        let bit = k * width as usize + b;
                        v |= u64::from(packed[bit / 8] >> (bit % 8) & 1) << b;
                    }
                    if out.len() < total {
                        let last = *out.last().unwrap();
                        let next = if bits == 64 {
                            last.wrapping_add(least).wrapping_add(v as i64)
                        } else {
                            i64::from(
                                (last as i32)
                                    .wrapping_add(least as i32)
                                    .wrapping_add(v as i32),
                            )
                        };
                        out.push(next);
                    }
                }
            }
        }
        assert!(bytes.is_empty(), "{} bytes left", bytes.len());
        out.truncate(total);
        out
    }

    #[test]
    fn the_specifications_example() {
        // Parquet's Encodings.md: 1, 2, 3, 4, 5 are deltas of 1 from 1 (a
        // least delta of 1, every miniblock of width 0).
        let mut out = Vec::new();
        encode(&[1, 2, 3, 4, 5], &mut out);
        assert_eq!(out, [0x80, 0x01, 4, 5, 2, 2, 0, 0, 0, 0]);
    }

    #[test]
    fn every_shape_round_trips() {
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1du64);
        for len in [0usize, 1, 2, 33, 128, 129, 257, 1000] {
            for spread in [0u64, 1, 300, 1 << 17, 1 << 33, 1 << 47, u64::MAX] {
                let mut values = Vec::with_capacity(len);
                let mut v = next() as i64;
                for _ in 0..len {
                    values.push(v);
                    let step = if spread == 0 { 0 } else { next() % spread };
                    v = v.wrapping_add((step as i64).wrapping_sub((spread / 3) as i64));
                }
                let mut out = Vec::new();
                let range = encode(&values, &mut out);
                assert_eq!(decode(&out, 64), values, "len {len} spread {spread}");
                let least = values.iter().copied().min();
                assert_eq!(range, least.zip(values.iter().copied().max()));
                // The build for any processor writes the same bytes.
                let mut any = Vec::new();
                any_build(&values, &mut any);
                assert_eq!(any, out, "len {len} spread {spread}");
                let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
                out.clear();
                let range = encode32(&narrow, &mut out);
                let least = narrow.iter().copied().min();
                assert_eq!(range, least.zip(narrow.iter().copied().max()));
                assert_eq!(
                    decode(&out, 32),
                    narrow.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
                    "32-bit, len {len} spread {spread}"
                );
                let mut any = Vec::new();
                any_build(&narrow, &mut any);
                assert_eq!(any, out, "32-bit, len {len} spread {spread}");
            }
        }
        let extremes = [i64::MIN, i64::MAX, 0, -1, i64::MIN, 1];
        let mut out = Vec::new();
        encode(&extremes, &mut out);
        assert_eq!(decode(&out, 64), extremes);
    }
}
