//! After `fork`, the child never writes into the parent's buffer or file:
//! its events are dropped, finishing its copy of the session does nothing,
//! and it cannot start a session; the parent's trace is complete.
//!
//! ```text
//! cargo test -p fxt-runtime --test fork
//! ```

mod common;

use fxt_format::decode::{decode_all, EventKind, Record};
use fxt_runtime::__macro_support::{Callsite, DurationGuard, KeyCache};
use fxt_runtime::{Config, Stats};

static GUARD_KEYS: [KeyCache; 0] = [];
static GUARD: Callsite = Callsite::new("fork", "guard", &[], &GUARD_KEYS);

/// Events of the stress shape per logical thread, and the guard's
/// duration events.
fn summarize(records: &[Record]) -> (Vec<(u64, u64, u64)>, usize) {
    let guards = records
        .iter()
        .filter(|r| {
            matches!(r, Record::Event(e) if e.name == "guard"
                && matches!(e.kind, EventKind::DurationComplete { .. }))
        })
        .count();
    (common::stress_events(records), guards)
}

fn fork_case(crash_safe: bool) {
    let path = common::temp_path(&format!("fork-{crash_safe}.fxt"));
    let session = fxt_runtime::start(
        Config::new()
            .buffer_size(1 << 20)
            .output(&path)
            .crash_safe(crash_safe),
    )
    .unwrap();
    for i in 0..100 {
        common::emit(0, i);
    }
    // A site obtained before the fork, used by the child (its drop emits).
    let guard = DurationGuard::new(GUARD.site());

    // SAFETY: the child only runs code that takes no lock of this process
    // (fxt is inert in it: no lock, no allocation by fxt) and leaves with
    // `_exit`, without running destructors or atexit handlers.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let mut ok = !fxt_runtime::is_enabled();
        for i in 0..1000 {
            common::emit(999, i);
        }
        drop(guard);
        ok &= matches!(session.finish(), Ok(s) if s == Stats::default());
        ok &= fxt_runtime::start(Config::new()).is_err();
        // SAFETY: `_exit` ends the child at once; nothing of the parent's
        // state is touched.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child, with a valid pointer to `status`.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child failed: status {status:#x}"
    );

    if crash_safe {
        // The live file (the shared mapping) holds nothing of the child.
        let records = decode_all(&std::fs::read(&path).unwrap()).expect("valid crash-safe file");
        let (evs, guards) = summarize(&records);
        assert!(evs.iter().all(|e| e.0 == 0), "child event in the live file");
        assert_eq!(guards, 0);
    }
    for i in 100..200 {
        common::emit(0, i);
    }
    drop(guard);
    let stats = session.finish().unwrap();
    let records = common::decode(&std::fs::read(&path).unwrap());
    common::check_preamble(&records);
    let (evs, guards) = summarize(&records);
    common::assert_exactly_once(&evs, 1, 200);
    assert_eq!(guards, 1, "the guard's event, from the parent only");
    assert_eq!(stats.records_dropped, 0);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn forked_child_writes_nothing() {
    let _s = common::serial();
    fork_case(false);
    fork_case(true);
}
