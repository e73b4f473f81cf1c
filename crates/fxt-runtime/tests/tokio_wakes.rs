//! `task::tokio::wake_layer`: who woke the tasks of Tokio's hooks. Built
//! with `RUSTFLAGS="--cfg tokio_unstable"` (`.ci/run`), a consumer and a
//! producer spawned with plain `tokio::spawn` on an instrumented runtime:
//! the consumer's polls name the producer and its thread, and the
//! delivered trace has an arrow for each.
//!
//! Only properties of the trace are checked (see tests/tasks.rs). The
//! layer is the binary's global subscriber: this file has it alone.
//! Without `tokio_unstable` Tokio reports no wakes: the file is empty.
#![cfg(tokio_unstable)]

mod common;

use common::events::{arg, end_of, polls, trace, u64_arg};

use std::time::Duration;

use fxt_format::decode::{ArgValue, Event, EventKind, Thread};

/// The name of the tasks spawned at `line` of this file (their spawn
/// location).
fn at(line: u32) -> String {
    format!("{}:{line}", file!())
}

/// The `task` ids of the polls named `name` (one task each here).
fn task_of(events: &[Event], name: &str) -> u64 {
    let ids: std::collections::BTreeSet<_> = polls(events, name)
        .iter()
        .map(|p| u64_arg(p, "task").expect("a poll names its task"))
        .collect();
    assert_eq!(ids.len(), 1, "{name}: one task {ids:?}");
    ids.into_iter().next().unwrap()
}

/// Installs the layer as the binary's subscriber (once for its tests).
fn layer() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| fxt_runtime::task::tokio::install_wake_layer().expect("the only subscriber"));
}

#[test]
fn a_consumers_polls_name_its_producer_and_the_trace_has_their_arrows() {
    layer();
    for multi in [false, true] {
        let mut builder = match multi {
            true => tokio::runtime::Builder::new_multi_thread(),
            false => tokio::runtime::Builder::new_current_thread(),
        };
        // One worker (the multi-thread runtime's own, not the thread that
        // blocks on it): the two tasks take turns, so the consumer waits
        // for every value however loaded the machine.
        fxt_runtime::task::tokio::instrument(builder.worker_threads(1));
        let rt = builder.build().unwrap();
        let (mut consumer_line, mut producer_line) = (0, 0);
        let events = trace(|| {
            rt.block_on(async {
                let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
                consumer_line = line!() + 1;
                let consumer = tokio::spawn(async move { while rx.recv().await.is_some() {} });
                producer_line = line!() + 1;
                let producer = tokio::spawn(async move {
                    for i in 0..20 {
                        tx.send(i).await.unwrap();
                        tokio::task::yield_now().await;
                    }
                });
                producer.await.unwrap();
                consumer.await.unwrap();
            });
            // Dropping the runtime waits for its workers: the last
            // polls' records (written after the task ended) are in.
            drop(rt);
        });
        check(&events, &at(consumer_line), &at(producer_line), multi);
    }
}

/// Every poll of the consumer a wake caused was the producer's wake, made
/// inside one of the producer's polls on that poll's thread; each has one
/// arrow from there.
fn check(events: &[Event], consumer: &str, producer: &str, multi: bool) {
    let (consumer_id, producer_id) = (task_of(events, consumer), task_of(events, producer));
    let producer_polls = polls(events, producer);
    let woken: Vec<_> = polls(events, consumer)
        .into_iter()
        .filter(|p| u64_arg(p, "waker_thread").is_some())
        .collect();
    // Taking turns (a channel of one value, the producer yielding after
    // each), the consumer waits for each of the 20 values but the first
    // (it may find it already sent) and for the channel's end.
    assert!(
        woken.len() >= 19,
        "multi {multi}: {} woken polls",
        woken.len()
    );
    for p in &woken {
        assert_eq!(
            u64_arg(p, "woken_by"),
            Some(producer_id),
            "multi {multi}: {p:?}"
        );
        let thread = u64_arg(p, "waker_thread").unwrap();
        let wake = p.timestamp - u64_arg(p, "delay").expect("a woken poll has its delay");
        assert!(
            producer_polls.iter().any(
                |q| matches!(q.thread, Thread::Known { thread: t, .. } if t == thread)
                    && q.timestamp <= wake
                    && wake <= end_of(q)
            ),
            "multi {multi}: the wake of {p:?} is inside none of the producer's polls on its thread"
        );
    }
    // The derived arrows of the consumer's wakes: one flow begin on the
    // waker's thread and one end per woken poll.
    let flows = |kind: fn(&EventKind) -> bool| {
        events
            .iter()
            .filter(|e| e.category == "task" && kind(&e.kind))
            .filter(|e| e.name == consumer)
            .count()
    };
    let begins = flows(|k| matches!(k, EventKind::FlowBegin { .. }));
    let ends = flows(|k| matches!(k, EventKind::FlowEnd { .. }));
    assert_eq!(
        (begins, ends),
        (woken.len(), woken.len()),
        "multi {multi}: arrows"
    );
    assert_ne!(consumer_id, producer_id);
}

