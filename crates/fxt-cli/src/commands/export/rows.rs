//! The second pass over an input: every record `fxt recover` would keep,
//! as rows of the tables. Slices are written when they end, in the order
//! the first pass saw them end, each with the depth and parent it found
//! ([`super::nesting`]). Memory: a stack of open begins per thread and the
//! open async spans (their arguments included), the distinct categories
//! and names of duration begins, and the row groups. Events of the shapes
//! a thread repeats are written by plan ([`plan`]).

mod heads;
mod plan;
mod sched;

use fxt_format::decode::{
    ArgViews, Context as At, Event, EventKind, EventView, Head, Record, View,
};
use fxt_format::time::ticks_per_second_or_default;

use super::args::{kept_from_args, Args, Value};
use super::begins::{BeginArgs, Decoded, KeptLists, ListId, Open, NO_LIST};
use super::counters::{number, view_args, CounterRows};
use super::keys::{interned_key, koids, of_input, view_key, EventKey, NO_KEY};
use super::labels::{Labels, Seen};
use super::nesting::{Nesting, Place};
use super::samples::{Context, SampleRows};
use super::scan::{async_key, ns as ticks_to_ns, pid_of, AsyncKey, Stacks};
use super::schema::{self as row, ArgMaps, Tables};
use super::summary::Summary;
use super::tasks;
use super::threads::ThreadStacks;
use crate::clock::Clock;
use crate::error::Error;
use crate::input::Input;
use crate::interned::Interned;
use crate::keep::Fix;
use crate::recent::thread_slot;
use crate::samples::{allocs, sample_of, Names};

/// The writer of one input's rows.
pub struct Rows<'a> {
    /// The input's name, the `trace` column.
    pub trace: &'a str,
    /// The `host` column.
    pub host: &'a str,
    /// Names from the first pass.
    pub labels: &'a Labels,
    /// Depths and parents from the first pass.
    pub nesting: Nesting,
    /// The tables.
    pub tables: &'a mut Tables,
    /// The counts of what is left out.
    pub summary: &'a mut Summary,
    /// Threads and processes the rows mention.
    pub seen: Seen,
    durations: ThreadStacks<Open>,
    asyncs: Stacks<AsyncKey, Open>,
    /// Arrival index of the next slice (its `id`).
    next_id: u64,
    /// The names of sampled addresses.
    pub names: Names,
    /// Samples waiting for the slice they were taken in.
    samples: SampleRows,
    /// The names of the threads whose rows were written lately, by slot
    /// (threads take turns): provider, pid, tid and the provider's,
    /// process's and thread's names. A thread here is noted as seen.
    recent_names: [Option<NamedThread<'a>>; NAMES_SLOTS],
    /// The input's number among the tables' inputs (in its rows' keys).
    input: u64,
    /// The clock of the last event view's provider.
    clock: Option<Clock>,
    /// The arguments of the open begins read from views or heads.
    kept: KeptLists,
    /// The categories and names of duration begins read from views.
    texts: Interned,
    /// The plans of the events of the shapes each thread repeats
    /// ([`plan`]).
    plans: plan::Plans,
}

/// The index of the category among an event row's texts (the name's
/// follows it).
const CATEGORY: usize = 5;

/// A row's category and name (`None`: undefined).
type Texts<'b> = (Option<&'b str>, Option<&'b str>);

/// What an event row's first columns take of its event (a slice's: of
/// its begin): when (ns), the thread's koids, its texts, and its key
/// ([`NO_KEY`]: none).
struct Begun<'b> {
    ts: i64,
    ids: (u64, u64),
    texts: Texts<'b>,
    key: EventKey,
}

/// The provider's, process's and thread's names of a row.
type Names3<'a> = [Option<&'a str>; 3];

/// A thread of a provider (provider, pid, tid) and its names.
type NamedThread<'a> = (Option<u32>, u64, u64, Names3<'a>);

/// Slots of [`Rows::recent_names`].
const NAMES_SLOTS: usize = 16;

/// A koid or id as a signed 64-bit column value (two's complement: values
/// of 2^63 and more read negative).
fn signed(v: u64) -> i64 {
    v as i64
}

