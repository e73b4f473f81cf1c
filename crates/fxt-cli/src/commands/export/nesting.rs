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
//! a second file, by arrival index; the export reads that one forwards as
//! it writes the slices in the same order ([`Nesting`]).
//!
//! A parent *contains* its child: it begins no later and ends no earlier
//! (equal times nest as recorded: the later record is the parent). A slice
//! that arrives out of end order on its thread is counted: its depth and
//! parent are then those of the nearest enclosing slice arriving after it.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use rustc_hash::FxHashMap;

/// Marks a slice that has no place in a thread's nesting (async spans).
pub const NO_THREAD: u32 = u32::MAX;
/// Bytes of one interval: thread slot (u32), begin, end (i64).
const INTERVAL: usize = 20;
/// Bytes of one result: depth (u32), parent's arrival index + 1 (u64, 0 = none).
const RESULT: usize = 12;
/// Intervals read backwards at a time.
const BLOCK: usize = 64 * 1024;

/// The slices of one input, in arrival order, being written.
pub struct Intervals {
    file: BufWriter<File>,
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
            count: 0,
        })
    }

    /// Appends the next slice to arrive: its thread slot ([`NO_THREAD`]
    /// for none), begin and end in nanoseconds.
    pub fn push(&mut self, slot: u32, begin: i64, end: i64) -> io::Result<()> {
        let mut b = [0u8; INTERVAL];
        b[..4].copy_from_slice(&slot.to_le_bytes());
        b[4..12].copy_from_slice(&begin.to_le_bytes());
        b[12..].copy_from_slice(&end.to_le_bytes());
        self.count += 1;
        self.file.write_all(&b)
    }

    /// Computes every slice's depth and parent; returns them for reading
    /// in arrival order, and the number of slices out of end order.
    pub fn resolve(self, dir: &Path) -> io::Result<(Nesting, u64)> {
        let mut input = self.file.into_inner().map_err(|e| e.into_error())?;
        let mut output = tempfile::tempfile_in(dir)?;
        let mut stacks: FxHashMap<u32, Vec<Open>> = FxHashMap::default();
        let mut last_end: FxHashMap<u32, i64> = FxHashMap::default();
        let mut out_of_order = 0u64;
        let mut block = vec![0u8; BLOCK * INTERVAL];
        let mut results = vec![0u8; BLOCK * RESULT];
        let mut hi = self.count;
        while hi > 0 {
            let lo = hi.saturating_sub(BLOCK as u64);
            let n = (hi - lo) as usize;
            input.seek(SeekFrom::Start(lo * INTERVAL as u64))?;
            input.read_exact(&mut block[..n * INTERVAL])?;
            for i in (0..n).rev() {
                let r = &block[i * INTERVAL..(i + 1) * INTERVAL];
                let slot = u32::from_le_bytes(word(r, 0));
                let begin = i64::from_le_bytes(word(r, 4));
                let end = i64::from_le_bytes(word(r, 12));
                let place = if slot == NO_THREAD {
                    Place {
                        depth: 0,
                        parent: None,
                    }
                } else {
                    let last = last_end.entry(slot).or_insert(i64::MAX);
                    if end > *last {
                        out_of_order += 1;
                    }
                    *last = end;
                    let stack = stacks.entry(slot).or_default();
                    place_in(stack, begin, end, lo + i as u64)
                };
                let out = &mut results[i * RESULT..(i + 1) * RESULT];
                out[..4].copy_from_slice(&place.depth.to_le_bytes());
                out[4..].copy_from_slice(&place.parent.map_or(0, |p| p + 1).to_le_bytes());
            }
            output.seek(SeekFrom::Start(lo * RESULT as u64))?;
            output.write_all(&results[..n * RESULT])?;
            hi = lo;
        }
        output.seek(SeekFrom::Start(0))?;
        let nesting = Nesting {
            input: BufReader::with_capacity(1 << 16, output),
            left: self.count,
        };
        Ok((nesting, out_of_order))
    }
}

/// The slice `index` on a thread whose stack holds the slices arrived
/// after it that may enclose it, outermost first.
fn place_in(stack: &mut Vec<Open>, begin: i64, end: i64, index: u64) -> Place {
    while let Some(top) = stack.last() {
        if top.begin <= begin && end <= top.end {
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

/// `N` bytes of `r` from `at` (the caller's slices are sized to fit).
fn word<const N: usize>(r: &[u8], at: usize) -> [u8; N] {
    let mut w = [0u8; N];
    w.copy_from_slice(&r[at..at + N]);
    w
}

/// Every slice's place, read in arrival order.
pub struct Nesting {
    input: BufReader<File>,
    left: u64,
}

impl Nesting {
    /// The place of the next slice to arrive.
    pub fn next_place(&mut self) -> io::Result<Place> {
        if self.left == 0 {
            return Err(io::Error::other(
                "more slices than the scan found (the input changed while read?)",
            ));
        }
        self.left -= 1;
        let mut r = [0u8; RESULT];
        self.input.read_exact(&mut r)?;
        let parent = u64::from_le_bytes(word(&r, 4));
        Ok(Place {
            depth: u32::from_le_bytes(word(&r, 0)),
            parent: parent.checked_sub(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
