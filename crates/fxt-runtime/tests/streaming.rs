//! Streaming mode writes a trace many times the buffer size while the
//! program runs, without loss at a rate the streamer keeps up with.
mod common;

use std::sync::atomic::Ordering;

use common::*;
use fxt_runtime::{start, Config, Mode};

#[test]
fn streaming_writes_ten_times_the_buffer() {
    let _g = serial();
    let path = temp_path("streaming.fxt");
    let buffer = 1 << 20;
    let session = start(
        Config::new()
            .mode(Mode::Streaming)
            .buffer_size(buffer)
            .output(&path),
    )
    .unwrap();
    // Each event is 6 words = 48 bytes; 2 threads x 120000 events = 11 MiB.
    let (threads, events) = (2u64, 120_000u64);
    let emitted = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (emitted, path) = (&emitted, &path);
            s.spawn(move || {
                for i in 0..events {
                    emit(t, i);
                    // A rate the streamer keeps up with whatever the load:
                    // after each burst, wait until at most a quarter of the
                    // buffer is still to be written. The file's length
                    // grows before the streamer frees the chunks it wrote,
                    // so the ring may hold that much twice over (unwritten,
                    // and written but not yet freed) plus both threads'
                    // bursts and partly filled chunks: still less than the
                    // ring. With half the buffer it could fill up when the
                    // streamer lost its core between writing and freeing.
                    if i % 500 == 499 {
                        let total = emitted.fetch_add(500, Ordering::Relaxed) + 500;
                        let target = (total * EVENT_BYTES).saturating_sub(buffer as u64 / 4);
                        wait_for_len(path, target);
                    }
                }
            });
        }
    });
    let stats = session.finish().unwrap();
    assert_eq!(stats.records_dropped, 0);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(stats.bytes_written, bytes.len() as u64);
    assert!(bytes.len() > 10 * buffer, "trace of {} bytes", bytes.len());
    let records = decode(&bytes);
    check_preamble(&records);
    assert!(!has_buffer_filled(&records));
    assert_eq!(stats.records_written, records.len() as u64);
    assert_exactly_once(&stress_events(&records), threads, events);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn streaming_overload_drops_and_counts() {
    let _g = serial();
    let path = temp_path("streaming-overload.fxt");
    let session = start(
        Config::new()
            .mode(Mode::Streaming)
            .buffer_size(256 << 10)
            .output(&path),
    )
    .unwrap();
    let (threads, events) = (2u64, 300_000u64);
    run_threads(threads, events);
    let stats = session.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let records = decode(&bytes);
    let evs = stress_events(&records);
    assert_eq!(evs.len() as u64, stats.emitted_records_written);
    assert_eq!(evs.len() as u64 + stats.records_dropped, threads * events);
    assert_eq!(stats.records_dropped > 0, has_buffer_filled(&records));
    let _ = std::fs::remove_file(&path);
}
