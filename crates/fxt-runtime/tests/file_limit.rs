//! The default session (drained oneshot) is limited by the size of its
//! file, not by its buffer: a trace many buffers long is written whole,
//! and a session given a small file limit stops there, counts the rest as
//! dropped and leaves a valid file that says so.

mod common;

use common::{decode, has_buffer_filled, serial, stress_events, temp_path};
use fxt_format::decode::{EventKind, Record};
use fxt_runtime::__macro_support::{counter, ArgValue, Callsite, KeyCache};
use fxt_runtime::{start, Config};

static KEYS: [KeyCache; 1] = [KeyCache::NEW];
static DEPTH: Callsite = Callsite::new("loop", "queue", &["depth"], &KEYS);

/// The case: two threads of a million counters each (80 MB of
/// records, more than the 64 MiB buffer) with `Config::new()`: the file
/// holds more than the buffer (its chunks were written out and reused,
/// and no file limit stopped it), and every counter is in it once or
/// counted as dropped, with the file saying so. Writers never wait for
/// the streamer, so whether any is dropped depends on whether it kept up:
/// none on an idle machine, some on a loaded one (two writers and the
/// streamer on two busy cores), which is why that is not asserted; the
/// writers yield now and then so that it can keep up.
#[test]
fn two_threads_of_a_million_counters_are_in_the_default_file_or_counted() {
    let _g = serial();
    let path = temp_path("limit-default.fxt");
    const EACH: u64 = 1_000_000;
    let session = start(Config::new().output(&path)).unwrap();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            s.spawn(move || {
                for i in 0..EACH {
                    if let Some(site) = DEPTH.site() {
                        counter(site, t, &[ArgValue::U64(i)]);
                    }
                    if i % 4096 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    let stats = session.finish().unwrap();
    assert!(!stats.limit_reached, "{stats:?}");
    assert_eq!(
        stats.emitted_records_written + stats.records_dropped,
        2 * EACH,
        "{stats:?}"
    );
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 64 << 20, "{} bytes", bytes.len());
    let records = decode(&bytes);
    assert_eq!(has_buffer_filled(&records), stats.records_dropped > 0);
    // Every counter at most once: per series (the counter id), the values
    // 0..EACH; as many as were written.
    let mut seen = [vec![false; EACH as usize], vec![false; EACH as usize]];
    let mut in_file = 0u64;
    for r in &records {
        let Record::Event(e) = r else { continue };
        let EventKind::Counter { id } = e.kind else {
            continue;
        };
        let v = match e.args.first().map(|a| &a.value) {
            Some(fxt_format::decode::ArgValue::U64(v)) => *v as usize,
            other => panic!("counter argument {other:?}"),
        };
        assert!(!seen[id as usize][v], "counter {id}/{v} twice");
        seen[id as usize][v] = true;
        in_file += 1;
    }
    assert_eq!(in_file, stats.emitted_records_written, "{stats:?}");
    std::fs::remove_file(&path).unwrap();
}

/// A 1 MiB file limit: the trace stops there (each thread keeps the first
/// of its events, as a full oneshot buffer does), the rest is counted as
/// dropped, `Stats` says the limit was reached, and the file is a valid
/// trace ending with "buffer filled up".
#[test]
fn a_small_file_limit_stops_the_trace_and_counts_the_rest() {
    let _g = serial();
    let path = temp_path("limit-small.fxt");
    let limit = 1 << 20;
    let (threads, events) = (2, 100_000);
    let session = start(Config::new().output(&path).file_limit(limit)).unwrap();
    common::run_threads(threads, events);
    let stats = session.finish().unwrap();
    assert!(stats.limit_reached, "{stats:?}");
    assert!(stats.records_dropped > 0, "{stats:?}");
    let bytes = std::fs::read(&path).unwrap();
    let records = decode(&bytes);
    assert!(has_buffer_filled(&records));
    let evs = stress_events(&records);
    assert_eq!(stats.emitted_records_written, evs.len() as u64);
    assert_eq!(evs.len() as u64 + stats.records_dropped, threads * events);
    // The events' chunks stop at the limit; the few strings and the
    // preamble come on top.
    assert!(
        bytes.len() as u64 <= limit + (64 << 10),
        "{} bytes for a {limit}-byte limit",
        bytes.len()
    );
    assert!(
        bytes.len() as u64 > limit / 2,
        "{} bytes for a {limit}-byte limit",
        bytes.len()
    );
    // Each thread's events in the file are the first of its events.
    for t in 0..threads {
        let mut seqs: Vec<u64> = evs.iter().filter(|e| e.0 == t).map(|e| e.1).collect();
        seqs.sort_unstable();
        assert!(
            seqs.iter().enumerate().all(|(i, &s)| i as u64 == s),
            "thread {t}: not a prefix"
        );
    }
    std::fs::remove_file(&path).unwrap();
}