impl<'a> Rows<'a> {
    /// A writer for one input.
    pub fn new(
        trace: &'a str,
        host: &'a str,
        labels: &'a Labels,
        nesting: Nesting,
        tables: &'a mut Tables,
        summary: &'a mut Summary,
    ) -> Rows<'a> {
        tables.inputs += 1;
        let input = tables.inputs;
        Rows {
            trace,
            host,
            labels,
            nesting,
            tables,
            summary,
            seen: Seen::default(),
            durations: ThreadStacks::default(),
            asyncs: Stacks::default(),
            next_id: 0,
            names: Names::default(),
            samples: SampleRows::default(),
            recent_names: [None; NAMES_SLOTS],
            input,
            clock: None,
            kept: KeptLists::default(),
            texts: Interned::default(),
            plans: plan::Plans::default(),
        }
    }

    /// The provider's, process's and thread's names of thread `(pid,
    /// tid)` of `provider`, which is noted as seen.
    #[inline]
    fn names_of(&mut self, provider: Option<u32>, pid: u64, tid: u64) -> Names3<'a> {
        let slot = &mut self.recent_names[thread_slot(tid, NAMES_SLOTS)];
        match *slot {
            Some((p, i, t, names)) if (p, i, t) == (provider, pid, tid) => names,
            _ => {
                let labels = self.labels;
                let names = [
                    labels.provider(provider),
                    labels.process(pid, provider),
                    labels.thread(tid),
                ];
                *slot = Some((provider, pid, tid, names));
                self.seen.thread(pid, tid, provider);
                names
            }
        }
    }

    /// Runs the second pass over `input`, leaving out what `fixes` drops.
    /// Events of the usual shape are walked as heads ([`heads`]), others
    /// as views: a row's strings are borrowed from the
    /// record or the provider's table, its arguments read from the record
    /// as they are written (only begins, which wait for their end, and
    /// complete events are decoded whole).
    pub fn write(
        &mut self,
        input: &mut Input,
        fixes: &std::collections::HashMap<u64, Fix>,
    ) -> Result<(), Error> {
        self.walk(input, fixes)?;
        self.summary.async_never_ended += self.asyncs.open();
        let mut samples = std::mem::take(&mut self.samples);
        samples.finish(&mut self.sample_context())
    }

    /// The rows pass's walk, a function of its own: its loop compiled with
    /// the reader in this frame, apart from the pass's setup and end.
    #[inline(never)]
    fn walk(
        &mut self,
        input: &mut Input,
        fixes: &std::collections::HashMap<u64, Fix>,
    ) -> Result<(), Error> {
        // Compiled into the walk's loop, so that a head stays in registers
        // (handed to a call, its words are read back from memory as
        // they were stored, not copied whole).
        input.walk_heads_in_order(
            "export (2/2)",
            #[inline(always)]
            |ctx, head| {
                // Most traces need no fix: no look-up per record then.
                if !fixes.is_empty()
                    && matches!(fixes.get(&ctx.record_offset()), Some(Fix::Drop(_)))
                {
                    return Ok(());
                }
                match head {
                    Head::Event(h, _) => self.head(ctx, &h),
                    Head::Other(view) => self.view(ctx, view),
                }
            },
        )?;
        Ok(())
    }

    /// A record the walk hands as its view.
    #[inline(never)]
    fn view(&mut self, ctx: &At<'_>, view: &View<'_>) -> Result<(), Error> {
        match view {
            View::Event(e) => self.event_view(ctx, e),
            View::Record(record) => self.record(ctx, record.clone()),
        }
    }

    /// A record that is not an event view.
    fn record(&mut self, ctx: &At<'_>, record: Record) -> Result<(), Error> {
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let provider = ctx.provider_id();
        match record {
            Record::Event(e) => self.event(provider, tps, e),
            Record::ContextSwitch(c) => self.switch(provider, &c, tps),
            Record::LegacyContextSwitch(c) => self.legacy_switch(provider, &c, tps),
            Record::ThreadWakeup(w) => self.wakeup(provider, &w, tps),
            Record::ProviderEvent { event: 0, .. } => {
                self.summary.buffer_filled += 1;
                Ok(())
            }
            Record::Blob(_) if sample_of(&record).is_some() => {
                self.sample(provider, tps, &record);
                Ok(())
            }
            Record::Blob(_) if allocs::alloc_of(&record).is_some() => {
                self.allocation(provider, tps, &record)
            }
            Record::Log(_)
            | Record::Blob(_)
            | Record::UserspaceObject(_)
            | Record::LargeBlobWithMetadata(_)
            | Record::LargeBlobNoMetadata(_)
            | Record::Unknown(_) => {
                let t = crate::names::record_type_name(&record);
                *self.summary.not_exported.entry(t).or_default() += 1;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// An event view: its row written from the view, or a begin kept
    /// (decoded) for its end.
    fn event_view(&mut self, ctx: &At<'_>, e: &EventView<'_>) -> Result<(), Error> {
        if self.by_plan(ctx, e)? {
            return Ok(());
        }
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let provider = ctx.provider_id();
        let ts = self.ns(e.timestamp, tps);
        let ids = koids(e.thread);
        let args = Args::View(e, ctx);
        let texts = (ctx.str(e.category), ctx.str(e.name));
        match e.kind {
            // A complete event's row straight from its view (a task's
            // poll, which the polls table takes too, is decoded).
            EventKind::DurationComplete { end } if texts.0 != Some(tasks::CATEGORY) => {
                let end = self.ns(end, tps);
                let key = view_key(ctx, e);
                let begun = Begun {
                    ts,
                    ids,
                    texts,
                    key,
                };
                self.slice_row(provider, begun, end, ("complete", None), &[args])
            }
            // A begin keeps its texts and arguments as decoding it whole
            // would give them, read from its view (in a list of its own),
            // unless only decoding reads its arguments.
            EventKind::DurationBegin
                if let Some(list) = self.begin_args(ctx, (e.args(), e.arg_count)) =>
            {
                let open = Open {
                    ts: ticks_to_ns(e.timestamp, tps),
                    pid: ids.0,
                    tid: ids.1,
                    category: self.texts.id(ctx, e.category),
                    name: self.texts.id(ctx, e.name),
                    args: BeginArgs::Kept(list),
                };
                self.durations.push((provider, e.thread), open);
                Ok(())
            }
            EventKind::DurationBegin
            | EventKind::DurationComplete { .. }
            | EventKind::AsyncBegin { .. } => {
                let event = ctx.event(e).map_err(|err| {
                    Error::msg(format!("internal error: a view does not decode: {err}"))
                })?;
                self.event(provider, tps, event)
            }
            EventKind::DurationEnd => match self.durations.pop((provider, e.thread)) {
                Some(begin) => self.slice(provider, begin, ts, "duration", None, args),
                // The first pass left out every end without a begin.
                None => Err(Error::msg("internal error: a kept end has no begin")),
            },
            EventKind::AsyncEnd { id } => {
                let key = (
                    provider,
                    pid_of(e.thread),
                    ctx.text(e.category),
                    ctx.text(e.name),
                    id,
                );
                match self.asyncs.pop(&key) {
                    Some(begin) => self.slice(provider, begin, ts, "async", Some(id), args),
                    None => {
                        self.summary.async_ends_without_begin += 1;
                        Ok(())
                    }
                }
            }
            _ => {
                let key = view_key(ctx, e);
                let head = Begun {
                    ts,
                    ids,
                    texts,
                    key,
                };
                self.written_as_it_comes(provider, e.kind, head, args)
            }
        }
    }

    /// An instant's, counter's or flow event's rows (of `kind`), from
    /// `head` and `args`.
    #[inline(always)]
    fn written_as_it_comes(
        &mut self,
        provider: Option<u32>,
        kind: EventKind,
        head: Begun<'_>,
        args: Args<'_>,
    ) -> Result<(), Error> {
        match kind {
            EventKind::Instant => self.instant(provider, head, args, "instant", None),
            EventKind::AsyncInstant { id } => self.instant(provider, head, args, "async", Some(id)),
            EventKind::Counter { id } => self.counter(provider, head, args, id),
            EventKind::FlowBegin { id } => self.flow(provider, head, args, id, "begin"),
            EventKind::FlowStep { id } => self.flow(provider, head, args, id, "step"),
            EventKind::FlowEnd { id } => self.flow(provider, head, args, id, "end"),
            // Slices' events are written as they end.
            _ => Ok(()),
        }
    }

    /// Reads a begin's arguments (`count` of them, as its header says)
    /// into a list of [`Rows::kept`]: its number ([`NO_LIST`] for none),
    /// or `None` if only decoding it reads them. Of a view or a head.
    #[inline(always)]
    fn begin_args(&mut self, ctx: &At<'_>, (args, count): (ArgViews<'_>, u8)) -> Option<ListId> {
        if count == 0 {
            return Some(NO_LIST);
        }
        let list = self.kept.take();
        if kept_from_args(
            (args, count),
            ctx,
            &mut self.texts,
            self.kept.list_mut(list),
        ) {
            return Some(list);
        }
        self.kept.give_back(list);
        None
    }

    /// `ticks` at `tps` per second in nanoseconds, as [`ticks_to_ns`]
    /// gives them, divided by the clock's reciprocal (the last one's, or a
    /// new one).
    #[inline(always)]
    fn ns(&mut self, ticks: u64, tps: u64) -> i64 {
        let clock = match self.clock {
            Some(clock) if clock.ticks_per_second() == tps => clock,
            _ => *self.clock.insert(Clock::new(tps)),
        };
        i64::try_from(clock.ns(ticks)).unwrap_or(i64::MAX)
    }

    /// Where sample rows go.
    fn sample_context(&mut self) -> Context<'a, '_> {
        Context {
            trace: self.trace,
            host: self.host,
            labels: self.labels,
            table: &mut self.tables.samples,
            summary: self.summary,
        }
    }

    /// A sample waits for its slice ([`SampleRows`]); one that does not
    /// decode is counted as not exported.
    fn sample(&mut self, provider: Option<u32>, tps: u64, record: &Record) {
        match sample_of(record) {
            Some(Ok(s)) => {
                let ts = ticks_to_ns(s.timestamp, tps);
                self.samples.sample(provider, ts, &s, &self.names);
            }
            _ => {
                *self
                    .summary
                    .not_exported
                    .entry("malformed sample")
                    .or_default() += 1
            }
        }
    }

    /// A sampled allocation's or free's row (its frames named as samples'
    /// are); one that does not decode is counted as not exported.
    fn allocation(
        &mut self,
        provider: Option<u32>,
        tps: u64,
        record: &Record,
    ) -> Result<(), Error> {
        let Some(Ok(a)) = allocs::alloc_of(record) else {
            *self
                .summary
                .not_exported
                .entry("malformed allocation")
                .or_default() += 1;
            return Ok(());
        };
        let ts = ticks_to_ns(a.timestamp, tps);
        let alloc = a.kind == fxt_format::samples::AllocKind::Alloc;
        let frames = if alloc {
            allocs::stack(&self.names, &allocs::sample_shaped(&a))
        } else {
            Vec::new()
        };
        // Koids, addresses and sizes as signed 64-bit values (two's
        // complement), as in every table.
        let row = row::AllocRow {
            source: self.source(provider),
            pid: Some(a.pid as i64),
            tid: Some(a.tid as i64),
            thread: self.labels.thread(a.tid),
            ts: Some(ts),
            kind: Some(if alloc { "alloc" } else { "free" }),
            address: Some(a.address as i64),
            size: Some(a.size as i64),
            bytes: Some(if alloc {
                a.estimated_bytes().round() as i64
            } else {
                0
            }),
            mean: Some(a.mean as i64),
            untracked: Some(i32::from(a.untracked)),
            frames: Some(&frames),
        };
        self.tables.allocations.push(&row, self.summary)
    }

    /// The columns every row recorded by `provider` begins with.
    fn source(&self, provider: Option<u32>) -> row::Source<'a> {
        row::Source {
            trace: Some(self.trace),
            host: Some(self.host),
            provider: self.labels.provider(provider),
        }
    }

    /// The columns every event row begins with, of a row of `provider`
    /// from `head` (its thread noted as seen).
    #[inline(always)]
    fn event_columns<'b>(&mut self, provider: Option<u32>, head: &Begun<'b>) -> row::Event<'b>
    where
        'a: 'b,
    {
        let (pid, tid) = head.ids;
        let [provider_name, process, thread] = self.names_of(provider, pid, tid);
        let (category, name) = head.texts;
        row::Event {
            key: of_input(head.key, self.input),
            texts: [
                Some(self.trace),
                Some(self.host),
                provider_name,
                process,
                thread,
                category,
                name,
            ],
            koids: [signed(pid), signed(tid)],
            ts: Some(head.ts),
        }
    }

    /// A decoded event.
    fn event(&mut self, provider: Option<u32>, tps: u64, e: Event) -> Result<(), Error> {
        let ts = ticks_to_ns(e.timestamp, tps);
        let ids = koids(e.thread);
        let texts = (e.category.as_str(), e.name.as_str());
        let args = Args::Decoded(&e.args);
        match e.kind {
            EventKind::DurationBegin => {
                let key = (provider, e.thread);
                let open = self.open(ts, ids, e);
                self.durations.push(key, open);
                Ok(())
            }
            EventKind::DurationEnd => match self.durations.pop((provider, e.thread)) {
                Some(begin) => self.slice(provider, begin, ts, "duration", None, args),
                // The first pass left out every end without a begin.
                None => Err(Error::msg("internal error: a kept end has no begin")),
            },
            EventKind::DurationComplete { end } => {
                let end = ticks_to_ns(end, tps);
                if e.category == tasks::CATEGORY {
                    let [_, _, thread] = self.names_of(provider, ids.0, ids.1);
                    let ran = tasks::Ran { ids, thread };
                    let source = self.source(provider);
                    tasks::poll(self.tables, self.summary, source, ran, &e, (ts, end))?;
                }
                let open = self.open(ts, ids, e);
                self.slice(provider, open, end, "complete", None, Args::Decoded(&[]))
            }
            EventKind::AsyncBegin { id } => {
                if e.category == tasks::CATEGORY {
                    let source = self.source(provider);
                    tasks::life(self.tables, self.summary, source, ids.0, &e, ts)?;
                }
                let key = async_key(provider, &e, id);
                let open = self.open(ts, ids, e);
                self.asyncs.push(key, open);
                Ok(())
            }
            EventKind::AsyncEnd { id } => match self.asyncs.pop(&async_key(provider, &e, id)) {
                Some(begin) => self.slice(provider, begin, ts, "async", Some(id), args),
                None => {
                    self.summary.async_ends_without_begin += 1;
                    Ok(())
                }
            },
            kind => {
                let head = Begun {
                    ts,
                    ids,
                    texts,
                    key: NO_KEY,
                };
                self.written_as_it_comes(provider, kind, head, args)
            }
        }
    }

    fn open(&self, ts: i64, (pid, tid): (u64, u64), e: Event) -> Open {
        Open {
            ts,
            pid,
            tid,
            category: 0,
            name: 0,
            args: BeginArgs::Decoded(Box::new(Decoded {
                category: e.category,
                name: e.name,
                args: e.args,
            })),
        }
    }

    /// A slice row: `begin` ended at `end` (ns), with the end's arguments
    /// after the begin's.
    fn slice(
        &mut self,
        provider: Option<u32>,
        begin: Open,
        end: i64,
        kind: &str,
        async_id: Option<u64>,
        end_args: Args<'_>,
    ) -> Result<(), Error> {
        if let (BeginArgs::Kept(_), None) = (&begin.args, async_id) {
            return self.duration_by_plan(provider, begin, end, end_args);
        }
        let ids = (begin.pid, begin.tid);
        let key = match begin.args {
            BeginArgs::Kept(_) => interned_key(provider, ids, begin.category, begin.name),
            BeginArgs::Decoded(_) => NO_KEY,
        };
        // The texts are filled in once nothing else borrows the writer
        // (they borrow its interned texts, lent without moving them).
        let head = Begun {
            ts: begin.ts,
            ids,
            texts: (None, None),
            key,
        };
        let mut slice = self.slice_head(provider, &head, end, (kind, async_id))?;
        let texts = &self.texts;
        let (category, name, begin_args) = match &begin.args {
            BeginArgs::Kept(list) => (
                texts.text(begin.category).as_str(),
                texts.text(begin.name).as_str(),
                Args::Kept(self.kept.list(*list), texts),
            ),
            BeginArgs::Decoded(d) => (d.category.as_str(), d.name.as_str(), Args::Decoded(&d.args)),
        };
        slice.event.texts[CATEGORY] = category;
        slice.event.texts[CATEGORY + 1] = name;
        let args = [begin_args, end_args];
        slice.args = ArgMaps(&args);
        let written = self.tables.slices.push(&slice, self.summary);
        // An error returned as it is; success told by its tag alone (the
        // whole result, stored in pieces, read back as one stalls).
        written?;
        if let BeginArgs::Kept(list) = begin.args {
            self.kept.give_back(list);
        }
        Ok(())
    }

    /// A slice row: `begin` ended at `end` (ns), of kind `kind` (and
    /// async id), with arguments `args`.
    fn slice_row(
        &mut self,
        provider: Option<u32>,
        begin: Begun<'_>,
        end: i64,
        kind: (&str, Option<u64>),
        args: &[Args<'_>],
    ) -> Result<(), Error> {
        let mut slice = self.slice_head(provider, &begin, end, kind)?;
        slice.args = ArgMaps(args);
        self.tables.slices.push(&slice, self.summary)
    }

    /// A slice row of `begin` ended at `end` (ns) without its arguments
    /// (numbered, placed, and its samples written). Inlined: the row is
    /// built in its caller's frame rather than returned through memory.
    #[inline(always)]
    fn slice_head<'b>(
        &mut self,
        provider: Option<u32>,
        begin: &Begun<'b>,
        end: i64,
        (kind, async_id): (&'b str, Option<u64>),
    ) -> Result<row::Slice<'b>, Error>
    where
        'a: 'b,
    {
        let span = (begin.ts, end);
        let (id, place) = self.slice_place(provider, begin.ids, span, async_id.is_none())?;
        let event = self.event_columns(provider, begin);
        Ok(row::Slice {
            event,
            dur: Some(end.saturating_sub(begin.ts)),
            id: Some(signed(id)),
            depth: Some(i32::try_from(place.depth).unwrap_or(i32::MAX)),
            parent: place.parent.map(signed),
            kind: Some(kind),
            async_id: async_id.map(signed),
            args: ArgMaps(&[]),
        })
    }

    /// The next slice's id and place, of thread `ids` of `provider` and
    /// `span` (ns), its samples written first (`samples`: unless async).
    #[inline(always)]
    fn slice_place(
        &mut self,
        provider: Option<u32>,
        ids: (u64, u64),
        span: (i64, i64),
        samples: bool,
    ) -> Result<(u64, Place), Error> {
        let id = self.next_id;
        self.next_id += 1;
        let place = self
            .nesting
            .next_place()
            .map_err(|e| Error::msg(format!("temporary file: {e}")))?;
        if samples && !self.samples.is_empty() {
            let mut samples = std::mem::take(&mut self.samples);
            let written = samples.slice(provider, ids, span, id, &mut self.sample_context());
            self.samples = samples;
            written?;
        }
        Ok((id, place))
    }

    fn instant(
        &mut self,
        provider: Option<u32>,
        head: Begun<'_>,
        args: Args<'_>,
        kind: &str,
        async_id: Option<u64>,
    ) -> Result<(), Error> {
        let event = self.event_columns(provider, &head);
        let instant = row::Instant {
            event,
            kind: Some(kind),
            async_id: async_id.map(signed),
            args: ArgMaps(&[args]),
        };
        self.tables.instants.push(&instant, self.summary)
    }

    fn flow(
        &mut self,
        provider: Option<u32>,
        head: Begun<'_>,
        args: Args<'_>,
        id: u64,
        phase: &str,
    ) -> Result<(), Error> {
        let event = self.event_columns(provider, &head);
        let flow = row::Flow {
            event,
            flow_id: Some(signed(id)),
            phase: Some(phase),
            args: ArgMaps(&[args]),
        };
        self.tables.flows.push(&flow, self.summary)
    }

    /// One row per numeric argument (series) of a counter event.
    fn counter(
        &mut self,
        provider: Option<u32>,
        head: Begun<'_>,
        args: Args<'_>,
        id: u64,
    ) -> Result<(), Error> {
        let mut rows = CounterRows::new(signed(id));
        match args {
            // A view's arguments read straight from it.
            Args::View(e, ctx) => view_args(e, ctx)
                .try_for_each(|(name, value)| self.series(provider, &head, name, value, &mut rows)),
            args => args.items().try_for_each(|a| {
                let (name, value) = (a.name(), a.value());
                self.series(provider, &head, name, value, &mut rows)
            }),
        }
    }

    /// The row of a counter event's argument `name` of `value` (none if
    /// it is not a number).
    #[inline(always)]
    fn series<'b>(
        &mut self,
        provider: Option<u32>,
        head: &Begun<'b>,
        name: Option<&str>,
        value: Value<'_>,
        rows: &mut CounterRows<'b>,
    ) -> Result<(), Error>
    where
        'a: 'b,
    {
        let Some((value, int)) = number(value) else {
            self.summary.non_numeric_counter_values += 1;
            return Ok(());
        };
        if rows.event.is_none() {
            rows.event = Some(self.event_columns(provider, head));
        }
        let table = &mut self.tables.counters;
        rows.push(table, name, value, int, self.summary)
    }
}
