//! Counter events by plan. A thread's counters most often have one shape
//! (one header word, thread, strings epoch and argument headers: a
//! queue's depth and bytes, counted again and again), so what their rows
//! take of a counter but its values (the series' names, how each value
//! reads, the key's number in the row group) is found once per thread and
//! shape, and a counter of that shape appends its rows from its words: no
//! text looked up, no key made or hashed, no argument matched by type per
//! counter. A counter of another shape makes its thread's plan anew; one
//! no plan takes (a text inline, an argument not a number) is written as
//! before ([`Rows::counter`]).
//!
//! The rows are those [`Rows::counter`] writes, in the same order, and the
//! key is numbered by the same call ([`EventLeaves::number`]) at the same
//! rows (the first of its kind in each row group), so the pages are the
//! same.
//!
//! [`EventLeaves::number`]: crate::commands::export::events::EventLeaves::number

use fxt_format::decode::{Context as At, EventKind, EventView, IntArg, StrOrF64, StrRef, Thread};
use fxt_format::encode::header::arg_type;
use fxt_format::time::ticks_per_second_or_default;

use super::{signed, Begun, Rows};
use crate::commands::export::args::{ArgMaps, Args};
use crate::commands::export::keys::{koids, view_key};
use crate::commands::export::table::Columns;
use crate::error::Error;
use crate::recent::thread_slot;

/// Slots of [`CounterPlans`], by the thread's koid.
const SLOTS: usize = 16;
/// Most series of a counter a plan takes.
const MOST: usize = 4;
/// The bits of an argument's header that make its shape (its type, size
/// and name's index): a 32-bit value's bits, above them, vary.
const ARG_SHAPE: u64 = 0xffff_ffff;

