//! fxt's threads do not inherit a real-time caller's scheduling.
//!
//! ```text
//! cargo test -p fxt-runtime --test realtime
//! ```
//!
//! This program is the real-time caller: its main thread makes itself
//! `SCHED_RR` 1 (`sched_setscheduler`, as `chrt -r 1` would), then starts a
//! session in each mode (drained oneshot, circular, streaming, crash-safe,
//! with a snapshot signal, which it raises) with a provider registered
//! (`register_provider`: its listener thread), records from its own thread,
//! and reads every thread's policy from `/proc/self/task/*/stat` (field 41)
//! with its name (`comm`) while the session runs: no `fxt-` thread is at
//! `SCHED_RR` or `SCHED_FIFO`, the prefaulter is at `SCHED_IDLE`, and the
//! caller is still `SCHED_RR`. With `HelperScheduling::Inherit`, the
//! streamer is `SCHED_RR` (what the default prevents, seen by the same
//! reading). Without the privilege to become real time (not root: EPERM)
//! it says so and checks the rest; with `CI` set it fails instead.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use fxt_runtime::{Config, HelperScheduling, Mode};

/// How long a condition may take to become true on a loaded machine.
const BOUND: Duration = Duration::from_secs(30);

/// Each thread of this process: its name and its policy (`SCHED_*`).
fn threads() -> HashMap<u32, (String, i32)> {
    let mut out = HashMap::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("read /proc/self/task") {
        let dir = entry.unwrap().path();
        let tid: u32 = dir.file_name().unwrap().to_str().unwrap().parse().unwrap();
        // A thread that exited between the listing and the reads is skipped.
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("stat")),
        ) else {
            continue;
        };
        out.insert(tid, (comm.trim().to_string(), policy_of(&stat)));
    }
    out
}

/// Field 41 (`policy`) of a `stat` line; the name (field 2, in parentheses)
/// may hold spaces, so fields are counted after its closing parenthesis
/// (which ends field 2: the next one is field 3).
fn policy_of(stat: &str) -> i32 {
    let rest = &stat[stat.rfind(')').expect("stat has (comm)") + 1..];
    rest.split_whitespace()
        .nth(41 - 3)
        .and_then(|f| f.parse().ok())
        .expect("stat field 41")
}

fn policy_name(p: i32) -> &'static str {
    match p {
        libc::SCHED_OTHER => "SCHED_OTHER",
        libc::SCHED_FIFO => "SCHED_FIFO",
        libc::SCHED_RR => "SCHED_RR",
        libc::SCHED_BATCH => "SCHED_BATCH",
        libc::SCHED_IDLE => "SCHED_IDLE",
        _ => "other",
    }
}

/// What one session's threads must show.
struct Expect {
    /// Thread names that must be seen (they live as long as the session).
    present: &'static [&'static str],
    /// The policy the `present` threads but the prefaulter must have;
    /// `None` (and for every other `fxt-` thread): not real time.
    helpers: Option<i32>,
}

