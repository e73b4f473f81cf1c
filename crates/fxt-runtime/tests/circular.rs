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
    run_threads(threads, events);
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
        assert_eq!(*seqs.last().unwrap(), events - 1, "thread {t}: newest missing");
    }
}
