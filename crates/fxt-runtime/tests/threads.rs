//! Many threads, a big enough buffer: nothing lost, nothing duplicated.
mod common;

use common::*;
use fxt_runtime::{start, Config};

fn check(threads: u64, events: u64) {
    let _g = serial();
    let session = start(Config::new().buffer_size(64 << 20)).unwrap();
    run_threads(threads, events);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    check_preamble(&records);
    assert_eq!(stats.records_dropped, 0);
    assert!(!has_buffer_filled(&records));
    assert_eq!(stats.emitted_records_written, threads * events);
    assert_eq!(stats.records_written, records.len() as u64);
    assert_eq!(stats.bytes_written, bytes.len() as u64);
    assert_exactly_once(&stress_events(&records), threads, events);
}

#[test]
fn eight_threads_lose_nothing() {
    check(8, 20_000);
}

#[test]
fn sixty_four_threads_lose_nothing() {
    check(64, 3_000);
}
