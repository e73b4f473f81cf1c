//! Traced tasks under what a Tokio program does to them: work stealing,
//! `block_in_place`, `spawn_blocking`, `JoinSet`, abort, a panic inside
//! a poll, a runtime built before the session and sessions started and
//! stopped while tasks run, and who woke whom (`woken_by`).
//!
//! Each test asserts what the trace holds (every poll on one thread and
//! matched on its task's track, no end without its begin, the waker's
//! id), never how long anything took, so it passes on one core and under
//! load.

mod common;

use common::events::{end_of, has_arg, polls, trace, u64_arg};

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use fxt_format::decode::{Event, EventKind};
use fxt_runtime::task::{traced, TracedExt};
use tokio::runtime::{Builder, Runtime};

fn multi_thread() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// What a task's track holds: lives begun and ended (with `dropped` or
/// not), poll slices begun and ended.
#[derive(Debug, Default, PartialEq)]
struct Track {
    lives: u32,
    life_ends: u32,
    dropped: u32,
    poll_begins: u32,
    poll_ends: u32,
}

/// Every task track of category `task` in `events`, by id.
fn tracks(events: &[Event]) -> BTreeMap<u64, Track> {
    let mut out: BTreeMap<u64, Track> = BTreeMap::new();
    for e in events.iter().filter(|e| e.category == "task") {
        match e.kind {
            EventKind::AsyncBegin { id } => {
                let t = out.entry(id).or_default();
                if has_arg(e, "task") {
                    t.lives += 1;
                } else {
                    t.poll_begins += 1;
                }
            }
            EventKind::AsyncEnd { id } => {
                let t = out.entry(id).or_default();
                if has_arg(e, "task") {
                    t.life_ends += 1;
                    t.dropped += u32::from(has_arg(e, "dropped"));
                } else {
                    t.poll_ends += 1;
                }
            }
            _ => {}
        }
    }
    out
}

/// The properties every trace of tasks has, however the session met them:
/// each poll's async slice is whole, on the thread of its poll's slice;
/// a task's polls never overlap; no life ends that did not begin here.
fn assert_consistent(events: &[Event], what: &str) {
    for (id, t) in tracks(events) {
        assert_eq!(t.poll_begins, t.poll_ends, "{what}: task {id:#x}: {t:?}");
        assert!(t.lives <= 1, "{what}: task {id:#x} begins once: {t:?}");
        assert!(t.life_ends <= t.lives, "{what}: task {id:#x}: {t:?}");
    }
    let mut by_task: BTreeMap<u64, Vec<&Event>> = BTreeMap::new();
    for e in events.iter().filter(|e| e.category == "task") {
        if let (EventKind::DurationComplete { .. }, Some(id)) = (&e.kind, u64_arg(e, "task")) {
            by_task.entry(id).or_default().push(e);
        }
    }
    for (id, mut mine) in by_task {
        mine.sort_by_key(|e| e.timestamp);
        for pair in mine.windows(2) {
            assert!(
                end_of(pair[0]) <= pair[1].timestamp,
                "{what}: task {id:#x}: polls overlap: {pair:?}"
            );
        }
        for poll in &mine {
            let begin = events.iter().find(|e| {
                matches!(e.kind, EventKind::AsyncBegin { id: i } if i == id)
                    && !has_arg(e, "task")
                    && e.timestamp == poll.timestamp
            });
            let begin = begin.unwrap_or_else(|| panic!("{what}: no track slice for {poll:?}"));
            assert_eq!(
                begin.thread, poll.thread,
                "{what}: the track's poll's thread"
            );
        }
    }
}

