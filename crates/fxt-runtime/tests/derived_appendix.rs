//! With feature `symbolize`, a program's own trace carries the records
//! readers derive (`fxt_symbols::derived`: a lock's `held` slices and the
//! arrows from each release to the wait it ended; a task's polls on its
//! track and the arrows of its wakes), so that it opens in a
//! viewer as `fxt open` serves it: threads take a named `fxt::sync` lock
//! in turn, and every output the session can read back ends with the
//! marker and exactly the records `fxt_symbols::derived::records` makes of
//! what precedes it (drained and in-memory oneshot, streaming, circular,
//! crash-safe; to a path, to a vec, a drained session to a writer;
//! snapshots to a path or a vec). The marker is there once, and deriving
//! the trace again (what `fxt symbolize` and `fxt open` do) adds nothing.
//! Where Perfetto's trace processor is (`$FXT_TRACE_PROCESSOR`, or where
//! its build puts it; not in CI), it reads each session's file as written
//! with every `held` slice and every arrow between two threads, and no
//! import error.
//! A non-drained session finished to a caller's writer cannot read it
//! back: that trace has the waits only, and the records to derive.
//!
//! No timing is asserted: each thread holds the lock across a sleep, so
//! the others wait for it on a loaded machine or one core alike.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use fxt_format::decode::{ArgValue, BlobType, EventKind, Record, SliceReader};
use fxt_format::derived::{lock, MARKER_NAME};
use fxt_format::encode::header::record_words;
use fxt_runtime::sync::Mutex;
use fxt_runtime::{Config, Mode};

const THREADS: usize = 3;
const ROUNDS: usize = 4;

