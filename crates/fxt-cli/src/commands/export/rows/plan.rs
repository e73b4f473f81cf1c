//! Events written by plan. A thread's events of one kind most often have
//! one shape, taking turns among a few names (one header word, thread,
//! strings epoch and argument headers: a queue's depth and bytes, a
//! frame's begin and a draw's), so what their rows take of an event but
//! its values is found once per thread and shape: the number of the rows'
//! key in the row group in progress (what decides their trace, host,
//! provider, thread, category and name columns), and for a counter its
//! series' names and how each value reads. An event of that shape then
//! appends its row from its words: no text looked up, no key made or
//! hashed, no event's columns built, no counter's argument matched by
//! type. Counters, instants and complete events are planned by their
//! record's shape; a duration's slice, written at its end, by its begin's
//! thread, category and name. An event of another shape makes its plan
//! anew; one no plan takes (a text inline, a counter's argument not a
//! number, a task's poll, a begin decoded) is written as before.
//!
//! The rows are those written as before, in the same order, and a key is
//! numbered by the same call ([`EventLeaves::number`]), with the columns
//! the event gives it, at the first row of its kind in each row group,
//! so the dictionaries and pages are the same.
//!
//! [`EventLeaves::number`]: crate::commands::export::events::EventLeaves::number

use fxt_format::decode::{
    ArgWordIter, Context as At, EventHead, EventKind, EventView, StrOrF64, StrRef, Thread,
    ThreadRef,
};
use fxt_format::encode::header::arg_type;
use fxt_format::time::ticks_per_second_or_default;

use super::{signed, Begun, Rows, CATEGORY};
use crate::commands::export::args::{ArgMaps, Args, Value};
use crate::commands::export::begins::{BeginArgs, Open};
use crate::commands::export::counters::number;
use crate::commands::export::events::{Event, EventLeaves};
use crate::commands::export::keys::{interned_key, koids, view_key};
use crate::commands::export::nesting::Place;
use crate::commands::export::schema::{Instants, Slices};
use crate::commands::export::summary::Summary;
use crate::commands::export::table::{Columns, TypedTable};
use crate::commands::export::tasks;
use crate::error::Error;
use crate::recent::thread_slot;

/// Thread slots of [`Plans`], by the thread's koid.
const SLOTS: usize = 16;
/// Most series of a counter a plan takes.
const MOST: usize = 4;
/// The bits of an argument's header that make its shape (its type, size
/// and name's index): a 32-bit value's bits, above them, vary.
const ARG_SHAPE: u64 = 0xffff_ffff;

/// The plans of the threads met lately, one per slot and table.
pub struct Plans {
    counters: [Option<Box<Plan>>; PLANS],
    instants: [Option<KeyPlan>; PLANS],
    completes: [Option<KeyPlan>; PLANS],
    durations: [Option<DurationPlan>; PLANS],
}

impl Default for Plans {
    fn default() -> Plans {
        Plans {
            counters: std::array::from_fn(|_| None),
            instants: [None; PLANS],
            completes: [None; PLANS],
            durations: [None; PLANS],
        }
    }
}

/// Plans per thread slot: by their name's index or id (a thread's
/// events take turns among a few names: a frame's begin and a draw's).
const WAYS: usize = 4;
/// Plans of each kind.
const PLANS: usize = SLOTS * WAYS;

/// The slot of the plan of an event on thread `tid` named by index or id
/// `name`.
#[inline(always)]
fn slot_of(tid: u64, name: u64) -> usize {
    thread_slot(tid, SLOTS) * WAYS + (name % WAYS as u64) as usize
}

/// [`slot_of`] of event `e` of header word `header`.
#[inline(always)]
fn slot_of_view(e: &EventView<'_>, header: u64) -> usize {
    slot_of(koids(e.thread).1, header >> 48)
}

/// The key of the slices of a thread's duration begins of one category
/// and name (read from their views: texts by their ids in the rows'
/// interned texts), and its number in the slices' row group.
#[derive(Clone, Copy)]
struct DurationPlan {
    provider: Option<u32>,
    ids: (u64, u64),
    category: u32,
    name: u32,
    number: Option<(u64, u32)>,
}

