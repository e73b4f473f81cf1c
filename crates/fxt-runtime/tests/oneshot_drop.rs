//! Oneshot mode kept in memory with a small buffer: every record that did
//! not fit is counted, and the file says something was dropped. (A drained
//! oneshot session stops at its file limit instead: `tests/file_limit.rs`.)
mod common;

use common::*;
use fxt_runtime::{start, Config, Mode};

#[test]
fn oneshot_counts_every_dropped_record() {
    let _g = serial();
    let (threads, events) = (4, 50_000);
    let config = Config::new().mode(Mode::Oneshot).buffer_size(512 << 10);
    let session = start(config.drain(false)).unwrap();
    run_threads(threads, events);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    let evs = stress_events(&records);
    assert!(stats.records_dropped > 0);
    assert!(stats.limit_reached, "{stats:?}");
    assert_eq!(stats.emitted_records_written, evs.len() as u64);
    assert_eq!(evs.len() as u64 + stats.records_dropped, threads * events);
    assert!(has_buffer_filled(&records));
    // No duplicates, and each thread kept a prefix of its events (oneshot
    // keeps the oldest data).
    let mut per_thread = vec![Vec::new(); threads as usize];
    for (t, s, _) in evs {
        per_thread[t as usize].push(s);
    }
    for seqs in per_thread {
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), seqs.len(), "duplicates");
        assert!(
            sorted.iter().enumerate().all(|(i, &s)| i as u64 == s),
            "not a prefix"
        );
    }
}
