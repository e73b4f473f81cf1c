//! Helpers shared by the integration tests: emit through the public
//! `__macro_support` API (what the macros expand to) and decode with
//! `fxt_format::decode`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use fxt_format::decode::{self, ArgValue as DArg, Record, Thread};
use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};

pub mod events;

/// Sessions are process-global: tests of one binary run one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

static KEYS: [KeyCache; 2] = [KeyCache::NEW, KeyCache::NEW];
static EV: Callsite = Callsite::new("stress", "ev", &["thread", "seq"], &KEYS);

/// One instant event with arguments `thread` and `seq` (the stress shape).
#[inline]
pub fn emit(thread: u64, seq: u64) {
    if let Some(site) = EV.site() {
        instant(site, &[ArgValue::U64(thread), ArgValue::U64(seq)]);
    }
}

/// Emits `events` events on each of `threads` threads.
pub fn run_threads(threads: u64, events: u64) {
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                for i in 0..events {
                    emit(t, i);
                }
            });
        }
    });
}

/// Decodes a whole trace, failing the test on any error.
pub fn decode(bytes: &[u8]) -> Vec<Record> {
    match decode::decode_all(bytes) {
        Ok(r) => r,
        Err(e) => panic!("trace does not decode: {e}"),
    }
}

fn u64_arg(args: &[decode::Arg], name: &str) -> Option<u64> {
    args.iter()
        .find(|a| a.name == name)
        .and_then(|a| match a.value {
            DArg::U64(v) => Some(v),
            DArg::U32(v) => Some(v as u64),
            _ => None,
        })
}

/// The `(thread, seq)` arguments of every "ev" event, with the event's
/// thread koid; panics on any event with an unresolved ref.
pub fn stress_events(records: &[Record]) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    for r in records {
        if let Record::Event(e) = r {
            assert!(!e.category.is_undefined(), "unresolved category in {e:?}");
            assert!(!e.name.is_undefined(), "unresolved name in {e:?}");
            for a in &e.args {
                assert!(!a.name.is_undefined(), "unresolved key in {e:?}");
            }
            let tid = match e.thread {
                Thread::Known { thread, .. } => thread,
                Thread::Undefined(i) => panic!("unresolved thread ref {i} in {e:?}"),
            };
            if e.name == "ev" {
                let t = u64_arg(&e.args, "thread").expect("thread arg");
                let s = u64_arg(&e.args, "seq").expect("seq arg");
                out.push((t, s, tid));
            }
        }
    }
    out
}

/// Checks every `(thread, seq)` pair for `threads` x `events` appears
/// exactly once, and that each logical thread kept one OS thread id.
pub fn assert_exactly_once(evs: &[(u64, u64, u64)], threads: u64, events: u64) {
    assert_eq!(evs.len() as u64, threads * events, "event count");
    let mut seen = vec![false; (threads * events) as usize];
    let mut tids: HashMap<u64, u64> = HashMap::new();
    for &(t, s, tid) in evs {
        assert!(t < threads && s < events, "unexpected pair ({t}, {s})");
        let i = (t * events + s) as usize;
        assert!(!seen[i], "duplicate ({t}, {s})");
        seen[i] = true;
        let prev = *tids.entry(t).or_insert(tid);
        assert_eq!(prev, tid, "logical thread {t} changed koid");
    }
    let distinct: std::collections::HashSet<u64> = tids.values().copied().collect();
    assert_eq!(
        distinct.len(),
        tids.len(),
        "two logical threads share a koid"
    );
}

/// The records, checking the file's fixed preamble.
pub fn check_preamble(records: &[Record]) {
    assert_eq!(records[0], Record::Magic);
    assert!(
        matches!(records[1], Record::ProviderInfo { .. }),
        "{:?}",
        records[1]
    );
    assert!(
        matches!(records[2], Record::Initialization { .. }),
        "{:?}",
        records[2]
    );
}

/// Whether the trace ends with the "buffer filled up" provider event.
pub fn has_buffer_filled(records: &[Record]) -> bool {
    records
        .iter()
        .any(|r| matches!(r, Record::ProviderEvent { event: 0, .. }))
}

/// A temporary output path, unique per test.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = process_dir("fxt-runtime-tests-");
    std::fs::create_dir_all(dir).unwrap();
    dir.join(name)
}

/// This test process's temporary folder, `PREFIX<pid>` in the system's.
/// The first call removes the folders of test processes that have exited:
/// a test binary has no hook at its exit, and without this every run would
/// leave its traces behind (hundreds of megabytes a run).
fn process_dir(prefix: &str) -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let temp = std::env::temp_dir();
        // Where processes cannot be looked up, nothing is removed.
        if std::path::Path::new("/proc/self").exists() {
            let entries = std::fs::read_dir(&temp).into_iter().flatten().flatten();
            for entry in entries {
                let name = entry.file_name();
                let pid = name.to_str().and_then(|n| n.strip_prefix(prefix));
                let exited = pid.is_some_and(|pid| {
                    pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(pid).exists()
                });
                if exited {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        temp.join(format!("{prefix}{}", std::process::id()))
    })
}

/// Bytes of one [`emit`] record: header, timestamp and two 64-bit
/// arguments of two words each.
pub const EVENT_BYTES: u64 = 48;

/// Waits until the file at `path` is at least `len` bytes long, for pacing
/// a writer on the streamer's progress: a condition rather than a pause,
/// so a loaded machine or a single core makes the test slower, never
/// lossy. Panics after 60 s.
pub fn wait_for_len(path: &std::path::Path, len: u64) {
    let t0 = std::time::Instant::now();
    loop {
        let now = std::fs::metadata(path).map_or(0, |m| m.len());
        if now >= len {
            return;
        }
        assert!(
            t0.elapsed().as_secs() < 60,
            "{} is {now} bytes after 60 s, waiting for {len}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}