/// What decides the key columns of an event of one shape on one thread
/// ([`view_key`]), and the key's number in its table's row group.
#[derive(Clone, Copy)]
struct KeyPlan {
    provider: Option<u32>,
    thread: Thread,
    strings_epoch: u64,
    /// The record's header word (type, size, thread index, category,
    /// name and argument count).
    header: u64,
    /// The number of the rows' key in the row group in progress, and
    /// how many row groups were written before it.
    number: Option<(u64, u32)>,
}

/// What the rows of a counter of one shape on one thread take of it but
/// its values.
struct Plan {
    key: KeyPlan,
    /// Each argument's header, its shape bits.
    args: [u64; MOST],
    len: usize,
    /// Each argument's name, its series.
    series: [Option<Box<str>>; MOST],
}

/// The header word of the record at `ctx`.
#[inline(always)]
fn header_of(ctx: &At<'_>) -> u64 {
    ctx.record_bytes()
        .first_chunk::<8>()
        .map_or(0, |w| u64::from_le_bytes(*w))
}

impl KeyPlan {
    /// The key plan of event `e` (read at `ctx`, its header word
    /// `header`): `None` unless its texts are by index and its thread
    /// known.
    fn of(ctx: &At<'_>, e: &EventView<'_>, header: u64) -> Option<KeyPlan> {
        let by_index = |s| matches!(s, StrRef::Indexed(_) | StrRef::Empty);
        let known = matches!(e.thread, Thread::Known { .. });
        if !(by_index(e.category) && by_index(e.name) && known) {
            return None;
        }
        Some(KeyPlan {
            provider: ctx.provider_id(),
            thread: e.thread,
            strings_epoch: ctx.strings_epoch(),
            header,
            number: None,
        })
    }

    /// Whether an event of thread `thread` at `ctx`, its header word
    /// `header`, is of this plan's shape.
    #[inline(always)]
    fn fits(&self, ctx: &At<'_>, thread: Thread, header: u64) -> bool {
        self.header == header
            && self.thread == thread
            && self.strings_epoch == ctx.strings_epoch()
            && self.provider == ctx.provider_id()
    }
}

/// The number of a plan's key (`kept`: the row group it was numbered in
/// and its number, a plan's `number`) in `events`, the leaves of row group `group`
/// (`fresh`: holding no row yet): the one kept, or the one `event`'s
/// columns get, then kept.
#[inline(always)]
fn number_in(
    kept: &mut Option<(u64, u32)>,
    events: &mut EventLeaves,
    event: Option<&Event<'_>>,
    (group, fresh): (u64, bool),
) -> Result<u32, Error> {
    match *kept {
        Some((g, n)) if !fresh && g == group => Ok(n),
        _ => {
            let n = events.number(event.ok_or_else(unnumbered)?);
            *kept = Some((group, n));
            Ok(n)
        }
    }
}

impl Plan {
    /// The plan of counter `e` (read at `ctx`, its header word `header`):
    /// `None` unless its key has one ([`KeyPlan::of`]) and each argument
    /// (at most [`MOST`]) is a number named by index.
    fn of(ctx: &At<'_>, e: &EventView<'_>, header: u64) -> Option<Plan> {
        let mut plan = Plan {
            key: KeyPlan::of(ctx, e, header)?,
            args: [0; MOST],
            len: 0,
            series: Default::default(),
        };
        for a in e.arg_words() {
            let name = match (a.int(), a.str_or_f64()) {
                (Some((name, _)), _) | (_, Some((name, StrOrF64::F64(_)))) => name,
                _ => return None,
            };
            let k = plan.len;
            if k == MOST {
                return None;
            }
            plan.args[k] = a.header & ARG_SHAPE;
            plan.series[k] = ctx.str(StrRef::Indexed(name)).map(Box::from);
            plan.len += 1;
        }
        (plan.len == usize::from(e.arg_count)).then_some(plan)
    }

