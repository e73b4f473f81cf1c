//! Past 255 threads the thread table is full: later threads use inline
//! thread refs, and every event still decodes with its own thread's koid.
mod common;

use common::*;
use fxt_format::decode::Record;
use fxt_runtime::{start, Config};

#[test]
fn three_hundred_threads_keep_their_ids() {
    let _g = serial();
    let threads = 300;
    let events = 50;
    let session = start(Config::new().buffer_size(256 << 20).chunk_size(32 << 10)).unwrap();
    run_threads(threads, events);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0);
    let records = decode(&bytes);
    let evs = stress_events(&records);
    // Exactly once, one koid per logical thread, distinct koids.
    assert_exactly_once(&evs, threads, events);
    let thread_records = records
        .iter()
        .filter(|r| matches!(r, Record::Thread { .. }))
        .count();
    assert_eq!(
        thread_records, 255,
        "the thread table is full, not overfull"
    );
    // Every thread (indexed or inline) is named by a kernel object record.
    let named: std::collections::HashSet<u64> = records
        .iter()
        .filter_map(|r| match r {
            Record::KernelObject(k) if k.object_type == 2 => Some(k.koid),
            _ => None,
        })
        .collect();
    for &(_, _, tid) in &evs {
        assert!(
            named.contains(&tid),
            "thread {tid} has no kernel object record"
        );
    }
}