#[test]
fn a_wake_made_inside_a_tasks_poll_names_that_task() {
    const MESSAGES: u32 = 6;
    let current = Builder::new_current_thread().build().unwrap();
    for (kind, rt) in [
        ("current-thread", current),
        ("multi-thread", multi_thread()),
    ] {
        let events = trace(|| {
            rt.block_on(async {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
                let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
                let producer = tokio::spawn(
                    async move {
                        for i in 0..MESSAGES {
                            tx.send(i).unwrap();
                            tokio::task::yield_now().await;
                        }
                        // Keeps the sender (whose drop would wake the
                        // consumer outside a poll) until it is done.
                        done_rx.await.unwrap();
                    }
                    .traced("producer"),
                );
                let consumer = tokio::spawn(
                    async move {
                        for _ in 0..MESSAGES {
                            rx.recv().await.unwrap();
                        }
                        done_tx.send(()).unwrap();
                    }
                    .traced("consumer"),
                );
                consumer.await.unwrap();
                producer.await.unwrap();
            })
        });
        assert_consistent(&events, kind);
        let producer = u64_arg(polls(&events, "producer")[0], "task").unwrap();
        let consumer = u64_arg(polls(&events, "consumer")[0], "task").unwrap();
        let woken: Vec<&Event> = polls(&events, "consumer")
            .into_iter()
            .filter(|p| has_arg(p, "delay"))
            .collect();
        // The consumer is woken by the producer's sends; on two workers a
        // send that races the consumer's registration of its waker has the
        // consumer wake itself (Tokio's `AtomicWaker`), inside its own poll.
        for p in &woken {
            let by = u64_arg(p, "woken_by");
            assert!(
                by == Some(producer) || by == Some(consumer),
                "{kind}: {p:?}"
            );
        }
        // On one worker the consumer waits for each message the producer
        // sends; on two, it may find them all sent by its first poll.
        if kind == "current-thread" {
            assert!(
                woken
                    .iter()
                    .any(|p| u64_arg(p, "woken_by") == Some(producer)),
                "{kind}: no poll of the consumer names the producer: {woken:?}"
            );
        }
        // The producer is woken by the consumer's last poll, or by its
        // own yields (its own task).
        for p in polls(&events, "producer") {
            if let Some(by) = u64_arg(p, "woken_by") {
                assert!(by == consumer || by == producer, "{kind}: {p:?}");
            }
        }
    }
}

#[test]
fn stolen_tasks_polls_are_whole_on_the_thread_that_ran_them() {
    const TASKS: usize = 16;
    const YIELDS: usize = 8;
    let rt = multi_thread();
    let events = trace(|| {
        rt.block_on(async {
            let handles: Vec<_> = (0..TASKS)
                .map(|_| {
                    tokio::spawn(
                        async {
                            for _ in 0..YIELDS {
                                tokio::task::yield_now().await;
                            }
                        }
                        .traced("hopper"),
                    )
                })
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        })
    });
    assert_consistent(&events, "work stealing");
    let polls = polls(&events, "hopper");
    assert_eq!(polls.len(), TASKS * (YIELDS + 1));
    // Only this test's tasks: another test's runtime may still run tasks
    // of its own while this session is on.
    let hoppers: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| e.category == "task" && e.name == "hopper" && has_arg(e, "task"))
        .filter_map(|e| match e.kind {
            EventKind::AsyncBegin { id } => Some(id),
            _ => None,
        })
        .collect();
    let t = tracks(&events);
    let done = t
        .iter()
        .filter(|(id, t)| hoppers.contains(id) && t.lives == 1 && t.life_ends == 1);
    assert_eq!(done.count(), TASKS, "every task's life, whole");
}

#[test]
fn block_in_place_and_spawn_blocking_keep_polls_whole() {
    let rt = multi_thread();
    let events = trace(|| {
        rt.block_on(async {
            let mover = tokio::spawn(
                async {
                    for _ in 0..3 {
                        // The worker hands its queue to another thread and
                        // this poll goes on here.
                        tokio::task::block_in_place(|| {
                            std::thread::sleep(Duration::from_millis(1))
                        });
                        tokio::task::yield_now().await;
                    }
                }
                .traced("in place"),
            );
            let waiter = tokio::spawn(
                async {
                    let (release, released) = std::sync::mpsc::channel::<()>();
                    let mut handle = tokio::task::spawn_blocking(move || released.recv().unwrap());
                    // The blocking call returns only once this task's first
                    // poll is pending on it: two polls, the second woken
                    // from the blocking pool's thread.
                    std::future::poll_fn(|cx| {
                        let ready = std::pin::Pin::new(&mut handle).poll(cx);
                        let _ = release.send(());
                        ready
                    })
                    .await
                    .unwrap();
                }
                .traced("blocking waiter"),
            );
            mover.await.unwrap();
            waiter.await.unwrap();
        })
    });
    assert_consistent(&events, "block_in_place");
    assert_eq!(polls(&events, "in place").len(), 4);
    let waiter = polls(&events, "blocking waiter");
    assert_eq!(waiter.len(), 2, "before and after the blocking call");
    // Woken from the blocking pool's thread, which polls no task.
    assert!(has_arg(waiter[1], "delay"));
    assert_eq!(u64_arg(waiter[1], "woken_by"), None);
}