    /// Reads the values of an event's arguments (`words`) into `values`;
    /// false if one is not of the plan's shape.
    #[inline(always)]
    fn read(&self, words: ArgWordIter<'_>, values: &mut [(f64, Option<i64>); MOST]) -> bool {
        let mut k = 0;
        for a in words {
            if k == self.len || a.header & ARG_SHAPE != self.args[k] {
                return false;
            }
            let value = if a.header & 0xf == arg_type::F64 {
                match a.str_or_f64() {
                    Some((_, StrOrF64::F64(v))) => Value::F64(v),
                    _ => return false,
                }
            } else {
                match a.int() {
                    Some((_, v)) => Value::from(v),
                    None => return false,
                }
            };
            let Some(number) = number(value) else {
                return false;
            };
            values[k] = number;
            k += 1;
        }
        k == self.len
    }
}

impl<'a> Rows<'a> {
    /// Writes the rows of counter `e` (of counter `id`, read at `ctx`) by
    /// its thread's plan, made anew if the plan there is of another
    /// shape; false, nothing written, if no plan takes it.
    #[inline(never)]
    pub(super) fn counter_by_plan(
        &mut self,
        ctx: &At<'_>,
        e: &EventView<'_>,
        id: u64,
    ) -> Planned<bool> {
        let header = header_of(ctx);
        let slot = slot_of_view(e, header);
        let planned = &mut self.plans.counters[slot];
        if !planned
            .as_deref()
            .is_some_and(|p| p.key.fits(ctx, e.thread, header))
        {
            match Plan::of(ctx, e, header) {
                Some(plan) => *planned = Some(Box::new(plan)),
                None => return Ok(false),
            }
        }
        let mut values = [(0.0, None); MOST];
        let (len, number) = match planned.as_deref() {
            Some(plan) if plan.read(e.arg_words(), &mut values) => (plan.len, plan.key.number),
            _ => return Ok(false),
        };
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let ts = self.ns(e.timestamp, tps);
        // The event's columns, only when the key is to be numbered: in a
        // row group begun since, or in one these rows begin.
        let (group, room) = self.tables.counters.group();
        let event = match number {
            Some((g, _)) if g == group && room >= len => None,
            _ => Some(self.planned_event(ctx, e, ts)),
        };
        self.counter_rows(slot, &values[..len], (ts, id), event.as_ref())
    }

    /// Appends the rows of a counter of the plan in slot `slot`, of
    /// `values`, time `ts` and counter id `id`, `event` the columns its key
    /// is numbered by where it is to be numbered anew; false, nothing
    /// written, if the slot holds no plan.
    #[inline(always)]
    fn counter_rows(
        &mut self,
        slot: usize,
        values: &[(f64, Option<i64>)],
        (ts, id): (i64, u64),
        event: Option<&Event<'_>>,
    ) -> Planned<bool> {
        let Some(plan) = self.plans.counters[slot].as_deref_mut() else {
            return Ok(false);
        };
        let (table, summary) = (&mut self.tables.counters, &mut *self.summary);
        let id = Some(signed(id));
        for (&(value, int), series) in values.iter().zip(&plan.series) {
            let group = table.group().0;
            let key = &mut plan.key;
            table.push_with(
                #[inline(always)]
                |(events, ids, names, vals, ints), fresh| {
                    let n = number_in(&mut key.number, events, event, (group, fresh))?;
                    events.push_numbered(n, Some(ts));
                    id.append(ids, summary)?;
                    series.as_deref().append(names, summary)?;
                    Some(value).append(vals, summary)?;
                    int.append(ints, summary)
                },
            )?;
        }
        Ok(true)
    }

    /// The columns of event `e` (at `ctx`, `ts` its time), to number its
    /// key: those [`Rows::event_view`] gives it.
    fn planned_event<'b>(&mut self, ctx: &'b At<'_>, e: &'b EventView<'_>, ts: i64) -> Event<'b>
    where
        'a: 'b,
    {
        let begun = Begun {
            ts,
            ids: koids(e.thread),
            texts: (ctx.str(e.category), ctx.str(e.name)),
            key: view_key(ctx, e),
        };
        self.event_columns(ctx.provider_id(), &begun)
    }

