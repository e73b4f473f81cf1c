//! A counter event's rows, one per series: the columns they share (the
//! event's, its counter id) are found once per event, its key numbered
//! once per row group rather than once per series.

use fxt_format::decode::{Context, EventView, StrOrF64, StrRef};

use super::args::{Item, Value};
use super::events::Event;
use super::schema::Counters;
use super::summary::Summary;
use super::table::{Columns, TypedTable};
use crate::error::Error;

/// The rows of one counter event.
pub struct CounterRows<'b> {
    /// The event's columns, found at its first numeric series.
    pub event: Option<Event<'b>>,
    /// The counter's id.
    id: Option<i64>,
    /// The number of the event's key in the row group in progress, once
    /// found.
    number: Option<u32>,
}

impl<'b> CounterRows<'b> {
    /// The rows of a counter event of counter `id`.
    pub fn new(id: i64) -> CounterRows<'b> {
        CounterRows {
            event: None,
            id: Some(id),
            number: None,
        }
    }

    /// Appends the row of series `series` (of value `value`, and
    /// `int` if it is an integer that fits) to `table`; [`CounterRows::event`]
    /// must be set.
    #[inline]
    pub fn push(
        &mut self,
        table: &mut TypedTable<Counters>,
        series: Option<&str>,
        value: f64,
        int: Option<i64>,
        summary: &mut Summary,
    ) -> Result<(), Error> {
        let Some(event) = &self.event else {
            return Err(Error::msg(
                "internal error: a counter row without its event",
            ));
        };
        let number = &mut self.number;
        table.push_with(|(events, ids, names, values, ints), fresh| {
            let n = match *number {
                // A row group begun since: its keys are numbered anew.
                Some(n) if !fresh => n,
                _ => {
                    let n = events.number(event);
                    *number = Some(n);
                    n
                }
            };
            events.push_numbered(n, event.ts);
            self.id.append(ids, summary)?;
            series.append(names, summary)?;
            Some(value).append(values, summary)?;
            int.append(ints, summary)
        })
    }
}

/// A counter view's arguments, each its name and value, the usual ones
/// (integers and doubles named by index) read from their words: a view's
/// argument ([`EventView::args`]) is built in memory a byte at a time and
/// read back whole, which waits on the stores. As a view's arguments,
/// they end at one that does not read.
#[inline(always)]
pub fn view_args<'v>(
    e: &'v EventView<'v>,
    ctx: &'v Context<'v>,
) -> impl Iterator<Item = (Option<&'v str>, Value<'v>)> + 'v {
    e.arg_words().map_while(move |a| {
        if let Some((name, v)) = a.int() {
            return Some((ctx.str(StrRef::Indexed(name)), Value::from(v)));
        }
        if let Some((name, StrOrF64::F64(v))) = a.str_or_f64() {
            return Some((ctx.str(StrRef::Indexed(name)), Value::F64(v)));
        }
        let item = Item::View(a.view()?, ctx);
        Some((item.name(), item.value()))
    })
}

/// A series' value as the counters table holds it: the double, and the
/// integer if it is one that fits; `None` if it is not a number.
#[inline(always)]
pub fn number(value: Value<'_>) -> Option<(f64, Option<i64>)> {
    match value {
        Value::Signed(v) => Some((v as f64, Some(v))),
        Value::Unsigned(v) => Some((v as f64, i64::try_from(v).ok())),
        Value::F64(v) => Some((v, None)),
        _ => None,
    }
}
