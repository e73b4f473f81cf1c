//! The `tasks` and `polls` tables (issue 44): the tasks of `fxt::task` and
//! of Tokio's hooks (category `task`), read from their records' arguments
//! as the runtime writes them. A task is a row when its life begins on
//! its track (an async begin with argument `task`, and `location` where
//! the task was made); a poll is a row when its slice on the thread that
//! ran it arrives (a complete event with argument `task`, and `delay` and
//! `woken_by` or `woken_by_driver` when a wake caused it). Nothing is kept
//! between records.

use fxt_format::decode::{Arg, ArgValue, Event};

use super::schema::{PollRow, Source, Tables, TaskRow};
use super::summary::Summary;
use crate::error::Error;

/// The category of every task record.
pub const CATEGORY: &str = "task";

fn arg<'e>(args: &'e [Arg], name: &str) -> Option<&'e ArgValue> {
    args.iter().find(|a| a.name == name).map(|a| &a.value)
}

/// An unsigned argument as the tables hold ids and times (signed 64-bit,
/// two's complement).
fn signed_arg(args: &[Arg], name: &str) -> Option<i64> {
    match arg(args, name)? {
        ArgValue::U64(v) => Some(*v as i64),
        ArgValue::I64(v) => Some(*v),
        ArgValue::U32(v) => Some(i64::from(*v)),
        _ => None,
    }
}

/// The task id of a task record, if `e` is one.
fn task_of(e: &Event) -> Option<i64> {
    if e.category != CATEGORY {
        return None;
    }
    signed_arg(&e.args, "task")
}

/// A life's begin: a `tasks` row (`ts` in ns).
pub fn life(
    tables: &mut Tables,
    summary: &mut Summary,
    source: Source<'_>,
    pid: u64,
    e: &Event,
    ts: i64,
) -> Result<(), Error> {
    let Some(task) = task_of(e) else {
        return Ok(());
    };
    let location = match arg(&e.args, "location") {
        Some(ArgValue::Str(s)) => s.as_str(),
        _ => None,
    };
    let row = TaskRow {
        source,
        pid: Some(pid as i64),
        task: Some(task),
        name: e.name.as_str(),
        location,
        ts: Some(ts),
    };
    tables.tasks.push(&row, summary)
}

/// Where a poll ran.
pub struct Ran<'a> {
    /// `(pid, tid)`.
    pub ids: (u64, u64),
    /// The thread's name.
    pub thread: Option<&'a str>,
}

/// A poll's slice on its thread: a `polls` row (`span` in ns).
pub fn poll(
    tables: &mut Tables,
    summary: &mut Summary,
    source: Source<'_>,
    ran: Ran<'_>,
    e: &Event,
    (ts, end): (i64, i64),
) -> Result<(), Error> {
    let Some(task) = task_of(e) else {
        return Ok(());
    };
    let row = PollRow {
        source,
        pid: Some(ran.ids.0 as i64),
        tid: Some(ran.ids.1 as i64),
        thread: ran.thread,
        task: Some(task),
        name: e.name.as_str(),
        ts: Some(ts),
        dur: Some(end.saturating_sub(ts)),
        delay: signed_arg(&e.args, "delay"),
        woken_by_task: signed_arg(&e.args, "woken_by"),
        woken_by_driver: matches!(arg(&e.args, "woken_by_driver"), Some(ArgValue::Bool(true)))
            .then_some(1),
    };
    tables.polls.push(&row, summary)
}
