//! `install_panic_hook`: a panic that ends the process writes the live
//! session's trace first, and the session guard dropped afterwards (while
//! unwinding) does not write it again.
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
            .crash_safe(case == "crash-safe"),
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
    assert!(!out.status.success(), "the child did not panic");
    let message = if case == "thread" {
        "worker 1 fails"
    } else {
        "main fails"
    };
    assert!(stderr.contains(message), "{stderr}");
    assert_eq!(
        stderr.matches("fxt: panic: trace written").count(),
        1,
        "{stderr}"
    );
    let written = if case == "abort" {
        // Nothing unwound: the hook's file is where it wrote it.
        assert!(!moved(&path).exists(), "abort: a destructor ran");
        path.clone()
    } else {
        assert!(
            !path.exists(),
            "{case}: the trace was written again after the hook"
        );
        moved(&path)
    };
    let bytes = std::fs::read(&written).expect("the hook's trace");
    let records = common::decode(&bytes);
    common::check_preamble(&records);
    assert!(
        !records
            .iter()
            .any(|r| matches!(r, fxt_format::decode::Record::String { index: 0, .. })),
        "{case}: the trace is not the compact one"
    );
    let evs = common::stress_events(&records);
    common::assert_exactly_once(&evs, 2, 500);
    println!("  {case}: ok");
    std::fs::remove_file(&written).unwrap();
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
        return;
    }
    println!("panic_hook:");
    for case in ["main", "thread", "crash-safe", "abort"] {
        run(case);
    }
    println!("test result: ok.");
}
