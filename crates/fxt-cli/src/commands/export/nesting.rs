//! Depth and parent of every slice, in memory bounded by the nesting depth
//! (not by the trace), with two temporary files.
//!
//! A slice is known when it ends: a duration end closes its begin, and a
//! complete event is written when its scope ends, after the slices inside
//! it. So slices arrive in *end* order on their thread, children before
//! their parent, and a child's depth is only known once every ancestor has
//! arrived. Read backwards, that order puts every parent before its
//! children: a stack per thread gives depth and parent directly.
//!
//! The scan writes each slice's thread, begin and end, in arrival order, to
//! a temporary file ([`Intervals`]); [`Intervals::resolve`] reads it
//! backwards a block at a time and writes each slice's depth and parent to
//! a second file; the export reads that one in arrival order as it writes
//! the slices in the same order ([`Nesting`]).
//!
//! Both files are written in blocks of [`BLOCK`] slices, each block's
//! numbers as variable-length differences from the slice before in the
//! block (a slice ends near the one before, a parent arrives soon after
//! its child), followed by the block's length: a few bytes a slice where
//! fixed fields took 20 and 12, and a block is found from the end of the
//! one after it, so that either file can be read backwards a block at a
//! time. The results are written in the order they are made (last block
//! first, and in a block its last slice first), and read backwards.
//!
//! A parent *contains* its child: it begins no later and ends no earlier
//! (equal times nest as recorded: the later record is the parent). A slice
//! that arrives out of end order on its thread is counted: its depth and
//! parent are then those of the nearest enclosing slice arriving after it.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Marks a slice that has no place in a thread's nesting (async spans).
pub const NO_THREAD: u32 = u32::MAX;
/// Slices per block of either file: few enough that a block's slices,
/// decoded, stay in the core's own cache while they are read back.
const BLOCK: usize = 8 * 1024;
/// Bytes of a block's trailer: its length in bytes and in slices.
const TRAILER: usize = 8;

/// The slices of one input, in arrival order, being written.
pub struct Intervals {
    file: BufWriter<File>,
    /// The block being written, and the slices in it.
    block: Encoded,
    in_block: usize,
    /// The end of the slice before in the block.
    last_end: i64,
    count: u64,
}

/// One slice's place in its thread's nesting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// 0 = outermost on its thread.
    pub depth: u32,
    /// The arrival index of the enclosing slice.
    pub parent: Option<u64>,
}

/// An interval on a thread's stack.
struct Open {
    begin: i64,
    end: i64,
    index: u64,
}

impl Intervals {
    /// Starts a list in a temporary file in `dir` (removed when dropped).
    pub fn new(dir: &Path) -> io::Result<Intervals> {
        Ok(Intervals {
            file: BufWriter::with_capacity(1 << 16, tempfile::tempfile_in(dir)?),
            block: Encoded::new(),
            in_block: 0,
            last_end: 0,
            count: 0,
        })
    }

