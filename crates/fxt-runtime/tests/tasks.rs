//! Futures traced as tasks (`fxt_runtime::task`), run by Tokio's
//! current-thread and multi-thread runtimes and read back: every poll on
//! its thread and its task's track, the wakes' arrows, the scheduling
//! delay of a task woken while its worker was blocked, the long poll that
//! blocked it, and the end of a task dropped before it completed.
//!
//! The trace is read as delivered (with the records readers derive: the
//! tasks' tracks and arrows), and raw: one record per poll, and the life.
//!
//! Only properties of the trace are checked, never how long anything took
//! beyond what the test itself slept, so a loaded machine cannot fail it.
//! Timestamps are read with the monotonic clock (a tick is a nanosecond).

mod common;

use common::events::{arg, end_of, polls, raw, trace, u64_arg};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use fxt_format::decode::{ArgValue, Event, EventKind, Thread};
use fxt_runtime::__macro_support::{self as ms, Callsite, KeyCache};
use fxt_runtime::task::{traced, TracedExt};
use tokio::runtime::{Builder, Runtime};

static MARK_KEYS: [KeyCache; 0] = [];
/// An instant the tests' futures write inside their polls.
static MARK: Callsite = Callsite::new("test", "mark", &[], &MARK_KEYS);
static SEND_KEYS: [KeyCache; 0] = [];
/// The producer's slice around each send.
static SEND: Callsite = Callsite::new("test", "send", &[], &SEND_KEYS);

fn mark() {
    if let Some(site) = MARK.site() {
        ms::instant(site, &[]);
    }
}

fn runtimes() -> Vec<(&'static str, Runtime)> {
    let current = Builder::new_current_thread().build().unwrap();
    let multi = Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    vec![("current-thread", current), ("multi-thread", multi)]
}

/// Returns `Pending` once (waking itself), then `Ready`.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        mark();
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Whether `inner` lies inside slice `outer`, on its thread.
fn inside(inner: &Event, outer: &Event) -> bool {
    inner.thread == outer.thread
        && outer.timestamp <= inner.timestamp
        && inner.timestamp <= end_of(outer)
}

/// The async begin and end records of task `id`, by time.
fn track(events: &[Event], id: u64) -> (Vec<&Event>, Vec<&Event>) {
    let mut begins: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AsyncBegin { id: i } if i == id))
        .collect();
    let mut ends: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AsyncEnd { id: i } if i == id))
        .collect();
    begins.sort_by_key(|e| e.timestamp);
    ends.sort_by_key(|e| e.timestamp);
    (begins, ends)
}

#[test]
fn every_poll_is_on_its_thread_and_on_its_tasks_track() {
    const TASKS: usize = 4;
    const YIELDS: usize = 5;
    for (kind, rt) in runtimes() {
        let events = trace(|| {
            rt.block_on(async {
                let handles: Vec<_> = (0..TASKS)
                    .map(|_| {
                        tokio::spawn(
                            async {
                                for _ in 0..YIELDS {
                                    YieldOnce(false).await;
                                }
                            }
                            .traced("yielder"),
                        )
                    })
                    .collect();
                for h in handles {
                    h.await.unwrap();
                }
            })
        });
        let polls = polls(&events, "yielder");
        let mut ids: Vec<u64> = polls.iter().map(|p| u64_arg(p, "task").unwrap()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), TASKS, "{kind}: one id per task");
        for &id in &ids {
            let mine: Vec<&Event> = polls
                .iter()
                .copied()
                .filter(|p| u64_arg(p, "task") == Some(id))
                .collect();
            // Each `YieldOnce` is polled twice; its second poll and the
            // next one's first are the same poll of the task.
            assert_eq!(mine.len(), YIELDS + 1, "{kind}: polls of task {id}");
            assert!(
                mine[1..].iter().all(|p| u64_arg(p, "delay").is_some()),
                "{kind}: every poll after the first was caused by a wake"
            );
            for p in &mine {
                let marks = events
                    .iter()
                    .filter(|e| e.name == "mark" && inside(e, p))
                    .count();
                assert!(marks >= 1, "{kind}: the poll's own work nests in it: {p:?}");
            }
            let (begins, ends) = track(&events, id);
            // The task's life, then one async slice per poll.
            assert_eq!(begins.len(), YIELDS + 2, "{kind}: begins of task {id}");
            assert_eq!(ends.len(), YIELDS + 2, "{kind}: ends of task {id}");
            assert_eq!(u64_arg(begins[0], "task"), Some(id));
            assert!(begins.iter().chain(&ends).all(|e| e.name == "yielder"));
            for (poll, begin) in mine.iter().zip(&begins[1..]) {
                assert!(
                    inside(begin, poll),
                    "{kind}: the track's poll is the thread's"
                );
            }
            let life_end = ends.last().unwrap();
            assert_eq!(arg(life_end, "dropped"), None, "{kind}: it completed");
            assert!(end_of(mine.last().unwrap()) <= life_end.timestamp);
        }
    }
}

