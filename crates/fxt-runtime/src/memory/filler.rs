//! The crash-safe store protocol: how a record is stored into memory that
//! may be a shared mapping of the output file, so that the file is a valid
//! trace at every moment. The one implementation: the durable region,
//! every event encoder and chunk reuse all store through [`Store`].
//!
//! # Layout of the file while the session runs
//!
//! ```text
//! [magic][provider info][initialization][durable region ...][large region ...][chunk 0][chunk 1]...
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
//! start, then every record is written with [`Store`]'s protocol:
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
//! region only hold normal records (at most 4095 words). The large region
//! holds split blob groups (`crate::large`), each a run of normal records:
//! it is a *sparse* region, a 4095-word filler every [`STRIDE`] words over
//! a hole of the file, appended to with [`store_appended`]; large records
//! (`Config::large_records(true)`) are only written at the end.
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

use fxt_format::encode::header::{self, record_type};
use fxt_format::encode::MAX_RECORD_WORDS;

use super::atomic::{fence, AtomicU64, Ordering};

/// A 1-word filler: string record (type 2) of size 1 for index 0, empty.
pub(crate) const FILLER: u64 = filler(1);

/// Largest filler, in words (the 12-bit size field).
pub(crate) const MAX_FILLER: usize = MAX_RECORD_WORDS;

/// Stride of a sparse filler region: a [`MAX_FILLER`]-word filler every
/// `STRIDE` words, the words between them anything (a hole of the file
/// reads as zeros). See [`store_appended`].
pub(crate) const STRIDE: usize = MAX_FILLER;

/// A filler of `k` words (`1 <= k <= 4095`).
#[inline(always)]
pub(crate) const fn filler(k: usize) -> u64 {
    header::record(record_type::STRING, k)
}

/// The size in words of the record whose header is `h`.
#[inline]
fn record_words(h: u64) -> usize {
    header::record_words(h) as usize
}

/// Memory a record is stored into: the buffer's atomic words, or (in the
/// tests) a model that checks every intermediate state.
pub(crate) trait Slots {
    /// Stores word `i`.
    fn put(&self, i: usize, w: u64);
    /// Orders every store before it before every store after it.
    fn release(&self);
}

impl Slots for [AtomicU64] {
    #[inline(always)]
    fn put(&self, i: usize, w: u64) {
        self[i].store(w, Ordering::Relaxed);
    }

    #[inline(always)]
    fn release(&self) {
        // Release: the stores before the fence reach memory before those
        // after it (see the module docs). Free on x86, `dmb` on Arm.
        fence(Ordering::Release);
    }
}

/// One record being stored into its slots (exactly its size): the header
/// word is stored last, by [`Store::end`]. With `crash_safe` (the slots
/// are a shared mapping of the output file) a filler covering the whole
/// record is stored first and Release fences order the three steps (see
/// the module docs); without it the steps are plain stores, and the
/// collector's Acquire of the chunk's committed length is what makes the
/// record visible. Every record fxt stores goes through this.
pub(crate) struct Store<'a, S: Slots + ?Sized = [AtomicU64]> {
    slots: &'a S,
    crash_safe: bool,
}

impl<'a, S: Slots + ?Sized> Store<'a, S> {
    /// Starts a record of `words` words at the start of `slots`.
    #[inline(always)]
    pub(crate) fn begin(slots: &'a S, words: usize, crash_safe: bool) -> Store<'a, S> {
        debug_assert!((1..=MAX_FILLER).contains(&words));
        if crash_safe {
            slots.put(0, filler(words));
            slots.release();
        }
        Store { slots, crash_safe }
    }

    /// Stores body word `i` (`i >= 1`).
    #[inline(always)]
    pub(crate) fn put(&self, i: usize, w: u64) {
        debug_assert!(i >= 1);
        self.slots.put(i, w);
    }

    /// Stores the header, completing the record.
    #[inline(always)]
    pub(crate) fn end(self, header: u64) {
        if self.crash_safe {
            self.slots.release();
        }
        self.slots.put(0, header);
    }
}

/// Stores a whole record (`record.len() <= 4095`, at the start of `slots`)
/// with the crash-safe protocol.
pub(crate) fn store_record<S: Slots + ?Sized>(slots: &S, record: &[u64]) {
    let Some((&head, body)) = record.split_first() else {
        return;
    };
    let store = Store::begin(slots, record.len(), true);
    for (i, &w) in body.iter().enumerate() {
        store.put(i + 1, w);
    }
    store.end(head);
}

/// Appends `record` (`record.len() <= 4095`) at word `at` of a sparse
/// filler region (a filler at every multiple of [`STRIDE`], and after the
/// records appended so far a filler reaching the next multiple): returns
/// the next append position.
///
/// The word at `at` is a header linking onwards (a stride filler, or the
/// bridging filler of the previous append). First the word at the record's
/// end `e` becomes a filler reaching the next stride boundary (unless `e`
/// is one, or the region's end): a word inside a span readers skip, so
/// nothing changes for them yet. Then the record is stored with
/// [`Store`]'s protocol: a filler of its size at `at` makes readers jump
/// straight to `e` (over any stride header the record's body is about to
/// overwrite), then the body, then the header. Every state parses.
pub(crate) fn store_appended<S: Slots + ?Sized>(
    slots: &S,
    len: usize,
    at: usize,
    record: &[u64],
) -> usize {
    let e = at + record.len();
    debug_assert!(e <= len && !record.is_empty() && record.len() <= MAX_FILLER);
    if e < len && !e.is_multiple_of(STRIDE) {
        let next = (e / STRIDE + 1) * STRIDE;
        slots.put(e, filler(next.min(len) - e));
        slots.release();
    }
    store_record(&Window { slots, start: at }, record);
    e
}

/// A window of `S` starting at word `start` (a record's slots inside a
/// larger memory).
struct Window<'a, S: Slots + ?Sized> {
    slots: &'a S,
    start: usize,
}

