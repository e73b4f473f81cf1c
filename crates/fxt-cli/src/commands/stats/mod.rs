//! `fxt stats`: what a trace holds and how long things took.
//!
//! Durations come from duration complete events and from duration
//! begin/end pairs matched per thread (a stack per provider and thread; an
//! end closes the innermost open begin). Times are converted from ticks
//! with each provider's ticks per second, so all figures are nanoseconds.
//! Percentiles are exact (nearest rank), at the cost of 8 bytes of memory
//! per duration.
//!
//! An archive of several providers (`fxt merge`, `fxt record`) also gets a
//! summary per provider (its processes, threads, records, events and time
//! span), and one with scheduling records a summary per thread
//! ([`scheduling`]).

mod scheduling;

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Write};
use std::process::ExitCode;

use fxt_format::decode::{EventKind, Record, Text, Thread};
use serde_json::json;

use crate::error::Error;
use crate::input::{ticks_to_ns, Input};
use crate::names::{event_kind_name, record_type_name};

/// Arguments of `fxt stats`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// A category and name (`Text` clones without allocating for short strings).
type Key = (Text, Text);

fn key(category: &Text, name: &Text) -> Key {
    (category.clone(), name.clone())
}

/// A thread: provider, process koid, thread koid.
type ThreadKey = (Option<u32>, u64, u64);

/// Events and durations of one category and name.
#[derive(Default)]
struct PerName {
    events: u64,
    /// Nanoseconds.
    durations: Vec<u64>,
}

