//! Snapshots of a live session: 4 threads write continuously while 20
//! snapshots are taken, in each mode. Every snapshot is a valid trace on its
//! own (strict decode, Perfetto's framing walk), says which snapshot it is,
//! and misses no event it does not count as dropped. In oneshot mode, whose
//! file limit here leaves every lease a chunk, each thread's events are a
//! contiguous run from 0. In circular and streaming modes a thread keeps
//! its newest events, with gaps only where records were counted as dropped:
//! a writer preempted between taking a sequence number and claiming its
//! chunk lets a later writer overwrite a newer chunk first (circular), and
//! a streamer behind the writers leaves them no chunk (streaming). The
//! final finish still holds everything (oneshot), and written + dropped ==
//! emitted.
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::*;
use fxt_format::decode::{decode_all, ArgValue, Record};
use fxt_runtime::{start, Config, Mode};

const THREADS: u64 = 4;

/// The snapshot number the file's marker event carries (exactly one).
fn marker(records: &[Record]) -> u64 {
    let found: Vec<u64> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) if e.category == "fxt" && e.name == "snapshot" => {
                match e.args.first().map(|a| (&a.name, &a.value)) {
                    Some((k, ArgValue::U64(n))) if k == "snapshot" => Some(*n),
                    other => panic!("a snapshot marker with {other:?}"),
                }
            }
            _ => None,
        })
        .collect();
    assert_eq!(found.len(), 1, "one snapshot marker: {found:?}");
    found[0]
}

/// Each thread's sequence numbers in `records`, sorted.
fn per_thread(records: &[Record]) -> Vec<Vec<u64>> {
    let mut per = vec![Vec::new(); THREADS as usize];
    for (t, s, _) in stress_events(records) {
        per[t as usize].push(s);
    }
    for v in &mut per {
        v.sort_unstable();
    }
    per
}

fn contiguous(seqs: &[u64]) -> bool {
    seqs.windows(2).all(|w| w[1] == w[0] + 1)
}