    /// Appends the next slice to arrive: its thread slot ([`NO_THREAD`]
    /// for none), begin and end in nanoseconds. Compiled into the scan's
    /// loop (one call a slice costs as much as the encoding).
    #[inline(always)]
    pub fn push(&mut self, slot: u32, begin: i64, end: i64) -> io::Result<()> {
        self.block.put([
            // The slot plus one, so that NO_THREAD is 0 and one byte.
            u64::from(slot.wrapping_add(1)),
            zigzag(end.wrapping_sub(self.last_end)),
            zigzag(end.wrapping_sub(begin)),
        ]);
        self.last_end = end;
        self.in_block += 1;
        self.count += 1;
        if self.in_block == BLOCK {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Writes the block being written, with its trailer.
    #[cold]
    #[inline(never)]
    fn flush_block(&mut self) -> io::Result<()> {
        if self.in_block == 0 {
            return Ok(());
        }
        write_block(&mut self.file, self.block.bytes(), self.in_block)?;
        self.block.clear();
        self.in_block = 0;
        self.last_end = 0;
        Ok(())
    }

    /// Computes every slice's depth and parent; returns them for reading
    /// in arrival order, and the number of slices out of end order.
    pub fn resolve(mut self, dir: &Path) -> io::Result<(Nesting, u64)> {
        self.flush_block()?;
        let mut input = self.file.into_inner().map_err(|e| e.into_error())?;
        let mut output = BufWriter::with_capacity(1 << 16, tempfile::tempfile_in(dir)?);
        // Per thread slot (numbered from 0 in order of first use: dense,
        // indexed without hashing): the last end seen and the stack.
        let mut threads: Vec<(i64, Vec<Open>)> = Vec::new();
        let mut out_of_order = 0u64;
        let mut bytes = Vec::new();
        let mut intervals: Vec<(u32, i64, i64)> = Vec::with_capacity(BLOCK);
        let mut encoded = Encoded::new();
        let mut at = input.seek(SeekFrom::End(0))?;
        let mut hi = self.count;
        while at > 0 {
            let n = read_block_before(&mut input, &mut at, &mut bytes)?;
            decode_intervals(&bytes, n, &mut intervals)?;
            let lo = hi
                .checked_sub(n as u64)
                .ok_or_else(|| corrupt("more slices than were written"))?;
            encoded.clear();
            for (i, &(slot, begin, end)) in intervals.iter().enumerate().rev() {
                let place = if slot == NO_THREAD {
                    Place {
                        depth: 0,
                        parent: None,
                    }
                } else {
                    let slot = slot as usize;
                    if threads.len() <= slot {
                        threads.resize_with(slot + 1, || (i64::MAX, Vec::new()));
                    }
                    let (last, stack) = &mut threads[slot];
                    if end > *last {
                        out_of_order += 1;
                    }
                    *last = end;
                    place_in(stack, begin, end, lo + i as u64)
                };
                // As computed, last first. A parent arrives after its
                // child: the distance, 0 for none.
                let distance = place.parent.map_or(0, |p| p - (lo + i as u64));
                encoded.put([u64::from(place.depth), distance]);
            }
            write_block(&mut output, encoded.bytes(), n)?;
            hi = lo;
        }
        if hi != 0 {
            return Err(corrupt("fewer slices than were written"));
        }
        let mut output = output.into_inner().map_err(|e| e.into_error())?;
        let end = output.seek(SeekFrom::End(0))?;
        let nesting = Nesting {
            input: output,
            at: end,
            next: 0,
            bytes: Vec::new(),
            block: Vec::new(),
            taken: 0,
            left: self.count,
        };
        Ok((nesting, out_of_order))
    }
}

/// The slice `index` on a thread whose stack holds the slices arrived
/// after it that may enclose it, outermost first.
fn place_in(stack: &mut Vec<Open>, begin: i64, end: i64, index: u64) -> Place {
    while let Some(top) = stack.last() {
        // One branch, not two: which way it goes follows the data.
        if (top.begin <= begin) & (end <= top.end) {
            break;
        }
        stack.pop();
    }
    let place = Place {
        depth: stack.len() as u32,
        parent: stack.last().map(|t| t.index),
    };
    stack.push(Open { begin, end, index });
    place
}

/// Writes a block of `n` slices and its trailer.
fn write_block(file: &mut impl Write, bytes: &[u8], n: usize) -> io::Result<()> {
    let len = u32::try_from(bytes.len()).map_err(io::Error::other)?;
    file.write_all(bytes)?;
    file.write_all(&len.to_le_bytes())?;
    file.write_all(&(n as u32).to_le_bytes())
}

/// Reads the block that ends at `at` into `bytes`, and moves `at` to its
/// start; the number of slices in it.
fn read_block_before(file: &mut File, at: &mut u64, bytes: &mut Vec<u8>) -> io::Result<usize> {
    let mut trailer = [0u8; TRAILER];
    let trailer_at = at
        .checked_sub(TRAILER as u64)
        .ok_or_else(|| corrupt("a block without its trailer"))?;
    file.seek(SeekFrom::Start(trailer_at))?;
    file.read_exact(&mut trailer)?;
    let len = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let n = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]) as usize;
    if n > BLOCK {
        return Err(corrupt("a block of more slices than a block holds"));
    }
    let start = trailer_at
        .checked_sub(u64::from(len))
        .ok_or_else(|| corrupt("a block longer than the file"))?;
    bytes.resize(len as usize, 0);
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(bytes)?;
    *at = start;
    Ok(n)
}

/// The `n` intervals (slot, begin, end) of an [`Intervals`] block.
fn decode_intervals(bytes: &[u8], n: usize, out: &mut Vec<(u32, i64, i64)>) -> io::Result<()> {
    out.clear();
    let mut r = bytes;
    let mut last_end = 0i64;
    for _ in 0..n {
        let slot = (take_varint(&mut r)? as u32).wrapping_sub(1);
        let end = last_end.wrapping_add(unzigzag(take_varint(&mut r)?));
        let begin = end.wrapping_sub(unzigzag(take_varint(&mut r)?));
        last_end = end;
        out.push((slot, begin, end));
    }
    Ok(())
}

