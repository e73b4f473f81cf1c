//! Large blobs: what a blob too big for one record (32 KiB) is written as,
//! kept in a side list outside the ring — by default a split blob group
//! (`fxt_format::encode::SplitBlob`: an instant and blob records of at
//! most 32 KiB, contiguous, which every viewer sizes correctly), or with
//! `Config::large_records(true)` one large blob record
//! (`fxt_format::encode::LargeBlobWithMetadata`). Either may be far larger
//! than a chunk. It is encoded into its own allocation
//! and pushed on this list under a mutex: a rare path, where a lock and an
//! allocation cost little next to copying the payload. The list is
//! budgeted (a quarter of the buffer size, counted in words still waiting
//! to be written); a record over the budget is dropped and counted.
//!
//! The collector writes the list after the durable records and before the
//! chunks (their string and thread refs are in the durable region, which
//! precedes them); the streamer writes and empties it on each pass, which
//! frees its budget.
//!
//! In crash-safe mode every split blob group is also appended to the
//! file's large region (between the durable region and the chunks, so the
//! strings and threads it refers to precede it), record by record with the
//! filler protocol of a sparse region (`memory::filler::store_appended`):
//! a process killed after `trace_blob!` returned keeps the whole blob, and
//! one killed while it is written keeps the groups before it. The region
//! is append-only (crash-safe sessions never stream, so nothing is freed)
//! and smaller than the list's budget (see `session`): a group that does
//! not fit in what is left of it is kept in the list only, and reaches the
//! file when the session finishes. A blob written as one large record
//! (`Config::large_records(true)`) is not mirrored: a filler cannot cover
//! it; it reaches the file only when the session finishes.

use std::sync::Mutex;

use fxt_format::encode::header::{record_type, record_words};

use crate::memory::filler::{store_appended, MAX_FILLER};
use crate::memory::words::Words;

/// The side list of one session.
#[derive(Debug)]
pub(crate) struct LargeRecords {
    inner: Mutex<Inner>,
    budget_words: usize,
}

/// One kept blob: its encoded words and how many records they hold (one
/// large record, or the split group's event and parts). It is one emitted
/// record.
#[derive(Debug)]
pub(crate) struct Large {
    pub(crate) words: Vec<u64>,
    pub(crate) records: u64,
}

#[derive(Debug, Default)]
struct Inner {
    records: Vec<Large>,
    /// Words in `records`.
    words: usize,
    /// The crash-safe file's large region and the next append position.
    mirror: Option<(Words, usize)>,
}

impl LargeRecords {
    /// A list holding at most `budget_words` words at a time.
    pub(crate) fn new(budget_words: usize) -> LargeRecords {
        LargeRecords {
            inner: Mutex::new(Inner::default()),
            budget_words,
        }
    }

    /// A list whose records are also appended to `region`, the large
    /// region of a crash-safe file (prefilled as a sparse filler region),
    /// as long as they fit in it.
    pub(crate) fn mirrored(budget_words: usize, region: Words) -> LargeRecords {
        LargeRecords {
            budget_words,
            inner: Mutex::new(Inner {
                mirror: Some((region, 0)),
                ..Inner::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every critical section leaves the list consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `record` (whole encoded words) for the file; `false` when it
    /// is over the budget (the caller counts it as dropped).
    pub(crate) fn push(&self, record: Large) -> bool {
        let mut l = self.lock();
        if record.words.len() > self.budget_words - l.words {
            return false;
        }
        l.words += record.words.len();
        if let Some((region, at)) = &mut l.mirror {
            mirror(region, at, &record.words);
        }
        l.records.push(record);
        true
    }

    /// Copies of every record kept so far (oldest first), left in place (a
    /// snapshot: the final collection still writes them).
    pub(crate) fn copy(&self) -> Vec<Large> {
        self.lock()
            .records
            .iter()
            .map(|l| Large {
                words: l.words.clone(),
                records: l.records,
            })
            .collect()
    }

    /// Takes every record kept so far (oldest first), freeing their budget.
    pub(crate) fn take(&self) -> Vec<Large> {
        let mut l = self.lock();
        l.words = 0;
        std::mem::take(&mut l.records)
    }
}

/// Appends the records of `words` (whole records, each sized by its
/// header) to the large region at `*at`, unless one of them is a large
/// record or the whole group does not fit (a group is never left in part).
fn mirror(region: &Words, at: &mut usize, words: &[u64]) {
    let len = region.len();
    if words.len() > len - *at {
        return;
    }
    let mut sizes = Vec::new();
    let mut p = 0;
    while p < words.len() {
        let n = record_words(words[p]) as usize;
        if n == 0 || n > MAX_FILLER || words[p] & 0xf == record_type::LARGE || p + n > words.len() {
            return;
        }
        sizes.push(n);
        p += n;
    }
    let slots = region.slice(0..len);
    let mut p = 0;
    for n in sizes {
        *at = store_appended(slots, len, *at, &words[p..p + n]);
        p += n;
    }
}
