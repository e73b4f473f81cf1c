//! Per-thread scheduling summaries from context switch and thread wakeup
//! records (`fxt record --sched`): time running, runnable and blocked, and
//! context switches.
//!
//! The records are replayed in time order. A thread runs from a switch in
//! to its next switch out; after a switch out it is runnable when its
//! outgoing state was running (preempted), blocked otherwise (blocked,
//! suspended), until a wakeup (then runnable) or a switch in; dying and
//! dead end it. Time before a thread's first record is not counted; an
//! interval still open at the last scheduling record is counted up to it.
//! The idle task (thread 0) is left out.

use std::collections::BTreeMap;

use fxt_format::decode::ThreadState;

/// One scheduling record, in nanoseconds.
#[derive(Debug, Clone, Copy)]
pub enum Sched {
    Switch {
        ns: u64,
        outgoing: u64,
        state: ThreadState,
        incoming: u64,
    },
    Wakeup {
        ns: u64,
        thread: u64,
    },
}

impl Sched {
    fn ns(&self) -> u64 {
        match *self {
            Sched::Switch { ns, .. } | Sched::Wakeup { ns, .. } => ns,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    Runnable,
    Blocked,
    Gone,
}

/// One thread's totals.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub running_ns: u64,
    pub runnable_ns: u64,
    pub blocked_ns: u64,
    /// Switches out of the thread.
    pub context_switches: u64,
    /// Of them, while it could still run (preempted).
    pub preempted: u64,
    pub wakeups: u64,
}

#[derive(Default)]
struct Track {
    state: Option<(State, u64)>,
    totals: Totals,
}

impl Track {
    /// Ends the current interval at `ns` and starts `next`.
    fn enter(&mut self, next: State, ns: u64) {
        if let Some((state, since)) = self.state {
            let d = ns.saturating_sub(since);
            match state {
                State::Running => self.totals.running_ns += d,
                State::Runnable => self.totals.runnable_ns += d,
                State::Blocked => self.totals.blocked_ns += d,
                State::Gone => {}
            }
        }
        self.state = Some((next, ns));
    }
}

/// Per-thread totals of `records` (any order).
pub fn summarize(mut records: Vec<Sched>) -> BTreeMap<u64, Totals> {
    records.sort_by_key(Sched::ns);
    let mut threads: BTreeMap<u64, Track> = BTreeMap::new();
    let mut last = 0;
    for r in &records {
        last = r.ns();
        match *r {
            Sched::Switch {
                ns,
                outgoing,
                state,
                incoming,
            } => {
                if outgoing != 0 {
                    let t = threads.entry(outgoing).or_default();
                    t.totals.context_switches += 1;
                    let next = match state {
                        ThreadState::Running | ThreadState::New => {
                            t.totals.preempted += 1;
                            State::Runnable
                        }
                        ThreadState::Dying | ThreadState::Dead => State::Gone,
                        _ => State::Blocked,
                    };
                    t.enter(next, ns);
                }
                if incoming != 0 {
                    threads
                        .entry(incoming)
                        .or_default()
                        .enter(State::Running, ns);
                }
            }
            Sched::Wakeup { ns, thread } => {
                if thread != 0 {
                    let t = threads.entry(thread).or_default();
                    t.totals.wakeups += 1;
                    if matches!(t.state, None | Some((State::Blocked, _))) {
                        t.enter(State::Runnable, ns);
                    }
                }
            }
        }
    }
    threads
        .into_iter()
        .map(|(tid, mut t)| {
            t.enter(State::Gone, last);
            (tid, t.totals)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        use Sched::*;
        let sw = |ns, outgoing, state, incoming| Switch {
            ns,
            outgoing,
            state,
            incoming,
        };
        let t = summarize(vec![
            // Out of order on purpose: replayed by time.
            Wakeup {
                ns: 7000,
                thread: 1,
            },
            sw(1000, 0, ThreadState::Running, 1),
            sw(3000, 1, ThreadState::Blocked, 0),
            sw(8000, 0, ThreadState::Running, 1),
            sw(9000, 1, ThreadState::Running, 2),
            sw(9500, 2, ThreadState::Blocked, 1),
            sw(10000, 1, ThreadState::Dead, 0),
        ]);
        assert_eq!(
            t[&1],
            Totals {
                running_ns: 2000 + 1000 + 500,
                runnable_ns: 1000 + 500,
                blocked_ns: 4000,
                context_switches: 3,
                preempted: 1,
                wakeups: 1,
            }
        );
        assert_eq!(t[&2].running_ns, 500);
        assert_eq!(t[&2].blocked_ns, 500, "open until the last record");
        assert!(!t.contains_key(&0));
    }
}