#[test]
fn a_raw_trace_has_one_record_per_poll_and_the_tasks_life() {
    const YIELDS: usize = 3;
    let rt = Builder::new_current_thread().build().unwrap();
    let events = raw(|| {
        rt.block_on(
            async {
                for _ in 0..YIELDS {
                    YieldOnce(false).await;
                }
            }
            .traced("compact"),
        )
    });
    let polls = polls(&events, "compact");
    assert_eq!(polls.len(), YIELDS + 1, "{events:?}");
    let id = u64_arg(polls[0], "task").unwrap();
    let (begins, ends) = track(&events, id);
    assert_eq!((begins.len(), ends.len()), (1, 1), "only the task's life");
    assert!(
        !events.iter().any(|e| matches!(
            e.kind,
            EventKind::FlowBegin { .. } | EventKind::FlowEnd { .. }
        )),
        "no arrows: readers derive them"
    );
    assert_eq!(u64_arg(polls[0], "waker_thread"), None, "no wake caused it");
    for p in &polls[1..] {
        let Thread::Known { thread, .. } = p.thread else {
            panic!("{p:?}")
        };
        // The task woke itself, on the thread that polls it.
        assert_eq!(u64_arg(p, "woken_by"), Some(id), "{p:?}");
        assert_eq!(u64_arg(p, "waker_thread"), Some(thread), "{p:?}");
    }
}

/// The flow ends inside `poll`, and the flow begin of each (by id).
fn wakes_of<'a>(events: &'a [Event], poll: &Event) -> Vec<(&'a Event, Option<&'a Event>)> {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::FlowEnd { .. }) && inside(e, poll))
        .map(|end| {
            let EventKind::FlowEnd { id } = end.kind else {
                unreachable!()
            };
            let begin = events
                .iter()
                .find(|e| matches!(e.kind, EventKind::FlowBegin { id: i } if i == id));
            (end, begin)
        })
        .collect()
}

#[test]
fn a_channel_consumers_wakes_are_arrows_from_its_producers_thread() {
    const MESSAGES: u32 = 5;
    for (kind, rt) in runtimes() {
        let events = trace(|| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            let producer = std::thread::spawn(move || {
                for i in 0..MESSAGES {
                    std::thread::sleep(Duration::from_millis(2));
                    let _send = ms::DurationGuard::new(SEND.site());
                    tx.send(i).unwrap();
                }
                // Keeps the sender (whose drop would wake the consumer
                // outside a send) until the consumer has all it needs.
                tx
            });
            rt.block_on(
                async move {
                    for _ in 0..MESSAGES {
                        rx.recv().await.unwrap();
                    }
                }
                .traced("consumer"),
            );
            drop(producer.join().unwrap());
        });
        let sends: Vec<&Event> = events.iter().filter(|e| e.name == "send").collect();
        assert_eq!(sends.len(), MESSAGES as usize, "{kind}");
        let producer = &sends[0].thread;
        let mut arrows = 0;
        for poll in polls(&events, "consumer") {
            let wakes = wakes_of(&events, poll);
            assert_eq!(
                wakes.is_empty(),
                u64_arg(poll, "delay").is_none(),
                "{kind}: {poll:?}"
            );
            assert!(wakes.len() <= 1, "{kind}: one wake causes a poll");
            for (end, begin) in wakes {
                let begin = begin.unwrap_or_else(|| panic!("{kind}: no flow begin for {end:?}"));
                assert_eq!(&begin.thread, producer, "{kind}: woken by the producer");
                assert!(
                    sends.iter().any(|s| inside(begin, s)),
                    "{kind}: the arrow starts inside a send"
                );
                assert!(begin.timestamp <= end.timestamp);
                arrows += 1;
            }
        }
        assert!(arrows >= 1, "{kind}: the consumer waited at least once");
    }
}