    /// The key plan of event `e` (at `ctx`, `ts` its time) in `plans`,
    /// made anew if the one of its thread's slot is of another shape, and
    /// the event's columns if its key is to be numbered in row group
    /// `group`: its slot and those columns, or `None` if no plan takes
    /// it.
    #[inline(always)]
    fn key_plan<'b>(
        &mut self,
        plans: fn(&mut Plans) -> &mut [Option<KeyPlan>; PLANS],
        (ctx, e): (&'b At<'_>, &'b EventView<'_>),
        ts: i64,
        group: u64,
    ) -> Option<(usize, Option<Event<'b>>)>
    where
        'a: 'b,
    {
        let header = header_of(ctx);
        let slot = slot_of_view(e, header);
        let planned = &mut plans(&mut self.plans)[slot];
        let number = match planned {
            Some(p) if p.fits(ctx, e.thread, header) => p.number,
            _ => planned.insert(KeyPlan::of(ctx, e, header)?).number,
        };
        let event = match number {
            Some((g, _)) if g == group => None,
            _ => Some(self.planned_event(ctx, e, ts)),
        };
        Some((slot, event))
    }

    /// Writes the row of instant `e` (read at `ctx`) with its key's
    /// number kept by its thread's plan ([`Rows::key_plan`]); false,
    /// nothing written, if no plan takes it.
    #[inline(never)]
    fn instant_by_plan(&mut self, ctx: &At<'_>, e: &EventView<'_>) -> Planned<bool> {
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let ts = self.ns(e.timestamp, tps);
        let group = self.tables.instants.group().0;
        let Some((slot, event)) = self.key_plan(|p| &mut p.instants, (ctx, e), ts, group) else {
            return Ok(false);
        };
        let Some(plan) = &mut self.plans.instants[slot] else {
            return Ok(false);
        };
        let args = [Args::View(e, ctx)];
        let key = (&mut plan.number, event.as_ref(), group);
        push_instant(&mut self.tables.instants, self.summary, key, (ts, &args))?;
        Ok(true)
    }

    /// Writes the slice of complete event `e` (read at `ctx`, ending at
    /// `end` ticks) with its key's number kept by its thread's plan
    /// ([`Rows::key_plan`]); false, nothing written, if no plan takes it
    /// (a task's poll, which the polls table takes too, among them).
    #[inline(never)]
    fn complete_by_plan(&mut self, ctx: &At<'_>, e: &EventView<'_>, end: u64) -> Planned<bool> {
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let ts = self.ns(e.timestamp, tps);
        let end = self.ns(end, tps);
        let group = self.tables.slices.group().0;
        let Some((slot, event)) = self.key_plan(|p| &mut p.completes, (ctx, e), ts, group) else {
            return Ok(false);
        };
        if event.is_some() && ctx.str(e.category) == Some(tasks::CATEGORY) {
            self.plans.completes[slot] = None;
            return Ok(false);
        }
        let provider = ctx.provider_id();
        let (id, place) = self.slice_place(provider, koids(e.thread), (ts, end), true)?;
        let Some(plan) = &mut self.plans.completes[slot] else {
            return Ok(false);
        };
        let args = [Args::View(e, ctx)];
        let row = SliceRow {
            span: (ts, end),
            id,
            place,
            kind: "complete",
            args: &args,
        };
        let key = (&mut plan.number, event.as_ref(), group);
        push_slice(&mut self.tables.slices, self.summary, key, row)?;
        Ok(true)
    }

    /// Writes the slice of duration begin `begin` (its arguments kept
    /// from its view) of `provider`, ended at `end` (ns) with arguments
    /// `end_args`, its key's number kept by the plan of its thread, category
    /// and name: the row [`Rows::slice`] writes, without the event's
    /// columns made but to number the key. Compiled into its callers: the
    /// begin handed to a call was copied in overlapping pieces and read
    /// back across two of them, which stalls.
    #[inline(always)]
    pub(super) fn duration_by_plan(
        &mut self,
        provider: Option<u32>,
        begin: Open,
        end: i64,
        end_args: Args<'_>,
    ) -> Planned<()> {
        let ids = (begin.pid, begin.tid);
        let (category, name) = (begin.category, begin.name);
        let slot = slot_of(begin.tid, u64::from(name));
        let planned = &mut self.plans.durations[slot];
        let number = match planned {
            Some(p)
                if (p.provider, p.ids, p.category, p.name) == (provider, ids, category, name) =>
            {
                p.number
            }
            _ => {
                let plan = DurationPlan {
                    provider,
                    ids,
                    category,
                    name,
                    number: None,
                };
                planned.insert(plan).number
            }
        };
        let (id, place) = self.slice_place(provider, ids, (begin.ts, end), true)?;
        let group = self.tables.slices.group().0;
        let event = match number {
            Some((g, _)) if g == group => None,
            _ => {
                let head = Begun {
                    ts: begin.ts,
                    ids,
                    texts: (None, None),
                    key: interned_key(provider, ids, category, name),
                };
                Some(self.event_columns(provider, &head))
            }
        };
        let texts = &self.texts;
        let event = event.map(|mut event| {
            event.texts[CATEGORY] = texts.text(category).as_str();
            event.texts[CATEGORY + 1] = texts.text(name).as_str();
            event
        });
        let BeginArgs::Kept(list) = begin.args else {
            return Err(Error::msg("internal error: a decoded begin by plan"));
        };
        let Some(plan) = &mut self.plans.durations[slot] else {
            return Err(unnumbered());
        };
        let args = [Args::Kept(self.kept.list(list), texts), end_args];
        let row = SliceRow {
            span: (begin.ts, end),
            id,
            place,
            kind: "duration",
            args: &args,
        };
        let key = (&mut plan.number, event.as_ref(), group);
        push_slice(&mut self.tables.slices, self.summary, key, row)?;
        self.kept.give_back(list);
        Ok(())
    }

    /// Writes the rows of counter head `h` (read at `ctx`) by its
    /// thread's plan, if the plan there is of its shape and its key
    /// numbered in the row group in progress; false, nothing
    /// written, if not (its view then takes it).
    #[inline(never)]
    pub(super) fn counter_by_head(&mut self, ctx: &At<'_>, h: &EventHead<'_>) -> Planned<bool> {
        let thread = thread_of(ctx, h);
        let header = h.header();
        let slot = slot_of(koids(thread).1, header >> 48);
        let mut values = [(0.0, None); MOST];
        let (group, room) = self.tables.counters.group();
        let len = match self.plans.counters[slot].as_deref() {
            Some(plan)
                if plan.key.fits(ctx, thread, header)
                    && plan.read(h.arg_words(), &mut values)
                    && numbered(plan.key.number, group)
                    && room >= plan.len =>
            {
                plan.len
            }
            _ => return Ok(false),
        };
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let ts = self.ns(h.timestamp(), tps);
        self.counter_rows(slot, &values[..len], (ts, h.trailing()), None)
    }

    /// Writes the row of instant head `h` (read at `ctx`) by its thread's
    /// plan, as [`Rows::counter_by_head`] does.
    #[inline(never)]
    pub(super) fn instant_by_head(&mut self, ctx: &At<'_>, h: &EventHead<'_>) -> Planned<bool> {
        let thread = thread_of(ctx, h);
        let header = h.header();
        let slot = slot_of(koids(thread).1, header >> 48);
        let group = self.tables.instants.group().0;
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let ts = self.ns(h.timestamp(), tps);
        let plan = match &mut self.plans.instants[slot] {
            Some(p) if p.fits(ctx, thread, header) && numbered(p.number, group) => p,
            _ => return Ok(false),
        };
        let args = [Args::Head(h, ctx)];
        let key = (&mut plan.number, None, group);
        push_instant(&mut self.tables.instants, self.summary, key, (ts, &args))?;
        Ok(true)
    }

    /// Writes the slice of complete event head `h` (read at `ctx`) by its
    /// thread's plan, as [`Rows::counter_by_head`] does.
    #[inline(never)]
    pub(super) fn complete_by_head(&mut self, ctx: &At<'_>, h: &EventHead<'_>) -> Planned<bool> {
        let thread = thread_of(ctx, h);
        let header = h.header();
        let slot = slot_of(koids(thread).1, header >> 48);
        let group = self.tables.slices.group().0;
        match &self.plans.completes[slot] {
            Some(p) if p.fits(ctx, thread, header) && numbered(p.number, group) => {}
            _ => return Ok(false),
        }
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let (ts, end) = (self.ns(h.timestamp(), tps), self.ns(h.trailing(), tps));
        let provider = ctx.provider_id();
        let (id, place) = self.slice_place(provider, koids(thread), (ts, end), true)?;
        // Numbered, as found above: its row is written from here on.
        let Some(plan) = &mut self.plans.completes[slot] else {
            return Err(unnumbered());
        };
        let args = [Args::Head(h, ctx)];
        let row = SliceRow {
            span: (ts, end),
            id,
            place,
            kind: "complete",
            args: &args,
        };
        let key = (&mut plan.number, None, group);
        push_slice(&mut self.tables.slices, self.summary, key, row)?;
        Ok(true)
    }

    /// Writes event `e` by a plan, if one takes it (a counter, an instant
    /// or a complete event); false, nothing written, if not.
    #[inline(always)]
    pub(super) fn by_plan(&mut self, ctx: &At<'_>, e: &EventView<'_>) -> Planned<bool> {
        match e.kind {
            EventKind::Counter { id } => self.counter_by_plan(ctx, e, id),
            EventKind::Instant => self.instant_by_plan(ctx, e),
            EventKind::DurationComplete { end } => self.complete_by_plan(ctx, e, end),
            _ => Ok(false),
        }
    }
}

