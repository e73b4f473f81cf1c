//! `fxt_symbols::derived::records` on traces of `fxt.alloc` records built
//! here: the heap counter (`fxt`/`heap`, argument `live_bytes`) after each
//! sampled allocation and free, per process, in timestamp order whatever
//! the file order, a free paired with the latest allocation of its
//! address; a section whose runtime wrote the counter itself is not
//! derived; appending twice adds nothing.

use fxt_format::decode::{decode_all, ArgValue, EventKind, Record, Thread};
use fxt_format::encode::{
    encode_into_vec, words_to_bytes, Arg, ArgValue as V, Event as E, EventKind as K,
    Initialization, ProviderSection, StringRef, ThreadRef,
};
use fxt_format::samples::{estimated_bytes, Alloc, AllocKind, Walk};
use fxt_symbols::derived::records;

/// A mean far below the sizes used: each sample stands for its size
/// exactly (`estimated_bytes` is the size once `1 - exp(-size/mean)` is 1).
const EXACT: u64 = 1;

/// An `fxt.alloc` record of `kind` at `ts` on thread `tid` of `pid`.
fn alloc_record(out: &mut Vec<u64>, (pid, tid): (u64, u64), ts: u64, what: (AllocKind, u64, u64)) {
    let (kind, address, size) = what;
    alloc_with(out, (pid, tid), ts, (kind, address, size), (EXACT, false));
}

/// [`alloc_record`] at sampling mean `mean`, `untracked` or not.
fn alloc_with(
    out: &mut Vec<u64>,
    (pid, tid): (u64, u64),
    timestamp: u64,
    (kind, address, size): (AllocKind, u64, u64),
    (mean, untracked): (u64, bool),
) {
    let frames = [0x1000u64, 0x2000];
    let record = Alloc {
        timestamp,
        pid,
        tid,
        address,
        size,
        mean,
        kind,
        untracked,
        walk: Walk::PcOnly,
        truncated: false,
        frames: if kind == AllocKind::Alloc {
            &frames
        } else {
            &[]
        },
        raw_stack: None,
    };
    encode_into_vec(&record, out).unwrap();
}

fn init(out: &mut Vec<u64>) {
    encode_into_vec(
        &Initialization {
            ticks_per_second: 1_000_000_000,
        },
        out,
    )
    .unwrap();
}

/// The counter events `records` appends to `trace`: (process, thread,
/// timestamp, live bytes).
fn counters(trace: &[u64]) -> Vec<(u64, u64, u64, i64)> {
    let words = records(&words_to_bytes(trace));
    let out = decode_all(&words_to_bytes(&words)).unwrap();
    let markers = out
        .iter()
        .filter(|r| matches!(r, Record::Blob(b) if b.name == "fxt.derived"))
        .count();
    assert!(markers <= 1, "{out:#?}");
    out.iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .map(|e| {
            assert!(matches!(e.kind, EventKind::Counter { id: 0 }), "{e:?}");
            assert_eq!(
                (e.category.as_str(), e.name.as_str()),
                (Some("fxt"), Some("heap"))
            );
            assert_eq!(e.args.len(), 1, "{e:?}");
            assert_eq!(e.args[0].name, "live_bytes");
            let ArgValue::I64(live) = e.args[0].value else {
                panic!("{e:?}")
            };
            let Thread::Known { process, thread } = e.thread else {
                panic!("{e:?}")
            };
            (process, thread, e.timestamp, live)
        })
        .collect()
}

use AllocKind::{Alloc as A, Free as F};

#[test]
fn the_counter_follows_allocations_and_frees_in_time_order_per_process() {
    let mut t = Vec::new();
    init(&mut t);
    // Thread 11's chunk comes first in the file, thread 12's after it,
    // though 12 allocated first.
    alloc_record(&mut t, (1, 11), 200, (A, 0xb000, 300));
    alloc_record(&mut t, (1, 11), 400, (F, 0xa000, 1000));
    alloc_record(&mut t, (1, 12), 100, (A, 0xa000, 1000));
    alloc_record(&mut t, (1, 12), 300, (F, 0xb000, 300));
    // Another process, its own counter; a free whose allocation is not in
    // the trace takes nothing away.
    alloc_record(&mut t, (2, 21), 150, (A, 0xa000, 64));
    alloc_record(&mut t, (2, 21), 250, (F, 0xc000, 4096));
    assert_eq!(
        counters(&t),
        vec![
            (1, 12, 100, 1000),
            (1, 11, 200, 1300),
            (1, 12, 300, 1000),
            (1, 11, 400, 0),
            (2, 21, 150, 64),
            (2, 21, 250, 64),
        ]
    );
}