/// The plans of the threads met lately, one per slot and table.
#[derive(Default)]
pub struct Plans {
    counters: [Option<Box<Plan>>; SLOTS],
    instants: [Option<KeyPlan>; SLOTS],
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

/// A series' value as the counters table holds it: the double, and the
/// integer if it is one that fits.
type Number = (f64, Option<i64>);

/// The header word of the record at `ctx`.
#[inline(always)]
fn header_of(ctx: &At<'_>) -> u64 {
    ctx.record_bytes()
        .first_chunk::<8>()
        .map_or(0, |w| u64::from_le_bytes(*w))
}

/// An integer argument's value as [`Rows::counter`] holds it.
#[inline(always)]
fn number_of(v: IntArg) -> Number {
    match v {
        IntArg::I32(v) => (f64::from(v), Some(i64::from(v))),
        IntArg::U32(v) => (f64::from(v), Some(i64::from(v))),
        IntArg::I64(v) => (v as f64, Some(v)),
        IntArg::U64(v) => (v as f64, i64::try_from(v).ok()),
    }
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

    /// Whether event `e` at `ctx` is of this plan's shape.
    #[inline(always)]
    fn fits(&self, ctx: &At<'_>, e: &EventView<'_>, header: u64) -> bool {
        self.header == header
            && self.thread == e.thread
            && self.strings_epoch == ctx.strings_epoch()
            && self.provider == ctx.provider_id()
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

    /// Reads the values of `e`'s arguments into `values`; false if one is
    /// not of the plan's shape.
    #[inline(always)]
    fn read(&self, e: &EventView<'_>, values: &mut [Number; MOST]) -> bool {
        let mut k = 0;
        for a in e.arg_words() {
            if k == self.len || a.header & ARG_SHAPE != self.args[k] {
                return false;
            }
            values[k] = if a.header & 0xf == arg_type::F64 {
                match a.str_or_f64() {
                    Some((_, StrOrF64::F64(v))) => (v, None),
                    _ => return false,
                }
            } else {
                match a.int() {
                    Some((_, v)) => number_of(v),
                    None => return false,
                }
            };
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
    ) -> Result<bool, Error> {
        let header = header_of(ctx);
        let slot = thread_slot(koids(e.thread).1, SLOTS);
        let planned = &mut self.plans.counters[slot];
        if !planned
            .as_deref()
            .is_some_and(|p| p.key.fits(ctx, e, header))
        {
            match Plan::of(ctx, e, header) {
                Some(plan) => *planned = Some(Box::new(plan)),
                None => return Ok(false),
            }
        }
        let mut values = [(0.0, None); MOST];
        let (len, number) = match planned.as_deref() {
            Some(plan) if plan.read(e, &mut values) => (plan.len, plan.key.number),
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
        let Some(plan) = self.plans.counters[slot].as_deref_mut() else {
            return Ok(false);
        };
        let (table, summary) = (&mut self.tables.counters, &mut *self.summary);
        let id = Some(signed(id));
        for (&(value, int), series) in values[..len].iter().zip(&plan.series) {
            let group = table.group().0;
            let number = &mut plan.key.number;
            table.push_with(|(events, ids, names, vals, ints), fresh| {
                let n = match *number {
                    Some((g, n)) if !fresh && g == group => n,
                    _ => {
                        let event = event.as_ref().ok_or_else(unnumbered)?;
                        let n = events.number(event);
                        *number = Some((group, n));
                        n
                    }
                };
                events.push_numbered(n, Some(ts));
                id.append(ids, summary)?;
                series.as_deref().append(names, summary)?;
                Some(value).append(vals, summary)?;
                int.append(ints, summary)
            })?;
        }
        Ok(true)
    }

    /// The columns of event `e` (at `ctx`, `ts` its time), to number its
    /// key: those [`Rows::event_view`] gives it.
    fn planned_event<'b>(
        &mut self,
        ctx: &'b At<'_>,
        e: &'b EventView<'_>,
        ts: i64,
    ) -> crate::commands::export::schema::Event<'b>
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

    /// Writes the row of instant `e` (read at `ctx`) with its key's
    /// number kept by its thread's plan (made anew if the plan there is
    /// of another shape); false, nothing written, if no plan takes it.
    #[inline(never)]
    pub(super) fn instant_by_plan(
        &mut self,
        ctx: &At<'_>,
        e: &EventView<'_>,
    ) -> Result<bool, Error> {
        let header = header_of(ctx);
        let slot = thread_slot(koids(e.thread).1, SLOTS);
        let planned = &mut self.plans.instants[slot];
        let number = match planned {
            Some(p) if p.fits(ctx, e, header) => p.number,
            _ => match KeyPlan::of(ctx, e, header) {
                Some(plan) => planned.insert(plan).number,
                None => return Ok(false),
            },
        };
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let ts = self.ns(e.timestamp, tps);
        let group = self.tables.instants.group().0;
        let event = match number {
            Some((g, _)) if g == group => None,
            _ => Some(self.planned_event(ctx, e, ts)),
        };
        let Some(plan) = &mut self.plans.instants[slot] else {
            return Ok(false);
        };
        let summary = &mut *self.summary;
        let args = [Args::View(e, ctx)];
        self.tables
            .instants
            .push_with(|(events, kinds, ids, maps), fresh| {
                let n = match plan.number {
                    Some((g, n)) if !fresh && g == group => n,
                    _ => {
                        let event = event.as_ref().ok_or_else(unnumbered)?;
                        let n = events.number(event);
                        plan.number = Some((group, n));
                        n
                    }
                };
                events.push_numbered(n, Some(ts));
                Some("instant").append(kinds, summary)?;
                None::<i64>.append(ids, summary)?;
                ArgMaps(&args).append(maps, summary)
            })?;
        Ok(true)
    }

    /// Writes event `e` by a plan, if one takes it (a counter or an
    /// instant); false, nothing written, if not.
    #[inline(always)]
    pub(super) fn by_plan(&mut self, ctx: &At<'_>, e: &EventView<'_>) -> Result<bool, Error> {
        match e.kind {
            EventKind::Counter { id } => self.counter_by_plan(ctx, e, id),
            EventKind::Instant => self.instant_by_plan(ctx, e),
            _ => Ok(false),
        }
    }
}

/// The error of a key to number without its event's columns.
#[cold]
fn unnumbered() -> Error {
    Error::msg("internal error: a planned row's key not numbered")
}
