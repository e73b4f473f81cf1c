//! `install_panic_hook`: what a panic leaves in the output.
//!
//! * Unwinding on the main thread (`main`, and `thread`: a worker's panic
//!   that `main` propagates): the hook writes a snapshot of everything so
//!   far to the output and tracing goes on; the session guard, dropped
//!   while unwinding, then writes the whole trace there.
//! * A caught panic (`caught`): the snapshot, then tracing goes on; the
//!   final file holds the records emitted after the panic too.
//! * `panic = "abort"` (`abort`): the hook finishes the session before the
//!   abort.
//! * Crash-safe (`crash-safe`): the file is valid as it is; the hook adds
//!   nothing, the guard rewrites it compactly while unwinding.
//! * Drained (`drained`, the default oneshot session; the other cases keep
//!   their trace in memory, `drain(false)`): the file is being written,
//!   the hook adds nothing, the guard finishes it while unwinding.
//!
//! ```text
//! cargo test -p fxt-runtime --test panic_hook
//! ```
//!
//! The test re-executes itself as a child (`FXT_PANIC_CHILD=case:path`)
//! that starts a session, installs the hook, emits from 2 threads and
//! panics: in `main` (`main`), in a thread whose panic `main` propagates
//! with `unwrap` (`thread`), or in `main` of a crash-safe session
//! (`crash-safe`). A value declared after the session (so dropped before
//! it while unwinding) renames the file the hook wrote; the parent checks
//! that the renamed file holds every event and that no file was written
//! at the path afterwards. (`panic = "abort"` cannot be set for one test;
//! the `abort` case does what it does instead: after the hooks, it aborts
//! the process, so nothing unwinds and no destructor runs — the trace at
//! the path must be the one the hook wrote.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use fxt_runtime::Config;

const CHILD: &str = "FXT_PANIC_CHILD";

/// Renames the trace when dropped: proves what was written before it.
struct MoveAside(PathBuf);

impl Drop for MoveAside {
    fn drop(&mut self) {
        let _ = std::fs::rename(&self.0, moved(&self.0));
    }
}

fn moved(p: &Path) -> PathBuf {
    p.with_extension("hook.fxt")
}

fn child(spec: &str) {
    let (case, path) = spec.split_once(':').unwrap();
    let path = PathBuf::from(path);
    let _session = fxt_runtime::start(
        Config::new()
            .buffer_size(4 << 20)
            .output(&path)
            .crash_safe(case == "crash-safe")
            // The hook's snapshot is for a trace kept in memory.
            .drain(case == "drained"),
    )
    .unwrap();
    fxt_runtime::install_panic_hook();
    if case == "abort" {
        // What `panic = "abort"` does: run the hook, then abort.
        let hooks = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            hooks(info);
            std::process::abort();
        }));
    }
    let _aside = MoveAside(path);
    let thread_case = case == "thread";
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..500 {
                    common::emit(t, i);
                }
                if thread_case && t == 1 {
                    panic!("worker {t} fails");
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    if case == "caught" {
        let caught = std::panic::catch_unwind(|| panic!("main fails"));
        assert!(caught.is_err());
        // Tracing goes on: two more threads record after the panic.
        std::thread::scope(|s| {
            for t in 2..4u64 {
                s.spawn(move || {
                    for i in 0..500 {
                        common::emit(t, i);
                    }
                });
            }
        });
        std::mem::forget(_aside);
        let stats = _session.finish().unwrap();
        assert_eq!(stats.records_dropped, 0);
        std::process::exit(3);
    }
    panic!("main fails");
}

fn run(case: &str) {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("panic-{case}-{}.fxt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(moved(&path));
    let out = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, format!("{case}:{}", path.display()))
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the child did not end in failure");
    let message = if case == "thread" {
        "worker 1 fails"
    } else {
        "main fails"
    };
    assert!(stderr.contains(message), "{stderr}");
    let count = |m: &str| stderr.matches(m).count();
    let (snapshots, finished) = (
        count("fxt: panic: snapshot written"),
        count("fxt: panic: trace written"),
    );
    let check = |file: &Path, threads: u64, snapshot: bool| {
        let bytes =
            std::fs::read(file).unwrap_or_else(|e| panic!("{case}: {}: {e}", file.display()));
        let records = common::decode(&bytes);
        common::check_preamble(&records);
        let marked = records.iter().any(|r| {
            matches!(r, fxt_format::decode::Record::Event(e) if e.category == "fxt" && e.name == "snapshot")
        });
        assert_eq!(
            marked,
            snapshot,
            "{case}: {} is a snapshot: {marked}",
            file.display()
        );
        common::assert_exactly_once(&common::stress_events(&records), threads, 500);
        records
    };
    match case {
        "main" | "thread" => {
            assert_eq!((snapshots, finished), (1, 0), "{stderr}");
            // The hook's snapshot (moved aside while unwinding), then the
            // whole trace the guard wrote.
            check(&moved(&path), 2, true);
            check(&path, 2, false);
        }
        "caught" => {
            assert_eq!(out.status.code(), Some(3), "{stderr}");
            assert_eq!((snapshots, finished), (1, 0), "{stderr}");
            check(&path, 4, false);
        }
        "abort" => {
            // The emulation runs the unwinding build's hook (a snapshot;
            // built with `panic = "abort"` the hook finishes instead), then
            // aborts: nothing unwinds, the hook's file is where it wrote it
            // and holds everything.
            assert_eq!((snapshots, finished), (1, 0), "{stderr}");
            assert!(!moved(&path).exists(), "abort: a destructor ran");
            let records = check(&path, 2, true);
            assert!(
                !records
                    .iter()
                    .any(|r| matches!(r, fxt_format::decode::Record::String { index: 0, .. })),
                "{case}: the trace is not the compact one"
            );
        }
        "drained" => {
            // Drained (the default): the file is being written, the hook
            // adds nothing; the guard finishes the file it writes through
            // its descriptor, which the value dropped first moved aside.
            assert_eq!((snapshots, finished), (0, 0), "{stderr}");
            check(&moved(&path), 2, false);
            assert!(!path.exists(), "drained: a second file at the path");
        }
        _ => {
            // Crash-safe: nothing from the hook; the raw file (moved
            // aside) is valid, and the guard wrote the compact one.
            assert_eq!((snapshots, finished), (0, 0), "{stderr}");
            check(&moved(&path), 2, false);
            check(&path, 2, false);
        }
    }
    for f in [&path, &moved(&path)] {
        let _ = std::fs::remove_file(f);
    }
    println!("  {case}: ok");
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    println!("panic_hook:");
    for case in ["main", "thread", "caught", "crash-safe", "abort", "drained"] {
        run(case);
    }
    println!("test result: ok.");
}
