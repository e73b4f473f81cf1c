//! `task::tokio::instrument`: a Tokio runtime's own hooks. Its workers'
//! parked time is on their threads, between the polls; built with
//! `--cfg tokio_unstable`, every task spawned with plain `tokio::spawn`
//! has its polls, named by its spawn location.
//!
//! Only properties of the trace are checked (see tests/tasks.rs).

mod common;

use common::events::{arg, has_arg, polls, trace, u64_arg};

use std::io::Write;
use std::time::Duration;

use fxt_format::decode::{ArgValue, Event, EventKind};
use fxt_runtime::task::{tokio::instrument, TracedExt};
use tokio::io::AsyncReadExt;
use tokio::runtime::Builder;

/// `(thread, start, end)` of the slices named `name`, by start.
fn slices(events: &[Event], name: &str) -> Vec<(fxt_format::decode::Thread, u64, u64)> {
    let mut out: Vec<_> = events
        .iter()
        .filter(|e| e.category == "task" && e.name == name)
        .filter_map(|e| match e.kind {
            EventKind::DurationComplete { end } => Some((e.thread, e.timestamp, end)),
            _ => None,
        })
        .collect();
    out.sort_by_key(|s| s.1);
    out
}

#[test]
fn idle_workers_are_parked_between_the_polls() {
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(2).enable_time();
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    let events = trace(|| {
        rt.block_on(async {
            tokio::spawn(tokio::time::sleep(Duration::from_millis(20)).traced("sleeper"))
                .await
                .unwrap();
        });
    });
    let polls = slices(&events, "sleeper");
    assert_eq!(polls.len(), 2, "before and after the sleep: {polls:?}");
    let parked = slices(&events, "parked");
    // While the only task sleeps, nothing runs: some worker is parked
    // for part of that time (another worker may have parked a little
    // before the first poll ended, or wake a little after the second
    // began: a parked slice overlaps the gap, it need not lie inside it).
    assert!(
        parked.iter().any(|p| p.1 < polls[1].1 && polls[0].2 < p.2),
        "a parked slice between the polls: {parked:?} {polls:?}"
    );
    // Parked and polling never overlap on one thread.
    for p in &parked {
        for q in polls.iter().filter(|q| q.0 == p.0) {
            assert!(p.2 <= q.1 || q.2 <= p.1, "parked {p:?} overlaps poll {q:?}");
        }
    }
}

/// The woken polls (those with a `delay`) of `name`: `(woken_by,
/// woken_by_driver)` of each.
fn wakers(events: &[Event], name: &str) -> Vec<(Option<u64>, bool)> {
    polls(events, name)
        .into_iter()
        .filter(|p| has_arg(p, "delay"))
        .map(|p| {
            let driver = arg(p, "woken_by_driver");
            assert!(matches!(driver, None | Some(ArgValue::Bool(true))), "{p:?}");
            (u64_arg(p, "woken_by"), driver.is_some())
        })
        .collect()
}

#[test]
fn a_wake_of_the_timer_or_io_driver_is_marked_and_a_threads_is_not() {
    for multi in [false, true] {
        let mut builder = match multi {
            true => Builder::new_multi_thread(),
            false => Builder::new_current_thread(),
        };
        builder.enable_all();
        instrument(&mut builder);
        let rt = builder.build().unwrap();
        let events = trace(|| {
            rt.block_on(async {
                // The timer: the runtime has nothing else to run, so its
                // workers park until the timer fires, in the driver.
                let sleeper = tokio::time::sleep(Duration::from_millis(20)).traced("sleeper");
                tokio::spawn(sleeper).await.unwrap();
                // The I/O driver: a read woken by a write from a plain
                // thread (the readiness arrives while every worker waits).
                let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
                ours.set_nonblocking(true).unwrap();
                let mut ours = tokio::net::UnixStream::from_std(ours).unwrap();
                let reader = tokio::spawn(
                    async move {
                        let mut byte = [0u8; 1];
                        ours.read_exact(&mut byte).await.unwrap();
                    }
                    .traced("reader"),
                );
                // A plain thread: its wake is neither a task's nor the
                // driver's.
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let waiter = tokio::spawn(
                    async move {
                        rx.await.unwrap();
                    }
                    .traced("waiter"),
                );
                let plain = std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    (&theirs).write_all(b"x").unwrap();
                    std::thread::sleep(Duration::from_millis(20));
                    tx.send(()).unwrap();
                });
                reader.await.unwrap();
                waiter.await.unwrap();
                plain.join().unwrap();
            });
        });
        let kind = if multi {
            "multi-thread"
        } else {
            "current-thread"
        };
        assert_eq!(wakers(&events, "sleeper"), [(None, true)], "{kind}");
        assert_eq!(wakers(&events, "reader"), [(None, true)], "{kind}");
        assert_eq!(wakers(&events, "waiter"), [(None, false)], "{kind}");
    }
}