/// The woken polls (those with a `waker_thread`) of `name`: `(woken_by,
/// woken_by_driver, waker_thread)` of each.
fn wakers(events: &[Event], name: &str) -> Vec<(Option<u64>, bool, u64)> {
    polls(events, name)
        .into_iter()
        .filter_map(|p| {
            let driver = arg(p, "woken_by_driver");
            assert!(matches!(driver, None | Some(ArgValue::Bool(true))), "{p:?}");
            Some((
                u64_arg(p, "woken_by"),
                driver.is_some(),
                u64_arg(p, "waker_thread")?,
            ))
        })
        .collect()
}

#[test]
fn a_timers_wake_is_the_drivers_and_a_plain_threads_names_no_task() {
    layer();
    for multi in [false, true] {
        let mut builder = match multi {
            true => tokio::runtime::Builder::new_multi_thread(),
            false => tokio::runtime::Builder::new_current_thread(),
        };
        fxt_runtime::task::tokio::instrument(builder.enable_all());
        let rt = builder.build().unwrap();
        let (mut sleeper_line, mut waiter_line) = (0, 0);
        let events = trace(|| {
            rt.block_on(async {
                sleeper_line = line!() + 1;
                let sleeper = tokio::spawn(tokio::time::sleep(Duration::from_millis(20)));
                sleeper.await.unwrap();
                // The waiter leaves its waker for the plain thread, which
                // wakes it once it has it (whenever the waiter's poll ends).
                let slot = std::sync::Arc::new(std::sync::Mutex::new((None, false)));
                let theirs = slot.clone();
                waiter_line = line!() + 1;
                let waiter = tokio::spawn(std::future::poll_fn(move |cx| {
                    let mut slot = theirs.lock().unwrap();
                    if slot.1 {
                        return std::task::Poll::Ready(());
                    }
                    slot.0 = Some(cx.waker().clone());
                    std::task::Poll::Pending
                }));
                let plain = std::thread::spawn(move || loop {
                    let waker = {
                        let mut slot = slot.lock().unwrap();
                        slot.1 = slot.0.is_some();
                        slot.0.take()
                    };
                    match waker {
                        Some(waker) => break waker.wake(),
                        None => std::thread::sleep(Duration::from_millis(1)),
                    }
                });
                waiter.await.unwrap();
                plain.join().unwrap();
            });
            // Dropping the runtime waits for its workers: the last
            // polls' records (written after the task ended) are in.
            drop(rt);
        });
        let (sleeper, waiter) = (at(sleeper_line), at(waiter_line));
        // The poll after the timer fired, woken in a parked worker.
        let woke = wakers(&events, &sleeper);
        assert!(
            matches!(woke[..], [(None, true, _)]),
            "multi {multi}: {woke:?}"
        );
        // The poll after the plain thread's wake: woken on a thread that
        // polled no task, by no task.
        let woke = wakers(&events, &waiter);
        assert!(
            matches!(woke[..], [(None, false, _)]),
            "multi {multi}: {woke:?} {:#?}",
            polls(&events, &waiter)
        );
        let pollers: Vec<_> = [&sleeper, &waiter]
            .iter()
            .flat_map(|name| polls(&events, name))
            .map(|p| p.thread)
            .collect();
        assert!(
            !pollers
                .iter()
                .any(|t| matches!(t, Thread::Known { thread, .. } if *thread == woke[0].2)),
            "multi {multi}: the plain thread {woke:?} polled {pollers:?}"
        );
    }
}

/// `install_wake_layer`'s subscriber makes no span for a task spawned
/// while the session is off: that task's wakes are never seen (its polls
/// keep Tokio's delay), while a task spawned in the session has its.
#[test]
fn a_task_spawned_with_the_session_off_has_no_wakers_reports() {
    layer();
    let mut builder = tokio::runtime::Builder::new_current_thread();
    fxt_runtime::task::tokio::instrument(&mut builder);
    let rt = builder.build().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
    let (back, mut from_consumer) = tokio::sync::mpsc::channel::<u32>(1);
    // Spawned before the session, polled only in it (by `block_on`);
    // while no other test's session records (they hold this lock).
    let serial = common::serial();
    let consumer_line = line!() + 1;
    let consumer = rt.spawn(async move {
        while let Some(v) = rx.recv().await {
            back.send(v).await.unwrap();
        }
    });
    drop(serial);
    let mut producer_line = 0;
    let events = trace(|| {
        rt.block_on(async {
            producer_line = line!() + 1;
            let producer = tokio::spawn(async move {
                for i in 0..20 {
                    tx.send(i).await.unwrap();
                    assert_eq!(from_consumer.recv().await, Some(i));
                }
            });
            producer.await.unwrap();
            consumer.await.unwrap();
        });
        drop(rt);
    });
    let consumer = polls(&events, &at(consumer_line));
    assert!(consumer.len() >= 20, "{} polls", consumer.len());
    assert!(
        consumer
            .iter()
            .all(|p| u64_arg(p, "waker_thread").is_none()),
        "the consumer's wakes were seen: {consumer:?}"
    );
    // The producer, spawned in the session, waits for each answer, and
    // the consumer wakes it.
    let by = task_of(&events, &at(consumer_line));
    let woken = wakers(&events, &at(producer_line));
    assert!(woken.len() >= 19, "{woken:?}");
    assert!(woken.iter().all(|w| w.0 == Some(by)), "{woken:?}");
}