/// A block being encoded, in room for a whole block made once: each
/// number is written in place, with no check of the room per byte and no
/// copy of a slice's bytes made apart.
struct Encoded {
    room: Vec<u8>,
    len: usize,
}

/// Bytes of the longest [`put_varint`] number.
const MAX_VARINT: usize = 10;
/// Numbers a slice has in either file, at most.
const NUMBERS: usize = 3;

impl Encoded {
    fn new() -> Encoded {
        Encoded {
            room: vec![0; BLOCK * NUMBERS * MAX_VARINT],
            len: 0,
        }
    }

    /// Appends one slice's numbers (at most [`NUMBERS`]; at most
    /// [`BLOCK`] slices between clears).
    #[inline(always)]
    fn put<const N: usize>(&mut self, numbers: [u64; N]) {
        let room = &mut self.room[self.len..self.len + N * MAX_VARINT];
        let mut at = 0;
        for v in numbers {
            at = put_varint(room, at, v);
        }
        self.len += at;
    }

    /// The block's bytes.
    fn bytes(&self) -> &[u8] {
        &self.room[..self.len]
    }

    /// Starts the next block.
    fn clear(&mut self) {
        self.len = 0;
    }
}

/// Writes `v` in LEB128 (seven bits a byte, the low ones first) into
/// `out` at `at`; where it ends.
#[inline(always)]
fn put_varint(out: &mut [u8], mut at: usize, mut v: u64) -> usize {
    while v >= 0x80 {
        out[at] = v as u8 | 0x80;
        v >>= 7;
        at += 1;
    }
    out[at] = v as u8;
    at + 1
}

/// Takes a [`put_varint`] number from the front of `r`.
#[inline]
fn take_varint(r: &mut &[u8]) -> io::Result<u64> {
    // Most numbers are differences that fit one or two bytes.
    match *r {
        [b, ref rest @ ..] if *b < 0x80 => {
            *r = rest;
            Ok(u64::from(*b))
        }
        [b0, b1, ref rest @ ..] if *b1 < 0x80 => {
            *r = rest;
            Ok(u64::from(b0 & 0x7f) | u64::from(*b1) << 7)
        }
        _ => take_long_varint(r),
    }
}

/// [`take_varint`] of a number of more than one byte.
#[inline(never)]
fn take_long_varint(r: &mut &[u8]) -> io::Result<u64> {
    let mut v = 0u64;
    for shift in (0..70).step_by(7) {
        let (&b, rest) = r
            .split_first()
            .ok_or_else(|| corrupt("a number cut short"))?;
        *r = rest;
        v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(corrupt("a number too long"))
}

/// A signed difference as an unsigned number, small either way.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The inverse of [`zigzag`].
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A temporary file that does not read back as written.
fn corrupt(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("nesting file: {what}"))
}

/// The error of a slice asked for past the last.
#[cold]
fn more_slices() -> io::Error {
    io::Error::other("more slices than the scan found (the input changed while read?)")
}

/// Every slice's place, read in arrival order.
pub struct Nesting {
    input: File,
    /// Where the block before the ones read ends.
    at: u64,
    /// The next place of `block` to hand out.
    next: usize,
    bytes: Vec<u8>,
    block: Vec<Place>,
    /// Slices handed out before `block`'s first.
    taken: u64,
    left: u64,
}

impl Nesting {
    /// The place of the next slice to arrive.
    #[inline]
    pub fn next_place(&mut self) -> io::Result<Place> {
        if self.left == 0 {
            return Err(more_slices());
        }
        if self.next == self.block.len() {
            self.read_block()?;
        }
        self.left -= 1;
        let place = self.block[self.next];
        self.next += 1;
        Ok(place)
    }

