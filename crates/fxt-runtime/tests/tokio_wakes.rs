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

use common::events::{end_of, polls, trace, u64_arg};

use fxt_format::decode::{Event, EventKind, Thread};

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

#[test]
fn a_consumers_polls_name_its_producer_and_the_trace_has_their_arrows() {
    fxt_runtime::task::tokio::install_wake_layer().expect("the only subscriber");
    for multi in [false, true] {
        let mut builder = match multi {
            true => tokio::runtime::Builder::new_multi_thread(),
            false => tokio::runtime::Builder::new_current_thread(),
        };
        fxt_runtime::task::tokio::instrument(builder.worker_threads(2));
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
        });
        drop(rt);
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
    // The consumer waits for each of the 20 values but the first it may
    // find already sent, and for the channel's end.
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
