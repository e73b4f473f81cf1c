//! `fxt_symbols::derived::records` on traces built here: a lock's wait
//! that names its holder becomes the holder's `held` slice, the waiter's
//! `handoff` slice and an arrow (flow begin in the first, flow end at the
//! acquisition, in the second), placed as the runtime
//! places them; per provider section, after one marker, which stops a
//! second derivation of that section; the arrows two processes derived
//! each in its own trace keep apart when the traces are merged.

use fxt_format::decode::{decode_all, ArgValue, Event, EventKind, Record, Thread};
use fxt_format::encode::{
    encode_into_vec, words_to_bytes, Arg, ArgValue as V, Event as E, EventKind as K,
    Initialization, ProviderSection, StringRef, ThreadRef,
};
use fxt_symbols::derived::records;

const PID: u64 = 1;
const HOLDER: u64 = 10;
const WAITER: u64 = 20;

/// A wait of lock "L" on `thread` from `start` to `end` (the acquisition
/// is `end - 1`), naming `handoff` = (holder, handoff_ns).
fn wait(out: &mut Vec<u64>, thread: u64, start: u64, end: u64, handoff: Option<(u64, u64)>) {
    wait_in(out, PID, thread, (start, end), handoff);
}

/// [`wait`] in `process`, from `span.0` to `span.1`.
fn wait_in(
    out: &mut Vec<u64>,
    process: u64,
    thread: u64,
    (start, end): (u64, u64),
    handoff: Option<(u64, u64)>,
) {
    let s = |t| V::Str(StringRef::Inline(t));
    let k = StringRef::Inline;
    let mut args = vec![
        Arg::new(k("mode"), s("exclusive")),
        Arg::new(k("state"), s("wait")),
    ];
    if let Some((holder, handoff_ns)) = handoff {
        args.push(Arg::new(k("holder"), V::U64(holder)));
        args.push(Arg::new(k("handoff_ns"), V::U64(handoff_ns)));
    }
    let e = E {
        kind: K::DurationComplete { end },
        timestamp: start,
        thread: ThreadRef::Inline { process, thread },
        category: k("lock"),
        name: k("L"),
        args: &args,
    };
    encode_into_vec(&e, out).unwrap();
}

fn init(out: &mut Vec<u64>, ticks_per_second: u64) {
    encode_into_vec(&Initialization { ticks_per_second }, out).unwrap();
}

/// The events `records` appends to `trace`, decoded.
fn derived(trace: &[u64]) -> Vec<Record> {
    let bytes = words_to_bytes(trace);
    let words = records(&bytes);
    decode_all(&words_to_bytes(&words)).unwrap()
}

fn events(records: &[Record]) -> Vec<&Event> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn thread(e: &Event) -> u64 {
    match e.thread {
        Thread::Known { thread, .. } => thread,
        _ => panic!("{e:?}"),
    }
}

fn markers(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Blob(b) if b.name == "fxt.derived" && b.payload.is_empty()))
        .count()
}

/// A slice: (thread, start, end).
type Slice = (u64, u64, u64);
/// A flow: (begin thread, begin time, end thread, end time).
type Arrow = (u64, u64, u64, u64);

/// The `state` argument of `e`.
fn state(e: &Event) -> Option<&str> {
    e.args
        .iter()
        .find(|a| a.name == "state")
        .and_then(|a| match &a.value {
            ArgValue::Str(s) => s.as_str(),
            _ => None,
        })
}

/// The slice `e` is, with its state: (thread, start, end).
fn slice(e: &Event, want: &str) -> Slice {
    let EventKind::DurationComplete { end } = e.kind else {
        panic!("{e:#?}")
    };
    assert_eq!(
        (e.category.as_str(), e.name.as_str()),
        (Some("lock"), Some("L"))
    );
    assert_eq!(state(e), Some(want), "{e:#?}");
    (thread(e), e.timestamp, end)
}