#[test]
fn a_sample_stands_for_its_estimate_and_an_address_reused_replaces_its_block() {
    let mut t = Vec::new();
    init(&mut t);
    let mean = 512 << 10;
    let small = estimated_bytes(16, mean);
    // Untracked: live until its address comes again (its free is never
    // recorded); an allocation and a free at one instant: the allocation
    // first.
    alloc_with(&mut t, (1, 11), 10, (A, 0xa000, 16), (mean, true));
    alloc_with(&mut t, (1, 11), 20, (F, 0xb000, 16), (mean, false));
    alloc_with(&mut t, (1, 11), 20, (A, 0xb000, 16), (mean, false));
    alloc_with(&mut t, (1, 11), 30, (A, 0xa000, 16), (mean, false));
    alloc_with(&mut t, (1, 11), 40, (F, 0xa000, 16), (mean, false));
    let r = |x: f64| x.round() as i64;
    assert_eq!(
        counters(&t),
        vec![
            (1, 11, 10, r(small)),
            (1, 11, 20, r(2.0 * small)),
            (1, 11, 20, r(small)),
            (1, 11, 30, r(small)),
            (1, 11, 40, 0),
        ]
    );
    assert!(small > 500_000.0, "about the mean: {small}");
}

/// A thread whose sampling rate raised its mean writes records at the
/// raised mean: each block stands for its own record's estimate, and its
/// free (at the session's mean) takes away what its allocation added.
#[test]
fn each_allocation_is_weighted_by_its_own_records_mean() {
    let mut t = Vec::new();
    init(&mut t);
    let (base, raised) = (512 << 10, 4 << 20);
    let (at_base, at_raised) = (estimated_bytes(64, base), estimated_bytes(64, raised));
    alloc_with(&mut t, (1, 11), 10, (A, 0xa000, 64), (base, false));
    alloc_with(&mut t, (1, 11), 20, (A, 0xb000, 64), (raised, false));
    alloc_with(&mut t, (1, 11), 30, (F, 0xb000, 64), (base, false));
    let r = |x: f64| x.round() as i64;
    assert_eq!(
        counters(&t),
        vec![
            (1, 11, 10, r(at_base)),
            (1, 11, 20, r(at_base + at_raised)),
            (1, 11, 30, r(at_base)),
        ]
    );
    assert!(at_raised > 7.0 * at_base, "{at_raised} against {at_base}");
}

#[test]
fn a_section_whose_runtime_wrote_the_counter_is_not_derived_and_twice_adds_nothing() {
    let mut t = Vec::new();
    encode_into_vec(&ProviderSection { provider_id: 1 }, &mut t).unwrap();
    init(&mut t);
    alloc_record(&mut t, (1, 11), 100, (A, 0xa000, 1000));
    let args = [Arg::new(StringRef::Inline("live_bytes"), V::I64(1000))];
    let written = E {
        kind: K::Counter { id: 0 },
        timestamp: 100,
        thread: ThreadRef::Inline {
            process: 1,
            thread: 11,
        },
        category: StringRef::Inline("fxt"),
        name: StringRef::Inline("heap"),
        args: &args,
    };
    encode_into_vec(&written, &mut t).unwrap();
    encode_into_vec(&ProviderSection { provider_id: 2 }, &mut t).unwrap();
    init(&mut t);
    alloc_record(&mut t, (2, 21), 100, (A, 0xa000, 1000));
    assert_eq!(counters(&t), vec![(2, 21, 100, 1000)]);

    let bytes = words_to_bytes(&t);
    let mut whole = bytes.clone();
    whole.extend(words_to_bytes(&records(&bytes)));
    assert!(records(&whole).is_empty());
}