#[test]
fn without_a_session_the_hooks_record_nothing_and_the_runtime_runs() {
    let mut builder = Builder::new_current_thread();
    builder.enable_time();
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    let n = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::spawn(async { 7 }).await.unwrap()
    });
    assert_eq!(n, 7);
}

/// Built with `RUSTFLAGS="--cfg tokio_unstable"`.
#[cfg(tokio_unstable)]
#[test]
fn every_spawned_task_has_its_polls_named_by_where_it_was_spawned() {
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(2);
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    let line = line!() + 4;
    let events = trace(|| {
        rt.block_on(async {
            let handles: Vec<_> = (0..3)
                .map(|_| tokio::spawn(async { tokio::task::yield_now().await }))
                .collect();
            for h in handles {
                h.await.unwrap();
            }
        });
    });
    let name = format!("{}:{line}", file!());
    let polls = slices(&events, &name);
    // Each task yields once, so it is polled twice. Tokio calls the
    // after-poll hook once the task has terminated and its `JoinHandle`
    // was woken: the session may end before a worker gets there, so a
    // task's last poll may be missing (5 of 6 were recorded once), whole
    // (see `a_poll_the_session_ends_in_is_whole_or_absent`).
    assert!(polls.len() >= 3, "a poll per task at least: {polls:?}");
    let mut ids: Vec<u64> = events
        .iter()
        .filter(|e| e.name == name.as_str())
        .filter_map(|e| match e.kind {
            EventKind::AsyncBegin { id } => Some(id),
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "one track per task");
}

#[test]
fn block_on_runs_what_tokio_main_would_on_an_instrumented_runtime() {
    let events = trace(|| {
        let n = fxt_runtime::task::tokio::block_on(async {
            // The time driver is on, as `#[tokio::main]` has it.
            tokio::time::sleep(Duration::from_millis(5)).await;
            tokio::spawn(async { 7 }.traced("seven")).await.unwrap()
        });
        assert_eq!(n, 7);
    });
    assert_eq!(slices(&events, "seven").len(), 1);
    assert!(
        !slices(&events, "parked").is_empty(),
        "the runtime's hooks are installed"
    );
}

/// The async slices of each task id of category `task`: (poll begins,
/// poll ends) (a poll's have no arguments; a life's have `task`).
#[cfg(tokio_unstable)]
fn poll_tracks(events: &[Event]) -> std::collections::BTreeMap<u64, (u32, u32)> {
    let mut out = std::collections::BTreeMap::<u64, (u32, u32)>::new();
    for e in events
        .iter()
        .filter(|e| e.category == "task" && e.args.is_empty())
    {
        match e.kind {
            EventKind::AsyncBegin { id } => out.entry(id).or_default().0 += 1,
            EventKind::AsyncEnd { id } => out.entry(id).or_default().1 += 1,
            _ => {}
        }
    }
    out
}

/// The session ends as soon as the tasks' `JoinHandle`s are woken, while
/// the workers may still be in Tokio's after-poll hook: each poll is in
/// the trace whole or not at all (its track's begin used to be written
/// before the poll, and was then left without its end).
#[cfg(tokio_unstable)]
#[test]
fn a_poll_the_session_ends_in_is_whole_or_absent() {
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(2);
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    for _ in 0..20 {
        let events = trace(|| {
            rt.block_on(async {
                let handles: Vec<_> = (0..3)
                    .map(|_| tokio::spawn(async { tokio::task::yield_now().await }))
                    .collect();
                for h in handles {
                    h.await.unwrap();
                }
            });
        });
        for (id, (begins, ends)) in poll_tracks(&events) {
            assert_eq!(begins, ends, "task {id:#x}: a poll's begin without its end");
        }
    }
}

/// Tokio's own scheduling delay: on a current-thread runtime, a task
/// woken by a task that then blocks the thread waits at least the block.
#[cfg(tokio_unstable)]
#[test]
fn tokio_tasks_polls_carry_their_scheduling_delay() {
    const BLOCK: Duration = Duration::from_millis(30);
    let mut builder = Builder::new_current_thread();
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    let waiter_line = line!() + 5;
    let events = trace(|| {
        rt.block_on(async {
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
            let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
            let waiter = tokio::spawn(async move {
                ready_tx.send(()).unwrap();
                go_rx.await.unwrap();
            });
            let blocker = tokio::spawn(async move {
                ready_rx.await.unwrap();
                go_tx.send(()).unwrap();
                std::thread::sleep(BLOCK);
            });
            waiter.await.unwrap();
            blocker.await.unwrap();
        });
    });
    let name = format!("{}:{waiter_line}", file!());
    let polls: Vec<&Event> = {
        let mut p: Vec<&Event> = events
            .iter()
            .filter(|e| e.name == name.as_str())
            .filter(|e| matches!(e.kind, EventKind::DurationComplete { .. }))
            .collect();
        p.sort_by_key(|e| e.timestamp);
        p
    };
    assert_eq!(polls.len(), 2, "{polls:?}");
    let delay = |e: &Event| {
        e.args
            .iter()
            .find(|a| a.name == "delay")
            .map(|a| match a.value {
                fxt_format::decode::ArgValue::U64(v) => v,
                ref other => panic!("delay {other:?}"),
            })
    };
    assert!(
        polls.iter().all(|p| delay(p).is_some()),
        "every poll has one"
    );
    let woken = delay(polls[1]).unwrap();
    assert!(
        woken >= BLOCK.as_nanos() as u64,
        "delay {woken} ns < the block"
    );
}

/// A task's polls carry Tokio's id of the task (`tokio::task::id()`, as
/// Tokio displays it) with bit 62 set.
#[cfg(tokio_unstable)]
#[test]
fn the_polls_carry_tokios_task_id() {
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(2);
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    let line = line!() + 4;
    let mut ids = Vec::new();
    let events = trace(|| {
        let handles: Vec<_> = (0..5)
            .map(|_| rt.spawn(async { tokio::task::id().to_string() }))
            .collect();
        ids = handles
            .into_iter()
            .map(|h| rt.block_on(h).unwrap())
            .collect();
        // A `JoinHandle` is woken before the worker's after-poll hook
        // runs (see `every_spawned_task_has_its_polls_named_...`): the
        // shutdown joins the workers, so every poll has ended in the
        // session.
        rt.shutdown_timeout(Duration::from_secs(60));
    });
    let expected: std::collections::BTreeSet<u64> = ids
        .iter()
        .map(|id| id.parse::<u64>().unwrap() | 1 << 62)
        .collect();
    let seen: std::collections::BTreeSet<u64> = polls(&events, &format!("{}:{line}", file!()))
        .iter()
        .filter_map(|p| u64_arg(p, "task"))
        .collect();
    assert_eq!(seen, expected);
}

/// `instrument_without_delay`: Tokio does not measure the scheduling
/// delay, so the same woken task's polls are all recorded, named by
/// where it was spawned, and none has a `delay`.
#[cfg(tokio_unstable)]
#[test]
fn without_tokios_delay_the_polls_are_recorded_without_one() {
    let mut builder = Builder::new_current_thread();
    fxt_runtime::task::tokio::instrument_without_delay(&mut builder);
    let rt = builder.build().unwrap();
    let waiter_line = line!() + 5;
    let events = trace(|| {
        rt.block_on(async {
            let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
            let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
            let waiter = tokio::spawn(async move {
                ready_tx.send(()).unwrap();
                go_rx.await.unwrap();
            });
            let waker = tokio::spawn(async move {
                ready_rx.await.unwrap();
                go_tx.send(()).unwrap();
            });
            waiter.await.unwrap();
            waker.await.unwrap();
        });
    });
    let name = format!("{}:{waiter_line}", file!());
    let polls = polls(&events, &name);
    assert_eq!(
        polls.len(),
        2,
        "its first poll and the woken one: {polls:?}"
    );
    assert!(
        polls.iter().all(|p| !has_arg(p, "delay")),
        "no delay without Tokio's measurement: {polls:?}"
    );
}

/// A runtime built before the session, a task spawned before it that
/// terminates inside it, and one spawned inside it: the trace ends only
/// the life it began, and every poll in it is whole.
#[cfg(tokio_unstable)]
#[test]
fn a_task_spawned_before_the_session_ends_no_life_in_it() {
    let mut builder = Builder::new_multi_thread();
    builder.worker_threads(2);
    instrument(&mut builder);
    let rt = builder.build().unwrap();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let early = rt.spawn(async move { go_rx.await.unwrap() });
    let events = trace(|| {
        go_tx.send(()).unwrap();
        rt.block_on(early).unwrap();
        rt.block_on(rt.spawn(async { tokio::task::yield_now().await }))
            .unwrap();
    });
    let mut lives = std::collections::BTreeMap::<u64, (u32, u32)>::new();
    for e in events.iter().filter(|e| e.category == "task") {
        let is_life = e.args.iter().any(|a| a.name == "task");
        match e.kind {
            EventKind::AsyncBegin { id } if is_life => lives.entry(id).or_default().0 += 1,
            EventKind::AsyncEnd { id } if is_life => lives.entry(id).or_default().1 += 1,
            _ => {}
        }
    }
    assert!(!lives.is_empty(), "the task spawned in the session");
    for (id, (begins, ends)) in &lives {
        assert!(ends <= begins, "task {id:#x}: an end without its begin");
    }
    for (id, (begins, ends)) in poll_tracks(&events) {
        assert_eq!(begins, ends, "task {id:#x}: a poll's begin without its end");
    }
}
