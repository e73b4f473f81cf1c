//! The accumulator of `fxt stats`. Each range of the walk (see
//! [`crate::input::Input::walk_ranges`]) feeds a [`RangeTally`] record by
//! record, with hash tables only (one look-up per record for its thread);
//! [`Tally::merge`] then folds the ranges in file order into the sorted
//! counts, names and durations (8 bytes each, for exact percentiles) the
//! report reads. Duration ends whose begin lies in an earlier range are
//! matched at the merge, against the begins that range left open.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fxt_format::decode::{ArgValue, Event, EventKind, Record, Text, Thread};
use fxt_format::encode::{OBJ_TYPE_PROCESS, OBJ_TYPE_THREAD};
use rustc_hash::FxHashMap;

use crate::input::ticks_to_ns;
use crate::names::{event_kind_name, record_type_name};

use super::locks::Locks;
use super::scheduling::Sched;

/// A category and name (`Text` clones without allocating for short strings).
pub type Key = (Text, Text);

/// A thread: provider, process koid, thread koid.
type ThreadKey = (Option<u32>, u64, u64);

/// Events and durations of one category and name.
#[derive(Default)]
pub struct PerName {
    pub events: u64,
    /// Nanoseconds.
    pub durations: Vec<u64>,
}

/// The first and last time seen (ns).
#[derive(Default, Clone, Copy)]
pub struct Span {
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

impl Span {
    fn add(&mut self, ns: u64) {
        self.first_ns = Some(self.first_ns.map_or(ns, |f| f.min(ns)));
        self.last_ns = Some(self.last_ns.map_or(ns, |l| l.max(ns)));
    }

    fn merge(&mut self, other: Span) {
        for ns in [other.first_ns, other.last_ns].into_iter().flatten() {
            self.add(ns);
        }
    }