impl<S: Slots + ?Sized> Slots for Window<'_, S> {
    fn put(&self, i: usize, w: u64) {
        self.slots.put(self.start + i, w);
    }

    fn release(&self) {
        self.slots.release();
    }
}

/// Turns the words of a chunk about to be reused (circular mode) back into
/// 1-word fillers, segment by segment, never exposing a torn record.
///
/// The chunk holds whole records (each at most 4095 words) followed by
/// 1-word fillers. For each segment `[s, b)`, where `b` is the last record
/// boundary within 4095 words of `s`, a record made of `b - s` 1-word
/// fillers is stored over it with [`Store`]'s protocol: a filler of
/// `b - s` words at `s` hides the segment, its other words become 1-word
/// fillers, then the word at `s` does. Every state in between parses: the
/// reader either skips the whole segment or sees 1-word fillers up to `b`,
/// an old boundary, where the old records (or fillers) continue intact.
///
/// The caller owns the chunk (no writer touches it); its previous owner's
/// stores are visible (the caller synchronized with its release).
pub(crate) fn clear_chunk(chunk: &[AtomicU64]) {
    clear_with(chunk, chunk.len(), |i| chunk[i].load(Ordering::Relaxed));
}

/// [`clear_chunk`] over any memory (the tests check every intermediate
/// state through `slots`).
fn clear_with<S: Slots + ?Sized>(slots: &S, end: usize, load: impl Fn(usize) -> u64) {
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
        // Already clear: the untouched tail of the chunk.
        if !(s..b).all(|i| load(i) == FILLER) {
            let window = Window { slots, start: s };
            let store = Store::begin(&window, b - s, true);
            for i in 1..b - s {
                store.put(i, FILLER);
            }
            store.end(FILLER);
        }
        s = b;
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

    /// Memory that parses itself after every store.
    struct Model<'a> {
        mem: &'a RefCell<Vec<u64>>,
        start: usize,
        written: &'a [(usize, Vec<u64>)],
    }

    impl Slots for Model<'_> {
        fn put(&self, i: usize, w: u64) {
            self.mem.borrow_mut()[self.start + i] = w;
            check(&self.mem.borrow(), self.written);
        }

        fn release(&self) {}
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
            let model = Model {
                mem: &mem,
                start: p,
                written: &written,
            };
            store_record(&model, &rec);
            check(&mem.borrow(), &written);
            p += sizes[t];
        }
        let model = Model {
            mem: &mem,
            start: 0,
            written: &written,
        };
        clear_with(&model, total, |i| mem.borrow()[i]);
        assert!(mem.borrow().iter().all(|&w| w == FILLER));
    }

    /// Appends records to a sparse region (stride fillers over zeros),
    /// checking that the memory parses after every single store, and that
    /// the records read back in order.
    #[test]
    fn sparse_region_appends_parse_at_every_store() {
        let len = 3 * STRIDE + 100;
        let mut init = vec![0u64; len];
        let mut b = 0;
        while b < len {
            init[b] = filler((len - b).min(STRIDE));
            b += STRIDE;
        }
        let mem = RefCell::new(init);
        check(&mem.borrow(), &[]);
        // Ends on stride boundaries (4095, 8190), inside strides, and past the end.
        let sizes = [4095usize, 3, 4092, 1, 2000, 2, 90, 4000];
        let mut written: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut at = 0;
        for (t, &n) in sizes.iter().enumerate() {
            if at + n > len {
                break;
            }
            let rec = record(n, t as u64 + 1);
            written.push((at, rec.clone()));
            let model = Model {
                mem: &mem,
                start: 0,
                written: &written,
            };
            at = store_appended(&model, len, at, &rec);
        }
        assert_eq!(written.len(), 7, "the last one does not fit");
        // A reader sees exactly the appended records, in order.
        let words = mem.borrow();
        let (mut p, mut seen) = (0, Vec::new());
        while p < len {
            let n = record_words(words[p]);
            if words[p] & 0xffff_ffff_ffff_000f != 2 {
                seen.push(p);
            }
            p += n;
        }
        assert_eq!(seen, written.iter().map(|(at, _)| *at).collect::<Vec<_>>());
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