/// A fast non-cryptographic hasher (FxHash's mixing): the keys are the
/// trace's own names, and a trace that collides them only slows itself.
#[derive(Default)]
struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(b));
        }
        let mut b = [0u8; 8];
        let rest = chunks.remainder();
        b[..rest.len()].copy_from_slice(rest);
        self.write_u64(u64::from_le_bytes(b) ^ rest.len() as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

#[derive(Default)]
struct Stats {
    records_by_type: BTreeMap<&'static str, u64>,
    events_by_kind: BTreeMap<&'static str, u64>,
    /// Per category and name: event count and durations.
    names: HashMap<Key, PerName, BuildHasherDefault<FastHasher>>,
    /// Open duration begins per thread: (key, start ns).
    open: HashMap<ThreadKey, Vec<(Key, u64)>>,
    unmatched_ends: u64,
    thread_events: BTreeMap<(u64, u64), u64>,
    thread_names: HashMap<u64, (u64, String)>,
    process_names: HashMap<u64, String>,
    providers: BTreeMap<u32, (String, u64)>,
    buffer_filled: u64,
    /// The number of the snapshot this file is, from its `fxt`/`snapshot`
    /// instant (see `fxt_runtime::Session::snapshot`).
    snapshot: Option<u64>,
    first_ns: Option<u64>,
    last_ns: Option<u64>,
    /// Per provider (`None`: records before any provider info).
    per_provider: BTreeMap<Option<u32>, PerProvider>,
    /// Context switches and wakeups, in ns.
    sched: Vec<scheduling::Sched>,
}

/// What one provider of an archive holds.
#[derive(Default)]
struct PerProvider {
    records: u64,
    events: u64,
    processes: std::collections::BTreeSet<u64>,
    threads: std::collections::BTreeSet<(u64, u64)>,
    first_ns: Option<u64>,
    last_ns: Option<u64>,
}

impl Stats {
    fn time(&mut self, ns: u64) {
        self.first_ns = Some(self.first_ns.map_or(ns, |f| f.min(ns)));
        self.last_ns = Some(self.last_ns.map_or(ns, |l| l.max(ns)));
    }
}

/// Runs `fxt stats`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open(&args.file)?;
    let mut s = Stats::default();
    let walk = input.walk("stats", |reader, record| {
        *s.records_by_type
            .entry(record_type_name(&record))
            .or_default() += 1;
        let tps = reader.ticks_per_second();
        let p = s.per_provider.entry(reader.provider_id()).or_default();
        p.records += 1;
        if let Some(ts) = record.timestamp() {
            let ns = ticks_to_ns(ts, tps);
            p.first_ns = Some(p.first_ns.map_or(ns, |f| f.min(ns)));
            p.last_ns = Some(p.last_ns.map_or(ns, |l| l.max(ns)));
        }
        if let Some(ts) = record.timestamp() {
            s.time(ticks_to_ns(ts, tps));
        }
        let p = s.per_provider.entry(reader.provider_id()).or_default();
        if let Record::Event(e) = &record {
            p.events += 1;
            if let Thread::Known { process, thread } = e.thread {
                p.processes.insert(process);
                p.threads.insert((process, thread));
            }
        }
        match record {
            Record::ProviderInfo { provider_id, name } => {
                s.providers.insert(provider_id, (name, 0));
            }
            Record::Initialization { ticks_per_second } => {
                if let Some(id) = reader.provider_id() {
                    let p = s.providers.entry(id).or_default();
                    p.1 = ticks_per_second;
                }
            }
            Record::ProviderEvent { event: 0, .. } => s.buffer_filled += 1,
            Record::ContextSwitch(c) => s.sched.push(scheduling::Sched::Switch {
                ns: ticks_to_ns(c.timestamp, tps),
                outgoing: c.outgoing_thread,
                state: c.outgoing_state,
                incoming: c.incoming_thread,
            }),
            Record::ThreadWakeup(w) => s.sched.push(scheduling::Sched::Wakeup {
                ns: ticks_to_ns(w.timestamp, tps),
                thread: w.waking_thread,
            }),
            Record::KernelObject(o) => match o.object_type {
                1 => {
                    s.process_names.insert(o.koid, o.name.to_string());
                }
                2 => {
                    let process = o.process_koid().unwrap_or(0);
                    s.thread_names.insert(o.koid, (process, o.name.to_string()));
                }
                _ => {}
            },
            Record::Event(e) => {
                if e.category.as_str() == Some("fxt") && e.name.as_str() == Some("snapshot") {
                    if let Some(fxt_format::decode::ArgValue::U64(n)) = e
                        .args
                        .iter()
                        .find(|a| a.name.as_str() == Some("snapshot"))
                        .map(|a| &a.value)
                    {
                        s.snapshot = Some(*n);
                    }
                }
                *s.events_by_kind
                    .entry(event_kind_name(&e.kind))
                    .or_default() += 1;
                let k = key(&e.category, &e.name);
                let per_name = s.names.entry(k.clone()).or_default();
                per_name.events += 1;
                let (process, thread) = match e.thread {
                    Thread::Known { process, thread } => (process, thread),
                    Thread::Undefined(_) => (0, 0),
                };
                *s.thread_events.entry((process, thread)).or_default() += 1;
                let start = ticks_to_ns(e.timestamp, tps);
                match e.kind {
                    EventKind::DurationComplete { end } => {
                        let end = ticks_to_ns(end, tps);
                        per_name.durations.push(end.saturating_sub(start));
                        s.time(end);
                    }
                    EventKind::DurationBegin => {
                        let t = (reader.provider_id(), process, thread);
                        s.open.entry(t).or_default().push((k, start));
                    }
                    EventKind::DurationEnd => {
                        let t = (reader.provider_id(), process, thread);
                        match s.open.get_mut(&t).and_then(Vec::pop) {
                            Some((k, begin)) => s
                                .names
                                .entry(k)
                                .or_default()
                                .durations
                                .push(start.saturating_sub(begin)),
                            None => s.unmatched_ends += 1,
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    })?;
    let unclosed: u64 = s.open.values().map(|v| v.len() as u64).sum();
    let mut durations: Vec<((String, String), Summary)> = s
        .names
        .iter_mut()
        .filter(|(_, p)| !p.durations.is_empty())
        .map(|((c, n), p)| {
            (
                (c.to_string(), n.to_string()),
                Summary::of(&mut p.durations),
            )
        })
        .collect();
    durations.sort_by(|a, b| a.0.cmp(&b.0));
    let mut events: Vec<((String, String), u64)> = s
        .names
        .iter()
        .filter(|(_, p)| p.events > 0)
        .map(|((c, n), p)| ((c.to_string(), n.to_string()), p.events))
        .collect();
    events.sort();
    let span = match (s.first_ns, s.last_ns) {
        (Some(f), Some(l)) => l - f,
        _ => 0,
    };
    let thread_name = |thread: u64| {
        s.thread_names
            .get(&thread)
            .map(|(_, n)| n.clone())
            .unwrap_or_default()
    };
    let sched = scheduling::summarize(std::mem::take(&mut s.sched));
    let provider_name = |id: &Option<u32>| {
        id.and_then(|id| s.providers.get(&id))
            .map(|(n, _)| n.clone())
            .unwrap_or_default()
    };
    let per_provider: Vec<_> = s
        .per_provider
        .iter()
        .filter(|(_, p)| p.records > 1 || p.events > 0)
        .collect();
    let sched_process = |tid: u64| s.thread_names.get(&tid).map(|(p, _)| *p);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let doc = json!({
            "file": input.name,
            "records": walk.records,
            "bytes": walk.bytes,
            "decode_errors": walk.errors,
            "damaged_at": walk.damage.as_ref().map(|d| d.offset()),
            "start_ns": s.first_ns,
            "end_ns": s.last_ns,
            "span_ns": span,
            "providers": s.providers.iter().map(|(id, (name, tps))| json!({
                "id": id, "name": name, "ticks_per_second": tps,
            })).collect::<Vec<_>>(),
            "records_by_type": s.records_by_type,
            "events_by_type": s.events_by_kind,
            "events": events.iter().map(|((c, n), count)| json!({
                "category": c, "name": n, "count": count,
            })).collect::<Vec<_>>(),
            "durations": durations.iter().map(|((c, n), d)| json!({
                "category": c, "name": n, "count": d.count, "total_ns": d.total,
                "mean_ns": d.mean, "p50_ns": d.p50, "p99_ns": d.p99, "max_ns": d.max,
            })).collect::<Vec<_>>(),
            "unmatched_duration_ends": s.unmatched_ends,
            "unclosed_duration_begins": unclosed,
            "threads": s.thread_events.iter().map(|(&(p, t), count)| json!({
                "process": p, "thread": t, "name": thread_name(t), "events": count,
            })).collect::<Vec<_>>(),
            "processes": s.process_names.iter().map(|(k, n)| json!({
                "process": k, "name": n,
            })).collect::<Vec<_>>(),
            "per_provider": per_provider.iter().map(|(id, p)| json!({
                "id": id, "name": provider_name(id), "processes": p.processes,
                "threads": p.threads.len(), "records": p.records, "events": p.events,
                "start_ns": p.first_ns, "end_ns": p.last_ns,
            })).collect::<Vec<_>>(),
            "scheduling": sched.iter().map(|(tid, t)| json!({
                "thread": tid, "process": sched_process(*tid), "name": thread_name(*tid),
                "running_ns": t.running_ns, "runnable_ns": t.runnable_ns,
                "blocked_ns": t.blocked_ns, "context_switches": t.context_switches,
                "preempted": t.preempted, "wakeups": t.wakeups,
            })).collect::<Vec<_>>(),
            "snapshot": s.snapshot,
            "buffer_filled": s.buffer_filled > 0,
            "buffer_filled_events": s.buffer_filled,
        });
        serde_json::to_writer_pretty(&mut out, &doc).map_err(io::Error::from)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let w = &mut out;
    writeln!(w, "file          {}", input.name)?;
    writeln!(w, "records       {} ({} bytes)", walk.records, walk.bytes)?;
    if let Some(d) = &walk.damage {
        writeln!(w, "damaged at    offset {:#x}", d.offset())?;
    }
    match s.first_ns {
        Some(first) => writeln!(
            w,
            "time span     {} (from {} to {})",
            fmt_ns(span as f64),
            fmt_ns(first as f64),
            fmt_ns(s.last_ns.unwrap_or(first) as f64)
        )?,
        None => writeln!(w, "time span     -")?,
    }
    for (id, (name, tps)) in &s.providers {
        writeln!(w, "provider      #{id} {name:?}, {tps} ticks/s")?;
    }
    match s.snapshot {
        Some(n) => writeln!(w, "snapshot      {n} (of a session still recording)")?,
        None => writeln!(w, "snapshot      no")?,
    }
    if s.buffer_filled > 0 {
        writeln!(
            w,
            "buffer filled yes: records were dropped ({} provider event{})",
            s.buffer_filled,
            if s.buffer_filled == 1 { "" } else { "s" }
        )?;
    } else {
        writeln!(w, "buffer filled no")?;
    }
    writeln!(w)?;
    writeln!(w, "{:>10}  record type", "records")?;
    for (t, n) in &s.records_by_type {
        writeln!(w, "{n:>10}  {t}")?;
    }
    if !s.events_by_kind.is_empty() {
        writeln!(w)?;
        writeln!(w, "{:>10}  event type", "events")?;
        for (t, n) in &s.events_by_kind {
            writeln!(w, "{n:>10}  {t}")?;
        }
    }
    if !events.is_empty() {
        writeln!(w)?;
        writeln!(w, "{:>10}  {:<20}  name", "events", "category")?;
        for ((c, n), count) in &events {
            writeln!(w, "{count:>10}  {c:<20}  {n}")?;
        }
    }
    if !durations.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "{:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  category/name",
            "count", "total", "mean", "p50", "p99", "max"
        )?;
        for ((c, n), d) in &durations {
            writeln!(
                w,
                "{:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {c}/{n}",
                d.count,
                fmt_ns(d.total as f64),
                fmt_ns(d.mean),
                fmt_ns(d.p50 as f64),
                fmt_ns(d.p99 as f64),
                fmt_ns(d.max as f64)
            )?;
        }
    }
    if s.unmatched_ends > 0 || unclosed > 0 {
        writeln!(
            w,
            "unmatched duration ends: {}, unclosed duration begins: {unclosed}",
            s.unmatched_ends
        )?;
    }
    if per_provider.len() > 1 {
        writeln!(w)?;
        writeln!(
            w,
            "{:>8}  {:<20}  {:>10}  {:>8}  {:>10}  {:>10}  {:>10}  processes",
            "provider", "name", "span", "threads", "records", "events", "from"
        )?;
        for (id, p) in &per_provider {
            let span = match (p.first_ns, p.last_ns) {
                (Some(f), Some(l)) => fmt_ns((l - f) as f64),
                _ => "-".into(),
            };
            let from = p
                .first_ns
                .map(|f| fmt_ns(f.saturating_sub(s.first_ns.unwrap_or(0)) as f64))
                .unwrap_or_else(|| "-".into());
            let pids: Vec<String> = p
                .processes
                .iter()
                .map(|pid| match s.process_names.get(pid) {
                    Some(n) if !n.is_empty() => format!("{pid} ({n})"),
                    _ => pid.to_string(),
                })
                .collect();
            writeln!(
                w,
                "{:>8}  {:<20}  {span:>10}  {:>8}  {:>10}  {:>10}  {from:>10}  {}",
                id.map_or("-".into(), |i| format!("#{i}")),
                provider_name(id),
                p.threads.len(),
                p.records,
                p.events,
                pids.join(", ")
            )?;
        }
    }
    if !sched.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "{:>10}  {:>10}  {:>10}  {:>10}  {:>8}  {:>9}  {:>7}  scheduling of thread (process)",
            "thread", "running", "runnable", "blocked", "switches", "preempted", "wakeups"
        )?;
        for (tid, t) in &sched {
            let process = sched_process(*tid)
                .and_then(|p| s.process_names.get(&p).map(|n| format!(" ({n})")))
                .unwrap_or_default();
            writeln!(
                w,
                "{tid:>10}  {:>10}  {:>10}  {:>10}  {:>8}  {:>9}  {:>7}  {}{process}",
                fmt_ns(t.running_ns as f64),
                fmt_ns(t.runnable_ns as f64),
                fmt_ns(t.blocked_ns as f64),
                t.context_switches,
                t.preempted,
                t.wakeups,
                thread_name(*tid),
            )?;
        }
    }
    if !s.thread_events.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "{:>10}  {:>10}  {:>10}  thread name",
            "events", "process", "thread"
        )?;
        for (&(p, t), count) in &s.thread_events {
            let name = thread_name(t);
            let process = s.process_names.get(&p).map(String::as_str).unwrap_or("");
            let name = match (name.is_empty(), process.is_empty()) {
                (_, true) => name,
                (true, false) => format!("({process})"),
                (false, false) => format!("{name} ({process})"),
            };
            writeln!(w, "{count:>10}  {p:>10}  {t:>10}  {name}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Count, total, mean and percentiles of a set of durations (ns).
struct Summary {
    count: u64,
    total: u64,
    mean: f64,
    p50: u64,
    p99: u64,
    max: u64,
}

impl Summary {
    fn of(v: &mut [u64]) -> Summary {
        v.sort_unstable();
        let total: u64 = v.iter().fold(0u64, |a, &d| a.saturating_add(d));
        let n = v.len();
        // Nearest rank: the smallest value with at least p% at or below it.
        let rank = |p: u64| v[((n as u64 * p).div_ceil(100) as usize).clamp(1, n) - 1];
        Summary {
            count: n as u64,
            total,
            mean: total as f64 / n as f64,
            p50: rank(50),
            p99: rank(99),
            max: v[n - 1],
        }
    }
}

/// A duration with a readable unit.
fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.2}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}
