//! `fxt stats`: the report as text tables, one section after another.

use std::io::{self, Write};

use super::report::Report;
use crate::durations::readable_ns as fmt_ns;

/// Writes every section of `r`.
pub fn write_table(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    overview(w, r)?;
    type_counts(w, r)?;
    names(w, r)?;
    providers(w, r)?;
    scheduling(w, r)?;
    super::locks::write_table(w, &r.tally.locks, |tid| r.thread_name(tid), fmt_ns)?;
    super::tasks::write_table(w, &r.tally.tasks, fmt_ns)?;
    threads(w, r)
}

/// The file, its size and time span, providers, snapshot and drops.
fn overview(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let s = &r.tally;
    writeln!(w, "file          {}", r.file)?;
    writeln!(
        w,
        "records       {} ({} bytes)",
        r.walk.records, r.walk.bytes
    )?;
    if let Some(d) = &r.walk.damage {
        writeln!(w, "damaged at    offset {:#x}", d.offset())?;
    }
    match s.span.first_ns {
        Some(first) => writeln!(
            w,
            "time span     {} (from {} to {})",
            fmt_ns(s.span.length() as f64),
            fmt_ns(first as f64),
            fmt_ns(s.span.last_ns.unwrap_or(first) as f64)
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
        )
    } else {
        writeln!(w, "buffer filled no")
    }
}

/// Records per type and events per kind.
fn type_counts(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let s = &r.tally;
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
    Ok(())
}

/// Events and durations per category and name, and unmatched durations.
fn names(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    if !r.events.is_empty() {
        writeln!(w)?;
        writeln!(w, "{:>10}  {:<20}  name", "events", "category")?;
        for ((c, n), count) in &r.events {
            writeln!(w, "{count:>10}  {c:<20}  {n}")?;
        }
    }
    if !r.durations.is_empty() {
        writeln!(w)?;
        writeln!(
            w,
            "{:>10}  {:>10}  {:>10}  {:>10}  {:>10}  {:>10}  category/name",
            "count", "total", "mean", "p50", "p99", "max"
        )?;
        for ((c, n), d) in &r.durations {
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
    if r.tally.unmatched_ends > 0 || r.unclosed > 0 {
        writeln!(
            w,
            "unmatched duration ends: {}, unclosed duration begins: {}",
            r.tally.unmatched_ends, r.unclosed
        )?;
    }
    Ok(())
}

/// One line per provider, for an archive of several.
fn providers(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let per_provider = r.per_provider();
    if per_provider.len() <= 1 {
        return Ok(());
    }
    let s = &r.tally;
    writeln!(w)?;
    writeln!(
        w,
        "{:>8}  {:<20}  {:>10}  {:>8}  {:>10}  {:>10}  {:>10}  processes",
        "provider", "name", "span", "threads", "records", "events", "from"
    )?;
    for (id, p) in &per_provider {
        let span = match (p.span.first_ns, p.span.last_ns) {
            (Some(f), Some(l)) => fmt_ns((l - f) as f64),
            _ => "-".into(),
        };
        let from = p
            .span
            .first_ns
            .map(|f| fmt_ns(f.saturating_sub(s.span.first_ns.unwrap_or(0)) as f64))
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
            r.provider_name(id),
            p.threads.len(),
            p.records,
            p.events,
            pids.join(", ")
        )?;
    }
    Ok(())
}

/// Time running, runnable and blocked per thread, with scheduling records.
fn scheduling(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    if r.sched.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:>10}  {:>10}  {:>10}  {:>10}  {:>8}  {:>9}  {:>7}  scheduling of thread (process)",
        "thread", "running", "runnable", "blocked", "switches", "preempted", "wakeups"
    )?;
    for (tid, t) in &r.sched {
        let process = r
            .sched_process(*tid)
            .and_then(|p| r.tally.process_names.get(&p).map(|n| format!(" ({n})")))
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
            r.thread_name(*tid),
        )?;
    }
    Ok(())
}

/// Events per thread, with the thread's and its process's names.
fn threads(w: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    let s = &r.tally;
    if s.thread_events.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:>10}  {:>10}  {:>10}  thread name",
        "events", "process", "thread"
    )?;
    for (&(p, t), count) in &s.thread_events {
        let name = r.thread_name(t);
        let process = s.process_names.get(&p).map(String::as_str).unwrap_or("");
        let name = match (name.is_empty(), process.is_empty()) {
            (_, true) => name,
            (true, false) => format!("({process})"),
            (false, false) => format!("{name} ({process})"),
        };
        writeln!(w, "{count:>10}  {p:>10}  {t:>10}  {name}")?;
    }
    Ok(())
}