    /// Last minus first (0 when nothing was seen).
    pub fn length(&self) -> u64 {
        match (self.first_ns, self.last_ns) {
            (Some(f), Some(l)) => l - f,
            _ => 0,
        }
    }
}

/// What one provider of an archive holds.
#[derive(Default)]
pub struct PerProvider {
    pub records: u64,
    pub events: u64,
    pub processes: BTreeSet<u64>,
    pub threads: BTreeSet<(u64, u64)>,
    pub span: Span,
}

/// Everything `fxt stats` gathers, merged over the ranges of the walk.
#[derive(Default)]
pub struct Tally {
    pub records_by_type: BTreeMap<&'static str, u64>,
    pub events_by_kind: BTreeMap<&'static str, u64>,
    /// Per category and name: event count and durations. Keyed by the
    /// trace's own names with a fast hasher: a trace that collides them
    /// only slows itself.
    pub names: FxHashMap<Key, PerName>,
    /// Open duration begins per thread: (key, start ns).
    pub open: FxHashMap<ThreadKey, Vec<(Key, u64)>>,
    pub unmatched_ends: u64,
    pub thread_events: BTreeMap<(u64, u64), u64>,
    /// Thread koid -> (process koid, name).
    pub thread_names: HashMap<u64, (u64, String)>,
    pub process_names: BTreeMap<u64, String>,
    /// Provider id -> (name, ticks per second).
    pub providers: BTreeMap<u32, (String, u64)>,
    pub buffer_filled: u64,
    /// The number of the snapshot this file is, from its `fxt`/`snapshot`
    /// instant (see `fxt_runtime::Session::snapshot`).
    pub snapshot: Option<u64>,
    pub span: Span,
    /// Per provider (`None`: records before any provider info).
    pub per_provider: BTreeMap<Option<u32>, PerProvider>,
    /// Context switches and wakeups, in ns.
    pub sched: Vec<Sched>,
    /// `fxt::sync`'s lock events.
    pub locks: Locks,
}

/// Counts by a static name: a handful of names, so a short list.
#[derive(Default)]
struct Counts(Vec<(&'static str, u64)>);

impl Counts {
    #[inline]
    fn add(&mut self, name: &'static str) {
        // The names are literals: the same pointer, but for a compiler
        // that did not merge them.
        let same = |n: &str| std::ptr::eq(n, name) || n == name;
        match self.0.iter_mut().find(|(n, _)| same(n)) {
            Some((_, count)) => *count += 1,
            None => self.0.push((name, 1)),
        }
    }
}

/// Records and time span of one provider within a range.
#[derive(Default)]
struct RangeProvider {
    records: u64,
    span: Span,
}

/// What `fxt stats` gathers in one range of the walk.
#[derive(Default)]
pub struct RangeTally {
    by_type: Counts,
    by_kind: Counts,
    providers: FxHashMap<Option<u32>, RangeProvider>,
    /// Events per provider and thread.
    threads: FxHashMap<(Option<u32>, Thread), u64>,
    span: Span,
    names: FxHashMap<Key, PerName>,
    open: FxHashMap<ThreadKey, Vec<(Key, u64)>>,
    /// Ends that found no begin open in this range (thread, end ns), in
    /// file order: the merge matches them with earlier ranges' begins.
    pending_ends: Vec<(ThreadKey, u64)>,
    /// Provider info, initialization and process and thread objects, in
    /// file order, with their provider (replayed by the merge).
    rare: Vec<(Option<u32>, Record)>,
    buffer_filled: u64,
    snapshot: Option<u64>,
    sched: Vec<Sched>,
    /// Events of category `lock`, with provider and ticks per second, in
    /// file order.
    lock_events: Vec<(Option<u32>, u64, Event)>,
}

impl RangeTally {
    /// Counts one record of `provider`, whose clock runs at `tps` ticks
    /// per second.
    pub fn add(&mut self, provider: Option<u32>, tps: u64, record: Record) {
        self.by_type.add(record_type_name(&record));
        let p = self.providers.entry(provider).or_default();
        p.records += 1;
        if let Some(ts) = record.timestamp() {
            let ns = ticks_to_ns(ts, tps);
            p.span.add(ns);
            self.span.add(ns);
        }
        match record {
            Record::ProviderInfo { .. } | Record::Initialization { .. } => {
                self.rare.push((provider, record))
            }
            Record::ProviderEvent { event: 0, .. } => self.buffer_filled += 1,
            Record::ContextSwitch(c) => self.sched.push(Sched::Switch {
                ns: ticks_to_ns(c.timestamp, tps),
                outgoing: c.outgoing_thread,
                state: c.outgoing_state,
                incoming: c.incoming_thread,
            }),
            Record::ThreadWakeup(w) => self.sched.push(Sched::Wakeup {
                ns: ticks_to_ns(w.timestamp, tps),
                thread: w.waking_thread,
            }),
            Record::KernelObject(ref o)
                if o.object_type == OBJ_TYPE_PROCESS || o.object_type == OBJ_TYPE_THREAD =>
            {
                self.rare.push((provider, record))
            }
            Record::Event(e) => self.add_event(provider, tps, e),
            _ => {}
        }
    }

    /// Counts an event and matches its durations.
    fn add_event(&mut self, provider: Option<u32>, tps: u64, e: Event) {
        if let Some(n) = snapshot_number(&e) {
            self.snapshot = Some(n);
        }
        self.by_kind.add(event_kind_name(&e.kind));
        *self.threads.entry((provider, e.thread)).or_default() += 1;
        let (process, thread) = match e.thread {
            Thread::Known { process, thread } => (process, thread),
            Thread::Undefined(_) => (0, 0),
        };
        if e.category == "lock" {
            // Rare: replayed in file order by the merge (`Locks` matches
            // flows across threads).
            self.lock_events.push((provider, tps, e.clone()));
        }
        let thread_key = (provider, process, thread);
        let start = ticks_to_ns(e.timestamp, tps);
        let key: Key = (e.category, e.name);
        match e.kind {
            EventKind::DurationComplete { end } => {
                let end = ticks_to_ns(end, tps);
                let per_name = self.names.entry(key).or_default();
                per_name.events += 1;
                per_name.durations.push(end.saturating_sub(start));
                self.span.add(end);
            }
            EventKind::DurationBegin => {
                self.names.entry(key.clone()).or_default().events += 1;
                self.open.entry(thread_key).or_default().push((key, start));
            }
            EventKind::DurationEnd => {
                self.names.entry(key).or_default().events += 1;
                match self.open.get_mut(&thread_key).and_then(Vec::pop) {
                    Some((begin_key, begin)) => self
                        .names
                        .entry(begin_key)
                        .or_default()
                        .durations
                        .push(start.saturating_sub(begin)),
                    None => self.pending_ends.push((thread_key, start)),
                }
            }
            _ => self.names.entry(key).or_default().events += 1,
        }
    }
}

impl Tally {
    /// Folds in the next range of the walk (ranges in file order).
    pub fn merge(&mut self, range: RangeTally) {
        for (name, n) in range.by_type.0 {
            *self.records_by_type.entry(name).or_default() += n;
        }
        for (name, n) in range.by_kind.0 {
            *self.events_by_kind.entry(name).or_default() += n;
        }
        for (provider, r) in range.providers {
            let p = self.per_provider.entry(provider).or_default();
            p.records += r.records;
            p.span.merge(r.span);
        }
        for ((provider, thread), events) in range.threads {
            let p = self.per_provider.entry(provider).or_default();
            p.events += events;
            let koids = match thread {
                Thread::Known { process, thread } => {
                    p.processes.insert(process);
                    p.threads.insert((process, thread));
                    (process, thread)
                }
                Thread::Undefined(_) => (0, 0),
            };
            *self.thread_events.entry(koids).or_default() += events;
        }
        self.span.merge(range.span);
        for (thread, end) in range.pending_ends {
            match self.open.get_mut(&thread).and_then(Vec::pop) {
                Some((key, begin)) => self
                    .names
                    .entry(key)
                    .or_default()
                    .durations
                    .push(end.saturating_sub(begin)),
                None => self.unmatched_ends += 1,
            }
        }
        for (key, n) in range.names {
            let p = self.names.entry(key).or_default();
            p.events += n.events;
            if p.durations.is_empty() {
                p.durations = n.durations;
            } else {
                p.durations.extend(n.durations);
            }
        }
        for (thread, stack) in range.open {
            self.open.entry(thread).or_default().extend(stack);
        }
        for (provider, record) in range.rare {
            self.replay(provider, record);
        }
        self.buffer_filled += range.buffer_filled;
        if range.snapshot.is_some() {
            self.snapshot = range.snapshot;
        }
        self.sched.extend(range.sched);
        for (provider, tps, e) in range.lock_events {
            self.locks.add(provider, tps, &e);
        }
    }

    /// Applies a provider info, initialization or kernel object record.
    fn replay(&mut self, provider: Option<u32>, record: Record) {
        match record {
            Record::ProviderInfo { provider_id, name } => {
                self.providers.insert(provider_id, (name, 0));
            }
            Record::Initialization { ticks_per_second } => {
                if let Some(id) = provider {
                    self.providers.entry(id).or_default().1 = ticks_per_second;
                }
            }
            Record::KernelObject(o) if o.object_type == OBJ_TYPE_PROCESS => {
                self.process_names.insert(o.koid, o.name.to_string());
            }
            Record::KernelObject(o) => {
                let process = o.process_koid().unwrap_or(0);
                self.thread_names
                    .insert(o.koid, (process, o.name.to_string()));
            }
            _ => {}
        }
    }
}

/// The snapshot number an `fxt`/`snapshot` instant carries.
fn snapshot_number(e: &Event) -> Option<u64> {
    if e.category.as_str() != Some("fxt") || e.name.as_str() != Some("snapshot") {
        return None;
    }
    match e.args.iter().find(|a| a.name.as_str() == Some("snapshot")) {
        Some(a) => match a.value {
            ArgValue::U64(n) => Some(n),
            _ => None,
        },
        None => None,
    }
}
