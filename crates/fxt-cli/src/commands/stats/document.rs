//! `fxt stats --json`: the report as one JSON document.

use serde_json::{json, Value};

use super::report::Report;

/// The JSON document of `r`.
pub fn document(r: &Report<'_>) -> Value {
    let s = &r.tally;
    let walk = r.walk;
    json!({
        "file": r.file,
        "records": walk.records,
        "bytes": walk.bytes,
        "decode_errors": walk.errors,
        "damaged_at": walk.damage.as_ref().map(|d| d.offset()),
        "start_ns": s.span.first_ns,
        "end_ns": s.span.last_ns,
        "span_ns": s.span.length(),
        "providers": s.providers.iter().map(|(id, (name, tps))| json!({
            "id": id, "name": name, "ticks_per_second": tps,
        })).collect::<Vec<_>>(),
        "records_by_type": s.records_by_type,
        "events_by_type": s.events_by_kind,
        "events": r.events.iter().map(|((c, n), count)| json!({
            "category": c, "name": n, "count": count,
        })).collect::<Vec<_>>(),
        "durations": r.durations.iter().map(|((c, n), d)| json!({
            "category": c, "name": n, "count": d.count, "total_ns": d.total,
            "mean_ns": d.mean, "p50_ns": d.p50, "p99_ns": d.p99, "max_ns": d.max,
        })).collect::<Vec<_>>(),
        "unmatched_duration_ends": s.unmatched_ends,
        "unclosed_duration_begins": r.unclosed,
        "threads": s.thread_events.iter().map(|(&(p, t), count)| json!({
            "process": p, "thread": t, "name": r.thread_name(t), "events": count,
        })).collect::<Vec<_>>(),
        "processes": s.process_names.iter().map(|(k, n)| json!({
            "process": k, "name": n,
        })).collect::<Vec<_>>(),
        "per_provider": r.per_provider().iter().map(|(id, p)| json!({
            "id": id, "name": r.provider_name(id), "processes": p.processes,
            "threads": p.threads.len(), "records": p.records, "events": p.events,
            "start_ns": p.span.first_ns, "end_ns": p.span.last_ns,
        })).collect::<Vec<_>>(),
        "scheduling": r.sched.iter().map(|(tid, t)| json!({
            "thread": tid, "process": r.sched_process(*tid), "name": r.thread_name(*tid),
            "running_ns": t.running_ns, "runnable_ns": t.runnable_ns,
            "blocked_ns": t.blocked_ns, "context_switches": t.context_switches,
            "preempted": t.preempted, "wakeups": t.wakeups,
        })).collect::<Vec<_>>(),
        "locks": super::locks::document(&r.tally.locks, |tid| r.thread_name(tid)),
        // "tasks" is set by the caller, with the samples.
        "snapshot": s.snapshot,
        "buffer_filled": s.buffer_filled > 0,
        "buffer_filled_events": s.buffer_filled,
    })
}