/// The held slice, the waiter's handoff slice and the flow between them
/// (begin, then the handoff, then the end), checking the ids match.
fn drawn(evs: &[&Event]) -> (Slice, Slice, Arrow) {
    assert_eq!(evs.len(), 4, "{evs:#?}");
    let held = slice(evs[0], "held");
    let handoff = slice(evs[2], "handoff");
    let (EventKind::FlowBegin { id: b }, EventKind::FlowEnd { id: e }) = (evs[1].kind, evs[3].kind)
    else {
        panic!("{evs:#?}")
    };
    assert_eq!(b, e);
    let arrow = (
        thread(evs[1]),
        evs[1].timestamp,
        thread(evs[3]),
        evs[3].timestamp,
    );
    (held, handoff, arrow)
}

/// [`drawn`]'s held slice and flow.
fn held_and_arrow(evs: &[&Event]) -> (Slice, Arrow) {
    let (held, _, arrow) = drawn(evs);
    (held, arrow)
}

#[test]
fn a_handed_wait_becomes_the_holders_held_slice_and_an_arrow() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    // Waiting from 100, acquired at 200, released at 150.
    wait(&mut t, WAITER, 100, 201, Some((HOLDER, 50)));
    let out = derived(&t);
    assert_eq!(markers(&out), 1);
    let (held, handoff, arrow) = drawn(&events(&out));
    assert_eq!(held, (HOLDER, 100, 151));
    // Inside the wait, from the release to the acquisition: the flow
    // ends in a slice that starts no earlier than the one it begins in
    // (Perfetto points a flow from the slice that starts first).
    assert_eq!(handoff, (WAITER, 150, 201));
    assert_eq!(arrow, (HOLDER, 150, WAITER, 200));
}

#[test]
fn the_durations_are_turned_into_the_traces_ticks() {
    let mut t = Vec::new();
    init(&mut t, 2_000_000_000);
    wait(&mut t, WAITER, 100, 301, Some((HOLDER, 50)));
    let (held, handoff, arrow) = drawn(&events(&derived(&t)));
    // 50 ns are 100 ticks.
    assert_eq!(arrow, (HOLDER, 200, WAITER, 300));
    assert_eq!(held, (HOLDER, 100, 201));
    assert_eq!(handoff, (WAITER, 200, 301));
}

#[test]
fn a_held_slice_starts_when_someone_waited_and_after_the_holders_own_wait() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    // The holder waited until 119 (for another lock); the waiter from
    // 60; released at 150.
    wait(&mut t, HOLDER, 50, 120, None);
    wait(&mut t, WAITER, 60, 201, Some((HOLDER, 50)));
    let (held, _) = held_and_arrow(&events(&derived(&t)));
    assert_eq!(held, (HOLDER, 120, 151), "after the holder's wait");

    // Two waiters from 40 and 60; the release at 150 ended the second's
    // wait: someone waited on the hold from 40.
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    wait(&mut t, 30, 40, 301, None);
    wait(&mut t, WAITER, 60, 201, Some((HOLDER, 50)));
    let (held, _) = held_and_arrow(&events(&derived(&t)));
    assert_eq!(
        held,
        (HOLDER, 40, 151),
        "from the earliest wait in progress"
    );
}

#[test]
fn consecutive_releases_draw_holds_that_do_not_overlap() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    // Waiter 20 waits from 0, handed over by 10 at 100; waiter 30 waits
    // from 10, handed over by 20 at 200.
    wait(&mut t, WAITER, 0, 102, Some((HOLDER, 1)));
    wait(&mut t, 30, 10, 202, Some((WAITER, 1)));
    let out = derived(&t);
    let evs = events(&out);
    let slices = |want| -> Vec<Slice> {
        evs.iter()
            .filter(|e| state(e) == Some(want))
            .map(|e| slice(e, want))
            .collect()
    };
    // The first from the earliest wait (0); the second after the first
    // release (101) and the holder's own wait (102), though waiter 30
    // waited from 10.
    assert_eq!(slices("held"), vec![(HOLDER, 0, 101), (WAITER, 102, 201)]);
    // Each waiter's from the release that ended its wait: waiter 30's
    // starts after the held slice its arrow comes from, though its wait
    // began before it.
    assert_eq!(slices("handoff"), vec![(WAITER, 100, 102), (30, 200, 202)]);
}

