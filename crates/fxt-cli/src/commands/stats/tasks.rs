//! Async tasks (`fxt::task`, category `task`): per task name, how many
//! tasks and polls, the time they ran, how long they waited to run, and
//! their long polls.
//!
//! A task's poll is a slice on the thread that ran it, named after the
//! task, with arguments `task` (its id), `delay` (ns from the wake that
//! caused the poll to its start, when a wake did) and `long` (`true` for a
//! poll over the program's threshold). Slices of the category without a
//! `task` argument (a Tokio worker's `parked` time) are not polls.

use std::collections::{BTreeMap, HashSet};

use fxt_format::decode::{ArgValue, Event, EventKind};
use serde_json::{json, Value};

use crate::input::ticks_to_ns;

use super::summary::Summary;

/// The polls of the tasks of one name.
#[derive(Default)]
struct PerName {
    /// The tasks by provider and id.
    tasks: HashSet<(Option<u32>, u64)>,
    polls: u64,
    /// Sum of the polls' durations (ns).
    busy: u64,
    /// Scheduling delay of each woken poll (ns).
    delays: Vec<u64>,
    long: u64,
    /// The longest poll (ns).
    longest: u64,
}

/// What the walk gathers about tasks.
#[derive(Default)]
pub struct Tasks {
    names: BTreeMap<String, PerName>,
}

fn arg<'a>(e: &'a Event, name: &str) -> Option<&'a ArgValue> {
    e.args
        .iter()
        .find(|a| a.name.as_str() == Some(name))
        .map(|a| &a.value)
}

impl Tasks {
    /// Takes one event of `provider` (clock at `tps` ticks per second).
    pub fn add(&mut self, provider: Option<u32>, tps: u64, e: &Event) {
        let EventKind::DurationComplete { end } = e.kind else {
            return;
        };
        if e.category.as_str() != Some("task") {
            return;
        }
        let Some(&ArgValue::U64(id)) = arg(e, "task") else {
            return;
        };
        let took = ticks_to_ns(end, tps).saturating_sub(ticks_to_ns(e.timestamp, tps));
        let per = self
            .names
            .entry(e.name.as_str().unwrap_or("").to_string())
            .or_default();
        per.tasks.insert((provider, id));
        per.polls += 1;
        per.busy = per.busy.saturating_add(took);
        per.longest = per.longest.max(took);
        if let Some(&ArgValue::U64(delay)) = arg(e, "delay") {
            per.delays.push(delay);
        }
        if arg(e, "long") == Some(&ArgValue::Bool(true)) {
            per.long += 1;
        }
    }

    /// The figures of each name, by busy time (longest first).
    fn summaries(&self) -> Vec<TaskSummary<'_>> {
        let mut out: Vec<TaskSummary<'_>> = self
            .names
            .iter()
            .map(|(name, per)| TaskSummary {
                name,
                tasks: per.tasks.len() as u64,
                polls: per.polls,
                busy: per.busy,
                longest: per.longest,
                delays: (!per.delays.is_empty()).then(|| Summary::of(&mut per.delays.clone())),
                long: per.long,
            })
            .collect();
        out.sort_by_key(|t| std::cmp::Reverse(t.busy));
        out
    }
}

struct TaskSummary<'a> {
    name: &'a str,
    tasks: u64,
    polls: u64,
    busy: u64,
    longest: u64,
    delays: Option<Summary>,
    long: u64,
}

/// The `tasks` section of the text report (nothing without task polls).
pub fn write_table(
    w: &mut impl std::io::Write,
    tasks: &Tasks,
    fmt_ns: impl Fn(f64) -> String,
) -> std::io::Result<()> {
    let tasks = tasks.summaries();
    if tasks.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:>6}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>5}  task",
        "tasks", "polls", "busy", "longest", "p50 delay", "p99 delay", "max delay", "long"
    )?;
    for t in &tasks {
        let ns = |v: u64| fmt_ns(v as f64);
        let (p50, p99, max) = match &t.delays {
            Some(s) => (ns(s.p50), ns(s.p99), ns(s.max)),
            None => ("-".into(), "-".into(), "-".into()),
        };
        writeln!(
            w,
            "{:>6}  {:>8}  {:>10}  {:>10}  {p50:>10}  {p99:>10}  {max:>10}  {:>5}  {}",
            t.tasks,
            t.polls,
            ns(t.busy),
            ns(t.longest),
            t.long,
            t.name
        )?;
    }
    Ok(())
}

/// The `tasks` array of the JSON report.
pub fn document(tasks: &Tasks) -> Value {
    tasks
        .summaries()
        .iter()
        .map(|t| {
            let d = t.delays.as_ref();
            json!({
                "name": t.name,
                "tasks": t.tasks,
                "polls": t.polls,
                "busy_ns": t.busy,
                "longest_poll_ns": t.longest,
                "woken_polls": d.map_or(0, |s| s.count),
                "p50_delay_ns": d.map(|s| s.p50),
                "p99_delay_ns": d.map(|s| s.p99),
                "max_delay_ns": d.map(|s| s.max),
                "long_polls": t.long,
            })
        })
        .collect()
}
