//! Crash-safe mode: a process killed with `SIGKILL` mid-trace leaves a
//! valid trace of what it published.
//!
//! ```text
//! cargo test -p fxt-runtime --release --test crash_kill
//! ```
//!
//! The test re-executes itself as a child (environment variable
//! `FXT_CRASH_KILL_CHILD=mode:path`) that traces from 4 threads, started a
//! few milliseconds apart (so threads register, and the durable region
//! grows, while others write), each emitting events with arguments
//! `thread` and `seq` (and a log record now and then) and counting what it
//! published; the child's main thread prints the counts every
//! millisecond. The parent kills it with `SIGKILL` after a delay, then
//! decodes the file with `fxt_format::decode::decode_all`, which must
//! succeed (no error: the file is valid as it is), with every ref
//! resolved, no record torn, and:
//!
//! * oneshot: each thread's `seq`s are exactly `0..n` with `n` at least
//!   the count the child reported last before the kill;
//! * circular (a 1 MiB buffer that wraps all the time, so chunks are
//!   erased and reused under the kill): no duplicate, and some thread kept
//!   every event it reported (a thread preempted between two chunks may
//!   lose its newest chunk to the others, as in any circular session);
//! * drained (the default session, not crash-safe: its file is written as
//!   it runs): each thread's `seq`s are `0..n` in file order (what was
//!   written out; the chunks in progress die with the process), and after
//!   150 ms some events are there.
//!
//! `FXT_CRASH_CHECK=path` only decodes and summarizes a file (for example
//! one left by `stress --crash-safe --forever` killed by hand).

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fxt_format::decode::{decode_all, Record};
use fxt_runtime::__macro_support::{log, Callsite, KeyCache};
use fxt_runtime::{Config, Mode};

const CHILD: &str = "FXT_CRASH_KILL_CHILD";
const THREADS: usize = 4;

static LOG_KEYS: [KeyCache; 0] = [];
static LOG: Callsite = Callsite::new("stress", "log", &[], &LOG_KEYS);

fn child(spec: &str) -> ! {
    let (mode, path) = spec.split_once(':').expect("mode:path");
    let (mode, buffer, throttle, crash_safe) = match mode {
        "oneshot" => (Mode::Oneshot, 128 << 20, true, true),
        "circular" => (Mode::Circular, 1 << 20, false, true),
        // The default: not crash-safe, drained to the file as it runs.
        "drained" => (Mode::Oneshot, 128 << 20, true, false),
        m => panic!("unknown mode {m}"),
    };
    let session = fxt_runtime::start(
        Config::new()
            .mode(mode)
            .buffer_size(buffer)
            .output(path)
            .crash_safe(crash_safe),
    )
    .expect("start");
    // For the kills right after `start` (see `run_early`).
    println!("started");
    std::mem::forget(session);
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..THREADS).map(|_| AtomicU64::new(0)).collect());
    for t in 0..THREADS {
        let counts = counts.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(3 * t as u64));
            for i in 0u64.. {
                common::emit(t as u64, i);
                // Release: the count is printed after the event it counts
                // was published.
                counts[t].store(i + 1, Ordering::Release);
                if i % 1000 == 999 {
                    if let Some(site) = LOG.site() {
                        log(site, &format!("thread {t} passed {i}"));
                    }
                }
                if throttle && i % 64 == 63 {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        });
    }
    let mut out = std::io::stdout().lock();
    loop {
        let line: Vec<String> = counts
            .iter()
            .map(|c| c.load(Ordering::Acquire).to_string())
            .collect();
        writeln!(out, "c {}", line.join(" ")).unwrap();
        out.flush().unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Decodes a file that must be valid; returns per-thread `seq`s in file
/// order, and the number of fillers.
fn check_file(path: &Path) -> (HashMap<u64, Vec<u64>>, usize) {
    let bytes = std::fs::read(path).expect("read the trace");
    assert_eq!(bytes.len() % 8, 0, "file size");
    let records =
        decode_all(&bytes).unwrap_or_else(|e| panic!("{}: invalid trace: {e}", path.display()));
    // Perfetto and Tracy size every record by header bits 4-15: they walk
    // it record for record as the decoder does.
    let framing = fxt_format::compat::framing_issues(&bytes);
    assert!(framing.is_empty(), "{}: {framing:?}", path.display());
    common::check_preamble(&records);
    let mut fillers = 0;
    for r in &records {
        match r {
            Record::Unknown(u) => panic!("unknown record {u:?}"),
            Record::String { index: 0, value } => {
                assert!(value.is_empty(), "filler with a value");
                fillers += 1;
            }
            _ => {}
        }
    }
    // Resolves every ref (panics otherwise), checks the arguments.
    let evs = common::stress_events(&records);
    let mut per: HashMap<u64, Vec<u64>> = HashMap::new();
    for (t, s, _) in evs {
        per.entry(t).or_default().push(s);
    }
    (per, fillers)
}

fn run(mode: &str, delay: Duration) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!(
        "crash-{mode}-{}-{}.fxt",
        delay.as_millis(),
        std::process::id()
    ));
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, format!("{mode}:{}", path.display()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let latest: Arc<Mutex<Option<Vec<u64>>>> = Arc::new(Mutex::new(None));
    let reader = {
        let latest = latest.clone();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(rest) = line.strip_prefix("c ") {
                    let v: Vec<u64> = rest.split(' ').map(|x| x.parse().unwrap()).collect();
                    *latest.lock().unwrap() = Some(v);
                }
            }
        })
    };
    // Wait until every thread published something, then the delay.
    let t0 = Instant::now();
    loop {
        if latest
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|v| v.iter().all(|&c| c > 0))
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the child did not start"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(delay);
    if mode == "drained" && delay >= Duration::from_millis(150) {
        // The later kills are meant to find chunks written out: wait for
        // them (the streamer may get no core for a while on a loaded
        // machine) rather than trusting the delay.
        common::wait_for_len(&path, 1 << 20);
    }
    let reported = latest.lock().unwrap().clone().unwrap();
    child.kill().expect("SIGKILL"); // SIGKILL on Unix
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert!(!status.success());

    if mode == "drained"
        && delay < Duration::from_millis(150)
        && std::fs::metadata(&path).map_or(0, |m| m.len()) == 0
    {
        // Killed before the streamer's first write (its thread can start
        // late on a loaded machine): an empty file, nothing torn.
        println!(
            "  {mode} killed after {:>3} ms: nothing written yet: ok",
            delay.as_millis()
        );
        std::fs::remove_file(&path).unwrap();
        return;
    }
    let (per, fillers) = check_file(&path);
    let total: usize = per.values().map(Vec::len).sum();
    let mut up_to_date = 0;
    for t in 0..THREADS as u64 {
        let seqs = per.get(&t).cloned().unwrap_or_default();
        let r = reported[t as usize];
        match mode {
            "oneshot" => {
                let mut sorted = seqs.clone();
                sorted.sort_unstable();
                let n = sorted.len() as u64;
                assert!(
                    sorted.iter().copied().eq(0..n),
                    "thread {t}: seqs are not 0..{n}"
                );
                assert!(
                    n >= r,
                    "thread {t}: {n} events in the file, {r} published before the kill"
                );
            }
            "drained" => {
                // What was written out: each thread's events a prefix, in
                // order (its chunk in progress is lost with the process).
                let n = seqs.len() as u64;
                assert!(
                    seqs.iter().copied().eq(0..n),
                    "thread {t}: seqs are not 0..{n} in order"
                );
            }
            _ => {
                let mut sorted = seqs.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), seqs.len(), "thread {t}: duplicate seq");
                let newest = sorted.last().map_or(0, |s| s + 1);
                if newest >= r {
                    up_to_date += 1;
                }
            }
        }
    }
    if mode == "drained" && delay >= Duration::from_millis(150) {
        // Killed once a megabyte was written: chunks of events were.
        assert!(total > 0, "nothing written out after {delay:?}");
    }
    if mode == "circular" {
        // A thread's newest records are in the file while it owns their
        // chunk; a thread preempted between releasing a full chunk and
        // publishing in the next one (e.g. while erasing it) can see the
        // others overwrite it, as in any circular session. At least the
        // threads that were running keep what they reported.
        assert!(
            up_to_date > 0,
            "no thread kept its newest events: {reported:?}"
        );
        assert!(total > 0);
    }
    println!(
        "  {mode} killed after {:>3} ms: {total} events ({:?} reported), {fillers} fillers: ok",
        delay.as_millis(),
        reported
    );
    std::fs::remove_file(&path).unwrap();
}

