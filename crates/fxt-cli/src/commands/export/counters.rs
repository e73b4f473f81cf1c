//! A counter event's rows, one per series: the columns they share (the
//! event's, its counter id) are found once per event, its key numbered
//! once per row group rather than once per series.

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
