//! The `tracing` layer: spans become duration begin/end pairs, events
//! become instants, fields become typed arguments.
#![cfg(feature = "tracing")]

use std::sync::Mutex;

use fxt::tracing_layer::FxtLayer;
use fxt_format::decode::{decode_all, ArgValue, Event, EventKind, Record};
use tracing::instrument;
use tracing_subscriber::layer::SubscriberExt;

/// One fxt session at a time in this process.
static SESSION: Mutex<()> = Mutex::new(());

/// Runs `f` under a subscriber with the fxt layer, in a session; returns
/// the decoded events.
fn trace(f: impl FnOnce()) -> Vec<Event> {
    let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    let session = fxt::start(fxt::Config::new()).expect("session starts");
    let subscriber = tracing_subscriber::registry().with(FxtLayer::new());
    tracing::subscriber::with_default(subscriber, f);
    let (bytes, _) = session.finish_to_vec().expect("collected");
    decode_all(&bytes)
        .expect("decodes")
        .into_iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn args(e: &Event) -> Vec<(String, ArgValue)> {
    e.args
        .iter()
        .map(|a| (a.name.to_string(), a.value.clone()))
        .collect()
}

fn s(text: &str) -> ArgValue {
    ArgValue::Str(text.into())
}

fn summary(events: &[Event]) -> Vec<(&'static str, String)> {
    events
        .iter()
        .map(|e| {
            let kind = match e.kind {
                EventKind::DurationBegin => "B",
                EventKind::DurationEnd => "E",
                EventKind::Instant => "i",
                _ => "?",
            };
            (kind, e.name.to_string())
        })
        .collect()
}

#[instrument]
fn outer(n: u64, label: &str) -> u64 {
    tracing::info!(n, "working");
    inner(n) + 1
}

#[instrument]
fn inner(n: u64) -> u64 {
    n * 2
}

#[test]
fn instrument_spans_nest_as_durations_with_typed_args() {
    let events = trace(|| assert_eq!(outer(3, "abc"), 7));
    assert_eq!(
        summary(&events),
        [
            ("B", "outer".to_string()),
            ("i", "working".to_string()),
            ("B", "inner".to_string()),
            ("E", "inner".to_string()),
            ("E", "outer".to_string()),
        ]
    );
    for e in &events {
        assert_eq!(e.category, "tracing_layer", "category is the target");
        assert_eq!(e.thread, events[0].thread, "all on the calling thread");
    }
    assert_eq!(
        args(&events[0]),
        [
            ("n".to_string(), ArgValue::U64(3)),
            ("label".to_string(), s("abc"))
        ]
    );
    assert_eq!(args(&events[1]), [("n".to_string(), ArgValue::U64(3))]);
    assert_eq!(args(&events[2]), [("n".to_string(), ArgValue::U64(3))]);
    assert!(events[3].args.is_empty());
    assert!(events.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
}

#[derive(Debug)]
#[allow(dead_code)]
struct Point {
    x: i32,
}

#[test]
fn event_fields_are_typed() {
    let events = trace(|| {
        tracing::warn!(
            target: "net",
            signed = -5i64,
            unsigned = 6u64,
            ratio = 0.5,
            ok = true,
            text = "hi",
            point = ?Point { x: 1 },
            shown = %"display",
            "packet"
        );
    });
    assert_eq!(events.len(), 1);
    let e = &events[0];
    assert_eq!(e.kind, EventKind::Instant);
    assert_eq!(e.category, "net");
    assert_eq!(e.name, "packet");
    assert_eq!(
        args(e),
        [
            ("signed".to_string(), ArgValue::I64(-5)),
            ("unsigned".to_string(), ArgValue::U64(6)),
            ("ratio".to_string(), ArgValue::F64(0.5)),
            ("ok".to_string(), ArgValue::Bool(true)),
            ("text".to_string(), s("hi")),
            ("point".to_string(), s("Point { x: 1 }")),
            ("shown".to_string(), s("display")),
        ]
    );
}

#[test]
fn varying_messages_fall_back_to_the_metadata_name() {
    let line = line!() + 3;
    let events = trace(|| {
        for i in 0..3 {
            tracing::info!(i, "step {i}");
        }
    });
    assert_eq!(events.len(), 3);
    // The first message names the first event; once the message varies, the
    // call site's name is used and the message becomes an argument.
    assert_eq!(events[0].name, "step 0");
    let site_name = format!("event tests/tracing_layer.rs:{line}");
    for (i, e) in events.iter().enumerate().skip(1) {
        assert_eq!(e.name, site_name.as_str());
        assert_eq!(
            args(e),
            [
                ("i".to_string(), ArgValue::I64(i as i64)),
                ("message".to_string(), s(&format!("step {i}"))),
            ]
        );
    }
}

#[test]
fn recorded_fields_and_reentry() {
    let events = trace(|| {
        let span = tracing::info_span!("late", x = tracing::field::Empty, y = 1);
        span.in_scope(|| {});
        span.record("x", 7);
        span.in_scope(|| {});
    });
    assert_eq!(
        summary(&events),
        [
            ("B", "late".to_string()),
            ("E", "late".to_string()),
            ("B", "late".to_string()),
            ("E", "late".to_string()),
        ],
        "one slice per entry"
    );
    assert_eq!(
        args(&events[0]),
        [
            ("x".to_string(), ArgValue::Null),
            ("y".to_string(), ArgValue::I64(1))
        ]
    );
    assert_eq!(
        args(&events[2]),
        [
            ("x".to_string(), ArgValue::I64(7)),
            ("y".to_string(), ArgValue::I64(1))
        ]
    );
}

#[test]
fn nothing_is_recorded_without_a_session() {
    let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    let subscriber = tracing_subscriber::registry().with(FxtLayer::new());
    tracing::subscriber::with_default(subscriber, || {
        assert_eq!(outer(1, "x"), 3);
        tracing::info!("no session");
    });
    // A session started afterwards holds none of it.
    drop(_one);
    let events = trace(|| {});
    assert!(events.is_empty(), "{events:?}");
}

#[test]
fn a_constant_message_names_every_event_of_its_call_site() {
    let events = trace(|| {
        for i in 0..5u64 {
            tracing::info!(i, "tick");
        }
    });
    assert_eq!(events.len(), 5);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.name, "tick", "the message names the event");
        assert_eq!(args(e), [("i".to_string(), ArgValue::U64(i as u64))]);
    }
}