/// Kills the child `delay` after its `start` returned (or, with
/// `after_spawn`, `delay` after it was spawned, whatever it was doing),
/// then checks the file if there is one: it must be a valid trace as it is,
/// each thread's events a prefix `0..n`.
fn run_early(delay: Duration, after_spawn: bool) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!(
        "crash-early-{}-{after_spawn}-{}.fxt",
        delay.as_micros(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, format!("oneshot:{}", path.display()))
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    if !after_spawn {
        let first = lines.next().expect("the child speaks").unwrap();
        assert_eq!(first, "started");
    }
    let t0 = Instant::now();
    while t0.elapsed() < delay {
        std::hint::spin_loop();
    }
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    drop(lines);
    if !path.exists() {
        assert!(after_spawn, "no file after start returned");
        println!("  killed {delay:?} after spawn: no file yet: ok");
        return;
    }
    let (per, fillers) = check_file(&path);
    for (t, seqs) in &per {
        let mut sorted = seqs.clone();
        sorted.sort_unstable();
        let n = sorted.len() as u64;
        assert!(
            sorted.iter().copied().eq(0..n),
            "thread {t}: seqs are not 0..{n}"
        );
    }
    let total: usize = per.values().map(Vec::len).sum();
    let when = if after_spawn { "spawn" } else { "start" };
    println!("  killed {delay:?} after {when}: {total} events, {fillers} fillers: ok");
    std::fs::remove_file(&path).unwrap();
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
    }
    if let Ok(path) = std::env::var("FXT_CRASH_CHECK") {
        let (per, fillers) = check_file(Path::new(&path));
        let mut threads: Vec<_> = per
            .iter()
            .map(|(t, s)| (*t, s.len(), s.iter().max().copied().unwrap_or(0)))
            .collect();
        threads.sort_unstable();
        println!("{path}: valid; (thread, events, newest seq) {threads:?}; {fillers} fillers");
        return;
    }
    println!("crash_kill:");
    for delay in [5, 40, 150] {
        run("oneshot", Duration::from_millis(delay));
    }
    for delay in [5, 40, 150] {
        run("circular", Duration::from_millis(delay));
    }
    for delay in [5, 40, 150] {
        run("drained", Duration::from_millis(delay));
    }
    // Random moments within the first milliseconds: right after spawn
    // (before, during or after `start`) and within 1 ms of `start`
    // returning (the file still growing ahead of the writers).
    let mut seed = Instant::now().elapsed().as_nanos() as u64 ^ u64::from(std::process::id());
    let mut next = move |bound: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % bound
    };
    for _ in 0..6 {
        run_early(Duration::from_micros(next(20_000)), true);
    }
    for _ in 0..6 {
        run_early(Duration::from_micros(next(1000)), false);
    }
    println!("test result: ok.");
}
