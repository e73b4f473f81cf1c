//! Every duration fxt writes appears in Perfetto, nested as it ran.
//!
//! Perfetto converts ticks to nanoseconds by truncation, keeps records of
//! equal timestamp in file order, and imports complete events as scoped
//! slices that must nest; an inner complete record is written before its
//! parent (it ends first), so a parent beginning on the same nanosecond as
//! its first child would look like a partial overlap and be dropped.
//! `fxt_format::compat::check_perfetto` replays those rules; these tests
//! run it on the traces of the quickstart example and of deep recursions
//! of traced functions with empty bodies, on 1 and 4 threads.

#[allow(dead_code)]
#[path = "../examples/quickstart.rs"]
mod quickstart;

use fxt::{trace_duration, Config};
use fxt_format::compat::check_perfetto;

/// Runs `check_perfetto` on a trace and fails on anything Perfetto would
/// drop, with the findings.
fn assert_perfetto_keeps_every_slice(what: &str, bytes: &[u8]) {
    let report = check_perfetto(bytes);
    let dropped: Vec<_> = report.slices.iter().filter(|s| s.is_dropped()).collect();
    assert!(
        dropped.is_empty() && report.framing.is_empty() && report.refs.is_empty(),
        "{what}: Perfetto would drop or misread:\n{report}"
    );
}

#[trace_duration(category = "nest")]
fn recurse(depth: u32) {
    if depth > 0 {
        recurse(depth - 1);
        recurse_scope(depth - 1);
    }
}

fn recurse_scope(depth: u32) {
    let _scope = fxt::trace_duration_scope!("nest", "scope", "depth" => depth);
    if depth > 0 {
        recurse(depth - 1);
    }
}

/// A chain 300 deep.
#[trace_duration(category = "nest")]
fn chain(depth: u32) {
    if depth > 0 {
        chain(depth - 1);
    }
}

fn deep_recursion(threads: usize) -> Vec<u8> {
    let session = fxt::start(Config::new().buffer_size(256 << 20)).unwrap();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..20 {
                    recurse(18);
                    chain(300);
                }
            });
        }
    });
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0);
    assert!(stats.emitted_records_written > 100_000, "{stats:?}");
    bytes
}

#[test]
fn deep_recursion_of_empty_traced_functions_nests_in_perfetto() {
    let _g = serial();
    for threads in [1, 4] {
        let bytes = deep_recursion(threads);
        assert_perfetto_keeps_every_slice(&format!("recursion on {threads} threads"), &bytes);
    }
}

#[test]
fn quickstart_traces_nest_in_perfetto() {
    let _g = serial();
    let dir = std::env::temp_dir();
    for run in 0..5 {
        let path = dir.join(format!("fxt-quickstart-{}-{run}.fxt", std::process::id()));
        // SAFETY (edition 2021: safe): tests in this binary that read the
        // environment are serialized by `serial`.
        std::env::set_var("FXT_OUTPUT", &path);
        quickstart::main();
        std::env::remove_var("FXT_OUTPUT");
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_perfetto_keeps_every_slice(&format!("quickstart run {run}"), &bytes);
    }
}

/// Serializes the tests of this binary (one session at a time).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