    /// Reads the next block of places (written last first).
    #[cold]
    fn read_block(&mut self) -> io::Result<()> {
        self.taken += self.block.len() as u64;
        let n = read_block_before(&mut self.input, &mut self.at, &mut self.bytes)?;
        if n == 0 {
            return Err(corrupt("an empty block"));
        }
        // Each place straight to where it is read from, last first.
        let empty = Place {
            depth: 0,
            parent: None,
        };
        self.block.clear();
        self.block.resize(n, empty);
        let mut r = &self.bytes[..];
        for (i, place) in self.block.iter_mut().enumerate().rev() {
            let depth = u32::try_from(take_varint(&mut r)?).map_err(io::Error::other)?;
            let distance = take_varint(&mut r)?;
            let index = self.taken + i as u64;
            *place = Place {
                depth,
                parent: (distance > 0).then(|| index + distance),
            };
        }
        self.next = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// Arrival order of complete events written at scope end: a(0..10)
    /// holding b(1..4) holding c(2..3), then d(5..9); and e(20..30) alone;
    /// another thread's f(0..100) interleaved.
    #[test]
    fn post_order_gives_depth_and_parent() {
        let dir = std::env::temp_dir();
        let mut list = Intervals::new(&dir).unwrap();
        let arrivals = [
            (0, 2, 3),          // 0 c
            (1, 0, 100),        // 1 f, other thread
            (0, 1, 4),          // 2 b
            (0, 5, 9),          // 3 d
            (0, 0, 10),         // 4 a
            (NO_THREAD, 0, 50), // 5 async
            (0, 20, 30),        // 6 e
        ];
        for (slot, b, e) in arrivals {
            list.push(slot, b, e).unwrap();
        }
        let (mut nesting, out_of_order) = list.resolve(&dir).unwrap();
        let places: Vec<(u32, Option<u64>)> = (0..arrivals.len())
            .map(|_| {
                let p = nesting.next_place().unwrap();
                (p.depth, p.parent)
            })
            .collect();
        assert_eq!(
            places,
            [
                (2, Some(2)),
                (0, None),
                (1, Some(4)),
                (1, Some(4)),
                (0, None),
                (0, None),
                (0, None)
            ]
        );
        assert_eq!(out_of_order, 0);
        assert!(nesting.next_place().is_err());
    }

    /// Several blocks of slices on a few threads (complete events written
    /// at scope end, some out of order, some async, times far apart and
    /// going back): the places read back are those the stacks give with
    /// everything in memory.
    #[test]
    fn places_read_back_across_blocks_as_computed_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut list = Intervals::new(dir.path()).unwrap();
        let mut arrivals = Vec::new();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut t = [0i64; 3];
        while arrivals.len() < 3 * BLOCK + 17 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let slot = (x % 3) as u32;
            let base = &mut t[slot as usize];
            // A parent around two children, or a slice alone.
            let step = match x % 50 {
                0 => 1 << 45,
                1 => -(1 << 40),
                _ => (x >> 8) as i64 % 1000,
            };
            *base = base.wrapping_add(step);
            let b = *base;
            arrivals.push((slot, b + 1, b + 2));
            arrivals.push((slot, b + 3, b + 5));
            if x.is_multiple_of(7) {
                arrivals.push((slot, b + 4, b + 4)); // out of order
            }
            if x.is_multiple_of(5) {
                arrivals.push((NO_THREAD, b, b + 1_000_000));
            }
            arrivals.push((slot, b, b + 6));
            *base += 7;
        }
        for &(slot, b, e) in &arrivals {
            list.push(slot, b, e).unwrap();
        }
        let (mut nesting, out_of_order) = list.resolve(dir.path()).unwrap();
        let mut stacks: FxHashMap<u32, Vec<Open>> = FxHashMap::default();
        let mut expected = vec![(0, None); arrivals.len()];
        for (i, &(slot, b, e)) in arrivals.iter().enumerate().rev() {
            if slot != NO_THREAD {
                let p = place_in(stacks.entry(slot).or_default(), b, e, i as u64);
                expected[i] = (p.depth, p.parent);
            }
        }
        let places: Vec<(u32, Option<u64>)> = (0..arrivals.len())
            .map(|_| {
                let p = nesting.next_place().unwrap();
                (p.depth, p.parent)
            })
            .collect();
        assert_eq!(places, expected);
        assert!(expected.iter().any(|&(depth, _)| depth > 0));
        assert!(out_of_order > 0);
        assert!(nesting.next_place().is_err());
    }

    #[test]
    fn out_of_order_arrivals_are_counted() {
        let dir = std::env::temp_dir();
        let mut list = Intervals::new(&dir).unwrap();
        list.push(0, 0, 10).unwrap();
        list.push(0, 2, 3).unwrap(); // inside the first, but after it
        let (_, out_of_order) = list.resolve(&dir).unwrap();
        assert_eq!(out_of_order, 1);
    }
}
