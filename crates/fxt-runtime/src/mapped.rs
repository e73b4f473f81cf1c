//! Crash-safe mode: the buffer is a shared mapping of the output file, laid
//! out so that the file is a valid trace at every moment.
//!
//! # Layout of the file while the session runs
//!
//! ```text
//! [magic][provider info][initialization][durable region ...][chunk 0][chunk 1]...
//! ```
//!
//! The preamble is written once at start (the TSC is calibrated up front in
//! this mode). The durable region (string, thread and naming records) has a
//! fixed capacity and comes before every chunk, so every string or thread
//! a record refers to precedes it in file order, as Perfetto requires. The
//! ring starts on a 4 KiB boundary (the durable region absorbs the padding).
//!
//! # Why the file is always valid
//!
//! Every word not holding a record holds a **filler**: a string record for
//! index 0 with an empty value (header [`FILLER`] = `0x12`, type 2, size 1).
//! The specification says string records for index 0 "must be ignored",
//! and Perfetto and `fxt_format::decode` both skip them. A filler of `k`
//! words ([`filler`]: header `k << 4 | 2`, `k <= 4095`) skips `k` words
//! whatever they hold. The whole file is prefilled with 1-word fillers at
//! start, then every record is written with [`store_record`]'s protocol:
//!
//! 1. store a `k`-word filler at the record's first word,
//! 2. Release fence, store the body (words `1..k`),
//! 3. Release fence, store the real header.
//!
//! At any instant the first word is therefore a 1-word filler (nothing
//! written yet: the rest of the range is 1-word fillers too), a `k`-word
//! filler (record in flight: skipped whole), or the real header (the body
//! is complete). A `SIGKILL` stops the process between two stores; the
//! stores it made are in the page cache (the mapping *is* the page cache),
//! in program order (the Release fences: free on x86, `dmb` on Arm), so the
//! file on disk is always a sequence of whole records and fillers. A
//! record is never larger than a filler can cover: chunks and the durable
//! region only hold normal records (at most 4095 words); large records
//! (large blobs) live in [`crate::large`] and are only written at the end.
//!
//! Circular mode reuses chunks: [`clear_chunk`] turns a chunk's old records
//! back into 1-word fillers without ever exposing a half-erased record.
//!
//! A session that finishes normally rewrites the output as a compact trace
//! (collected to a temporary file in the same directory, then renamed over
//! the mapped file), so fillers only remain in the file of a killed
//! process. That file opens in Perfetto and decodes with
//! `fxt_format::decode` as it is.
//!
//! # What is out of scope
//!
//! Another process writing the file while the session runs: the mapping is
//! shared, so its writes would show through (they could not break memory
//! safety, since the memory is only accessed through atomics, but they
//! could corrupt the trace). A power loss (the page cache never reaching
//! the disk) is not covered either: only the death of the process.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use crate::sync::{fence, AtomicU64, Ordering};

/// A 1-word filler: string record (type 2) of size 1 for index 0, empty.
pub(crate) const FILLER: u64 = 0x12;

/// Largest filler, in words (the 12-bit size field).
pub(crate) const MAX_FILLER: usize = 0xfff;

/// A filler of `k` words (`1 <= k <= 4095`).
#[inline(always)]
pub(crate) const fn filler(k: usize) -> u64 {
    ((k as u64) << 4) | 2
}

/// The size in words of the record whose header is `h` (normal records).
#[inline]
fn record_words(h: u64) -> usize {
    ((h >> 4) & 0xfff) as usize
}

/// Stores a whole record at the start of `slots` with the crash-safe
/// protocol (see the module docs). `record.len() <= 4095`.
pub(crate) fn store_record(slots: &[AtomicU64], record: &[u64]) {
    store_record_with(
        record,
        |i, w| slots[i].store(w, Ordering::Relaxed),
        // Release: the stores before the fence reach memory before those
        // after it (see the module docs).
        || fence(Ordering::Release),
    );
}

