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
//! numbers as columns (a column per field: a slice's thread, its end as
//! the difference from the slice before in the block, its length; a
//! depth and the distance to the parent), each column's numbers in the
//! fewest of 1, 2, 4 or 8 bytes that hold its largest (a slice ends near
//! the one before, a parent arrives soon after its child): a few bytes a
//! slice, written and read with no test per byte, where varints took a
//! dependent test per byte to read back. A block ends with its length,
//! so that either file can be read backwards a block at a time. The
//! results are written in the order they are made (last block first,
//! and in a block its last slice first), and read backwards.
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
    /// The block being written: each slice's thread slot plus one, begin
    /// and end.
    slots: Vec<u64>,
    begins: Vec<i64>,
    ends: Vec<i64>,
    /// The block's bytes, and each column's numbers, made when it is
    /// written (room kept).
    bytes: Vec<u8>,
    column: Vec<u64>,
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
            slots: Vec::with_capacity(BLOCK),
            begins: Vec::with_capacity(BLOCK),
            ends: Vec::with_capacity(BLOCK),
            bytes: Vec::new(),
            column: Vec::with_capacity(BLOCK),
            count: 0,
        })
    }

    /// Appends the next slice to arrive: its thread slot ([`NO_THREAD`]
    /// for none), begin and end in nanoseconds. Compiled into the scan's
    /// loop (one call a slice costs as much as the appending).
    #[inline(always)]
    pub fn push(&mut self, slot: u32, begin: i64, end: i64) -> io::Result<()> {
        // The slot plus one, so that NO_THREAD is 0.
        self.slots.push(u64::from(slot.wrapping_add(1)));
        self.begins.push(begin);
        self.ends.push(end);
        self.count += 1;
        if self.slots.len() == BLOCK {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Writes the block being written, with its trailer, its slices last
    /// first (the order [`Intervals::resolve`] reads them in): its last
    /// end, then the columns of slots, of ends (each the difference from
    /// the end after) and of lengths.
    #[cold]
    #[inline(never)]
    fn flush_block(&mut self) -> io::Result<()> {
        let n = self.slots.len();
        if n == 0 {
            return Ok(());
        }
        let bytes = &mut self.bytes;
        bytes.clear();
        let mut after = self.ends[n - 1];
        bytes.extend_from_slice(&after.to_le_bytes());
        let column = &mut self.column;
        column.clear();
        column.extend(self.slots.iter().rev());
        put_column(bytes, column);
        column.clear();
        column.extend(self.ends.iter().rev().map(|&end| {
            let step = zigzag(after.wrapping_sub(end));
            after = end;
            step
        }));
        put_column(bytes, column);
        column.clear();
        column.extend(
            self.ends
                .iter()
                .zip(&self.begins)
                .rev()
                .map(|(&end, &begin)| zigzag(end.wrapping_sub(begin))),
        );
        put_column(bytes, column);
        write_block(&mut self.file, bytes, n)?;
        self.slots.clear();
        self.begins.clear();
        self.ends.clear();
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
        let mut columns = Columns::default();
        let (mut depths, mut distances) = (Vec::with_capacity(BLOCK), Vec::with_capacity(BLOCK));
        let mut at = input.seek(SeekFrom::End(0))?;
        let mut hi = self.count;
        while at > 0 {
            let n = read_block_before(&mut input, &mut at, &mut bytes)?;
            let mut after = columns.read_intervals(&bytes, n)?;
            let lo = hi
                .checked_sub(n as u64)
                .ok_or_else(|| corrupt("more slices than were written"))?;
            depths.clear();
            distances.clear();
            let Columns([slots, steps, lengths]) = &columns;
            // Last first, as written.
            for (k, ((&slot, &step), &length)) in slots.iter().zip(steps).zip(lengths).enumerate() {
                let index = hi - 1 - k as u64;
                let end = after.wrapping_sub(unzigzag(step));
                let begin = end.wrapping_sub(unzigzag(length));
                after = end;
                let place = match (slot as usize).checked_sub(1) {
                    None => Place {
                        depth: 0,
                        parent: None,
                    },
                    Some(slot) => {
                        if threads.len() <= slot {
                            threads.resize_with(slot + 1, || (i64::MAX, Vec::new()));
                        }
                        let (last, stack) = &mut threads[slot];
                        if end > *last {
                            out_of_order += 1;
                        }
                        *last = end;
                        place_in(stack, begin, end, index)
                    }
                };
                // As computed, last first. A parent arrives after its
                // child: the distance, 0 for none.
                depths.push(u64::from(place.depth));
                distances.push(place.parent.map_or(0, |p| p - index));
            }
            bytes.clear();
            put_column(&mut bytes, &depths);
            put_column(&mut bytes, &distances);
            write_block(&mut output, &bytes, n)?;
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
            columns: Columns::default(),
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

/// The columns of a block being read (room kept from block to block).
#[derive(Default)]
struct Columns([Vec<u64>; 3]);

impl Columns {
    /// Reads the columns of an [`Intervals`] block of `n` slices (its
    /// slots plus one, steps and lengths, last slice first); its last
    /// end.
    fn read_intervals(&mut self, bytes: &[u8], n: usize) -> io::Result<i64> {
        let (last, mut r) = bytes
            .split_first_chunk::<8>()
            .ok_or_else(|| corrupt("a block cut short"))?;
        for column in &mut self.0 {
            take_column(&mut r, n, column)?;
        }
        Ok(i64::from_le_bytes(*last))
    }
}

/// Appends a column of numbers: the bytes each takes (the fewest of 1,
/// 2, 4 and 8 that hold the largest), then each in that many bytes,
/// little-endian.
fn put_column(out: &mut Vec<u8>, values: &[u64]) {
    let width = width_of(values.iter().fold(0, |all, &v| all | v));
    out.push(width as u8);
    out.reserve(values.len() * width);
    match width {
        1 => out.extend(values.iter().map(|&v| v as u8)),
        2 => values
            .iter()
            .for_each(|&v| out.extend_from_slice(&(v as u16).to_le_bytes())),
        4 => values
            .iter()
            .for_each(|&v| out.extend_from_slice(&(v as u32).to_le_bytes())),
        _ => values
            .iter()
            .for_each(|&v| out.extend_from_slice(&v.to_le_bytes())),
    }
}

/// The bytes a [`put_column`] number takes when the largest is `max`.
fn width_of(max: u64) -> usize {
    match max {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    }
}

/// Takes a column of `n` numbers ([`put_column`]) from the front of `r`
/// into `out`.
fn take_column(r: &mut &[u8], n: usize, out: &mut Vec<u64>) -> io::Result<()> {
    let (&width, rest) = r
        .split_first()
        .ok_or_else(|| corrupt("a column cut short"))?;
    let width = usize::from(width);
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Err(corrupt("a column of numbers of no known width"));
    }
    let bytes = rest
        .get(..n * width)
        .ok_or_else(|| corrupt("a column cut short"))?;
    out.clear();
    match width {
        1 => out.extend(bytes.iter().map(|&b| u64::from(b))),
        2 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|c| u64::from(u16::from_le_bytes([c[0], c[1]]))),
        ),
        4 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ),
        _ => out.extend(
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("eight bytes"))),
        ),
    }
    *r = &rest[n * width..];
    Ok(())
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
    columns: Columns,
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
        let mut r = &self.bytes[..];
        let Columns([depths, distances, _]) = &mut self.columns;
        take_column(&mut r, n, depths)?;
        take_column(&mut r, n, distances)?;
        // Written last first.
        self.block.clear();
        let first = self.taken + n as u64 - 1;
        for (k, (&depth, &distance)) in depths.iter().zip(distances.iter()).enumerate().rev() {
            let index = first - k as u64;
            self.block.push(Place {
                depth: u32::try_from(depth).map_err(io::Error::other)?,
                parent: (distance > 0).then(|| index + distance),
            });
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

    /// Columns whose largest number takes 1, 2, 4 and 8 bytes read back
    /// as written, one after another, each in the width its largest
    /// needs; a width no column has, or a column cut short, is an error.
    #[test]
    fn columns_read_back_in_the_width_their_largest_needs() {
        let columns: [&[u64]; 5] = [
            &[0, 1, 255],
            &[256, 3, 65535],
            &[65536, 0, u64::from(u32::MAX)],
            &[1 << 32, 7, u64::MAX],
            &[],
        ];
        let mut bytes = Vec::new();
        for c in columns {
            put_column(&mut bytes, c);
        }
        let widths = [1u8, 2, 4, 8, 1];
        let sizes = widths.iter().map(|&w| 1 + 3 * usize::from(w));
        assert_eq!(bytes.len(), sizes.sum::<usize>() - 3);
        let mut r = &bytes[..];
        let mut out = Vec::new();
        for (c, w) in columns.iter().zip(widths) {
            assert_eq!(r[0], w);
            take_column(&mut r, c.len(), &mut out).unwrap();
            assert_eq!(&out[..], *c);
        }
        assert!(r.is_empty());
        assert!(take_column(&mut &[3u8, 0, 0, 0][..], 1, &mut out).is_err());
        assert!(take_column(&mut &[2u8, 0][..], 1, &mut out).is_err());
        assert!(take_column(&mut &[][..], 0, &mut out).is_err());
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
