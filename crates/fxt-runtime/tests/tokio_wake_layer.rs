//! `task::tokio::wake_layer` beside other layers (its own per-layer
//! filter), as the subscriber of the one thread of a current-thread
//! runtime. Its own binary: tests/tokio_wakes.rs has `wake_subscriber`
//! as its global subscriber.
#![cfg(tokio_unstable)]

mod common;

use common::events::{polls, trace, u64_arg};

/// The name of the tasks spawned at `line` of this file.
fn at(line: u32) -> String {
    format!("{}:{line}", file!())
}

/// The same through `wake_layer()` on a registry (as beside other layers:
/// its own per-layer filter), the subscriber of the one thread of a
/// current-thread runtime.
#[test]
fn wake_layer_beside_other_layers_names_the_producer_too() {
    use tracing_subscriber::layer::SubscriberExt;
    let dispatch = tracing_core::Dispatch::new(
        tracing_subscriber::registry().with(fxt_runtime::task::tokio::wake_layer()),
    );
    let mut builder = tokio::runtime::Builder::new_current_thread();
    fxt_runtime::task::tokio::instrument(&mut builder);
    let rt = builder.build().unwrap();
    let (mut consumer_line, mut producer_line) = (0, 0);
    let events = trace(|| {
        tracing_core::dispatcher::with_default(&dispatch, || {
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
    });
    check(&events, &at(consumer_line), &at(producer_line), false);
}

/// The consumer's woken polls name the producer, and each has its arrow.
fn check(events: &[fxt_format::decode::Event], consumer: &str, producer: &str, _: bool) {
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
    let arrows = events
        .iter()
        .filter(|e| e.name == consumer)
        .filter(|e| matches!(e.kind, fxt_format::decode::EventKind::FlowEnd { .. }))
        .count();
    assert_eq!(arrows, woken.len());
}

/// The name of the span the current task's poll is in (Tokio enters the
/// task's span around each poll), if Tokio made one.
async fn task_span() -> Option<&'static str> {
    tracing_core::dispatcher::get_default(|d| d.current_span().metadata().map(|m| m.name()))
}

/// Beside a program's logging layer (its own filter at `INFO`), the wake
/// layer's filter turns Tokio's task spans down while the session is off,
/// so Tokio makes none (and the task's wakers report nothing); while the
/// session records, each task has its span.
#[test]
fn with_the_session_off_tokio_makes_no_task_span() {
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    struct Logging;
    impl<S: tracing_core::Subscriber> Layer<S> for Logging {}
    let dispatch = tracing_core::Dispatch::new(
        tracing_subscriber::registry()
            .with(Logging.with_filter(LevelFilter::INFO))
            .with(fxt_runtime::task::tokio::wake_layer()),
    );
    let mut builder = tokio::runtime::Builder::new_current_thread();
    fxt_runtime::task::tokio::instrument(&mut builder);
    let rt = builder.build().unwrap();
    let spawned = || {
        tracing_core::dispatcher::with_default(&dispatch, || {
            rt.block_on(async { tokio::spawn(task_span()).await.unwrap() })
        })
    };
    // No session of another test in this binary either.
    let off = || {
        let _serial = common::serial();
        spawned()
    };
    assert_eq!(off(), None, "a task span with the session off");
    let mut recording = None;
    trace(|| recording = spawned());
    assert_eq!(
        recording,
        Some("runtime.spawn"),
        "no task span while recording"
    );
    assert_eq!(off(), None, "a task span after the session");
}
