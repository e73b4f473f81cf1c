//! The cost of a session's life outside the hot loop: how long `start()`
//! and `finish()` take for a given buffer size, default or crash-safe, and
//! what an event costs during the first pass over a fresh buffer (where
//! every page is new) with each configuration.
//!
//! Each measurement runs in its own fresh process (the `bench-table`
//! children `--start-finish` and `--first-pass`), as a program that starts
//! one session would.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use fxt::Config;

/// Bytes of one instant record without arguments (header + timestamp).
const INSTANT_BYTES: usize = 16;

/// A scratch output path for this process (removed by the callers).
fn scratch(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fxt-bench-{tag}-{}.fxt", std::process::id()))
}

/// The configuration of one lifecycle cell: a oneshot session of `bytes`,
/// crash-safe or not, prefaulted in `start` or by default (the background
/// prefaulter: `.prefault(false)` would turn it off), writing to `output`.
fn config(bytes: usize, crash_safe: bool, prefault: bool, output: &PathBuf) -> Config {
    let config = Config::new()
        .buffer_size(bytes)
        .crash_safe(crash_safe)
        .output(output);
    if prefault {
        config.prefault(true)
    } else {
        config
    }
}

/// Child `--start-finish BYTES CRASH_SAFE(0|1)`: times `fxt::start`, one
/// instant, and `Session::finish` (to the configured file, which is then
/// removed). Prints `LIFE <start ms> <finish ms>`.
pub fn start_finish_child(args: &[String]) {
    let bytes: usize = args[0].parse().expect("buffer bytes");
    let crash_safe = args[1] == "1";
    let path = scratch("life");
    let t0 = Instant::now();
    let session = fxt::start(config(bytes, crash_safe, false, &path)).expect("start a session");
    let started = t0.elapsed();
    fxt::trace_instant!("bench", "one");
    let t1 = Instant::now();
    let stats = session.finish().expect("finish the session");
    let finished = t1.elapsed();
    let _ = std::fs::remove_file(&path);
    assert!(
        stats.emitted_records_written >= 1,
        "the event is in the trace"
    );
    println!(
        "LIFE {:.3} {:.3}",
        started.as_secs_f64() * 1e3,
        finished.as_secs_f64() * 1e3
    );
}

/// Child `--first-pass BYTES CRASH_SAFE(0|1) PREFAULT(0|1)`: starts a
/// session, then times one thread writing instants over 90% of the buffer
/// (the first pass: every page is touched for the first time by the
/// writer, unless something touched it before). Prints `PASS <ns per
/// event> <start ms>`.
pub fn first_pass_child(args: &[String]) {
    let bytes: usize = args[0].parse().expect("buffer bytes");
    let crash_safe = args[1] == "1";
    let prefault = args[2] == "1";
    let path = scratch("pass");
    let t0 = Instant::now();
    let session = fxt::start(config(bytes, crash_safe, prefault, &path)).expect("start a session");
    let started = t0.elapsed();
    let events = (bytes / INSTANT_BYTES) as u64 * 9 / 10;
    let t1 = Instant::now();
    for _ in 0..events {
        fxt::trace_instant!("bench", "pass");
    }
    let wall = t1.elapsed();
    black_box(&session);
    let stats = session
        .finish_to_writer(std::io::sink())
        .expect("collect the session");
    let _ = std::fs::remove_file(&path);
    let note = if stats.records_dropped > 0 {
        format!(" ({} dropped)", stats.records_dropped)
    } else {
        String::new()
    };
    println!(
        "PASS {:.3} {:.3}{note}",
        wall.as_nanos() as f64 / events as f64,
        started.as_secs_f64() * 1e3
    );
}
