//! The heap counter from a trace's `fxt.alloc` records (see
//! [`fxt_format::derived::heap`]): the runtime writes each sampled
//! allocation and each free of a sampled block once, with its size and
//! the sampling mean; the process's estimated live bytes after each are
//! computed here, as `fxt stats` and `fxt flame --alloc --live` compute
//! what is live at the end.
//!
//! Per provider section and process, the records are taken in timestamp
//! order (at one instant, allocations before frees, then file order): an
//! allocation adds the bytes it stands for, and the free of its address
//! (the latest allocation of that address) takes them away; an
//! allocation at an address already live stands for a block whose free
//! was not recorded (untracked, or the record dropped) and replaces it.
//! A free with no allocation before it (made before the trace or a
//! snapshot's window) takes nothing away.
//!
//! A provider section whose runtime wrote the counter itself (a runtime
//! from before the derivation) is not derived.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fxt_format::decode::{Event, EventKind};
use fxt_format::derived::heap::{CATEGORY, LIVE_BYTES, NAME};
use fxt_format::encode::{
    encode_into_vec, Arg, ArgValue, Event as Out, EventKind as OutKind, StringRef, ThreadRef,
};
use fxt_format::samples::{AllocKind, AllocRecord};

use super::Section;

/// One allocation record, as the counter needs it.
struct Change {
    timestamp: u64,
    /// 0 for an allocation, 1 for a free: allocations first at one
    /// instant.
    order: u8,
    /// Its place in the file.
    index: usize,
    tid: u64,
    address: u64,
    /// The bytes an allocation stands for (0 for a free).
    bytes: f64,
}

/// The allocation records of a trace, gathered during the walk.
#[derive(Default)]
pub(crate) struct Heap {
    /// By provider section and process.
    changes: BTreeMap<(Option<u32>, u64), Vec<Change>>,
    seen: usize,
    /// The provider sections whose runtime wrote the counter itself.
    drawn: BTreeSet<Option<u32>>,
}

impl Heap {
    /// Takes one event of `section`: a heap counter its runtime wrote
    /// marks the section as drawn.
    pub(crate) fn see(&mut self, section: Section, e: &Event) {
        if matches!(e.kind, EventKind::Counter { .. })
            && e.category.as_str() == Some(CATEGORY)
            && e.name.as_str() == Some(NAME)
        {
            self.drawn.insert(section.provider);
        }
    }

    /// Takes one `fxt.alloc` record of `section`.
    pub(crate) fn see_alloc(&mut self, section: Section, r: &AllocRecord) {
        let (order, bytes) = match r.kind {
            AllocKind::Alloc => (0, r.estimated_bytes()),
            AllocKind::Free => (1, 0.0),
        };
        self.changes
            .entry((section.provider, r.pid))
            .or_default()
            .push(Change {
                timestamp: r.timestamp,
                order,
                index: self.seen,
                tid: r.tid,
                address: r.address,
                bytes,
            });
        self.seen += 1;
    }

    /// Appends, per process, a counter event of its estimated live bytes
    /// after each of its allocation records to `out`'s words of each
    /// provider section.
    pub(crate) fn derive(&mut self, out: &mut BTreeMap<Option<u32>, Vec<u64>>) {
        for ((provider, process), changes) in &mut self.changes {
            if self.drawn.contains(provider) {
                continue;
            }
            changes.sort_unstable_by_key(|c| (c.timestamp, c.order, c.index));
            let words = out.entry(*provider).or_default();
            let mut at: HashMap<u64, f64> = HashMap::new();
            let mut live = 0.0;
            for c in changes.iter() {
                if c.order == 0 {
                    live += c.bytes;
                    if let Some(earlier) = at.insert(c.address, c.bytes) {
                        live -= earlier;
                    }
                } else if let Some(bytes) = at.remove(&c.address) {
                    live -= bytes;
                }
                counter(words, *process, c, live);
            }
        }
    }
}

/// Appends the counter event of `live` bytes at `c` to `words`.
fn counter(words: &mut Vec<u64>, process: u64, c: &Change, live: f64) {
    // Rounded; never below 0 (a float sum's last bit).
    let value = live.round().max(0.0) as i64;
    let args = [Arg::new(
        StringRef::Inline(LIVE_BYTES),
        ArgValue::I64(value),
    )];
    let event = Out {
        kind: OutKind::Counter { id: 0 },
        timestamp: c.timestamp,
        thread: ThreadRef::Inline {
            process,
            thread: c.tid,
        },
        category: StringRef::Inline(CATEGORY),
        name: StringRef::Inline(NAME),
        args: &args,
    };
    // Cannot fail: inline names of a few bytes, one argument.
    let _ = encode_into_vec(&event, words);
}