/// Threads taking the lock "turns" in turn, each hold long enough for the
/// others to wait.
fn contend() {
    let turns = Arc::new(Mutex::named("turns", 0u32));
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (turns, barrier) = (turns.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..ROUNDS {
                    let mut g = turns.lock();
                    *g += 1;
                    std::thread::sleep(Duration::from_millis(2));
                    drop(g);
                    std::thread::yield_now();
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
}

/// The byte offset of each whole record of `trace`.
fn record_offsets(trace: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= trace.len() {
        let header = u64::from_le_bytes(trace[at..at + 8].try_into().unwrap());
        let size = record_words(header) as usize * 8;
        assert!(size > 0 && at + size <= trace.len(), "framing at {at}");
        out.push((at, size));
        at += size;
    }
    assert_eq!(at, trace.len(), "a partial record at the end");
    out
}

/// The offsets of the marker records in `trace`.
fn markers(trace: &[u8]) -> Vec<usize> {
    record_offsets(trace)
        .into_iter()
        .filter(|&(at, size)| {
            let one = SliceReader::new(&trace[at..at + size]).next();
            matches!(one, Some(Ok(Record::Blob(b)))
                if b.blob_type == BlobType::Data
                    && b.name.as_str() == Some(MARKER_NAME)
                    && b.payload.is_empty())
        })
        .map(|(at, _)| at)
        .collect()
}

/// Whether `e` has the string argument `state` = `value`.
fn state_is(e: &fxt_format::decode::Event, value: &str) -> bool {
    e.args
        .iter()
        .any(|a| a.name == lock::STATE && matches!(&a.value, ArgValue::Str(s) if *s == value))
}

/// What `bytes` holds of the lock "turns": (waits naming their holder,
/// `held` slices, flow begins, flow ends).
fn lock_records(bytes: &[u8]) -> (u64, u64, u64, u64) {
    let (mut waits, mut held, mut begins, mut ends) = (0, 0, 0, 0);
    for record in SliceReader::new(bytes) {
        let Ok(Record::Event(e)) = record else {
            continue;
        };
        if e.category != lock::CATEGORY {
            continue;
        }
        match e.kind {
            EventKind::DurationComplete { .. } if e.name == "turns" => {
                let holder = e.args.iter().any(|a| a.name == lock::HOLDER);
                waits += u64::from(state_is(&e, "wait") && holder);
                held += u64::from(state_is(&e, "held"));
            }
            EventKind::FlowBegin { .. } => begins += 1,
            EventKind::FlowEnd { .. } => ends += 1,
            _ => {}
        }
    }
    (waits, held, begins, ends)
}

/// `trace`, collected as `how`, ends with the marker and exactly the
/// records derived from what precedes it; deriving it again adds nothing.
fn check(trace: &[u8], how: &str) {
    common::decode(trace);
    let at = markers(trace);
    assert_eq!(at.len(), 1, "{how}: markers at {at:?}");
    let (before, appended) = trace.split_at(at[0]);
    let (waits, held, begins, ends) = lock_records(before);
    assert!(waits > 0, "{how}: no wait naming its holder");
    assert_eq!((held, begins, ends), (0, 0, 0), "{how}: the program draws");
    let derived = fxt_symbols::derived::records(before);
    assert_eq!(
        appended,
        fxt_format::encode::words_to_bytes(&derived),
        "{how}: the appended records are not those derived"
    );
    let (_, held, begins, ends) = lock_records(appended);
    assert!(held > 0, "{how}: no held slice");
    assert!(
        begins > 0 && begins == ends,
        "{how}: arrows {begins}/{ends}"
    );
    assert!(
        fxt_symbols::derived::records(trace).is_empty(),
        "{how}: a reader derives them again"
    );
}

/// Perfetto's trace_processor_shell at `$FXT_TRACE_PROCESSOR`, or where
/// Perfetto's build puts it; `None` where there is none (CI).
fn trace_processor() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("FXT_TRACE_PROCESSOR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/tmp/perfetto-src/out/tp/trace_processor_shell".into());
    path.is_file().then_some(path)
}

/// Where Perfetto's importer is present: the file as the program wrote it
/// shows every `held` slice of "turns" and every arrow, each from one
/// thread's `held` slice to another's `handoff` slice, and no import
/// error.
fn perfetto_draws_them(path: &std::path::Path, trace: &[u8], how: &str) {
    let Some(shell) = trace_processor() else {
        eprintln!("Perfetto check skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let query = "select \
         (select count(*) from slice s join args a on a.arg_set_id = s.arg_set_id \
          where s.category = 'lock' and s.name = 'turns' \
          and a.key = 'state' and a.string_value = 'held'), \
         (select count(*) from flow f \
           join slice o on f.slice_out = o.id join thread_track ot on o.track_id = ot.id \
           join slice i on f.slice_in = i.id join thread_track it on i.track_id = it.id \
          where o.category = 'lock' and i.category = 'lock' and ot.utid <> it.utid), \
         (select count(*) from flow f \
           join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id \
          where extract_arg(o.arg_set_id, 'state') = 'held' \
            and extract_arg(i.arg_set_id, 'state') = 'handoff'), \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);";
    let file = path.with_extension("sql");
    std::fs::write(&file, query).unwrap();
    let out = std::process::Command::new(shell)
        .arg("-q")
        .arg(&file)
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{how}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    let row: Vec<u64> = last
        .split(',')
        .map(|v| {
            v.trim()
                .trim_matches('"')
                .parse()
                .unwrap_or_else(|_| panic!("{text}"))
        })
        .collect();
    let at = markers(trace)[0];
    let (_, held, arrows, _) = lock_records(&trace[at..]);
    // Every arrow from a `held` slice to a `handoff` one: from the holder
    // to the waiter.
    assert_eq!(
        row,
        [held, arrows, arrows, 0],
        "{how}: Perfetto's held slices, arrows, arrows the right way, errors"
    );
    let _ = std::fs::remove_file(&file);
}

fn config(name: &str) -> (Config, std::path::PathBuf) {
    let path = common::temp_path(name);
    (Config::new().buffer_size(4 << 20).output(&path), path)
}

/// How a case shapes the common configuration.
type Shape = fn(Config) -> Config;

#[test]
fn every_session_finishing_to_its_file_appends_the_derived_records_once() {
    let _serial = common::serial();
    let cases: [(&str, Shape); 5] = [
        ("drained oneshot", |c| c),
        ("in-memory oneshot", |c| c.drain(false)),
        ("streaming", |c| c.mode(Mode::Streaming)),
        ("circular", |c| c.mode(Mode::Circular)),
        ("crash-safe", |c| c.crash_safe(true)),
    ];
    for (how, make) in cases {
        let (c, path) = config(&format!("derived-{}", how.replace(' ', "-")));
        let session = fxt_runtime::start(make(c)).unwrap();
        contend();
        let stats = session.finish().unwrap();
        let trace = std::fs::read(&path).unwrap();
        assert_eq!(stats.bytes_written, trace.len() as u64, "{how}: {stats:?}");
        check(&trace, how);
        perfetto_draws_them(&path, &trace, how);
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn finishing_to_a_path_a_vec_or_a_drained_writer_appends_them_too() {
    let _serial = common::serial();
    for (way, drain) in [
        ("path", true),
        ("path", false),
        ("vec", true),
        ("vec", false),
        ("writer", true),
    ] {
        let how = format!("{way}, drained {drain}");
        let (c, path) = config(&format!("derived-to-{way}-{drain}"));
        let session = fxt_runtime::start(c.drain(drain)).unwrap();
        contend();
        let other = common::temp_path(&format!("derived-other-{way}-{drain}"));
        let (trace, stats) = match way {
            "path" => {
                let stats = session.finish_to_path(&other).unwrap();
                (std::fs::read(&other).unwrap(), stats)
            }
            "vec" => session.finish_to_vec().unwrap(),
            _ => {
                let mut v = Vec::new();
                let stats = session.finish_to_writer(&mut v).unwrap();
                (v, stats)
            }
        };
        assert_eq!(stats.bytes_written, trace.len() as u64, "{how}");
        check(&trace, &how);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&other);
    }
}

#[test]
fn snapshots_to_a_path_or_a_vec_append_them() {
    let _serial = common::serial();
    let (c, path) = config("derived-snapshots");
    let session = fxt_runtime::start(c.drain(false)).unwrap();
    contend();
    let (snap_path, stats) = session.snapshot().unwrap();
    let trace = std::fs::read(&snap_path).unwrap();
    assert_eq!(stats.bytes_written, trace.len() as u64);
    check(&trace, "snapshot");
    let (trace, stats) = session.snapshot_to_vec().unwrap();
    assert_eq!(stats.bytes_written, trace.len() as u64);
    check(&trace, "snapshot to a vec");
    session.finish().unwrap();
    let _ = std::fs::remove_file(&snap_path);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_caller_writer_gets_the_waits_and_a_reader_derives_the_rest() {
    let _serial = common::serial();
    let (c, path) = config("derived-writer");
    let session = fxt_runtime::start(c.drain(false)).unwrap();
    contend();
    let mut trace = Vec::new();
    session.finish_to_writer(&mut trace).unwrap();
    assert!(markers(&trace).is_empty(), "a writer cannot be read back");
    assert!(lock_records(&trace).0 > 0, "no wait naming its holder");
    // What `fxt symbolize` appends makes it the trace a file gets.
    let derived = fxt_symbols::derived::records(&trace);
    trace.extend_from_slice(&fxt_format::encode::words_to_bytes(&derived));
    check(&trace, "writer, symbolized");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_traced_tasks_track_and_arrows_are_in_its_own_trace() {
    use fxt_runtime::task::TracedExt;
    let _serial = common::serial();
    let (c, path) = config("derived-tasks");
    let session = fxt_runtime::start(c.categories(&["task"])).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = tokio::sync::mpsc::channel::<u32>(1);
        let consumer = tokio::spawn(
            async move {
                let mut rx = rx;
                while rx.recv().await.is_some() {}
            }
            .traced("consumer"),
        );
        let producer = tokio::spawn(
            async move {
                for i in 0..20 {
                    tx.send(i).await.unwrap();
                    tokio::task::yield_now().await;
                }
            }
            .traced("producer"),
        );
        producer.await.unwrap();
        consumer.await.unwrap();
    });
    drop(rt);
    session.finish().unwrap();
    let trace = std::fs::read(&path).unwrap();
    assert_eq!(markers(&trace).len(), 1, "one marker");
    // The program wrote each poll once, as a slice; what follows the marker
    // draws them on the tasks' tracks, with an arrow for each wake.
    let (mut polls, mut track_begins, mut begins, mut ends) = (0, 0, 0, 0);
    let mut after = false;
    for record in SliceReader::new(&trace) {
        let e = match record {
            Ok(Record::Blob(b)) if b.name.as_str() == Some(MARKER_NAME) => {
                after = true;
                continue;
            }
            Ok(Record::Event(e)) if e.category == "task" => e,
            _ => continue,
        };
        match e.kind {
            EventKind::DurationComplete { .. } if !after => polls += 1,
            EventKind::AsyncBegin { .. } if after => track_begins += 1,
            EventKind::FlowBegin { .. } => {
                assert!(after, "the program writes no flow");
                begins += 1;
            }
            EventKind::FlowEnd { .. } => {
                assert!(after, "the program writes no flow");
                ends += 1;
            }
            _ => {}
        }
    }
    assert!(polls >= 20, "{polls} polls");
    assert_eq!(track_begins, polls, "each poll on its task's track");
    assert!(
        begins >= 20 && begins == ends,
        "{begins} arrows, {ends} ends"
    );
    let _ = std::fs::remove_file(&path);
}
