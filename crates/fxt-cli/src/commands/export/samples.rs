//! The `samples` table (CPU samples, issue 31): one row per sample, its
//! frames named from the trace's symbols (innermost first, inlined frames
//! included) and the `id` of the innermost slice open on its thread when it
//! was taken (`slice_id`, null if none).
//!
//! Slices are written when they end, children before their parents, so
//! the first slice to arrive that contains a sample is its innermost one: a
//! sample waits, per thread and in time order, until a slice of its thread
//! contains it, and is written then; those still waiting at the end of the
//! input are in no slice. Memory: the samples not yet in a slice.

use std::collections::{BTreeMap, HashMap};

use fxt_format::samples::SampleRecord;

use super::labels::Labels;
use super::schema::{SampleRow, Samples, Source};
use super::summary::Summary;
use super::table::TypedTable;
use crate::error::Error;
use crate::samples::Names;

/// A thread of a provider.
type Key = (Option<u32>, u64, u64);

/// A sample waiting for its slice.
struct Waiting {
    frames: Vec<String>,
}

/// The rows of one input's samples.
#[derive(Default)]
pub struct SampleRows {
    waiting: HashMap<Key, BTreeMap<(i64, u64), Waiting>>,
    /// Arrival order, to keep samples of equal time apart.
    seq: u64,
}

/// What the rows are written with.
pub struct Context<'a, 'b> {
    /// The `trace` column.
    pub trace: &'a str,
    /// The `host` column.
    pub host: &'a str,
    /// Provider and thread names.
    pub labels: &'a Labels,
    /// The table.
    pub table: &'b mut TypedTable<Samples>,
    /// The counts of what is left out.
    pub summary: &'b mut Summary,
}

impl SampleRows {
    /// No sample is waiting.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Takes a sample (`ts` in nanoseconds, as the tables hold times).
    pub fn sample(&mut self, provider: Option<u32>, ts: i64, sample: &SampleRecord, names: &Names) {
        self.seq += 1;
        self.waiting
            .entry((provider, sample.pid, sample.tid))
            .or_default()
            .insert(
                (ts, self.seq),
                Waiting {
                    frames: names.stack(sample),
                },
            );
    }

    /// A slice of thread `(pid, tid)` of `provider` over `[begin, end]`
    /// arrived with `id`: writes the samples it contains.
    pub fn slice(
        &mut self,
        provider: Option<u32>,
        (pid, tid): (u64, u64),
        (begin, end): (i64, i64),
        id: u64,
        cx: &mut Context<'_, '_>,
    ) -> Result<(), Error> {
        let Some(waiting) = self.waiting.get_mut(&(provider, pid, tid)) else {
            return Ok(());
        };
        let inside: Vec<(i64, u64)> = waiting
            .range((begin, 0)..=(end, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        for key in inside {
            if let Some(w) = waiting.remove(&key) {
                row(cx, (provider, pid, tid), key.0, &w.frames, Some(id))?;
            }
        }
        Ok(())
    }

    /// Writes the samples in no slice, thread by thread in key order (not
    /// the map's, which differs from run to run: the same input must give
    /// the same rows in the same order).
    pub fn finish(&mut self, cx: &mut Context<'_, '_>) -> Result<(), Error> {
        let mut threads: Vec<_> = std::mem::take(&mut self.waiting).into_iter().collect();
        threads.sort_unstable_by_key(|(key, _)| *key);
        for (key, waiting) in threads {
            for ((ts, _), w) in waiting {
                row(cx, key, ts, &w.frames, None)?;
            }
        }
        Ok(())
    }
}

fn row(
    cx: &mut Context<'_, '_>,
    (provider, pid, tid): Key,
    ts: i64,
    frames: &[String],
    slice: Option<u64>,
) -> Result<(), Error> {
    // Koids and ids as signed 64-bit values (two's complement), as in
    // every table.
    let row = SampleRow {
        source: Source {
            trace: Some(cx.trace),
            host: Some(cx.host),
            provider: cx.labels.provider(provider),
        },
        pid: Some(pid as i64),
        tid: Some(tid as i64),
        thread: cx.labels.thread(tid),
        ts: Some(ts),
        frames: Some(frames),
        slice_id: slice.map(|id| id as i64),
    };
    cx.table.push(&row, cx.summary)
}