#[test]
fn a_message_that_is_a_prefix_or_an_extension_of_the_first_one_varies() {
    let line = line!() + 3;
    let events = trace(|| {
        for text in ["abc", "ab", "abcd", "abc", "xbc"] {
            tracing::info!("{}", text);
        }
    });
    let site_name = format!("event tests/tracing_layer.rs:{line}");
    assert_eq!(events.len(), 5);
    assert_eq!(events[0].name, "abc");
    assert!(events[0].args.is_empty());
    for (e, text) in events[1..].iter().zip(["ab", "abcd", "abc", "xbc"]) {
        assert_eq!(e.name, site_name.as_str());
        assert_eq!(args(e), [("message".to_string(), s(text))]);
    }
}

#[test]
fn spans_without_fields_nest_and_exit_out_of_order() {
    let events = trace(|| {
        let a = tracing::info_span!("a");
        let b = tracing::info_span!("b");
        let ea = a.enter();
        let eb = b.enter();
        // Exit the outer span first: its end is written at once.
        drop(ea);
        drop(eb);
        let _again = a.enter();
    });
    assert_eq!(
        summary(&events),
        [
            ("B", "a".to_string()),
            ("B", "b".to_string()),
            ("E", "a".to_string()),
            ("E", "b".to_string()),
            ("B", "a".to_string()),
            ("E", "a".to_string()),
        ]
    );
    assert!(events.iter().all(|e| e.args.is_empty()));
}

#[test]
fn a_span_created_before_the_session_keeps_fields_recorded_during_it() {
    let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    let subscriber = tracing_subscriber::registry().with(FxtLayer::new());
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("early", x = tracing::field::Empty, y = 2u64);
        // Entered with no session: no begin, and so no end either.
        let entered = span.enter();
        let session = fxt::start(fxt::Config::new()).expect("session starts");
        drop(entered);
        span.record("x", 5u64);
        span.in_scope(|| {});
        let (bytes, _) = session.finish_to_vec().expect("collected");
        let events: Vec<Event> = decode_all(&bytes)
            .expect("decodes")
            .into_iter()
            .filter_map(|r| match r {
                Record::Event(e) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(
            summary(&events),
            [("B", "early".to_string()), ("E", "early".to_string())]
        );
        // `y` was given at creation, when no session ran: not recorded.
        assert_eq!(args(&events[0]), [("x".to_string(), ArgValue::U64(5))]);
    });
}

#[test]
fn events_on_threads_are_counted_and_named() {
    let events = trace(|| {
        let dispatch = tracing::dispatcher::get_default(|d| d.clone());
        std::thread::scope(|scope| {
            for t in 0..2u64 {
                let dispatch = dispatch.clone();
                scope.spawn(move || {
                    tracing::dispatcher::with_default(&dispatch, || {
                        for i in 0..1000u64 {
                            let _span = tracing::info_span!("work", t).entered();
                            tracing::info!(i, "step");
                        }
                    })
                });
            }
        });
    });
    assert_eq!(events.len(), 2 * 1000 * 3);
    let steps = events.iter().filter(|e| e.name == "step").count();
    assert_eq!(steps, 2000);
    let begins = events
        .iter()
        .filter(|e| e.kind == EventKind::DurationBegin && e.name == "work")
        .count();
    assert_eq!(begins, 2000);
}