fn run(mode: Mode, buffer: usize) {
    let _g = serial();
    let path = temp_path(&format!("snapshot-{mode:?}.fxt"));
    // A drained oneshot session stops at its file limit: half the buffer
    // here, under the ring's share of it, so that every lease finds a
    // chunk even while a snapshot holds the streamer, and each thread
    // keeps a prefix. (With a limit past the ring, a writer finding every
    // chunk waiting to be written out drops records, counted, and goes on
    // after them once a chunk is freed.)
    let config = Config::new().mode(mode).buffer_size(buffer);
    let session = start(config.file_limit(buffer as u64 / 2).output(&path)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let emitted: Arc<Vec<AtomicU64>> = Arc::new((0..THREADS).map(|_| AtomicU64::new(0)).collect());
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (stop, emitted) = (stop.clone(), emitted.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) || i < 1000 {
                    emit(t, i);
                    i += 1;
                    emitted[t as usize].store(i, Ordering::Relaxed);
                    if i % 32 == 0 {
                        // At most a few hundred thousand events per second.
                        std::thread::sleep(std::time::Duration::from_micros(100));
                    }
                }
            })
        })
        .collect();
    for n in 1..=20u64 {
        std::thread::sleep(std::time::Duration::from_millis(2));
        let (bytes, stats) = session.snapshot_to_vec().unwrap();
        let records = decode_all(&bytes).unwrap_or_else(|e| panic!("snapshot {n}: {e}"));
        check_preamble(&records);
        assert!(fxt_format::compat::framing_issues(&bytes).is_empty());
        assert_eq!(marker(&records), n);
        assert_eq!(stats.records_written, records.len() as u64);
        let mut missing = 0;
        for (t, seqs) in per_thread(&records).iter().enumerate() {
            // Gaps (circular, streaming) are records counted as dropped.
            missing += seqs.windows(2).map(|w| w[1] - w[0] - 1).sum::<u64>();
            assert!(
                mode != Mode::Oneshot || contiguous(seqs),
                "{mode:?} snapshot {n}, thread {t}: a gap in {} events ({stats:?})",
                seqs.len()
            );
            if mode == Mode::Oneshot {
                assert!(seqs.first().is_none_or(|&s| s == 0), "thread {t} from 0");
            }
        }
        assert!(
            missing <= stats.records_dropped,
            "{mode:?} snapshot {n}: {missing} missing, {} counted as dropped",
            stats.records_dropped
        );
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let stats = session.finish().unwrap();
    let records = decode_all(&std::fs::read(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    let total: u64 = emitted.iter().map(|e| e.load(Ordering::Relaxed)).sum();
    assert_eq!(
        stats.emitted_records_written + stats.records_dropped,
        total,
        "{mode:?}: {stats:?}"
    );
    if mode == Mode::Oneshot {
        // The final file holds what the buffer kept: each thread from 0.
        for seqs in per_thread(&records) {
            assert!(contiguous(&seqs) && seqs.first().is_none_or(|&s| s == 0));
        }
    }
    assert!(
        !records
            .iter()
            .any(|r| matches!(r, Record::Event(e) if e.category == "fxt")),
        "the final file is not a snapshot"
    );
}

#[test]
fn snapshots_while_writing_oneshot() {
    run(Mode::Oneshot, 16 << 20);
}

#[test]
fn snapshots_while_writing_circular() {
    run(Mode::Circular, 1 << 20);
}

#[test]
fn snapshots_while_writing_streaming() {
    run(Mode::Streaming, 4 << 20);
}

#[test]
fn snapshot_files_next_to_the_output() {
    let _g = serial();
    let path = temp_path("snapshot-files.fxt");
    let session = start(Config::new().output(&path)).unwrap();
    run_threads(2, 1000);
    let (p1, _) = session.snapshot().unwrap();
    let (p2, s2) = fxt_runtime::snapshot().unwrap();
    assert_eq!(
        p1,
        path.with_file_name(format!(
            "{}.snapshot-1.fxt",
            path.file_stem().unwrap().to_string_lossy()
        ))
    );
    assert_ne!(p1, p2);
    let records = decode_all(&std::fs::read(&p2).unwrap()).unwrap();
    assert_eq!(marker(&records), 2);
    assert_eq!(s2.emitted_records_written, 2000);
    session.finish().unwrap();
    assert!(matches!(
        fxt_runtime::snapshot(),
        Err(fxt_runtime::CollectError::NoSession)
    ));
    for p in [path, p1, p2] {
        std::fs::remove_file(p).unwrap();
    }
}

/// `Config::snapshot_signal`: the signal writes a snapshot next to the
/// output (by the `fxt-snapshot` thread; the handler only wakes it), and
/// the session keeps recording.
#[test]
fn a_signal_writes_a_snapshot() {
    let _g = serial();
    let path = temp_path("snapshot-signal.fxt");
    let snap = path.with_file_name(format!(
        "{}.snapshot-1.fxt",
        path.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_file(&snap);
    let session = start(Config::new().output(&path).snapshot_signal(libc::SIGUSR1)).unwrap();
    run_threads(2, 500);
    // SAFETY: `raise` has no preconditions; the handler is installed.
    assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
    let t0 = std::time::Instant::now();
    let records = loop {
        if let Ok(bytes) = std::fs::read(&snap) {
            break decode_all(&bytes).unwrap();
        }
        assert!(t0.elapsed().as_secs() < 10, "no snapshot after the signal");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(marker(&records), 1);
    assert_exactly_once(&stress_events(&records), 2, 500);
    let stats = session.finish().unwrap();
    assert_eq!(stats.emitted_records_written, 1000);
    std::fs::remove_file(&snap).unwrap();
    std::fs::remove_file(&path).unwrap();
}

/// A record emitted for a session that is over (a duration guard that
/// outlives its session's finish) is in no file: the next finish counts it.
#[test]
fn records_after_the_end_are_counted_by_the_next_finish() {
    use fxt_runtime::__macro_support::{Callsite, DurationGuard, KeyCache};
    static KEYS: [KeyCache; 0] = [];
    static SITE: Callsite = Callsite::new("late", "guard", &[], &KEYS);
    let _g = serial();
    let first = start(Config::new().output(temp_path("late-1.fxt"))).unwrap();
    let guards: Vec<_> = (0..3).map(|_| DurationGuard::new(SITE.site())).collect();
    let (_, stats) = first.finish_to_vec().unwrap();
    assert_eq!(stats.emitted_records_written, 0);
    drop(guards); // three durations of the finished session
    let second = start(Config::new().output(temp_path("late-2.fxt"))).unwrap();
    emit(0, 0);
    let (_, stats) = second.finish_to_vec().unwrap();
    assert_eq!(stats.emitted_records_written, 1);
    assert_eq!(stats.late_records_dropped, 3, "{stats:?}");
}
