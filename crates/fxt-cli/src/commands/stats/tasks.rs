//! Async tasks (`fxt::task`, category `task`): per task name, how many
//! tasks and polls, the time they ran, how long they waited to run, and
//! their long polls.
//!
//! A task's poll is a slice on the thread that ran it, named after the
//! task, with arguments `task` (its id), `delay` (ns from the wake that
//! caused the poll to its start, when a wake did), `woken_by` (the task
//! whose poll made that wake) or `woken_by_driver` (`true`: a Tokio
//! runtime's I/O or timer driver made it) and `long` (`true` for a poll
//! over the program's threshold). Slices of the category without a
//! `task` argument (a Tokio worker's `parked` time) are not polls. A
//! task's life begins on its own track with an async begin carrying
//! `task` and `location` (where it was wrapped or spawned): those are the
//! tasks spawned in the trace.
//!
//! Long polls come with the CPU samples taken inside them, when the trace
//! has samples, before anything else said of them ([`write_long_polls`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use fxt_format::decode::{ArgValue, Event, EventKind, Thread};
use serde_json::{json, Value};

use crate::input::ticks_to_ns;

use super::samples::{SampleReport, Spans};
use super::summary::Summary;

/// The longest long poll of a name.
#[derive(Clone, Copy)]
struct LongPoll {
    ns: u64,
    provider: Option<u32>,
    task: u64,
    tid: u64,
    /// Its start, ns.
    at: u64,
}

/// The polls of the tasks of one name.
#[derive(Default)]
struct PerName {
    /// The tasks by provider and id.
    tasks: HashSet<(Option<u32>, u64)>,
    /// Lives begun in the trace.
    spawned: u64,
    polls: u64,
    /// Sum of the polls' durations (ns).
    busy: u64,
    /// Scheduling delay of each woken poll (ns).
    delays: Vec<u64>,
    /// Polls a task's wake caused (`woken_by`).
    by_task: u64,
    /// Polls a Tokio runtime's I/O or timer driver woke (`woken_by_driver`).
    by_driver: u64,
    long: u64,
    /// The longest poll (ns).
    longest: u64,
    longest_long: Option<LongPoll>,
}

/// What the walk gathers about tasks.
#[derive(Default)]
pub struct Tasks {
    names: BTreeMap<String, PerName>,
    /// Where each task begun in the trace was made.
    locations: HashMap<(Option<u32>, u64), String>,
    /// Every long poll, by thread (for the samples inside them).
    long_polls: Spans,
}

fn arg<'a>(e: &'a Event, name: &str) -> Option<&'a ArgValue> {
    e.args
        .iter()
        .find(|a| a.name.as_str() == Some(name))
        .map(|a| &a.value)
}

impl Tasks {
    /// What [`Tasks::add`] takes: a task's poll (a complete event)
    /// or the begin of its life (an async begin with arguments; a poll's
    /// async begin on the task's track has none).
    pub fn takes(e: &Event) -> bool {
        match e.kind {
            EventKind::DurationComplete { .. } => true,
            EventKind::AsyncBegin { .. } => !e.args.is_empty(),
            _ => false,
        }
    }

    /// Takes one event of `provider` (clock at `tps` ticks per second).
    pub fn add(&mut self, provider: Option<u32>, tps: u64, e: &Event) {
        if e.category.as_str() != Some("task") {
            return;
        }
        let Some(&ArgValue::U64(id)) = arg(e, "task") else {
            return;
        };
        let name = e.name.as_str().unwrap_or("");
        let end = match e.kind {
            EventKind::DurationComplete { end } => end,
            EventKind::AsyncBegin { .. } => {
                self.names.entry(name.to_string()).or_default().spawned += 1;
                if let Some(ArgValue::Str(at)) = arg(e, "location") {
                    let at = at.as_str().unwrap_or("").to_string();
                    self.locations.insert((provider, id), at);
                }
                return;
            }
            _ => return,
        };
        let start = ticks_to_ns(e.timestamp, tps);
        let took = ticks_to_ns(end, tps).saturating_sub(start);
        let per = self.names.entry(name.to_string()).or_default();
        per.tasks.insert((provider, id));
        per.polls += 1;
        per.busy = per.busy.saturating_add(took);
        per.longest = per.longest.max(took);
        if let Some(&ArgValue::U64(delay)) = arg(e, "delay") {
            per.delays.push(delay);
        }
        per.by_task += u64::from(matches!(arg(e, "woken_by"), Some(ArgValue::U64(_))));
        per.by_driver += u64::from(arg(e, "woken_by_driver") == Some(&ArgValue::Bool(true)));
        if arg(e, "long") != Some(&ArgValue::Bool(true)) {
            return;
        }
        per.long += 1;
        let Thread::Known { process, thread } = e.thread else {
            return;
        };
        if per.longest_long.is_none_or(|l| l.ns < took) {
            per.longest_long = Some(LongPoll {
                ns: took,
                provider,
                task: id,
                tid: thread,
                at: start,
            });
        }
        let span = (start, start.saturating_add(took), name.to_string());
        self.long_polls
            .entry((provider, process, thread))
            .or_default()
            .push(span);
    }