#[test]
fn waits_without_a_holder_draw_nothing() {
    let mut t = Vec::new();
    init(&mut t, 1_000_000_000);
    wait(&mut t, WAITER, 100, 201, None);
    assert!(records(&words_to_bytes(&t)).is_empty());
}

#[test]
fn each_section_is_derived_once_in_its_own_section() {
    let mut t = Vec::new();
    encode_into_vec(&ProviderSection { provider_id: 1 }, &mut t).unwrap();
    init(&mut t, 1_000_000_000);
    wait(&mut t, WAITER, 100, 201, Some((HOLDER, 50)));
    encode_into_vec(&ProviderSection { provider_id: 2 }, &mut t).unwrap();
    init(&mut t, 1_000_000_000);
    wait(&mut t, WAITER, 100, 201, Some((HOLDER, 50)));
    let out = derived(&t);
    assert_eq!(markers(&out), 2);
    let sections: Vec<u32> = out
        .iter()
        .filter_map(|r| match r {
            Record::ProviderSection { provider_id } => Some(*provider_id),
            _ => None,
        })
        .collect();
    assert_eq!(sections, vec![1, 2]);
    assert_eq!(events(&out).len(), 8);

    // Appended, nothing more to derive.
    let bytes = words_to_bytes(&t);
    let mut whole = bytes.clone();
    whole.extend(words_to_bytes(&records(&bytes)));
    assert!(records(&whole).is_empty());

    // A third section merged in later is derived alone.
    let mut more = Vec::new();
    encode_into_vec(&ProviderSection { provider_id: 3 }, &mut more).unwrap();
    init(&mut more, 1_000_000_000);
    wait(&mut more, WAITER, 100, 201, Some((HOLDER, 50)));
    whole.extend(words_to_bytes(&more));
    let again = decode_all(&words_to_bytes(&records(&whole))).unwrap();
    assert_eq!(markers(&again), 1);
    assert!(matches!(
        again[0],
        Record::ProviderSection { provider_id: 3 }
    ));
    assert_eq!(events(&again).len(), 4);
}

/// The flow ids of a derived trace's arrows.
fn flow_ids(records: &[Record]) -> Vec<u64> {
    events(records)
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::FlowBegin { id } => Some(id),
            _ => None,
        })
        .collect()
}

#[test]
fn the_arrows_two_processes_derive_alone_have_different_ids() {
    // Two programs built with feature `symbolize` derive their own traces,
    // both of a lock "L" handed over twice; an archive of the two keeps
    // both sets without deriving again, so an id in both would join one
    // process's release to the other's acquisition.
    let trace = |process| {
        let mut t = Vec::new();
        init(&mut t, 1_000_000_000);
        wait_in(&mut t, process, WAITER, (100, 201), Some((HOLDER, 50)));
        wait_in(&mut t, process, HOLDER, (210, 301), Some((WAITER, 50)));
        t
    };
    let (a, b) = (flow_ids(&derived(&trace(7))), flow_ids(&derived(&trace(8))));
    assert_eq!((a.len(), b.len()), (2, 2), "{a:?} {b:?}");
    assert_ne!(a[0], a[1], "{a:?}");
    assert!(a.iter().all(|id| !b.contains(id)), "{a:?} {b:?}");
    // Far above a program's own counters.
    assert!(a.iter().chain(&b).all(|&id| id >= 1 << 62), "{a:?} {b:?}");
}
