//! Drained oneshot sessions (the default, `Config::drain`): the trace is
//! written to its file while the program runs and the buffer's chunks are
//! reused; the file is a valid trace at every pass; finishing to another
//! path or to memory, and snapshots, give the whole trace.

mod common;

use std::time::Duration;

use common::{
    assert_exactly_once, decode, emit, serial, stress_events, temp_path, wait_for_len, EVENT_BYTES,
};
use fxt_format::compat::framing::{decoder_walk, framing_issues, viewer_walk};
use fxt_format::decode::{decode_all, join_split_blobs, Record};
use fxt_runtime::__macro_support::{blob, Callsite, KeyCache};
use fxt_runtime::{start, Config};

static KEYS: [KeyCache; 0] = [];
static BLOB: Callsite = Callsite::new("data", "payload", &[], &KEYS);

/// Emits `bursts` bursts of `per_burst` events on this thread (logical
/// thread 0), pausing after each so the streamer writes chunks out.
fn paced(bursts: u64, per_burst: u64, pause: Duration, from: u64) -> u64 {
    for b in 0..bursts {
        for i in 0..per_burst {
            emit(0, from + b * per_burst + i);
        }
        std::thread::sleep(pause);
    }
    bursts * per_burst
}

/// Emits `bursts` bursts of `per_burst` events on this thread, waiting
/// after each until the streamer has written all but `behind` bytes of
/// them to `path` (a condition: on a loaded machine it may get no core for
/// a while).
fn paced_on_file(path: &std::path::Path, bursts: u64, per_burst: u64, behind: u64) -> u64 {
    for b in 0..bursts {
        for i in 0..per_burst {
            emit(0, b * per_burst + i);
        }
        wait_for_len(
            path,
            ((b + 1) * per_burst * EVENT_BYTES).saturating_sub(behind),
        );
    }
    bursts * per_burst
}

