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
//! `SCHED_RR` or `SCHED_FIFO`, the prefaulter is at the normal policy
//! (started by a real-time thread; `SCHED_IDLE` when the caller could not
//! become real time), and the caller is still `SCHED_RR`. With `HelperScheduling::Inherit`, the
//! streamer is `SCHED_RR` (what the default prevents, seen by the same
//! reading). Without the privilege to become real time (not root: EPERM)
//! it says so and checks the rest; with `CI` set it fails instead.
//!
//! Then, in a child process of its own (a fresh registry of helpers), it
//! checks where the helpers may run (`Cpus_allowed_list` of
//! `/proc/self/task/*/status`): a writer at the normal policy leaves every
//! helper's affinity as the program's; a `SCHED_RR` writer (on a CPU the
//! test pins it to, to know which) moves every helper below real time off
//! its CPU, and helpers of a later session start off it; on a single
//! allowed CPU nothing is taken from a helper. A session started from a
//! normal thread has its prefaulter at `SCHED_IDLE` until a real-time
//! writer finds it behind, which raises it to the normal policy.

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
    // Started by this thread: normal beside a real-time caller, else idle.
    let prefaulter = if own_policy() == libc::SCHED_RR {
        libc::SCHED_OTHER
    } else {
        libc::SCHED_IDLE
    };
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
                    *policy != prefaulter
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

/// The CPUs in a `Cpus_allowed_list` value (`0-3,6`).
fn parse_cpus(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        out.extend(lo.parse::<usize>().unwrap()..=hi.parse::<usize>().unwrap());
    }
    out
}

/// The CPUs thread `tid` of this process may run on.
fn cpus_of(tid: &str) -> Vec<usize> {
    let status =
        std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(parse_cpus)
        .unwrap_or_default()
}

/// The allowed CPUs of each live `fxt-` thread, once `names` are all there.
fn helper_cpus(names: &[&str]) -> Vec<(String, Vec<usize>)> {
    let t0 = Instant::now();
    loop {
        let fxt: Vec<(String, Vec<usize>)> = threads()
            .into_iter()
            .filter(|(_, (name, _))| name.starts_with("fxt-"))
            .map(|(tid, (name, _))| (name, cpus_of(&tid.to_string())))
            .collect();
        if names.iter().all(|n| fxt.iter().any(|(name, _)| name == n)) {
            return fxt;
        }
        assert!(t0.elapsed() < BOUND, "helpers {names:?} missing: {fxt:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Records from a new thread pinned to `cpu`, at the normal policy or at
/// the caller's (inherited) real-time one: enough events to lease fresh
/// chunks of the drained ring (each one a point where helpers are behind).
fn write_from(cpu: usize, normal: bool) {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: zeroed is a valid empty cpu_set_t; CPU_SET with an
            // index below CPU_SETSIZE; pid 0 is the calling thread.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                assert_eq!(
                    libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set),
                    0
                );
            }
            if normal {
                let param = libc::sched_param { sched_priority: 0 };
                // SAFETY: pid 0 is the calling thread; `param` is valid.
                assert_eq!(
                    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) },
                    0
                );
            }
            for i in 0..50_000 {
                common::emit(0, i);
            }
        });
    });
}

