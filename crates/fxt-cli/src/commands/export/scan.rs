//! The first pass over an input: which records `fxt recover` would keep
//! ([`crate::keep`]), the names of processes and threads, and every slice's
//! thread, begin and end in the order slices end ([`super::nesting`]).
//! Memory: the open begins, the names, and the decisions about damaged
//! records; never the trace.

use std::collections::HashMap;
use std::path::Path;

use rustc_hash::FxHashMap;

use fxt_format::decode::{Event, EventKind, Record, Text, Thread};
use fxt_format::time::ticks_to_ns;

use super::labels::Labels;
use super::nesting::{Intervals, Nesting, NO_THREAD};
use crate::error::Error;
use crate::input::{Input, Walk};
use crate::keep::{Fix, Keep, Verdict};
use crate::samples::{Gather, Names};

/// A thread of a provider (koids are the provider's).
pub type ThreadKey = (Option<u32>, Thread);

/// An async span's key: provider, process, category, name and id.
pub type AsyncKey = (Option<u32>, u64, Text, Text, u64);

/// Open spans per key, innermost last.
pub struct Stacks<K, V>(FxHashMap<K, Vec<V>>);

impl<K: std::hash::Hash + Eq, V> Default for Stacks<K, V> {
    fn default() -> Self {
        Stacks(FxHashMap::default())
    }
}

impl<K: std::hash::Hash + Eq, V> Stacks<K, V> {
    /// Opens `v` under `k`.
    pub fn push(&mut self, k: K, v: V) {
        self.0.entry(k).or_default().push(v);
    }

    /// Closes the innermost span open under `k`.
    pub fn pop(&mut self, k: &K) -> Option<V> {
        let stack = self.0.get_mut(k)?;
        let v = stack.pop();
        if stack.is_empty() {
            self.0.remove(k);
        }
        v
    }

    /// Spans still open.
    pub fn open(&self) -> u64 {
        self.0.values().map(|s| s.len() as u64).sum()
    }
}

/// A timestamp as the tables hold it: nanoseconds, signed 64-bit (Spark
/// has no unsigned type), saturating (only damaged input gets past 292
/// years).
pub fn ns(ticks: u64, ticks_per_second: u64) -> i64 {
    i64::try_from(ticks_to_ns(ticks, ticks_per_second)).unwrap_or(i64::MAX)
}

/// The key of an async event.
pub fn async_key(provider: Option<u32>, e: &Event, id: u64) -> AsyncKey {
    let pid = match e.thread {
        Thread::Known { process, .. } => process,
        Thread::Undefined(_) => 0,
    };
    (provider, pid, e.category.clone(), e.name.clone(), id)
}

/// What the first pass found.
pub struct Scan {
    /// Records to leave out (and repairs, which change nothing read).
    pub fixes: HashMap<u64, Fix>,
    /// Process and thread names.
    pub labels: Labels,
    /// Every slice's depth and parent, in the order slices end.
    pub nesting: Nesting,
    /// Slices out of end order on their thread.
    pub out_of_order: u64,
    /// What the walk saw.
    pub walk: Walk,
    /// The names of sampled addresses (the trace's `fxt.symbols`).
    pub names: Names,
}

/// Runs the first pass over `input`, with temporary files in `dir`.
pub fn scan(input: &mut Input, dir: &Path) -> Result<Scan, Error> {
    let mut keep = Keep::new(false);
    let mut labels = Labels::default();
    let mut intervals = Intervals::new(dir).map_err(|e| temp_error(dir, e))?;
    let mut slots: FxHashMap<ThreadKey, u32> = FxHashMap::default();
    let mut asyncs: Stacks<AsyncKey, ()> = Stacks::default();
    let mut gather = Gather::default();
    let walk = input.walk("export (1/2)", |reader, record| {
        let provider = reader.provider_id();
        let verdict = keep.see(
            provider,
            reader.record_offset(),
            &record,
            reader.record_bytes(),
        );
        if verdict == Verdict::Dropped {
            return Ok(());
        }
        labels.see(&record);
        gather.see(reader.record_offset(), &record);
        let Record::Event(e) = &record else {
            return Ok(());
        };
        let tps = reader.ticks_per_second();
        let next = slots.len() as u32;
        let mut slot = || *slots.entry((provider, e.thread)).or_insert(next);
        let interval = match (e.kind, verdict) {
            (EventKind::DurationComplete { end }, _) => Some((slot(), e.timestamp, end)),
            (EventKind::DurationEnd, Verdict::Ended { begin_ts }) => {
                Some((slot(), begin_ts, e.timestamp))
            }
            (EventKind::AsyncBegin { id }, _) => {
                asyncs.push(async_key(provider, e, id), ());
                None
            }
            (EventKind::AsyncEnd { id }, _) => asyncs
                .pop(&async_key(provider, e, id))
                .map(|()| (NO_THREAD, 0, 0)),
            _ => None,
        };
        if let Some((slot, begin, end)) = interval {
            intervals
                .push(slot, ns(begin, tps), ns(end, tps))
                .map_err(|e| temp_error(dir, e))?;
        }
        Ok(())
    })?;
    let (nesting, out_of_order) = intervals.resolve(dir).map_err(|e| temp_error(dir, e))?;
    Ok(Scan {
        fixes: keep.finish(),
        labels,
        nesting,
        out_of_order,
        walk,
        names: gather.finish(),
    })
}

/// An error on the temporary files.
pub fn temp_error(dir: &Path, e: std::io::Error) -> Error {
    Error::msg(format!("temporary file in {}: {e}", dir.display()))
}
