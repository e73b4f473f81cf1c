//! `fxt_symbols::derived::records` on tasks' compact polls built here:
//! each poll becomes an async slice of the task's id on its track, from
//! the poll's start to its end on the poll's thread; a poll that names
//! its waker's thread gets a flow from that thread, `delay` before the
//! poll, to halfway through the poll. Once appended, nothing more is
//! derived; a trace whose runtime drew the tracks itself gets nothing.

use fxt_format::decode::{decode_all, ArgValue, Event, EventKind, Record, Thread};
use fxt_format::encode::{
    encode_into_vec, words_to_bytes, Arg, ArgValue as V, Event as E, EventKind as K,
    Initialization, StringRef, ThreadRef,
};
use fxt_symbols::derived::records;

const PID: u64 = 1;
const WAKER: u64 = 10;
const WORKER: u64 = 20;
const TASK: u64 = 7;

fn init(out: &mut Vec<u64>, ticks_per_second: u64) {
    encode_into_vec(&Initialization { ticks_per_second }, out).unwrap();
}

/// A slice of `category` named "consumer" on [`WORKER`] of [`PID`] from
/// `start` to `end` with u64 arguments `args`.
fn slice(out: &mut Vec<u64>, category: &str, span: (u64, u64), args: &[(&str, u64)]) {
    slice_in(out, PID, category, span, args);
}

/// [`slice`] in `process`.
fn slice_in(
    out: &mut Vec<u64>,
    process: u64,
    category: &str,
    (start, end): (u64, u64),
    args: &[(&str, u64)],
) {
    let k = StringRef::Inline;
    let args: Vec<Arg> = args
        .iter()
        .map(|&(n, v)| Arg::new(k(n), V::U64(v)))
        .collect();
    let e = E {
        kind: K::DurationComplete { end },
        timestamp: start,
        thread: ThreadRef::Inline {
            process,
            thread: WORKER,
        },
        category: k(category),
        name: k("consumer"),
        args: &args,
    };
    encode_into_vec(&e, out).unwrap();
}

/// A compact poll of task [`TASK`] on [`WORKER`].
fn poll(out: &mut Vec<u64>, span: (u64, u64), args: &[(&str, u64)]) {
    let mut all = vec![("task", TASK)];
    all.extend_from_slice(args);
    slice(out, "task", span, &all);
}

/// What `records` appends to `trace`, decoded.
fn derived(trace: &[u64]) -> Vec<Record> {
    let words = records(&words_to_bytes(trace));
    decode_all(&words_to_bytes(&words)).unwrap()
}

/// An event as (kind, timestamp, thread), after checking what every
/// derived task event has: the task's category, the poll's process, and
/// the task's name and no arguments, or for a wake's slice the name
/// `wake` and the woken task's id.
fn shape(e: &Event) -> (EventKind, u64, u64) {
    assert_eq!(e.category, "task");
    if matches!(e.kind, EventKind::DurationComplete { .. }) {
        assert_eq!(e.name, "wake");
        assert!(
            matches!(&e.args[..], [a] if a.name == "woke" && a.value == ArgValue::U64(TASK)),
            "{e:?}"
        );
    } else {
        assert_eq!(e.name, "consumer");
        assert!(e.args.is_empty(), "{e:?}");
    }
    let Thread::Known { process, thread } = e.thread else {
        panic!("{e:?}")
    };
    assert_eq!(process, PID);
    (e.kind, e.timestamp, thread)
}

fn events(records: &[Record]) -> Vec<(EventKind, u64, u64)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(shape(e)),
            _ => None,
        })
        .collect()
}

fn markers(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Blob(b) if b.name == "fxt.derived" && b.payload.is_empty()))
        .count()
}

/// The ids of the flow begins and ends among `evs`, in order.
fn flow_ids(evs: &[(EventKind, u64, u64)]) -> Vec<u64> {
    evs.iter()
        .filter_map(|(k, _, _)| match *k {
            EventKind::FlowBegin { id } | EventKind::FlowEnd { id } => Some(id),
            _ => None,
        })
        .collect()
}

#[test]
fn each_poll_is_drawn_on_its_tasks_track_and_a_recorded_wake_as_an_arrow() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    // The first poll: no wake caused it.
    poll(&mut t, (1000, 1101), &[]);
    // Woken by task 5 on thread WAKER 300 ns before it started.
    poll(
        &mut t,
        (2000, 2100),
        &[("delay", 300), ("waker_thread", WAKER), ("woken_by", 5)],
    );
    // A poll seen through Tokio's hooks: a delay, but no wake recorded.
    poll(&mut t, (3000, 3010), &[("delay", 40)]);
    let out = derived(&t);
    assert_eq!(markers(&out), 1);
    let evs = events(&out);
    let ids = flow_ids(&evs);
    assert_eq!(ids.len(), 2, "one arrow: {evs:?}");
    let flow = ids[0];
    assert_eq!(
        evs,
        vec![
            (EventKind::AsyncBegin { id: TASK }, 1000, WORKER),
            (EventKind::AsyncEnd { id: TASK }, 1101, WORKER),
            (EventKind::AsyncBegin { id: TASK }, 2000, WORKER),
            // A slice of no length on the waker's thread for the flow to
            // begin in, whatever slice is open there (or none).
            (EventKind::DurationComplete { end: 1700 }, 1700, WAKER),
            (EventKind::FlowBegin { id: flow }, 1700, WAKER),
            (EventKind::FlowEnd { id: flow }, 2050, WORKER),
            (EventKind::AsyncEnd { id: TASK }, 2100, WORKER),
            (EventKind::AsyncBegin { id: TASK }, 3000, WORKER),
            (EventKind::AsyncEnd { id: TASK }, 3010, WORKER),
        ]
    );
}