/// [`store_record`] over any memory.
fn store_record_with(record: &[u64], mut store: impl FnMut(usize, u64), mut release: impl FnMut()) {
    debug_assert!(record.len() <= MAX_FILLER);
    let Some((&head, body)) = record.split_first() else {
        return;
    };
    store(0, filler(record.len()));
    release();
    for (i, &w) in body.iter().enumerate() {
        store(i + 1, w);
    }
    release();
    store(0, head);
}

/// Turns the words of a chunk about to be reused (circular mode) back into
/// 1-word fillers, segment by segment, never exposing a torn record.
///
/// The chunk holds whole records (each at most 4095 words) followed by
/// 1-word fillers. For each segment `[s, b)`, where `b` is the last record
/// boundary within 4095 words of `s`: a filler of `b - s` words at `s`
/// hides the segment, its other words become 1-word fillers, then the word
/// at `s` does. Every state in between parses: the reader either skips the
/// whole segment or sees 1-word fillers up to `b`, an old boundary, where
/// the old records (or fillers) continue intact.
///
/// The caller owns the chunk (no writer touches it); its previous owner's
/// stores are visible (the caller synchronized with its release).
pub(crate) fn clear_chunk(chunk: &[AtomicU64]) {
    clear_with(
        chunk.len(),
        |i| chunk[i].load(Ordering::Relaxed),
        |i, w| chunk[i].store(w, Ordering::Relaxed),
        // Release: the stores before the fence reach memory before those
        // after it (see the module docs).
        || fence(Ordering::Release),
    );
}

/// [`clear_chunk`] over any memory (the tests check every intermediate
/// state through `store`).
fn clear_with(
    end: usize,
    load: impl Fn(usize) -> u64,
    mut store: impl FnMut(usize, u64),
    mut release: impl FnMut(),
) {
    let mut s = 0;
    while s < end {
        // The segment: whole records from `s`, at most 4095 words.
        let mut b = s;
        while b < end {
            let n = record_words(load(b)).max(1);
            if b + n - s > MAX_FILLER || b + n > end {
                break;
            }
            b += n;
        }
        if b == s {
            // Cannot happen with records of at most 4095 words inside the
            // chunk; clear one word rather than loop forever.
            b = s + 1;
        }
        if (s..b).all(|i| load(i) == FILLER) {
            // Already clear (the untouched tail of the chunk).
        } else if b - s == 1 {
            store(s, FILLER);
        } else {
            store(s, filler(b - s));
            release();
            for i in s + 1..b {
                store(i, FILLER);
            }
            release();
            store(s, FILLER);
        }
        s = b;
    }
}

/// A shared, writable mapping of a whole trace file.
pub(crate) struct FileMap {
    map: memmap2::MmapMut,
}

impl std::fmt::Debug for FileMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileMap({} bytes)", self.map.len())
    }
}

impl FileMap {
    /// Creates (or truncates) `path`, writes `preamble` followed by 1-word
    /// fillers up to `total_words` words, and maps the file shared and
    /// writable.
    pub(crate) fn create(
        path: &Path,
        preamble: &[u64],
        total_words: usize,
    ) -> io::Result<Arc<FileMap>> {
        assert!(preamble.len() <= total_words && total_words > 0);
        let mut file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        // One sequential write of the whole image (faster than faulting
        // the pages in through the mapping): the preamble and fillers, then
        // blocks of fillers.
        const BLOCK_WORDS: usize = 1 << 17;
        let block_words = BLOCK_WORDS.min(total_words);
        let fillers = vec![FILLER; block_words];
        let mut first: Vec<u64> = preamble.to_vec();
        first.resize(block_words.max(preamble.len()), FILLER);
        let block =
            |words: &[u64]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
        file.write_all(&block(&first))?;
        let mut written = first.len();
        let full = block(&fillers);
        while written < total_words {
            let n = (total_words - written).min(BLOCK_WORDS);
            file.write_all(&full[..n * 8])?;
            written += n;
        }
        file.flush()?;
        // SAFETY: `map_mut` is unsafe because the file may be changed
        // behind the mapping's back (by this or another process), which
        // would change memory that Rust code reads. We only ever access the
        // mapping through `AtomicU64`s (see `words`), for which concurrent
        // changes are defined behavior; another process writing the file is
        // out of scope (module docs). The file is not truncated while
        // mapped: only `finish` replaces it, by renaming a new file over
        // its name, which leaves this inode and mapping intact.
        let map = unsafe { memmap2::MmapMut::map_mut(&file)? };
        Ok(Arc::new(FileMap { map }))
    }

