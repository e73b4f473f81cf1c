//! A lock's drawings from its compact waits (`fxt::sync`, see
//! [`fxt_format::derived::lock`]): for each wait another thread's release
//! ended, the holder's `held` slice (on its thread: the part of its hold
//! during which someone waited), the waiter's `handoff` slice (inside its
//! wait, from that release to the acquisition) and a flow from the first
//! to the second, so that a viewer draws the arrow from the holder to the
//! waiter.
//!
//! The flow ends in the `handoff` slice, not in the wait itself, because
//! Perfetto's importer points a flow from whichever of its two slices
//! *starts* first: a wait begun before its holder took the lock (a
//! waiter that waited through several holders) would draw the arrow
//! from the waiter. A `handoff` slice starts at the release, never
//! before the `held` slice it comes from.
//!
//! The wait carries the release as nanoseconds before its acquisition (a
//! duration survives a tool moving the trace to another clock), turned
//! back into ticks here. The `held` slice ends at the release and starts
//! at the latest of: the earliest wait of that lock still in progress at
//! the release (someone waited from then), the lock's previous release
//! drawn (the hold began after it), and the end of the holder's previous
//! lock slice (a thread's slices nest).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use fxt_format::decode::{ArgValue, Event, EventKind, Thread};
use fxt_format::derived::lock::{CATEGORY, HANDOFF_NS, HOLDER, STATE};
use fxt_format::encode::{
    encode_into_vec, Arg, ArgValue as Value, Event as Out, EventKind as OutKind, StringRef,
    ThreadRef,
};

use super::{ns_to_ticks, u64_arg, Names, Section, LOCK_FLOWS};

/// The `state` of a waiter's derived slice from the release that ended
/// its wait to its acquisition.
const HANDOFF: &str = "handoff";

/// A wait slice of a lock, as read.
struct Wait {
    section: Section,
    process: u64,
    thread: u64,
    /// Index into [`Locks::names`].
    name: usize,
    start: u64,
    end: u64,
    /// The release that ended it: the holder's koid, and when (ticks).
    handoff: Option<(u64, u64)>,
}

/// The lock waits of a trace, gathered during the walk.
#[derive(Default)]
pub(crate) struct Locks {
    waits: Vec<Wait>,
    names: Names,
}

fn str_arg<'e>(e: &'e Event, key: &str) -> Option<&'e str> {
    e.args
        .iter()
        .find(|a| a.name.as_str() == Some(key))
        .and_then(|a| match &a.value {
            ArgValue::Str(t) => t.as_str(),
            _ => None,
        })
}

impl Locks {
    /// Takes one event of `section`: a lock's wait slice, or nothing.
    pub(crate) fn see(&mut self, section: Section, e: &Event) {
        if e.category.as_str() != Some(CATEGORY) {
            return;
        }
        let (EventKind::DurationComplete { end }, Thread::Known { process, thread }) =
            (e.kind, &e.thread)
        else {
            return;
        };
        if !matches!(str_arg(e, STATE), Some("wait" | "timed out")) {
            return;
        }
        let Some(name) = e.name.as_str() else { return };
        let name = self.names.index(name);
        let start = e.timestamp;
        let handoff = match (u64_arg(e, HOLDER), u64_arg(e, HANDOFF_NS)) {
            (Some(holder), Some(handoff)) if end > start => {
                // The acquisition is the slice's last tick; the release
                // lies in the wait.
                let acquired = end - 1;
                let ticks = ns_to_ticks(handoff, section.ticks_per_second);
                Some((holder, acquired.saturating_sub(ticks).max(start)))
            }
            _ => None,
        };
        self.waits.push(Wait {
            section,
            process: *process,
            thread: *thread,
            name,
            start,
            end,
            handoff,
        });
    }

    /// Appends the `held` and `handoff` slices and the flows to `out`'s
    /// words of each provider section, in time order.
    pub(crate) fn derive(&self, out: &mut BTreeMap<Option<u32>, Vec<u64>>) {
        // The holder's mode is not recorded: only what the slice is.
        let state = |s| {
            [Arg::new(
                StringRef::Inline(STATE),
                Value::Str(StringRef::Inline(s)),
            )]
        };
        let (held_args, handoff_args) = (state("held"), state(HANDOFF));
        let mut by_section: BTreeMap<Option<u32>, Vec<Out<'_>>> = BTreeMap::new();
        let mut next_flow = LOCK_FLOWS;
        for held in &self.helds() {
            let first = &self.waits[held.waits[0]];
            let events = by_section.entry(first.section.provider).or_default();
            let name = StringRef::Inline(self.names.get(first.name));
            let event = |kind, timestamp, (process, thread), args| Out {
                kind,
                timestamp,
                thread: ThreadRef::Inline { process, thread },
                category: StringRef::Inline(CATEGORY),
                name,
                args,
            };
            let holder = (held.process, held.thread);
            let end = held.released + 1;
            events.push(event(
                OutKind::DurationComplete { end },
                held.start,
                holder,
                &held_args,
            ));
            for wait in held.waits.iter().map(|&w| &self.waits[w]) {
                let id = super::flow_id(next_flow, held.process);
                next_flow += 1;
                let waiter = (wait.process, wait.thread);
                let end = wait.end;
                events.extend([
                    event(OutKind::FlowBegin { id }, held.released, holder, &[]),
                    event(
                        OutKind::DurationComplete { end },
                        held.released,
                        waiter,
                        &handoff_args,
                    ),
                    event(OutKind::FlowEnd { id }, wait.end - 1, waiter, &[]),
                ]);
            }
        }
        for (provider, mut events) in by_section {
            // In time order (stable: at equal ticks as pushed above): a
            // viewer takes records of equal nanoseconds in file order, and
            // a flow's end at an acquisition must come before the `held`
            // slice its thread starts there, or it binds to that slice.
            events.sort_by_key(|e| e.timestamp);
            let words = out.entry(provider).or_default();
            for e in &events {
                let _ = encode_into_vec(e, words);
            }
        }
    }

