//! The accumulator of `fxt stats`. Each range of the walk (see
//! [`crate::input::Input::walk_view_ranges`]) feeds a [`RangeTally`] record by
//! record: an event's name found by its string indices, its thread by a
//! slot of recent threads (hash tables only for what those miss);
//! [`Tally::merge`] then folds the ranges in file order into the sorted
//! counts, names and durations (listed, or counted per value once short
//! and many, for exact percentiles: [`Lengths`]) the report reads. Duration ends whose begin lies in an earlier range are
//! matched at the merge, against the begins that range left open.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fxt_format::decode::{ArgValue, Context, Event, EventKind, Record, StrRef, Text, Thread, View};
use fxt_format::encode::header::event_type::{DURATION_BEGIN, DURATION_COMPLETE, DURATION_END};
use fxt_format::encode::{OBJ_TYPE_PROCESS, OBJ_TYPE_THREAD};
use fxt_format::time::ticks_per_second_or_default;
use rustc_hash::FxHashMap;

use crate::epoch::{ByThreadIndex, Epoch};
use crate::input::ticks_to_ns;
use crate::interned::Interned;
use crate::names::record_type_name;

use super::counts::{Counts, KindCounts};
use super::locks::Locks;
use super::scheduling::Sched;
use super::span::{Span, TickRun};
use super::summary::Lengths;
use super::tasks::Tasks;

mod heads;

/// A category and name (`Text` clones without allocating for short strings).
pub type Key = (Text, Text);

/// A thread: provider, process koid, thread koid.
type ThreadKey = (Option<u32>, u64, u64);

/// Events and durations of one category and name.
#[derive(Default)]
pub struct PerName {
    pub events: u64,
    /// Nanoseconds.
    pub durations: Lengths,
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
    /// `fxt::task`'s polls.
    pub tasks: Tasks,
}

/// Records and time span of one provider within a range.
#[derive(Default)]
struct RangeProvider {
    records: u64,
    span: Span,
}

/// Events of one provider and thread within a range, and the stack of
/// begins open on it. Begins and ends are matched by [`ThreadKey`], so
/// threads whose koids are unknown share one entry (with a thread whose
/// koids are 0, if any): the stack is then its own, one index away.
struct RangeThread {
    /// The first of its threads seen.
    key: (Option<u32>, Thread),
    koids: ThreadKey,
    /// Whether an event named its koids (not an unknown thread's).
    known: bool,
    events: u64,
    /// Begins open on it: (index in `names`, start ns).
    open: Vec<(usize, u64)>,
}

/// What `fxt stats` gathers in one range of the walk. Names are counted by
/// their [`Interned`] ids (category, name), turned back into texts by the
/// merge.
#[derive(Default)]
pub struct RangeTally {
    by_type: Counts,
    providers: Vec<(Option<u32>, RangeProvider)>,
    /// Index in `providers` of the last record's provider.
    last_provider: usize,
    threads: Vec<RangeThread>,
    thread_ids: FxHashMap<(Option<u32>, Thread), usize>,
    /// Index in `threads` of the last event's thread.
    last_thread: usize,
    span: Span,
    strings: Interned,
    /// Per id of `strings`: what its text is to the tally ([`RangeTally::flags`]).
    flags: Vec<u8>,
    /// (category, name) ids -> index in `names`.
    name_ids: FxHashMap<(u32, u32), usize>,
    /// The last (category, name) ids looked up, and their index.
    last_name: Option<((u32, u32), usize)>,
    /// Per name string index: the category string index and the index
    /// in `names` of the last event with that name ([`NO_CATEGORY`] if
    /// none), so that an event by indices finds its entry with no
    /// hashing; forgotten when the strings epoch changes. Names whose
    /// events are decoded whole ([`RangeTally::wants_whole`]) are never
    /// kept here: their events take the slow way.
    by_refs: Vec<(u16, u32)>,
    /// The strings epoch of `by_refs`.
    refs_epoch: Epoch,
    /// Per [`thread_slot`]: the index in `threads` of the last thread
    /// there, so that threads taking turns are found with no hashing.
    recent_threads: [u32; THREAD_SLOTS],
    /// Per thread index of an event head: its index in `threads`, while
    /// the threads epoch holds.
    by_thread_index: ByThreadIndex,
    names: Vec<((u32, u32), RangeName)>,
    /// Per entry of `names`: whether its events are decoded whole
    /// ([`RangeTally::wants_whole`]).
    whole: Vec<bool>,
    /// The span of the current run of records of one provider and clock,
    /// in ticks ([`RangeTally::span_ticks`]).
    run: TickRun,
    /// The provider and clock of the event heads since the last other
    /// record ([`RangeTally::start_heads`]); `None` after any other record.
    current: Option<Current>,
    /// Index in `threads` of each thread's entry by its koids.
    open_ids: FxHashMap<ThreadKey, usize>,
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
    /// Slices of category `task` (polls), with provider and ticks per
    /// second.
    task_events: Vec<(Option<u32>, u64, Event)>,
}

