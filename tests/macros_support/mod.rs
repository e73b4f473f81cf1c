//! Helpers shared by the `tests/macros_*.rs` integration tests: trace a
//! closure into memory and look at the decoded records.
#![allow(dead_code, unused_imports)] // each test binary uses a different part

use std::sync::{Mutex, MutexGuard};

pub use fxt::format::decode::{ArgValue, Event, EventKind, Record, Thread};

/// Sessions are process-global: the tests of one binary take turns.
static SESSION_LOCK: Mutex<()> = Mutex::new(());

/// Takes the session lock (even if another test panicked with it).
pub fn lock() -> MutexGuard<'static, ()> {
    SESSION_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` inside a session recording every category and returns the
/// decoded records.
pub fn trace(f: impl FnOnce()) -> Vec<Record> {
    trace_with(fxt::Config::new().buffer_size(4 << 20), f)
}

/// Runs `f` inside a session with `config` and returns the decoded records.
pub fn trace_with(config: fxt::Config, f: impl FnOnce()) -> Vec<Record> {
    let _turn = lock();
    let session = fxt::start(config).expect("session starts");
    f();
    let (bytes, stats) = session.finish_to_vec().expect("session collects");
    assert_eq!(stats.records_dropped, 0, "nothing dropped");
    fxt::format::decode::decode_all(&bytes).expect("the trace decodes")
}

/// The event records, in file order.
pub fn events(records: &[Record]) -> Vec<&Event> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// The events with this name.
pub fn named<'r>(records: &'r [Record], name: &str) -> Vec<&'r Event> {
    events(records)
        .into_iter()
        .filter(|e| e.name == name)
        .collect()
}

/// The only event with this name.
pub fn one<'r>(records: &'r [Record], name: &str) -> &'r Event {
    let found = named(records, name);
    assert_eq!(
        found.len(),
        1,
        "exactly one event named {name:?}: {found:#?}"
    );
    found[0]
}

/// `(key, value)` pairs of an event, for comparing with a literal list.
pub fn args(event: &Event) -> Vec<(String, ArgValue)> {
    event
        .args
        .iter()
        .map(|a| (a.name.to_string(), a.value.clone()))
        .collect()
}

/// The end timestamp of a duration complete event.
pub fn end(event: &Event) -> u64 {
    match event.kind {
        EventKind::DurationComplete { end } => end,
        other => panic!("not a duration complete event: {other:?}"),
    }
}

/// A string argument value.
pub fn s(text: &str) -> ArgValue {
    ArgValue::Str(text.into())
}