/// Appends an instant's row of time `ts` and arguments `args` to
/// `instants`, its key numbered as [`push_slice`] numbers a slice's.
#[inline(always)]
fn push_instant(
    instants: &mut TypedTable<Instants>,
    summary: &mut Summary,
    (kept, event, group): (&mut Option<(u64, u32)>, Option<&Event<'_>>, u64),
    (ts, args): (i64, &[Args<'_>]),
) -> Result<(), Error> {
    instants.push_with(
        #[inline(always)]
        |(events, kinds, ids, maps), fresh| {
            let n = number_in(kept, events, event, (group, fresh))?;
            events.push_numbered(n, Some(ts));
            Some("instant").append(kinds, summary)?;
            None::<i64>.append(ids, summary)?;
            ArgMaps(args).append(maps, summary)
        },
    )
}

/// A planned slice's row but its event columns: its span (ns), id, place,
/// kind and arguments.
struct SliceRow<'r, 's> {
    span: (i64, i64),
    id: u64,
    place: Place,
    kind: &'static str,
    args: &'r [Args<'s>],
}

/// Appends `row` to `slices`, its key numbered by its plan's `kept`
/// number ([`number_in`]) in row group `group`, `event` the key's columns
/// where it is to be numbered anew.
#[inline(always)]
fn push_slice(
    slices: &mut TypedTable<Slices>,
    summary: &mut Summary,
    (kept, event, group): (&mut Option<(u64, u32)>, Option<&Event<'_>>, u64),
    row: SliceRow<'_, '_>,
) -> Result<(), Error> {
    let (ts, end) = row.span;
    slices.push_with(
        #[inline(always)]
        |b, fresh| {
            let (events, durs, ids, depths, parents, kinds, async_ids, maps) = b;
            let n = number_in(kept, events, event, (group, fresh))?;
            events.push_numbered(n, Some(ts));
            Some(end.saturating_sub(ts)).append(durs, summary)?;
            Some(signed(row.id)).append(ids, summary)?;
            Some(i32::try_from(row.place.depth).unwrap_or(i32::MAX)).append(depths, summary)?;
            row.place.parent.map(signed).append(parents, summary)?;
            Some(row.kind).append(kinds, summary)?;
            None::<i64>.append(async_ids, summary)?;
            ArgMaps(row.args).append(maps, summary)
        },
    )
}

/// Whether a plan's key number (`kept`) holds in row group `group`.
#[inline(always)]
fn numbered(kept: Option<(u64, u32)>, group: u64) -> bool {
    matches!(kept, Some((g, _)) if g == group)
}

/// The thread of event head `h` read at `ctx`, as its view has it.
#[inline(always)]
pub(super) fn thread_of(ctx: &At<'_>, h: &EventHead<'_>) -> Thread {
    match h.thread_ref() {
        ThreadRef::Indexed(index) => ctx.thread(index),
        ThreadRef::Inline { process, thread } => Thread::Known { process, thread },
    }
}

/// What a write by plan gives (two words with the one-word [`Error`]:
/// returned in registers, not stored and read back).
pub type Planned<T> = Result<T, Error>;

/// The error of a key to number without its event's columns.
#[cold]
fn unnumbered() -> Error {
    Error::msg("internal error: a planned row's key not numbered")
}