    /// Every long poll, by thread: the spans whose samples `fxt stats`
    /// shows first about them.
    pub fn long_polls(&self) -> &Spans {
        &self.long_polls
    }

    /// The figures of each name, by busy time (longest first).
    fn summaries(&self) -> Vec<TaskSummary<'_>> {
        let mut out: Vec<TaskSummary<'_>> = self
            .names
            .iter()
            .map(|(name, per)| TaskSummary {
                name,
                tasks: per.tasks.len() as u64,
                spawned: per.spawned,
                polls: per.polls,
                busy: per.busy,
                longest: per.longest,
                delays: (!per.delays.is_empty()).then(|| Summary::of(per.delays.clone())),
                by_task: per.by_task,
                by_driver: per.by_driver,
                long: per.long,
                longest_long: per.longest_long,
                location: per
                    .longest_long
                    .and_then(|l| self.locations.get(&(l.provider, l.task)))
                    .map(String::as_str),
            })
            .collect();
        out.sort_by_key(|t| std::cmp::Reverse(t.busy));
        out
    }
}

struct TaskSummary<'a> {
    name: &'a str,
    tasks: u64,
    spawned: u64,
    polls: u64,
    busy: u64,
    longest: u64,
    delays: Option<Summary>,
    by_task: u64,
    by_driver: u64,
    long: u64,
    longest_long: Option<LongPoll>,
    /// Where the task of the longest long poll was made (if its life
    /// began in the trace).
    location: Option<&'a str>,
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
        "{:>6}  {:>7}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>7}  {:>9}  {:>5}  task",
        "tasks",
        "spawned",
        "polls",
        "busy",
        "longest",
        "p50 delay",
        "p99 delay",
        "max delay",
        "by task",
        "by driver",
        "long"
    )?;
    for t in &tasks {
        let ns = |v: u64| fmt_ns(v as f64);
        let (p50, p99, max) = match &t.delays {
            Some(s) => (ns(s.p50), ns(s.p99), ns(s.max)),
            None => ("-".into(), "-".into(), "-".into()),
        };
        writeln!(
            w,
            "{:>6}  {:>7}  {:>8}  {:>10}  {:>10}  {p50:>10}  {p99:>10}  {max:>10}  {:>7}  {:>9}  {:>5}  {}",
            t.tasks,
            t.spawned,
            t.polls,
            ns(t.busy),
            ns(t.longest),
            t.by_task,
            t.by_driver,
            t.long,
            t.name
        )?;
    }
    Ok(())
}

/// The long polls of each name that has some: the samples taken inside
/// them first (with `samples`, the functions sampled most), then the
/// longest, with where its task was made and the thread it held.
pub fn write_long_polls(
    w: &mut impl std::io::Write,
    tasks: &Tasks,
    samples: &SampleReport,
    fmt_ns: impl Fn(f64) -> String,
) -> std::io::Result<()> {
    let tasks = tasks.summaries();
    let long: Vec<&TaskSummary<'_>> = tasks.iter().filter(|t| t.long > 0).collect();
    if long.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(w, "long polls (held their thread past the threshold)")?;
    for t in long {
        let inside = match samples.in_spans(t.name) {
            Some(s) => {
                let top: Vec<String> = s.top.iter().map(|(f, n)| format!("{f} {n}")).collect();
                format!("{} samples inside: {}; ", s.samples, top.join(", "))
            }
            None => String::new(),
        };
        let longest = match &t.longest_long {
            Some(l) => format!(
                "longest {} at {} on thread {}",
                fmt_ns(l.ns as f64),
                t.location.unwrap_or("(its task began before the trace)"),
                l.tid
            ),
            None => String::new(),
        };
        writeln!(w, "  {}: {} long; {inside}{longest}", t.name, t.long)?;
    }
    Ok(())
}

/// The `tasks` array of the JSON report, with the samples inside each
/// name's long polls (`long_poll_samples`, when the trace has samples).
pub fn document(tasks: &Tasks, samples: &SampleReport) -> Value {
    tasks
        .summaries()
        .iter()
        .map(|t| {
            let d = t.delays.as_ref();
            let inside = samples.in_spans(t.name).map(|s| {
                let top: Vec<Value> = s
                    .top
                    .iter()
                    .map(|(f, n)| json!({"function": f, "samples": n}))
                    .collect();
                json!({"samples": s.samples, "top": top})
            });
            let longest = t.longest_long.map(|l| {
                json!({
                    "ns": l.ns,
                    "location": t.location,
                    "tid": l.tid,
                    "ts_ns": l.at,
                })
            });
            json!({
                "name": t.name,
                "tasks": t.tasks,
                "spawned": t.spawned,
                "polls": t.polls,
                "busy_ns": t.busy,
                "longest_poll_ns": t.longest,
                "woken_polls": d.map_or(0, |s| s.count),
                "woken_by_task_polls": t.by_task,
                "woken_by_driver_polls": t.by_driver,
                "p50_delay_ns": d.map(|s| s.p50),
                "p99_delay_ns": d.map(|s| s.p99),
                "max_delay_ns": d.map(|s| s.max),
                "long_polls": t.long,
                "long_poll_samples": inside,
                "longest_long_poll": longest,
            })
        })
        .collect()
}