    /// The whole mapping as atomic words.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn words(&self) -> &[std::sync::atomic::AtomicU64] {
        let len = self.map.len() / 8;
        let ptr = self.map.as_ptr() as *const std::sync::atomic::AtomicU64;
        // SAFETY:
        // * alignment: a mapping starts on a page boundary (>= 8 bytes);
        // * size and validity: the mapping is `len * 8` bytes of the file
        //   (the file was written to `total_words * 8` bytes before
        //   mapping), and every bit pattern is a valid `AtomicU64`, which
        //   has the size, alignment and bit validity of `u64`;
        // * lifetime: the slice borrows `self`, which owns the mapping
        //   (callers keep an `Arc<FileMap>` for as long as they use it);
        // * aliasing: no other Rust reference to this memory exists (the
        //   `MmapMut` is never dereferenced as `&[u8]` or `&mut [u8]`), and
        //   all access goes through atomics, so concurrent use from many
        //   threads is sound.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Parses words as a reader does (sizes from headers); panics on a size
    /// 0, a record past the end, or a record that is neither a filler nor
    /// one of `records` (whole, at its position).
    fn check(words: &[u64], records: &[(usize, Vec<u64>)]) {
        let mut p = 0;
        while p < words.len() {
            let n = record_words(words[p]);
            assert!(
                n > 0 && p + n <= words.len(),
                "bad size at {p}: {:#x}",
                words[p]
            );
            if words[p] & 0xffff_ffff_ffff_000f != 2 {
                let (_, r) = records
                    .iter()
                    .find(|(at, _)| *at == p)
                    .unwrap_or_else(|| panic!("no record starts at {p}"));
                assert_eq!(&words[p..p + n], &r[..], "torn record at {p}");
            }
            p += n;
        }
    }

    fn record(n: usize, tag: u64) -> Vec<u64> {
        std::iter::once(((n as u64) << 4) | 4)
            .chain((1..n).map(|i| (tag << 32) | i as u64))
            .collect()
    }

    #[test]
    fn fillers() {
        assert_eq!(filler(1), FILLER);
        assert_eq!(filler(4095), 0xfff2);
    }

    /// Writes records with the protocol and clears the chunk, checking
    /// that the memory parses after every single store.
    #[test]
    fn every_intermediate_state_parses() {
        let sizes = [3usize, 4095, 1, 2000, 2500, 4095, 2];
        let total: usize = sizes.iter().sum::<usize>() + 20;
        let mem = RefCell::new(vec![FILLER; total]);
        let mut written: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut p = 0;
        for (t, &n) in sizes.iter().enumerate() {
            let rec = record(n, t as u64 + 1);
            // Known before its first store: once its header shows, it must be whole.
            written.push((p, rec.clone()));
            store_record_with(
                &rec,
                |i, w| {
                    mem.borrow_mut()[p + i] = w;
                    check(&mem.borrow(), &written);
                },
                || {},
            );
            check(&mem.borrow(), &written);
            p += sizes[t];
        }
        clear_with(
            total,
            |i| mem.borrow()[i],
            |i, w| {
                mem.borrow_mut()[i] = w;
                check(&mem.borrow(), &written);
            },
            || {},
        );
        assert!(mem.borrow().iter().all(|&w| w == FILLER));
    }

    #[test]
    fn clear_chunk_on_atomics() {
        let chunk: Vec<AtomicU64> = (0..10_000).map(|_| AtomicU64::new(FILLER)).collect();
        store_record(&chunk[5..], &record(4000, 1));
        store_record(&chunk[4005..], &record(4095, 2));
        clear_chunk(&chunk);
        assert!(chunk.iter().all(|w| w.load(Ordering::Relaxed) == FILLER));
    }
}