/// Child `--keep-off`: where the helpers may run beside a normal and a
/// real-time writer (see the module docs).
fn keep_off() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling (main) thread; `param` is valid.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &param) } != 0 {
        println!("keep-off: cannot become SCHED_RR: skipped");
        return;
    }
    // SAFETY: no arguments.
    let main_tid = unsafe { libc::gettid() }.to_string();
    let allowed = cpus_of(&main_tid);
    let cpu = *allowed.last().expect("an allowed CPU");
    let names = ["fxt-stream", "fxt-prefault"];
    let out = common::temp_path("keep-off.fxt");

    // A normal-priority writer moves nothing.
    let session = fxt_runtime::start(Config::new().output(&out)).expect("start");
    write_from(cpu, true);
    for (name, cpus) in helper_cpus(&names) {
        assert_eq!(cpus, allowed, "{name} moved by a normal writer");
    }
    assert_eq!(session.finish().expect("finish").records_dropped, 0);

    // A real-time writer moves every helper off its CPU if another one is
    // allowed, and takes no helper's last CPU.
    let session = fxt_runtime::start(Config::new().output(&out)).expect("start");
    write_from(cpu, false);
    // Polled until it holds (a helper registers when it starts, which a
    // loaded machine may delay past its name showing), within BOUND.
    let check = |label: &str| {
        let t0 = Instant::now();
        loop {
            let wrong: Vec<(String, Vec<usize>)> = helper_cpus(&names)
                .into_iter()
                .filter(|(_, cpus)| {
                    let within = !cpus.is_empty() && cpus.iter().all(|c| allowed.contains(c));
                    let off = if allowed.len() > 1 {
                        !cpus.contains(&cpu)
                    } else {
                        *cpus == allowed
                    };
                    !(within && off)
                })
                .collect();
            if wrong.is_empty() {
                break;
            }
            assert!(
                t0.elapsed() < BOUND,
                "{label}: helpers on the writer's CPU {cpu} (or without one of {allowed:?}): {wrong:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            cpus_of(&main_tid),
            allowed,
            "{label}: the program's own thread was moved"
        );
        if allowed.len() > 1 {
            println!("keep-off: {label}: helpers off CPU {cpu} of {allowed:?}");
        } else {
            println!("keep-off: {label}: one CPU allowed ({cpu}): the helpers keep it");
        }
    };
    check("real-time writer");
    assert_eq!(session.finish().expect("finish").records_dropped, 0);

    // Helpers started later keep off that CPU from the start.
    let session = fxt_runtime::start(Config::new().output(&out)).expect("start");
    check("next session");
    session.finish().expect("finish");

    // Started from a normal thread, the prefaulter is idle until a
    // real-time writer finds it behind (this child may raise it: it could
    // become SCHED_RR).
    let session = std::thread::spawn(move || {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; `param` is valid.
        assert_eq!(
            unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) },
            0
        );
        fxt_runtime::start(Config::new().output(common::temp_path("keep-off-idle.fxt")))
            .expect("start")
    })
    .join()
    .expect("the starting thread");
    wait_for_prefaulter(libc::SCHED_IDLE, "started by a normal thread");
    write_from(cpu, false);
    wait_for_prefaulter(
        libc::SCHED_OTHER,
        "a real-time writer behind an idle prefaulter raises it",
    );
    println!("keep-off: an idle prefaulter is raised to SCHED_OTHER by a real-time writer");
    session.finish().expect("finish");
}

/// Waits (at most [`BOUND`]) until this process's prefaulter is at
/// `want` (it starts at its creator's policy and sets its own first
/// thing, so a first reading may still show the creator's).
fn wait_for_prefaulter(want: i32, why: &str) {
    let t0 = Instant::now();
    loop {
        let policy = threads()
            .into_values()
            .find(|(name, _)| name == "fxt-prefault")
            .map(|(_, p)| p);
        if policy == Some(want) {
            return;
        }
        assert!(
            t0.elapsed() < BOUND,
            "{why}: the prefaulter is at {:?}, not {}",
            policy.map(policy_name),
            policy_name(want)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs [`keep_off`] in a child process and fails if it does.
fn run_keep_off() {
    let exe = std::env::current_exe().expect("own path");
    let out = std::process::Command::new(exe)
        .arg("--keep-off")
        .output()
        .expect("run the child");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "keep-off child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("realtime: test");
        return;
    }
    if std::env::args().any(|a| a == "--keep-off") {
        keep_off();
        let _ = std::fs::remove_dir_all(common::temp_path("x").parent().unwrap());
        return;
    }
    run_keep_off();
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
