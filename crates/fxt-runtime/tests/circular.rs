//! Circular mode keeps the newest records of each thread (a contiguous run
//! ending at its last event), counts the overwritten ones, and every ref in
//! the kept data resolves.
mod common;

use common::*;
use fxt_runtime::{start, Config, Mode};

#[test]
fn circular_keeps_the_newest_records() {
    let _g = serial();
    let (threads, events) = (4, 100_000);
    let session = start(Config::new().mode(Mode::Circular).buffer_size(1 << 20)).unwrap();
    // Every thread emits most of its events, then all wait for each other
    // and emit their last 100: the buffer then holds at least those of
    // every thread (a thread that finished long before the others could
    // legitimately have all its records overwritten).
    let barrier = std::sync::Barrier::new(threads as usize);
    std::thread::scope(|s| {
        for t in 0..threads {
            let barrier = &barrier;
            s.spawn(move || {
                for i in 0..events - 100 {
                    emit(t, i);
                }
                barrier.wait();
                for i in events - 100..events {
                    emit(t, i);
                }
            });
        }
    });
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    check_preamble(&records);
    // `stress_events` asserts every category, name, key and thread ref resolves.
    let evs = stress_events(&records);
    assert!(stats.records_dropped > 0, "the buffer must have wrapped");
    assert!(has_buffer_filled(&records));
    assert_eq!(evs.len() as u64 + stats.records_dropped, threads * events);
    let mut per_thread = vec![Vec::new(); threads as usize];
    for (t, s, _) in evs {
        per_thread[t as usize].push(s);
    }
    for (t, seqs) in per_thread.iter().enumerate() {
        assert!(!seqs.is_empty(), "thread {t} kept nothing");
        // In file order, a thread's records are consecutive numbers ending
        // at its last event.
        for w in seqs.windows(2) {
            assert_eq!(w[1], w[0] + 1, "thread {t}: gap or reorder");
        }
        assert_eq!(
            *seqs.last().unwrap(),
            events - 1,
            "thread {t}: newest missing"
        );
    }
}