#[test]
fn join_set_tasks_and_their_abort_are_recorded() {
    let rt = multi_thread();
    let events = trace(|| {
        rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for i in 0..6u64 {
                set.spawn(async move { i }.traced("finisher"));
            }
            let mut sum = 0;
            while let Some(r) = set.join_next().await {
                sum += r.unwrap();
            }
            assert_eq!(sum, 15);
            let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
            for _ in 0..4 {
                let started = started_tx.clone();
                set.spawn(
                    async move {
                        started.send(()).unwrap();
                        std::future::pending::<u64>().await
                    }
                    .traced("aborted"),
                );
            }
            for _ in 0..4 {
                started_rx.recv().await.unwrap();
            }
            set.abort_all();
            while let Some(r) = set.join_next().await {
                assert!(r.unwrap_err().is_cancelled());
            }
        })
    });
    assert_consistent(&events, "JoinSet");
    let ids = |name: &str| -> Vec<u64> {
        let mut ids: Vec<u64> = polls(&events, name)
            .iter()
            .filter_map(|p| u64_arg(p, "task"))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let t = tracks(&events);
    assert_eq!(ids("finisher").len(), 6);
    for id in ids("finisher") {
        assert_eq!((t[&id].lives, t[&id].life_ends, t[&id].dropped), (1, 1, 0));
    }
    assert_eq!(ids("aborted").len(), 4);
    for id in ids("aborted") {
        assert_eq!((t[&id].lives, t[&id].life_ends, t[&id].dropped), (1, 1, 1));
    }
}

#[test]
fn a_poll_that_panics_is_recorded_and_its_task_ends_dropped() {
    let rt = multi_thread();
    let events = trace(|| {
        let result = rt.block_on(rt.spawn(traced("panicker", async {
            tokio::task::yield_now().await;
            panic!("inside a poll");
        })));
        assert!(result.unwrap_err().is_panic());
    });
    assert_consistent(&events, "panic");
    let polls = polls(&events, "panicker");
    assert_eq!(polls.len(), 2, "the poll that panicked is recorded too");
    let t = &tracks(&events)[&u64_arg(polls[0], "task").unwrap()];
    assert_eq!((t.lives, t.life_ends, t.dropped), (1, 1, 1));
}

/// A runtime built before any session, tasks running through three
/// sessions started and stopped under them (two threads stop while polls
/// run): each trace holds whole polls only and no life it did not begin.
#[test]
fn sessions_started_and_stopped_while_tasks_run_record_nothing_wrong() {
    let rt = multi_thread();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let stop = stop.clone();
            rt.spawn(
                async move {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        tokio::task::yield_now().await;
                        if i % 2 == 0 {
                            // Long enough that some session ends inside it.
                            std::thread::sleep(Duration::from_micros(200));
                        }
                    }
                }
                .traced("looper"),
            )
        })
        .collect();
    let mut traces = Vec::new();
    for _ in 0..3 {
        traces.push(trace(|| std::thread::sleep(Duration::from_millis(20))));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for h in handles {
        rt.block_on(h).unwrap();
    }
    for (n, events) in traces.iter().enumerate() {
        let what = format!("session {n}");
        assert_consistent(events, &what);
        assert!(
            !polls(events, "looper").is_empty(),
            "{what}: polls recorded"
        );
        let t = tracks(events);
        assert!(
            t.values().all(|t| t.lives == 1 && t.life_ends == 0),
            "{what}: {t:?}"
        );
    }
}
