//! Lock contention (`fxt::sync`, category `lock`): per lock, its contended
//! acquisitions, their total and p99 wait, and the holders that made
//! others wait longest.
//!
//! A lock's events are named after the lock: wait slices (argument
//! `state` = `wait`, or `timed out`), each naming the thread whose release
//! ended it (argument `holder`, see [`fxt_format::derived::lock`]); a wait
//! is charged to that holder. The `held` slices and flows drawn from them
//! (`fxt_symbols::derived`) are not read. Traces written before the
//! compact form have no `holder`: there a wait is charged to the thread of
//! the flow whose end the waiter wrote just before its wait slice.

use std::collections::{BTreeMap, HashMap};

use fxt_format::decode::{ArgValue, Event, EventKind, Thread};
use serde_json::{json, Value};

use crate::input::ticks_to_ns;

use super::summary::Summary;

/// A thread: provider, process koid, thread koid.
type ThreadKey = (Option<u32>, u64, u64);

/// A flow id, scoped as Perfetto scopes Fuchsia flows: by provider and process.
type FlowKey = (Option<u32>, u64, u64);

/// Who handed a lock over.
#[derive(Clone, Copy)]
enum Handed {
    /// The holder's thread, named by the wait.
    Holder(ThreadKey),
    /// The flow whose begin is on the holder's thread (older traces).
    Flow(FlowKey),
}

/// The waits of one lock.
#[derive(Default)]
struct PerLock {
    /// Wait of each contended acquisition (ns).
    waits: Vec<u64>,
    timed_out: u64,
    /// Per wait with a holder: who, and the wait (ns).
    handed: Vec<(Handed, u64)>,
}

/// What the walk gathers about locks.
#[derive(Default)]
pub struct Locks {
    locks: BTreeMap<String, PerLock>,
    /// Each thread's last flow end in `lock`, for its next wait slice.
    pending: HashMap<ThreadKey, u64>,
    /// The thread of each flow begin in `lock`.
    begins: HashMap<FlowKey, ThreadKey>,
}

fn state(e: &Event) -> Option<&str> {
    e.args
        .iter()
        .find(|a| a.name.as_str() == Some("state"))
        .and_then(|a| match &a.value {
            ArgValue::Str(t) => t.as_str(),
            _ => None,
        })
}

/// The thread whose release ended a wait, as the wait names it.
fn holder(e: &Event) -> Option<u64> {
    e.args
        .iter()
        .find(|a| a.name.as_str() == Some(fxt_format::derived::lock::HOLDER))
        .and_then(|a| match a.value {
            ArgValue::U64(k) | ArgValue::Koid(k) => Some(k),
            _ => None,
        })
}

impl Locks {
    /// Takes one event of `provider` (clock at `tps` ticks per second).
    pub fn add(&mut self, provider: Option<u32>, tps: u64, e: &Event) {
        if e.category.as_str() != Some("lock") {
            return;
        }
        let Thread::Known { process, thread } = e.thread else {
            return;
        };
        let who = (provider, process, thread);
        match e.kind {
            EventKind::FlowBegin { id } => {
                self.begins.insert((provider, process, id), who);
            }
            EventKind::FlowEnd { id } => {
                self.pending.insert(who, id);
            }
            EventKind::DurationComplete { end } => {
                let wait = ticks_to_ns(end, tps).saturating_sub(ticks_to_ns(e.timestamp, tps));
                let name = e.name.as_str().unwrap_or("");
                match state(e) {
                    Some("wait") => {
                        let per = self.locks.entry(name.to_string()).or_default();
                        per.waits.push(wait);
                        let flow = self.pending.remove(&who);
                        let handed = match holder(e) {
                            Some(h) => Some(Handed::Holder((provider, process, h))),
                            None => flow.map(|id| Handed::Flow((provider, process, id))),
                        };
                        if let Some(h) = handed {
                            per.handed.push((h, wait));
                        }
                    }
                    Some("timed out") => {
                        self.pending.remove(&who);
                        self.locks.entry(name.to_string()).or_default().timed_out += 1;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// The figures of each lock, sorted by total wait (longest first).
    fn summaries(&self) -> Vec<LockSummary<'_>> {
        let mut out: Vec<LockSummary<'_>> = self
            .locks
            .iter()
            .map(|(name, per)| {
                let mut holders: HashMap<ThreadKey, (u64, u64)> = HashMap::new();
                for (handed, wait) in &per.handed {
                    let holder = match handed {
                        Handed::Holder(thread) => Some(thread),
                        Handed::Flow(flow) => self.begins.get(flow),
                    };
                    if let Some(holder) = holder {
                        let h = holders.entry(*holder).or_default();
                        h.0 += 1;
                        h.1 += wait;
                    }
                }
                let mut holders: Vec<_> = holders.into_iter().collect();
                holders.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
                holders.truncate(MAX_HOLDERS);
                let waits = (!per.waits.is_empty()).then(|| Summary::of(per.waits.clone()));
                LockSummary {
                    name,
                    waits,
                    timed_out: per.timed_out,
                    holders,
                }
            })
            .collect();
        out.sort_by_key(|l| std::cmp::Reverse(l.waits.as_ref().map_or(0, |w| w.total)));
        out
    }
}

/// Holders listed per lock.
const MAX_HOLDERS: usize = 3;

struct LockSummary<'a> {
    name: &'a str,
    waits: Option<Summary>,
    timed_out: u64,
    /// (holder thread, (waits it ended, their total ns)), longest first.
    holders: Vec<(ThreadKey, (u64, u64))>,
}

/// The `locks` section of the text report (nothing without lock events).
pub fn write_table(
    w: &mut impl std::io::Write,
    locks: &Locks,
    thread_name: impl Fn(u64) -> String,
    fmt_ns: impl Fn(f64) -> String,
) -> std::io::Result<()> {
    let locks = locks.summaries();
    if locks.is_empty() {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:>10}  {:>10}  {:>10}  {:>10}  {:>9}  lock (holders that made others wait longest)",
        "contended", "total wait", "p99 wait", "max wait", "timed out"
    )?;
    for l in &locks {
        let (count, total, p99, max) = match &l.waits {
            Some(s) => (
                s.count,
                fmt_ns(s.total as f64),
                fmt_ns(s.p99 as f64),
                fmt_ns(s.max as f64),
            ),
            None => (0, "-".into(), "-".into(), "-".into()),
        };
        writeln!(
            w,
            "{count:>10}  {total:>10}  {p99:>10}  {max:>10}  {:>9}  {}",
            l.timed_out, l.name
        )?;
        for ((_, _, tid), (n, ns)) in &l.holders {
            writeln!(
                w,
                "{:>56}  thread {tid} {:?}: {} over {n} wait{}",
                "",
                thread_name(*tid),
                fmt_ns(*ns as f64),
                if *n == 1 { "" } else { "s" }
            )?;
        }
    }
    Ok(())
}

/// The `locks` array of the JSON report.
pub fn document(locks: &Locks, thread_name: impl Fn(u64) -> String) -> Value {
    let locks = locks.summaries();
    locks
        .iter()
        .map(|l| {
            let w = l.waits.as_ref();
            json!({
                "name": l.name,
                "contended": w.map_or(0, |s| s.count),
                "total_wait_ns": w.map_or(0, |s| s.total),
                "p99_wait_ns": w.map(|s| s.p99),
                "max_wait_ns": w.map(|s| s.max),
                "timed_out": l.timed_out,
                "holders": l.holders.iter().map(|((_, process, thread), (n, ns))| json!({
                    "process": process, "thread": thread, "name": thread_name(*thread),
                    "waits": n, "wait_ns": ns,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}