/// Events and durations of one (category, name) within a range.
#[derive(Default)]
struct RangeName {
    /// Its events by type: the merge sums them into the events by kind
    /// and by name (one count per event, not one of each).
    by_kind: KindCounts,
    /// Nanoseconds.
    durations: Lengths,
}

/// Slots of [`RangeTally::recent_threads`].
const THREAD_SLOTS: usize = 16;

/// The category of an entry of [`RangeTally::by_refs`] that names
/// nothing: no string index of a category (bit 15 marks an inline text).
const NO_CATEGORY: u16 = u16::MAX;

/// The slot of [`RangeTally::recent_threads`] a thread is kept in
/// ([`crate::recent`]).
#[inline(always)]
fn thread_slot(thread: &Thread) -> usize {
    match *thread {
        Thread::Known { thread, .. } => crate::recent::thread_slot(thread, THREAD_SLOTS),
        Thread::Undefined(index) => usize::from(index) % THREAD_SLOTS,
    }
}

/// The text `lock` (a lock event's category).
const LOCK: u8 = 1;
/// The text `fxt` (the category of fxt's own events).
const FXT: u8 = 2;
/// The text `snapshot` (fxt's snapshot instant).
const SNAPSHOT: u8 = 4;
/// The text `task` (the category of `fxt::task`'s events).
const TASK: u8 = 8;

/// One event as the tally counts it: its (category, name) by index in
/// [`RangeTally::names`], its time in ticks.
struct Counted {
    /// Its event type (0..=10).
    event_type: u8,
    /// A duration complete event's end, in ticks (0 for any other type).
    end: u64,
    /// Its thread's index in [`RangeTally::threads`].
    thread: usize,
    key: usize,
    ticks: u64,
}

/// The provider and clock (ticks per second) of the event heads between
/// two other records: the reader's tables, provider and clock change only
/// at a record that is not an event head, so they are read once after one
/// ([`RangeTally::start_heads`]).
#[derive(Clone, Copy)]
struct Current {
    provider: Option<u32>,
    tps: u64,
}

impl RangeTally {
    /// Counts one record of a view walk: an event by its string ids (the
    /// whole event decoded only when its category is `lock` or `task` or
    /// it is fxt's snapshot instant), any other record as
    /// [`RangeTally::add`].
    #[inline(always)]
    pub fn add_view(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        // The tables may change here (see `Current`).
        self.current = None;
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let provider = ctx.provider_id();
        let e = match view {
            View::Record(record) => return self.add(provider, tps, record.clone()),
            View::Event(e) => e,
        };
        if self.refs_epoch.changed(ctx) {
            self.by_refs.clear();
        }
        let key = self.key_of(ctx, e.category, e.name);
        if self.whole[key] {
            if let Ok(whole) = ctx.event(e) {
                self.keep_whole(provider, tps, key, whole);
            }
        }
        // Not counted as a record here: the merge counts the events by
        // kind and by thread as records of type `event` and of their
        // provider (a count of its own, written and read back per event,
        // holds up every next one).
        let at = self.provider_index(provider);
        self.span_ticks(at, tps, e.timestamp);
        let end = match e.kind {
            EventKind::DurationComplete { end } => end,
            _ => 0,
        };
        let counted = Counted {
            event_type: e.kind.event_type() as u8,
            end,
            thread: self.thread_index(provider, e.thread),
            key,
            ticks: e.timestamp,
        };
        self.count_event(tps, counted);
    }

