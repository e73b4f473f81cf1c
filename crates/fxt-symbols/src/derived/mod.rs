//! The records a viewer draws that the runtime does not write: computed
//! from a trace's compact records ([`fxt_format::derived`]) and appended
//! to the trace delivered to a viewer (`fxt open`, `fxt symbolize`, the
//! archives of `fxt record`, `fxt trace` and `fxt merge`).
//!
//! One walk over the trace hands each event to each feature's deriver
//! (one file per feature: `locks`, `tasks`, `heap`); what they return is grouped by the
//! provider section its facts were in (the records keep its clock), each
//! group after one [`fxt_format::derived::MARKER_NAME`] blob in that
//! section: a section that holds the marker already is not derived again,
//! so appending twice adds nothing, and an archive that merges a derived
//! trace with one that is not derives only the other.

mod heap;
mod locks;
mod tasks;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fxt_format::decode::{ArgValue, Event, Record, SliceReader};
use fxt_format::derived::{is_marker, MARKER_NAME};
use fxt_format::encode::{encode_into_vec, Blob, BlobType, ProviderSection, StringRef};
use fxt_format::samples::AllocRecord;
use fxt_format::time::ticks_per_second_or_default;

/// What the derived records are, in a few words (for the messages of the
/// commands that append them).
pub const WHAT: &str =
    "locks' held and handoff slices and their arrows, tasks' polls on their tracks and their wakes' arrows, the heap counter";

/// Where a fact was read: its provider section and that section's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Section {
    /// The provider section (`None`: a trace without sections).
    pub provider: Option<u32>,
    /// Ticks per second of its timestamps.
    pub ticks_per_second: u64,
}

/// The flow ids of derived arrows start here: far above the ids a
/// program's counter reaches, so that they meet none of its own (locks'
/// and tasks' ranges are 2^61 apart).
const LOCK_FLOWS: u64 = 1 << 62;
/// See [`LOCK_FLOWS`].
const TASK_FLOWS: u64 = 3 << 61;

/// The `u64` (or koid) argument `key` of `e`.
pub(crate) fn u64_arg(e: &Event, key: &str) -> Option<u64> {
    e.args
        .iter()
        .find(|a| a.name.as_str() == Some(key))
        .and_then(|a| match a.value {
            ArgValue::U64(v) | ArgValue::Koid(v) => Some(v),
            _ => None,
        })
}

/// `ns` nanoseconds in ticks at `tps`, rounded down.
pub(crate) fn ns_to_ticks(ns: u64, tps: u64) -> u64 {
    let ticks = u128::from(ns) * u128::from(tps) / 1_000_000_000;
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// The FXT words to append to `trace` (its whole records) so that a viewer
/// draws what its compact records stand for: per provider section, a
/// provider section record (for a trace that has sections), the marker
/// and the derived records. Empty when there is nothing to derive or
/// every section with something to derive carries its derived records
/// already.
pub fn records(trace: &[u8]) -> Vec<u64> {
    let mut locks = locks::Locks::default();
    let mut tasks = tasks::Tasks::default();
    let mut heap = heap::Heap::default();
    let mut provider = None;
    let mut derived = BTreeSet::new();
    let mut clocks: BTreeMap<Option<u32>, u64> = BTreeMap::new();
    for item in SliceReader::new(trace) {
        let record = match item {
            Ok(record) => record,
            Err(e) if e.is_fatal() => break,
            Err(_) => continue,
        };
        match record {
            Record::ProviderSection { provider_id } => provider = Some(provider_id),
            Record::Initialization { ticks_per_second } => {
                clocks.insert(provider, ticks_per_second);
            }
            Record::Blob(b)
                if b.blob_type == BlobType::Data
                    && is_marker(b.name.as_str().unwrap_or(""), b.payload.len()) =>
            {
                derived.insert(provider);
            }
            Record::Blob(b) => {
                if let Some(Ok(alloc)) = AllocRecord::from_blob(&b) {
                    heap.see_alloc(section(provider, &clocks), &alloc);
                }
            }
            Record::Event(e) => {
                let section = section(provider, &clocks);
                locks.see(section, &e);
                tasks.see(section, &e);
                heap.see(section, &e);
            }
            _ => {}
        }
    }
    let mut by_section: BTreeMap<Option<u32>, Vec<u64>> = BTreeMap::new();
    locks.derive(&mut by_section);
    tasks.derive(&mut by_section);
    heap.derive(&mut by_section);
    by_section.retain(|section, words| !words.is_empty() && !derived.contains(section));
    let mut out = Vec::new();
    let marker = Blob {
        name: StringRef::Inline(MARKER_NAME),
        blob_type: BlobType::Data,
        payload: &[],
    };
    for (provider, words) in by_section {
        // Neither can fail: one word; an inline name of 11 bytes and an
        // empty payload.
        if let Some(provider_id) = provider {
            let _ = encode_into_vec(&ProviderSection { provider_id }, &mut out);
        }
        let _ = encode_into_vec(&marker, &mut out);
        out.extend_from_slice(&words);
    }
    out
}

/// The section `provider` with the clock its initialization record gave.
fn section(provider: Option<u32>, clocks: &BTreeMap<Option<u32>, u64>) -> Section {
    let tps = clocks.get(&provider).copied();
    Section {
        provider,
        ticks_per_second: ticks_per_second_or_default(tps),
    }
}

/// Bits of a derived flow id that hold the process: 32 to 60, between a
/// deriver's count (below) and its range's base (bits 61 and up).
const PROCESS_BITS: u32 = 29;

/// The id of a flow derived in `process`, `next` counted from its
/// deriver's base. The process is in it because a program built with the
/// runtime's feature `symbolize` derives its own trace: an archive that
/// merges two such traces (`fxt record`, `fxt merge`) keeps both sets of
/// flows without deriving again, and ids counted from one base in each
/// would join one process's begins to the other's ends (Perfetto matches
/// a flow's ends by id, category and name; two runs of one program share
/// their names). Unique while a trace derives fewer than 2^32 flows.
pub(crate) fn flow_id(next: u64, process: u64) -> u64 {
    next | (process & ((1 << PROCESS_BITS) - 1)) << 32
}

/// The names a deriver keeps, each once: an event's name becomes an
/// index into them.
#[derive(Default)]
pub(crate) struct Names {
    list: Vec<String>,
    index: HashMap<String, usize>,
}

impl Names {
    /// The index of `name`, kept at its first sight.
    pub(crate) fn index(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.list.push(name.to_string());
        self.index.insert(name.to_string(), self.list.len() - 1);
        self.list.len() - 1
    }

    /// The name at `i` (an index [`Names::index`] gave).
    pub(crate) fn get(&self, i: usize) -> &str {
        &self.list[i]
    }
}
