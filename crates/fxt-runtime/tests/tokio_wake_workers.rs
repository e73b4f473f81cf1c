//! `task::tokio::wake_layer` in a subscriber that is the default of a
//! runtime's worker threads only, the one dispatcher of this process: the
//! session has `tracing` ask the layer again in that subscriber, not in
//! the default of the thread that starts it (with one dispatcher
//! registered, `tracing` rebuilds its cache for the calling thread's
//! default alone). Its own binary, so that no other test's dispatcher is
//! alive.
#![cfg(tokio_unstable)]

mod common;

use common::events::{polls, trace, u64_arg};

/// The name of the tasks spawned at `line` of this file.
fn at(line: u32) -> String {
    format!("{}:{line}", file!())
}

/// The subscriber is the default of the runtime's threads only (not of
/// the thread that starts the session), and Tokio's callsites were all
/// met before the session: once it starts, the layer's interest is asked
/// again in that subscriber, and the consumer's polls name the producer.
#[test]
fn a_subscriber_of_the_workers_alone_sees_the_wakes_of_the_session() {
    use std::cell::RefCell;
    use tracing_subscriber::layer::SubscriberExt;
    thread_local! {
        static DEFAULT: RefCell<Option<tracing_core::dispatcher::DefaultGuard>> =
            const { RefCell::new(None) };
    }
    let dispatch = tracing_core::Dispatch::new(
        tracing_subscriber::registry().with(fxt_runtime::task::tokio::wake_layer()),
    );
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(1).on_thread_start(move || {
        let guard = tracing_core::dispatcher::set_default(&dispatch);
        DEFAULT.with(|d| *d.borrow_mut() = Some(guard));
    });
    fxt_runtime::task::tokio::instrument(&mut builder);
    let rt = builder.build().unwrap();
    // The lines the consumer and the producer are spawned at.
    let run = || {
        rt.block_on(rt.spawn(async {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
            let consumer_line = line!() + 1;
            let consumer = tokio::spawn(async move { while rx.recv().await.is_some() {} });
            let producer_line = line!() + 1;
            let producer = tokio::spawn(async move {
                for i in 0..20 {
                    tx.send(i).await.unwrap();
                    tokio::task::yield_now().await;
                }
            });
            producer.await.unwrap();
            consumer.await.unwrap();
            (consumer_line, producer_line)
        }))
        .unwrap()
    };
    {
        let _serial = common::serial();
        run();
    }
    let mut lines = (0, 0);
    let events = trace(|| lines = run());
    check(&events, &at(lines.0), &at(lines.1));
}

/// Every woken poll of the consumer names the producer.
fn check(events: &[fxt_format::decode::Event], consumer: &str, producer: &str) {
    let producer_ids: std::collections::BTreeSet<_> = polls(events, producer)
        .iter()
        .filter_map(|p| u64_arg(p, "task"))
        .collect();
    assert_eq!(producer_ids.len(), 1, "{producer_ids:?}");
    let woken: Vec<_> = polls(events, consumer)
        .into_iter()
        .filter(|p| u64_arg(p, "waker_thread").is_some())
        .collect();
    assert!(woken.len() >= 19, "{} woken polls", woken.len());
    for p in &woken {
        assert_eq!(
            u64_arg(p, "woken_by"),
            producer_ids.first().copied(),
            "{p:?}"
        );
    }
}