    /// Counts one record of `provider` that is not an event, whose clock
    /// runs at `tps` ticks per second.
    fn add(&mut self, provider: Option<u32>, tps: u64, record: Record) {
        let ticks = record.timestamp();
        self.count_record(provider, record_type_name(&record), tps, ticks);
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
            // Events come as views ([`RangeTally::add_view`]).
            _ => {}
        }
    }

    /// Whether the events of a (category, name) need decoding whole: lock
    /// events (replayed by the merge) and fxt's snapshot instant (its
    /// number is an argument).
    fn wants_whole(&mut self, category: u32, name: u32) -> bool {
        let category = self.flags(category);
        category & (LOCK | TASK) != 0 || (category & FXT != 0 && self.flags(name) & SNAPSHOT != 0)
    }

    /// What the text of id `id` is to the tally ([`LOCK`], [`FXT`],
    /// [`SNAPSHOT`]), worked out once per id.
    #[inline]
    fn flags(&mut self, id: u32) -> u8 {
        let id = id as usize;
        while self.flags.len() <= id {
            let text = self.strings.text(self.flags.len() as u32);
            let flag = |name: &str, bit: u8| if text == name { bit } else { 0 };
            let flags = flag("lock", LOCK)
                | flag("fxt", FXT)
                | flag("snapshot", SNAPSHOT)
                | flag("task", TASK);
            self.flags.push(flags);
        }
        self.flags[id]
    }

    /// Counts a record by type, provider and time (`ticks` of a clock of
    /// `tps` ticks per second).
    #[inline(always)]
    fn count_record(
        &mut self,
        provider: Option<u32>,
        name: &'static str,
        tps: u64,
        ticks: Option<u64>,
    ) {
        self.by_type.add(name);
        let at = self.provider_index(provider);
        self.providers[at].1.records += 1;
        if let Some(ticks) = ticks {
            self.span_ticks(at, tps, ticks);
        }
    }

    /// Adds a time to the spans of the range and of provider `at`.
    #[inline]
    fn span_ticks(&mut self, at: usize, tps: u64, ticks: u64) {
        self.switch_run(at, tps);
        self.run.first = self.run.first.min(ticks);
        self.run.last = self.run.last.max(ticks);
    }

    /// Makes the run of spans that of provider `at` at `tps` ticks per
    /// second.
    #[inline]
    fn switch_run(&mut self, at: usize, tps: u64) {
        if self.run.provider != at || self.run.tps != tps {
            self.end_run();
            self.run.provider = at;
            self.run.tps = tps;
        }
    }

    /// Adds the current run's span to the spans, and empties it.
    #[cold]
    fn end_run(&mut self) {
        let run = std::mem::take(&mut self.run);
        if run.first <= run.last {
            for ticks in [run.first, run.last] {
                let ns = ticks_to_ns(ticks, run.tps);
                self.providers[run.provider].1.span.add(ns);
                self.span.add(ns);
            }
        }
        if run.ends.0 <= run.ends.1 {
            // Converting keeps the order: the first and last end in ns.
            for ticks in [run.ends.0, run.ends.1] {
                self.span.add(ticks_to_ns(ticks, run.tps));
            }
        }
    }

    /// The index of `provider` in `providers` (records come in long runs
    /// of one provider: the last one is checked first).
    #[inline]
    fn provider_index(&mut self, provider: Option<u32>) -> usize {
        if self
            .providers
            .get(self.last_provider)
            .is_some_and(|p| p.0 == provider)
        {
            return self.last_provider;
        }
        let at = match self.providers.iter().position(|p| p.0 == provider) {
            Some(at) => at,
            None => {
                self.providers.push((provider, RangeProvider::default()));
                self.providers.len() - 1
            }
        };
        self.last_provider = at;
        at
    }

    /// The index of a provider's thread in `threads` (events come in runs
    /// of one thread: the last one is checked first).
    #[inline(always)]
    fn thread_index(&mut self, provider: Option<u32>, thread: Thread) -> usize {
        let key = (provider, thread);
        if self
            .threads
            .get(self.last_thread)
            .is_some_and(|t| t.key == key)
        {
            return self.last_thread;
        }
        let slot = thread_slot(&thread);
        let recent = self.recent_threads[slot] as usize;
        if self.threads.get(recent).is_some_and(|t| t.key == key) {
            self.last_thread = recent;
            return recent;
        }
        let at = self.find_thread(key);
        self.recent_threads[slot] = at as u32;
        at
    }

    /// [`RangeTally::thread_index`] of another thread than the last.
    #[inline(never)]
    fn find_thread(&mut self, key: (Option<u32>, Thread)) -> usize {
        let at = match self.thread_ids.get(&key) {
            Some(&at) => at,
            None => self.new_thread(key),
        };
        self.last_thread = at;
        at
    }

    #[cold]
    fn new_thread(&mut self, key: (Option<u32>, Thread)) -> usize {
        let koids = match key.1 {
            Thread::Known { process, thread } => (process, thread),
            Thread::Undefined(_) => (0, 0),
        };
        let thread_key = (key.0, koids.0, koids.1);
        let at = *self.open_ids.entry(thread_key).or_insert_with(|| {
            self.threads.push(RangeThread {
                key,
                koids: thread_key,
                known: false,
                events: 0,
                open: Vec::new(),
            });
            self.threads.len() - 1
        });
        self.threads[at].known |= matches!(key.1, Thread::Known { .. });
        self.thread_ids.insert(key, at);
        at
    }

    /// The index in `names` of an event's (category, name): by their
    /// string indices, as remembered while the strings epoch holds.
    #[inline(always)]
    fn key_of(&mut self, ctx: &Context<'_>, category: StrRef<'_>, name: StrRef<'_>) -> usize {
        let known = match (category, name) {
            (StrRef::Indexed(c), StrRef::Indexed(n)) => self
                .by_refs
                .get(usize::from(n))
                .filter(|&&(category, _)| category == c)
                .map(|&(_, key)| key as usize),
            _ => None,
        };
        match known {
            Some(key) => key,
            None => self.name_key(ctx, category, name),
        }
    }

    /// [`RangeTally::key_of`] of a (category, name) not remembered.
    #[inline(never)]
    fn name_key(&mut self, ctx: &Context<'_>, category: StrRef<'_>, name: StrRef<'_>) -> usize {
        let ids = (self.strings.id(ctx, category), self.strings.id(ctx, name));
        let key = self.name_index(ids.0, ids.1);
        if let (StrRef::Indexed(c), StrRef::Indexed(n)) = (category, name) {
            let at = usize::from(n);
            if at >= self.by_refs.len() {
                // At most 32768 entries: indices are 15 bits.
                self.by_refs.resize(at + 1, (NO_CATEGORY, 0));
            }
            // A name decoded whole is left out: its events take the slow
            // way, which decodes them (`add_head_slowly`).
            let category = if self.whole[key] { NO_CATEGORY } else { c };
            self.by_refs[at] = (category, key as u32);
        }
        key
    }

    /// The index of a (category, name) in `names`.
    #[inline]
    fn name_index(&mut self, category: u32, name: u32) -> usize {
        match self.last_name {
            Some((ids, at)) if ids == (category, name) => at,
            _ => self.find_name(category, name),
        }
    }

    /// [`RangeTally::name_index`] of another name than the last.
    fn find_name(&mut self, category: u32, name: u32) -> usize {
        let at = match self.name_ids.get(&(category, name)) {
            Some(&at) => at,
            None => {
                let whole = self.wants_whole(category, name);
                self.names.push(((category, name), RangeName::default()));
                self.whole.push(whole);
                self.name_ids.insert((category, name), self.names.len() - 1);
                self.names.len() - 1
            }
        };
        self.last_name = Some(((category, name), at));
        at
    }

    /// Keeps an event of `provider` decoded whole, of the (category, name)
    /// of entry `key` ([`RangeTally::wants_whole`]).
    #[cold]
    fn keep_whole(&mut self, provider: Option<u32>, tps: u64, key: usize, whole: Event) {
        if let Some(n) = snapshot_number(&whole) {
            self.snapshot = Some(n);
        }
        let category = self.flags(self.names[key].0 .0);
        if category & LOCK != 0 {
            // Rare: replayed in file order by the merge (`Locks` matches
            // flows across threads).
            self.lock_events.push((provider, tps, whole));
        } else if category & TASK != 0 && Tasks::takes(&whole) {
            self.task_events.push((provider, tps, whole));
        }
    }

    /// Counts an event and matches its durations (`tps`: the ticks per
    /// second of its clock).
    #[inline(always)]
    fn count_event(&mut self, tps: u64, e: Counted) {
        let key = e.key;
        self.names[key].1.by_kind.add(e.event_type);
        let thread = &mut self.threads[e.thread];
        thread.events += 1;
        match u64::from(e.event_type) {
            DURATION_COMPLETE => {
                let (start, end) = (ticks_to_ns(e.ticks, tps), ticks_to_ns(e.end, tps));
                self.names[key].1.durations.push(end.saturating_sub(start));
                // The run is this event's provider's at this clock.
                self.run.ends.0 = self.run.ends.0.min(e.end);
                self.run.ends.1 = self.run.ends.1.max(e.end);
            }
            DURATION_BEGIN => thread.open.push((key, ticks_to_ns(e.ticks, tps))),
            DURATION_END => {
                let end = ticks_to_ns(e.ticks, tps);
                match thread.open.pop() {
                    Some((begin_key, begin)) => self.names[begin_key]
                        .1
                        .durations
                        .push(end.saturating_sub(begin)),
                    None => self.pending_ends.push((thread.koids, end)),
                }
            }
            _ => {}
        }
    }

    /// The texts of a (category, name) by id.
    fn key(&self, ids: (u32, u32)) -> Key {
        (
            self.strings.text(ids.0).clone(),
            self.strings.text(ids.1).clone(),
        )
    }
}