#[test]
fn the_delay_is_turned_into_the_traces_ticks() {
    let mut t = Vec::new();
    init(&mut t, 3_000_000_000);
    poll(
        &mut t,
        (9000, 9600),
        &[("delay", 1000), ("waker_thread", WAKER)],
    );
    let evs = events(&derived(&t));
    let begin = evs
        .iter()
        .find(|(k, _, _)| matches!(k, EventKind::FlowBegin { .. }))
        .unwrap();
    // 1000 ns at 3 GHz: 3000 ticks before the poll.
    assert_eq!((begin.1, begin.2), (6000, WAKER));
}

#[test]
fn slices_that_are_not_polls_draw_nothing() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    // Another category with a `task` argument; a task slice without one
    // (a worker's `parked`).
    slice(&mut t, "app", (100, 200), &[("task", TASK)]);
    slice(&mut t, "task", (300, 400), &[]);
    assert!(records(&words_to_bytes(&t)).is_empty());
}

#[test]
fn a_delivered_trace_derives_nothing_more_and_its_arrows_are_not_the_locks() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    poll(
        &mut t,
        (2000, 2100),
        &[("delay", 300), ("waker_thread", WAKER)],
    );
    // A lock's wait handed over by WAKER: an arrow of its own.
    let k = StringRef::Inline;
    let lock_args = [
        Arg::new(k("state"), V::Str(k("wait"))),
        Arg::new(k("holder"), V::U64(WAKER)),
        Arg::new(k("handoff_ns"), V::U64(10)),
    ];
    let wait = E {
        kind: K::DurationComplete { end: 2301 },
        timestamp: 2200,
        thread: ThreadRef::Inline {
            process: PID,
            thread: WORKER,
        },
        category: k("lock"),
        name: k("L"),
        args: &lock_args,
    };
    encode_into_vec(&wait, &mut t).unwrap();
    let out = derived(&t);
    assert_eq!(markers(&out), 1);
    let mut flows: Vec<(bool, u64)> = out
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => match e.kind {
                EventKind::FlowBegin { id } | EventKind::FlowEnd { id } => {
                    Some((e.category == "task", id))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    flows.sort_unstable();
    flows.dedup();
    assert_eq!(flows.len(), 2, "one id per arrow, each its own: {flows:?}");
    assert_ne!(flows[0].1, flows[1].1);

    let bytes = words_to_bytes(&t);
    let mut whole = bytes.clone();
    whole.extend(words_to_bytes(&records(&bytes)));
    assert!(records(&whole).is_empty());
}

#[test]
fn a_trace_whose_runtime_drew_the_tracks_gets_none_again() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    // The older runtime's poll: its async begin and end around the slice.
    let track = |kind, timestamp| E {
        kind,
        timestamp,
        thread: ThreadRef::Inline {
            process: PID,
            thread: WORKER,
        },
        category: StringRef::Inline("task"),
        name: StringRef::Inline("consumer"),
        args: &[],
    };
    encode_into_vec(&track(K::AsyncBegin { id: TASK }, 1000), &mut t).unwrap();
    poll(&mut t, (1000, 1100), &[]);
    encode_into_vec(&track(K::AsyncEnd { id: TASK }, 1100), &mut t).unwrap();
    assert!(records(&words_to_bytes(&t)).is_empty());
}

#[test]
fn the_arrows_two_processes_derive_alone_have_different_ids() {
    // Two programs built with feature `symbolize` derive their own traces;
    // an archive of the two keeps both sets without deriving again, so an
    // id in both would join one process's wake to the other's poll.
    let trace = |process| {
        let mut t = Vec::new();
        init(&mut t, 1_000_000_000);
        let woken = [("delay", 300), ("waker_thread", WAKER), ("task", TASK)];
        slice_in(&mut t, process, "task", (2000, 2100), &woken);
        slice_in(&mut t, process, "task", (4000, 4100), &woken);
        t
    };
    let ids = |process| -> Vec<u64> {
        derived(&trace(process))
            .iter()
            .filter_map(|r| match r {
                Record::Event(e) => match e.kind {
                    EventKind::FlowBegin { id } | EventKind::FlowEnd { id } => Some(id),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let (a, b) = (ids(7), ids(8));
    assert_eq!((a.len(), b.len()), (4, 4), "{a:?} {b:?}");
    assert_ne!(a[0], a[2], "{a:?}");
    assert!(a.iter().all(|id| !b.contains(id)), "{a:?} {b:?}");
}
