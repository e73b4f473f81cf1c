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
//! frees its budget. In crash-safe mode the list is not in the mapped file:
//! large blobs pending when the process is killed are lost (chunks only
//! hold records a filler can cover, see `crate::memory::filler`).

use std::sync::Mutex;

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
}

impl LargeRecords {
    /// A list holding at most `budget_words` words at a time.
    pub(crate) fn new(budget_words: usize) -> LargeRecords {
        LargeRecords {
            inner: Mutex::new(Inner::default()),
            budget_words,
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
