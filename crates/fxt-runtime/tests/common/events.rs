//! The events of a session, as the task tests read them: a session on the
//! monotonic clock around a closure (as delivered to a viewer, with the
//! records readers derive, or raw), arguments by name, the poll slices of
//! a task name.

use fxt_format::decode::{ArgValue, Event, EventKind, Record};
use fxt_runtime::{ClockSource, Config};

/// The events of a session (on the monotonic clock, one session at a time
/// in this binary) that ran `f`, as delivered to a viewer: with the
/// records `fxt_symbols::derived` appends (the tasks' tracks and arrows).
pub fn trace(f: impl FnOnce()) -> Vec<Event> {
    let mut bytes = raw_bytes(f);
    let derived = fxt_symbols::derived::records(&bytes);
    bytes.extend(derived.iter().flat_map(|w| w.to_le_bytes()));
    events_of(&bytes)
}

/// The events of a session that ran `f`, as the runtime wrote them.
pub fn raw(f: impl FnOnce()) -> Vec<Event> {
    events_of(&raw_bytes(f))
}

fn raw_bytes(f: impl FnOnce()) -> Vec<u8> {
    let _serial = super::serial();
    let config = Config::new().clock(ClockSource::Monotonic);
    let session = fxt_runtime::start(config).expect("no other session");
    f();
    let (bytes, _) = session.finish_to_vec().expect("collected");
    bytes
}

/// The events among the records of `bytes`.
pub fn events_of(bytes: &[u8]) -> Vec<Event> {
    super::decode(bytes)
        .into_iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// The value of the argument `name` of `e`.
pub fn arg(e: &Event, name: &str) -> Option<ArgValue> {
    e.args
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.value.clone())
}

/// The unsigned value of the argument `name` of `e`.
pub fn u64_arg(e: &Event, name: &str) -> Option<u64> {
    match arg(e, name)? {
        ArgValue::U64(v) => Some(v),
        _ => None,
    }
}

/// Whether `e` has an argument `name`.
pub fn has_arg(e: &Event, name: &str) -> bool {
    e.args.iter().any(|a| a.name == name)
}

/// The poll slices of the tasks named `name` (duration complete records
/// of category `task` on threads), by start.
pub fn polls<'a>(events: &'a [Event], name: &str) -> Vec<&'a Event> {
    let mut out: Vec<&Event> = events
        .iter()
        .filter(|e| e.category == "task" && e.name == name)
        .filter(|e| matches!(e.kind, EventKind::DurationComplete { .. }))
        .collect();
    out.sort_by_key(|e| e.timestamp);
    out
}

/// The end of a slice (a duration complete event).
pub fn end_of(e: &Event) -> u64 {
    match e.kind {
        EventKind::DurationComplete { end } => end,
        _ => panic!("not a slice: {e:?}"),
    }
}