impl Tally {
    /// Folds in the next range of the walk (ranges in file order).
    pub fn merge(&mut self, mut range: RangeTally) {
        range.end_run();
        let mut by_kind = KindCounts::default();
        let names: Vec<(Key, PerName)> = std::mem::take(&mut range.names)
            .into_iter()
            .map(|(ids, n)| {
                by_kind.merge(&n.by_kind);
                let events = n.by_kind.total();
                let durations = n.durations;
                (range.key(ids), PerName { events, durations })
            })
            .collect();
        let open: Vec<(ThreadKey, Vec<(Key, u64)>)> = (range.threads.iter_mut())
            .map(|t| {
                let stack = std::mem::take(&mut t.open)
                    .into_iter()
                    .map(|(at, ns)| (names[at].0.clone(), ns))
                    .collect();
                (t.koids, stack)
            })
            .collect();
        for (name, n) in range.by_type.0 {
            *self.records_by_type.entry(name).or_default() += n;
        }
        // Event records are counted by kind only (see `add_view`).
        let events: u64 = by_kind.total();
        if events > 0 {
            *self.records_by_type.entry("event").or_default() += events;
        }
        for (name, n) in by_kind.named().filter(|(_, n)| *n > 0) {
            *self.events_by_kind.entry(name).or_default() += n;
        }
        for (provider, r) in range.providers {
            let p = self.per_provider.entry(provider).or_default();
            p.records += r.records;
            p.span.merge(r.span);
        }
        for RangeThread {
            koids: (provider, process, thread),
            known,
            events,
            ..
        } in range.threads
        {
            let p = self.per_provider.entry(provider).or_default();
            // Event records are counted by thread only (see `add_view`).
            p.records += events;
            p.events += events;
            if known {
                p.processes.insert(process);
                p.threads.insert((process, thread));
            }
            *self.thread_events.entry((process, thread)).or_default() += events;
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
        for (key, n) in names {
            let p = self.names.entry(key).or_default();
            p.events += n.events;
            p.durations.append(n.durations);
        }
        for (thread, stack) in open {
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
        for (provider, tps, e) in range.task_events {
            self.tasks.add(provider, tps, &e);
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
    let arg = e.args.iter().find(|a| a.name.as_str() == Some("snapshot"));
    match arg?.value {
        ArgValue::U64(n) => Some(n),
        _ => None,
    }
}
