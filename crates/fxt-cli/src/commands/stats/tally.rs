//! The accumulator of `fxt stats`: [`Tally::add`] takes each record of the
//! walk in turn and keeps only counts, names, the open duration begins and
//! the durations (8 bytes each, for exact percentiles).

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

/// Everything `fxt stats` gathers in one walk.
#[derive(Default)]
pub struct Tally {
    pub records_by_type: BTreeMap<&'static str, u64>,
    pub events_by_kind: BTreeMap<&'static str, u64>,
    /// Per category and name: event count and durations. Keyed by the
    /// trace's own names with a fast hasher: a trace that collides them
    /// only slows itself.
    pub names: FxHashMap<Key, PerName>,
    /// Open duration begins per thread: (key, start ns).
    pub open: HashMap<ThreadKey, Vec<(Key, u64)>>,
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

impl Tally {
    /// Counts one record of `provider`, whose clock runs at `tps` ticks
    /// per second.
    pub fn add(&mut self, provider: Option<u32>, tps: u64, record: &Record) {
        *self
            .records_by_type
            .entry(record_type_name(record))
            .or_default() += 1;
        let p = self.per_provider.entry(provider).or_default();
        p.records += 1;
        if let Some(ts) = record.timestamp() {
            let ns = ticks_to_ns(ts, tps);
            p.span.add(ns);
            self.span.add(ns);
        }
        if let Record::Event(e) = record {
            p.events += 1;
            if let Thread::Known { process, thread } = e.thread {
                p.processes.insert(process);
                p.threads.insert((process, thread));
            }
        }
        match record {
            Record::ProviderInfo { provider_id, name } => {
                self.providers.insert(*provider_id, (name.clone(), 0));
            }
            Record::Initialization { ticks_per_second } => {
                if let Some(id) = provider {
                    self.providers.entry(id).or_default().1 = *ticks_per_second;
                }
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
            Record::KernelObject(o) => match o.object_type {
                OBJ_TYPE_PROCESS => {
                    self.process_names.insert(o.koid, o.name.to_string());
                }
                OBJ_TYPE_THREAD => {
                    let process = o.process_koid().unwrap_or(0);
                    self.thread_names
                        .insert(o.koid, (process, o.name.to_string()));
                }
                _ => {}
            },
            Record::Event(e) => self.add_event(provider, tps, e),
            _ => {}
        }
    }

    /// Counts an event and matches its durations.
    fn add_event(&mut self, provider: Option<u32>, tps: u64, e: &Event) {
        if let Some(n) = snapshot_number(e) {
            self.snapshot = Some(n);
        }
        *self
            .events_by_kind
            .entry(event_kind_name(&e.kind))
            .or_default() += 1;
        let key: Key = (e.category.clone(), e.name.clone());
        let (process, thread) = match e.thread {
            Thread::Known { process, thread } => (process, thread),
            Thread::Undefined(_) => (0, 0),
        };
        *self.thread_events.entry((process, thread)).or_default() += 1;
        self.locks.add(provider, tps, e);
        let per_name = self.names.entry(key.clone()).or_default();
        per_name.events += 1;
        let start = ticks_to_ns(e.timestamp, tps);
        let thread_key = (provider, process, thread);
        match e.kind {
            EventKind::DurationComplete { end } => {
                let end = ticks_to_ns(end, tps);
                per_name.durations.push(end.saturating_sub(start));
                self.span.add(end);
            }
            EventKind::DurationBegin => self.open.entry(thread_key).or_default().push((key, start)),
            EventKind::DurationEnd => match self.open.get_mut(&thread_key).and_then(Vec::pop) {
                Some((begin_key, begin)) => self
                    .names
                    .entry(begin_key)
                    .or_default()
                    .durations
                    .push(start.saturating_sub(begin)),
                None => self.unmatched_ends += 1,
            },
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
