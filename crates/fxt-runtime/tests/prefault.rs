//! The background prefaulter (the default) never changes what the writers
//! store: writers that overtake it (many threads, a buffer far larger than
//! one slice) lose and corrupt nothing, and a session finished while it is
//! still faulting pages in is clean. The other prefault choices record the
//! same.
mod common;

use common::*;
use fxt_runtime::{start, Config, Mode, Prefault};

fn check(config: Config, threads: u64, events: u64) {
    let _g = serial();
    let session = start(config).unwrap();
    run_threads(threads, events);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    check_preamble(&records);
    assert_eq!(stats.records_dropped, 0, "{stats:?}");
    assert_eq!(stats.emitted_records_written, threads * events);
    assert_exactly_once(&stress_events(&records), threads, events);
}

#[test]
fn writers_racing_the_prefaulter_lose_nothing() {
    // 4 threads x 200k events of 4 words: 25 MiB written into a 256 MiB
    // buffer while the prefaulter walks it (writers start at once, so they
    // overtake it on this machine's 2 cores).
    check(
        Config::new()
            .buffer_size(256 << 20)
            .prefault(Prefault::Background),
        4,
        200_000,
    );
}

#[test]
fn circular_and_streaming_with_the_prefaulter() {
    check(
        Config::new()
            .buffer_size(8 << 20)
            .mode(Mode::Circular)
            .prefault(Prefault::Background),
        2,
        50_000,
    );
    let path = temp_path("prefault-stream.fxt");
    let _g = serial();
    let session = start(
        Config::new()
            .buffer_size(4 << 20)
            .mode(Mode::Streaming)
            .output(&path)
            .prefault(Prefault::Background),
    )
    .unwrap();
    run_threads(2, 100_000);
    let stats = session.finish().unwrap();
    let records = decode(&std::fs::read(&path).unwrap());
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        stats.emitted_records_written + stats.records_dropped,
        200_000
    );
    assert_eq!(
        stress_events(&records).len() as u64,
        stats.emitted_records_written
    );
}

#[test]
fn finishing_while_the_prefaulter_runs_is_clean() {
    // A 1 GiB buffer takes the prefaulter far longer than this session.
    let _g = serial();
    let session = start(Config::new().buffer_size(1 << 30)).unwrap();
    run_threads(1, 1000);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    check_preamble(&records);
    assert_eq!(stats.records_dropped, 0);
    assert_exactly_once(&stress_events(&records), 1, 1000);
}

#[test]
fn at_start_and_off_record_the_same() {
    for p in [Prefault::AtStart, Prefault::Off] {
        check(Config::new().buffer_size(16 << 20).prefault(p), 2, 20_000);
    }
}

#[test]
fn prefault_from_env_values() {
    assert_eq!(Prefault::parse("background"), Some(Prefault::Background));
    assert_eq!(Prefault::parse("1"), Some(Prefault::AtStart));
    assert_eq!(Prefault::parse("start"), Some(Prefault::AtStart));
    assert_eq!(Prefault::parse("OFF"), Some(Prefault::Off));
    assert_eq!(Prefault::parse("sometimes"), None);
    assert_eq!(Prefault::from(true), Prefault::AtStart);
}