/// Waits (at most [`BOUND`]) until the threads of the process satisfy
/// `expect`; panics with the last reading otherwise. A helper sets its
/// policy first thing after it starts, so the wait only covers its start.
fn check_threads(label: &str, expect: &Expect) {
    let t0 = Instant::now();
    loop {
        let seen = threads();
        let fxt: Vec<&(String, i32)> = seen.values().filter(|t| t.0.starts_with("fxt-")).collect();
        let missing: Vec<&&str> = expect
            .present
            .iter()
            .filter(|name| !fxt.iter().any(|t| t.0 == **name))
            .collect();
        let wrong: Vec<String> = fxt
            .iter()
            .filter(|(name, policy)| {
                if name == "fxt-prefault" {
                    *policy != libc::SCHED_IDLE
                } else {
                    match expect.helpers {
                        Some(p) if expect.present.contains(&name.as_str()) => *policy != p,
                        _ => matches!(*policy, libc::SCHED_FIFO | libc::SCHED_RR),
                    }
                }
            })
            .map(|(name, policy)| format!("{name} at {}", policy_name(*policy)))
            .collect();
        if missing.is_empty() && wrong.is_empty() {
            let names: Vec<String> = fxt
                .iter()
                .map(|(n, p)| format!("{n}={}", policy_name(*p)))
                .collect();
            println!("realtime: {label}: {}", names.join(", "));
            return;
        }
        assert!(
            t0.elapsed() < BOUND,
            "{label}: missing {missing:?}, wrong policy {wrong:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The calling thread's policy.
fn own_policy() -> i32 {
    // SAFETY: pid 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

/// Runs one session of `config` from this (real-time) thread and checks
/// its threads while it runs; with `snapshot`, raises SIGUSR1 and waits
/// for the snapshot thread to write that file.
fn session(label: &str, config: Config, expect: &Expect, snapshot: Option<&Path>) {
    let caller = own_policy();
    let session = fxt_runtime::start(config).expect("start");
    common::run_threads(1, 10_000);
    if let Some(path) = snapshot {
        // SAFETY: raising the signal the session installed a handler for.
        assert_eq!(unsafe { libc::raise(libc::SIGUSR1) }, 0);
        wait_for(path);
    }
    check_threads(label, expect);
    assert_eq!(own_policy(), caller, "{label}: the caller's policy changed");
    let stats = session.finish().expect("finish");
    assert_eq!(stats.records_dropped, 0, "{label}");
    assert_eq!(stats.helper_sched_failures, 0, "{label}: {stats:?}");
}

/// Waits until `path` exists (the snapshot thread wrote it).
fn wait_for(path: &Path) {
    let t0 = Instant::now();
    while !path.exists() {
        assert!(t0.elapsed() < BOUND, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("realtime: test");
        return;
    }
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling (main) thread; `param` is valid.
    let realtime = unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) } == 0;
    if !realtime {
        let e = std::io::Error::last_os_error();
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test as root: cannot become SCHED_RR: {e}"
        );
        println!("realtime: cannot become SCHED_RR ({e}; not root?): checking the helpers without a real-time caller");
    }
    assert_eq!(own_policy() == libc::SCHED_RR, realtime);
    // A provider's listener, started from the real-time thread too: it
    // lives beside every session below and is checked with them.
    let _provider = fxt_runtime::register_provider("realtime").expect("register the provider");
    let out = |name: &str| common::temp_path(name);
    let normal = Expect {
        present: &["fxt-stream", "fxt-prefault", "fxt-provider"],
        helpers: None,
    };
    let in_memory = Expect {
        present: &["fxt-provider"],
        helpers: None,
    };
    let big = 16 << 20;
    let cases = [
        ("drained oneshot", Config::new(), &normal),
        (
            "circular",
            Config::new().buffer_size(big).mode(Mode::Circular),
            &in_memory,
        ),
        ("streaming", Config::new().mode(Mode::Streaming), &normal),
        (
            "crash-safe",
            Config::new().buffer_size(big).crash_safe(true),
            &in_memory,
        ),
    ];
    for (label, config, expect) in cases {
        let file = out(&format!("{}.fxt", label.replace(' ', "-")));
        session(label, config.output(&file), expect, None);
    }
    let snap_out = out("signal.fxt");
    let signal = Expect {
        present: &["fxt-stream", "fxt-prefault", "fxt-snapshot", "fxt-provider"],
        helpers: None,
    };
    let config = Config::new()
        .output(&snap_out)
        .snapshot_signal(libc::SIGUSR1);
    let snapshot = snap_out.with_file_name("signal.snapshot-1.fxt");
    session("snapshot signal", config, &signal, Some(&snapshot));
    if realtime {
        // The same reading sees inheritance: with `Inherit`, the streamer
        // runs at the caller's SCHED_RR.
        let inherit = Expect {
            present: &["fxt-stream"],
            helpers: Some(libc::SCHED_RR),
        };
        let config = Config::new()
            .output(out("inherit.fxt"))
            .helper_scheduling(HelperScheduling::Inherit);
        session("inherit", config, &inherit, None);
    }
    assert_eq!(own_policy() == libc::SCHED_RR, realtime);
    let _ = std::fs::remove_dir_all(out("x").parent().unwrap());
    println!("realtime: ok");
}