#[test]
fn a_task_woken_while_its_worker_is_blocked_waits_at_least_the_block() {
    const BLOCK: Duration = Duration::from_millis(50);
    let current = Builder::new_current_thread().build().unwrap();
    let one_worker = Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    for (kind, rt) in [("current-thread", current), ("one worker", one_worker)] {
        let events = trace(|| {
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
            let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
            rt.block_on(async move {
                let waiter = tokio::spawn(
                    async move {
                        ready_tx.send(()).unwrap();
                        go_rx.await.unwrap();
                    }
                    .traced("waiter"),
                );
                let blocker = tokio::spawn(
                    async move {
                        ready_rx.await.unwrap();
                        go_tx.send(()).unwrap();
                        // Holds the only worker: the waiter, woken just
                        // now, cannot run until this poll returns.
                        std::thread::sleep(BLOCK);
                    }
                    .traced("blocker"),
                );
                waiter.await.unwrap();
                blocker.await.unwrap();
            })
        });
        let blocker = polls(&events, "blocker");
        let long: Vec<&&Event> = blocker
            .iter()
            .filter(|p| arg(p, "long") == Some(ArgValue::Bool(true)))
            .collect();
        assert_eq!(long.len(), 1, "{kind}: the blocking poll is flagged long");
        let waiter = polls(&events, "waiter");
        let woken = waiter
            .iter()
            .find(|p| !wakes_of(&events, p).is_empty())
            .unwrap_or_else(|| panic!("{kind}: the waiter was woken: {waiter:?}"));
        let delay = u64_arg(woken, "delay").expect("a woken poll has its delay");
        assert!(
            delay >= BLOCK.as_nanos() as u64,
            "{kind}: delay {delay} ns < the block"
        );
        let (_, begin) = wakes_of(&events, woken)[0];
        assert!(
            inside(begin.unwrap(), long[0]),
            "{kind}: woken from the blocking poll"
        );
    }
}

#[test]
fn a_task_dropped_before_it_completes_gets_its_end() {
    let rt = Builder::new_current_thread().build().unwrap();
    let events = trace(|| {
        rt.block_on(async {
            let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
            let doomed = tokio::spawn(traced("doomed", async move {
                started_tx.send(()).unwrap();
                std::future::pending::<()>().await;
            }));
            started_rx.await.unwrap();
            doomed.abort();
            assert!(doomed.await.unwrap_err().is_cancelled());
        })
    });
    let polls = polls(&events, "doomed");
    assert_eq!(polls.len(), 1);
    let id = u64_arg(polls[0], "task").unwrap();
    let (begins, ends) = track(&events, id);
    assert_eq!((begins.len(), ends.len()), (2, 2), "life and one poll");
    let life_end = ends.last().unwrap();
    assert_eq!(arg(life_end, "dropped"), Some(ArgValue::Bool(true)));
    assert!(end_of(polls[0]) <= life_end.timestamp);
}

#[test]
fn with_the_category_off_nothing_is_recorded_and_the_future_runs() {
    let rt = Builder::new_current_thread().build().unwrap();
    let mut ran = false;
    let events = trace(|| {
        fxt_runtime::disable_category("task");
        rt.block_on(YieldOnce(false).traced("quiet"));
        ran = true;
        fxt_runtime::enable_category("task");
    });
    assert!(ran);
    assert!(events.iter().all(|e| e.category != "task"), "{events:?}");
    assert!(
        events.iter().any(|e| e.name == "mark"),
        "other categories record"
    );
}

#[test]
fn a_task_without_a_name_is_named_by_where_it_was_wrapped() {
    let rt = Builder::new_current_thread().build().unwrap();
    let line = line!() + 2;
    let events = trace(|| {
        let task = YieldOnce(false).traced_here();
        rt.block_on(task);
    });
    let name = format!("{}:{line}", file!());
    assert_eq!(polls(&events, &name).len(), 2, "{events:?}");
}

#[test]
fn a_task_running_across_two_sessions_begins_again_in_the_second() {
    let rt = Builder::new_current_thread().build().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = rt.spawn(traced("across", async move { rx.await.unwrap() }));
    let first = trace(|| rt.block_on(tokio::task::yield_now()));
    let second = trace(|| {
        tx.send(()).unwrap();
        rt.block_on(handle).unwrap();
    });
    for (which, events) in [("first", &first), ("second", &second)] {
        let polls = polls(events, "across");
        assert_eq!(polls.len(), 1, "{which}: one poll in each session");
        let (begins, ends) = track(events, u64_arg(polls[0], "task").unwrap());
        assert_eq!(begins.len(), 2, "{which}: its life and its poll begin here");
        let want_ends = if which == "first" { 1 } else { 2 };
        assert_eq!(
            ends.len(),
            want_ends,
            "{which}: no end of the other session's"
        );
    }
    // The wake came in the second session, for a poll of the second.
    let woken = polls(&second, "across")[0];
    assert!(u64_arg(woken, "delay").is_some());
}