/// Waits until the session's streamer has written its first pass to
/// `path` (the preamble): on a loaded machine its thread may start late,
/// and what it has not drained yet stays in fresh chunks.
fn wait_for_streamer(path: &std::path::Path) {
    let t0 = std::time::Instant::now();
    while std::fs::metadata(path).map_or(0, |m| m.len()) == 0 {
        assert!(t0.elapsed().as_secs() < 10, "the streamer wrote nothing");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn fillers(records: &[Record]) -> u64 {
    records
        .iter()
        .filter(|r| matches!(r, Record::String { index: 0, .. }))
        .count() as u64
}

/// A trace 50 chunks long written by a writer the streamer keeps up with
/// (it waits until at most 4 chunks are unwritten): every event once, in a
/// few chunks of memory. The file grows before the streamer frees what it
/// wrote, so up to twice that is held (unwritten, and written but not yet
/// freed), plus the writer's chunk and burst: within the 16 chunks allowed
/// however late the streamer gets a core.
#[test]
fn a_drained_trace_reuses_a_few_chunks() {
    let _g = serial();
    let path = temp_path("drain-reuse.fxt");
    let session = start(Config::new().output(&path).buffer_size(16 << 20)).unwrap();
    wait_for_streamer(&path);
    let chunk = 64 << 10;
    let n = paced_on_file(&path, 100, 700, 4 * chunk as u64);
    let stats = session.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let records = decode(&bytes);
    assert_exactly_once(&stress_events(&records), 1, n);
    assert_eq!(stats.emitted_records_written, n);
    assert_eq!(stats.records_dropped, 0);
    assert_eq!(stats.records_written, records.len() as u64);
    assert_eq!(stats.bytes_written, bytes.len() as u64);
    assert_eq!(stats.filler_records, fillers(&records));
    assert!(
        bytes.len() > 40 * chunk,
        "the trace is {} bytes",
        bytes.len()
    );
    assert!(
        stats.buffer_bytes_touched <= 16 * chunk as u64,
        "{} bytes of the buffer touched for a {}-byte trace",
        stats.buffer_bytes_touched,
        bytes.len()
    );
    // A 4 KiB-aligned file but for its last write.
    std::fs::remove_file(&path).unwrap();
}

/// Without draining, the same trace touches as much memory as it is long,
/// and nothing is in the file before the session finishes.
#[test]
fn drain_off_keeps_the_trace_in_memory() {
    let _g = serial();
    let path = temp_path("drain-off.fxt");
    let _ = std::fs::remove_file(&path);
    let session = start(
        Config::new()
            .output(&path)
            .buffer_size(16 << 20)
            .drain(false),
    )
    .unwrap();
    let n = paced(20, 700, Duration::from_millis(1), 0);
    assert!(!path.exists(), "written before finishing");
    let stats = session.finish().unwrap();
    let records = decode(&std::fs::read(&path).unwrap());
    assert_exactly_once(&stress_events(&records), 1, n);
    assert_eq!((stats.filler_records, fillers(&records)), (0, 0));
    assert!(stats.buffer_bytes_touched >= stats.bytes_written - (64 << 10));
    std::fs::remove_file(&path).unwrap();
}

/// The file holds a valid trace prefix while the session runs (what a
/// killed process leaves): every event in it once, in order.
#[test]
fn the_file_is_a_valid_prefix_while_running() {
    let _g = serial();
    let path = temp_path("drain-prefix.fxt");
    let session = start(Config::new().output(&path).buffer_size(16 << 20)).unwrap();
    let n = paced(40, 700, Duration::from_millis(2), 0);
    // Read until the streamer has written most of it (all but the chunk
    // this thread still holds); every read is a valid, in-order prefix.
    let t0 = std::time::Instant::now();
    loop {
        let prefix = std::fs::read(&path).unwrap();
        let records = decode_all(&prefix).expect("a valid trace");
        let seqs: Vec<u64> = stress_events(&records).iter().map(|e| e.1).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
        if seqs.len() as u64 > n / 2 {
            break;
        }
        assert!(
            t0.elapsed().as_secs() < 10,
            "{} of {n} events after 10 s",
            seqs.len()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    session.finish().unwrap();
    std::fs::remove_file(&path).unwrap();
}

/// `finish_to_path` moves the file; `finish_to_vec` reads it back and
/// removes it.
#[test]
fn finishing_elsewhere_moves_or_reads_back() {
    let _g = serial();
    let path = temp_path("drain-configured.fxt");
    let other = temp_path("drain-other.fxt");
    let session = start(Config::new().output(&path)).unwrap();
    let n = paced(10, 700, Duration::from_millis(2), 0);
    let stats = session.finish_to_path(&other).unwrap();
    assert!(!path.exists(), "the configured output is left behind");
    assert_eq!(stats.output.as_deref(), Some(other.as_path()));
    let records = decode(&std::fs::read(&other).unwrap());
    assert_exactly_once(&stress_events(&records), 1, n);
    std::fs::remove_file(&other).unwrap();

    let session = start(Config::new().output(&path)).unwrap();
    let n = paced(10, 700, Duration::from_millis(2), 0);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert!(!path.exists(), "the configured output is left behind");
    assert_eq!(stats.bytes_written, bytes.len() as u64);
    assert_exactly_once(&stress_events(&decode(&bytes)), 1, n);
}

/// A snapshot of a drained session is the whole trace so far: the file
/// written out, then the chunks still in memory.
#[test]
fn snapshots_of_a_drained_session_are_whole() {
    let _g = serial();
    let path = temp_path("drain-snapshot.fxt");
    let session = start(Config::new().output(&path).buffer_size(16 << 20)).unwrap();
    let first = paced(20, 700, Duration::from_millis(2), 0);
    let (snap, snap_stats) = session.snapshot_to_vec().unwrap();
    let records = decode(&snap);
    assert_exactly_once(&stress_events(&records), 1, first);
    assert_eq!(snap_stats.records_written, records.len() as u64);
    assert_eq!(snap_stats.bytes_written, snap.len() as u64);
    let marker = records
        .iter()
        .filter(|r| matches!(r, Record::Event(e) if e.category == "fxt" && e.name == "snapshot"));
    assert_eq!(marker.count(), 1);
    let more = paced(20, 700, Duration::from_millis(2), first);
    let stats = session.finish().unwrap();
    let records = decode(&std::fs::read(&path).unwrap());
    assert_exactly_once(&stress_events(&records), 1, first + more);
    assert_eq!(stats.emitted_records_written, first + more);
    std::fs::remove_file(&path).unwrap();
}

/// Blobs larger than the streamer's staging (a 6 MB and a 9 MB split blob
/// group, many records each) reach a drained file whole: fillers pad only
/// between whole records.
#[test]
fn large_blobs_reach_a_drained_file_whole() {
    let _g = serial();
    let path = temp_path("drain-blobs.fxt");
    let session = start(Config::new().output(&path)).unwrap();
    let payload = |n: usize| -> Vec<u8> { (0..n).map(|i| (i * 13 + n) as u8).collect() };
    for n in [6_000_000, 9_000_000] {
        if let Some(site) = BLOB.site() {
            blob(site, &payload(n));
        }
        paced(2, 700, Duration::from_millis(2), 0);
    }
    let stats = session.finish().unwrap();
    assert_eq!(stats.records_dropped, 0, "{stats:?}");
    let bytes = std::fs::read(&path).unwrap();
    assert!(framing_issues(&bytes).is_empty());
    assert_eq!(viewer_walk(&bytes), decoder_walk(&bytes));
    decode_all(&bytes).expect("a valid trace");
    let blobs: Vec<Vec<u8>> = join_split_blobs(&bytes)
        .filter(|j| j.joined_parts > 0)
        .filter_map(|j| match j.item {
            Ok(Record::Blob(b)) => Some(b.payload.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(blobs, vec![payload(6_000_000), payload(9_000_000)]);
    std::fs::remove_file(&path).unwrap();
}