    /// One `held` slice per release that ended waits, placed (see the
    /// module docs).
    fn helds(&self) -> Vec<Held> {
        // Releases: one per holder thread and release time.
        type ReleaseKey = (Option<u32>, u64, u64, usize, u64);
        let mut releases: BTreeMap<ReleaseKey, Held> = BTreeMap::new();
        for (i, w) in self.waits.iter().enumerate() {
            let Some((holder, released)) = w.handoff else {
                continue;
            };
            let key = (w.section.provider, w.process, holder, w.name, released);
            releases
                .entry(key)
                .or_insert(Held {
                    process: w.process,
                    thread: holder,
                    start: 0,
                    released,
                    waits: Vec::new(),
                })
                .waits
                .push(i);
        }
        let mut helds: Vec<Held> = releases.into_values().collect();
        self.after_waiting_began(&mut helds);
        self.nest(&mut helds);
        helds
    }

    /// Moves each `held` slice's start to no earlier than the earliest
    /// wait of its lock (in its process) in progress at its release, nor
    /// than the lock's previous release.
    fn after_waiting_began(&self, helds: &mut [Held]) {
        type LockKey = (Option<u32>, u64, usize);
        let mut by_lock: HashMap<LockKey, (Vec<usize>, Vec<usize>)> = HashMap::new();
        for (i, w) in self.waits.iter().enumerate() {
            by_lock
                .entry((w.section.provider, w.process, w.name))
                .or_default()
                .0
                .push(i);
        }
        for (i, h) in helds.iter().enumerate() {
            let w = &self.waits[h.waits[0]];
            if let Some(e) = by_lock.get_mut(&(w.section.provider, w.process, w.name)) {
                e.1.push(i);
            }
        }
        for (mut waits, mut releases) in by_lock.into_values() {
            waits.sort_by_key(|&i| self.waits[i].start);
            releases.sort_by_key(|&i| helds[i].released);
            // A sweep: waits begun by the release, earliest start on top;
            // those ended before it leave for good (releases only grow).
            let mut open: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
            let mut next = waits.iter().peekable();
            let mut previous: Option<u64> = None;
            for r in releases {
                let at = helds[r].released;
                if let Some(p) = previous.filter(|&p| p < at) {
                    helds[r].start = helds[r].start.max(p + 1);
                }
                previous = Some(at);
                while let Some(&&w) = next.peek() {
                    if self.waits[w].start > at {
                        break;
                    }
                    open.push(Reverse((self.waits[w].start, self.waits[w].end)));
                    next.next();
                }
                while open.peek().is_some_and(|Reverse((_, end))| *end < at) {
                    open.pop();
                }
                if let Some(Reverse((start, _))) = open.peek() {
                    helds[r].start = helds[r].start.max(*start);
                }
                helds[r].start = helds[r].start.min(at);
            }
        }
    }

    /// Moves each `held` slice's start to no earlier than the end of its
    /// thread's previous lock slice (a wait, or a `held` slice).
    fn nest(&self, helds: &mut [Held]) {
        type ThreadKey = (Option<u32>, u64, u64);
        let mut ends: HashMap<ThreadKey, Vec<u64>> = HashMap::new();
        for w in &self.waits {
            ends.entry((w.section.provider, w.process, w.thread))
                .or_default()
                .push(w.end);
        }
        ends.values_mut().for_each(|e| e.sort_unstable());
        let mut order: Vec<usize> = (0..helds.len()).collect();
        order.sort_by_key(|&i| helds[i].released);
        let mut last: HashMap<ThreadKey, u64> = HashMap::new();
        for i in order {
            let provider = self.waits[helds[i].waits[0]].section.provider;
            let key = (provider, helds[i].process, helds[i].thread);
            let at = helds[i].released;
            let wait_end = ends.get(&key).and_then(|e| {
                let n = e.partition_point(|&end| end <= at);
                n.checked_sub(1).map(|k| e[k])
            });
            let floor = wait_end
                .unwrap_or(0)
                .max(last.get(&key).copied().unwrap_or(0));
            helds[i].start = helds[i].start.max(floor).min(at);
            last.insert(key, at + 1);
        }
    }
}

/// A release that ended waits: its `held` slice and the waits it ended.
struct Held {
    process: u64,
    thread: u64,
    start: u64,
    released: u64,
    /// Indices into [`Locks::waits`].
    waits: Vec<usize>,
}
