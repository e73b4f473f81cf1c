//! The gate's lifetime: it is closed whenever the writer lets go of its
//! lease or session, in particular when the writer is destroyed at
//! thread exit, before another thread local's destructor emits.

use super::*;
use crate::callsite::{Callsite, KeyCache};
use crate::emit;
use fxt_format::encode::header::event_type as ty;
use fxt_format::encode::ArgValue;
use std::sync::{Mutex, Weak};

static KEYS: [KeyCache; 1] = [KeyCache::NEW];
static SITE: Callsite = Callsite::new("fast-test", "late", &["v"], &KEYS);

fn gate() -> u32 {
    local().cursor.token()
}

/// What the late destructor saw.
#[derive(Debug, Default, Clone, PartialEq)]
struct Seen {
    ran: bool,
    writer_gone: bool,
    fast_off: bool,
    session_freed: bool,
}

static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
static WEAK: Mutex<Option<Weak<Shared>>> = Mutex::new(None);

struct Late(Cell<Option<Site>>);

impl Drop for Late {
    fn drop(&mut self) {
        let Some(site) = self.0.get() else { return };
        let seen = Seen {
            ran: true,
            writer_gone: WRITER.try_with(|_| ()).is_err(),
            fast_off: gate() == CLOSED,
            session_freed: WEAK
                .lock()
                .unwrap()
                .as_ref()
                .is_some_and(|w| w.upgrade().is_none()),
        };
        *SEEN.lock().unwrap() = Some(seen);
        // Held sites (like a duration guard's): without the cursor
        // turned off, these would write into the freed ring.
        emit::event(site, ty::INSTANT, None, &[ArgValue::U64(1)]);
        emit::duration_complete(site, 0, &[ArgValue::U64(2)]);
    }
}

thread_local! {
    static LATE: Late = const { Late(Cell::new(None)) };
}

/// Runs a thread that registers `LATE` first (so it is destroyed after
/// the writer), emits `n` events (through the fast path when `fast`),
/// then waits for `between` to run on the main thread before exiting.
fn run_thread(n: u64, fast: bool, between: impl FnOnce()) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (tx2, rx2) = std::sync::mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        let site = SITE.site().expect("enabled");
        LATE.with(|l| l.0.set(Some(site)));
        for i in 0..n {
            emit::event(site, ty::INSTANT, None, &[ArgValue::U64(i)]);
        }
        let want = if fast { site.token() } else { CLOSED };
        assert_eq!(gate(), want, "the gate is open iff {fast}");
        tx.send(()).unwrap();
        rx2.recv().unwrap();
    });
    rx.recv().unwrap();
    between();
    tx2.send(()).unwrap();
    h.join().unwrap();
}

#[test]
fn fast_cursor_off_after_writer_destroyed() {
    let _g = sessions();
    let dir = std::env::temp_dir();
    // 1: the session is finished and dropped before the thread exits:
    // its memory is freed when the writer lets go of its `Arc`.
    let path = dir.join(format!("fxt-fast-{}-a.fxt", std::process::id()));
    // Small chunks: the events roll over several of them.
    let session = crate::start(crate::Config::new().output(&path).chunk_size(32 << 10)).unwrap();
    *WEAK.lock().unwrap() = state::current().map(|s| Arc::downgrade(&s));
    let mut stats = None;
    run_thread(5000, true, || stats = Some(session.finish().unwrap()));
    let stats = stats.unwrap();
    assert_eq!(stats.emitted_records_written, 5000, "{stats:?}");
    assert_eq!(stats.records_dropped, 0, "{stats:?}");
    let seen = SEEN.lock().unwrap().take().unwrap();
    assert_eq!(
        seen,
        Seen {
            ran: true,
            writer_gone: true,
            fast_off: true,
            session_freed: true
        }
    );
    let _ = std::fs::remove_file(&path);

    // 2: the session is live when the thread exits: the late events
    // are dropped and counted.
    let path = dir.join(format!("fxt-fast-{}-b.fxt", std::process::id()));
    let session = crate::start(crate::Config::new().output(&path)).unwrap();
    *WEAK.lock().unwrap() = None;
    run_thread(1000, true, || {});
    let stats = session.finish().unwrap();
    let seen = SEEN.lock().unwrap().take().unwrap();
    assert!(seen.ran && seen.writer_gone && seen.fast_off, "{seen:?}");
    assert_eq!(stats.emitted_records_written, 1000, "{stats:?}");
    assert_eq!(stats.records_dropped, 2, "{stats:?}");
    let _ = std::fs::remove_file(&path);

    // 3: a crash-safe session never turns the cursor on (its records
    // need the filler protocol).
    let path = dir.join(format!("fxt-fast-{}-c.fxt", std::process::id()));
    let session = crate::start(crate::Config::new().output(&path).crash_safe(true)).unwrap();
    run_thread(1000, false, || {});
    let stats = session.finish().unwrap();
    SEEN.lock().unwrap().take();
    assert_eq!(stats.emitted_records_written, 1000, "{stats:?}");
    assert_eq!(stats.records_dropped, 2, "{stats:?}");
    let _ = std::fs::remove_file(&path);
}

/// One session at a time among the crate's tests that start one (they
/// run in parallel).
pub(crate) fn sessions() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Nested durations begin on distinct nanoseconds for a reader that
/// truncates ticks to nanoseconds, however close the clock readings.
#[test]
fn duration_starts_land_on_distinct_nanoseconds() {
    let tps: u128 = 2_600_000_000;
    let ns = |t: u64| t as u128 * 1_000_000_000 / tps;
    let step = 3; // ceil(2.6 ticks per ns)
    let l = local();
    let starts = [
        l.duration_start(1_000_000, step),
        l.duration_start(1_000_000, step),
        l.duration_start(1_000_001, step),
        l.duration_start(1_000_002, step),
    ];
    for w in starts.windows(2) {
        assert!(ns(w[1]) > ns(w[0]), "{starts:?}");
    }
    // Starts a step apart or more are untouched.
    assert_eq!(l.duration_start(2_000_000, step), 2_000_000);
    assert_eq!(l.duration_start(2_000_003, step), 2_000_003);
    // A reading far behind (another clock or session) is taken as is.
    assert_eq!(l.duration_start(10, step), 10);
}

/// What the thread of [`a_hook_leaves_an_earlier_session_unfreed`]
/// is told to do.
enum Step {
    /// Emit an event (registering in the live session).
    Event,
    /// Join the session of this generation as an allocation hook does.
    Hook(u32),
}

/// A thread whose writer holds a session that is over joins the live
/// one from an allocation hook: its gate opens for allocation records,
/// and the session it held is not freed there (the hook may not free)
/// but by the next finish, while the thread goes on in the live one
/// (and leaves it in turn, joined from its hook, for the next).
#[test]
fn a_hook_leaves_an_earlier_session_unfreed() {
    let _g = sessions();
    let dir = std::env::temp_dir();
    let path = |n: u32| dir.join(format!("fxt-rejoin-{}-{n}.fxt", std::process::id()));
    let start = |n: u32| {
        let config = crate::Config::new().output(path(n));
        let session = crate::start(config.alloc_sample_bytes(1 << 30)).unwrap();
        let live = state::current().unwrap();
        (session, live.generation, Arc::downgrade(&live))
    };
    let (steps, step_rx) = std::sync::mpsc::channel::<Step>();
    let (done_tx, done) = std::sync::mpsc::channel::<(bool, u32)>();
    let thread = std::thread::spawn(move || {
        for step in step_rx {
            let joined = match step {
                Step::Event => {
                    let site = SITE.site().expect("enabled");
                    emit::event(site, ty::INSTANT, None, &[ArgValue::U64(0)]);
                    true
                }
                Step::Hook(generation) => join_from_hook(generation),
            };
            done_tx.send((joined, gate())).unwrap();
        }
    });
    let step = |s: Step| {
        steps.send(s).unwrap();
        done.recv().unwrap()
    };

    let (session, _, first) = start(1);
    step(Step::Event);
    session.finish().unwrap();
    assert!(
        first.upgrade().is_some(),
        "the thread holds the first session"
    );

    let (session, generation, second) = start(2);
    let (joined, token) = step(Step::Hook(generation));
    assert!(joined, "the hook joins the live session");
    assert_eq!(token, sample::sample_token(generation));
    assert!(first.upgrade().is_some(), "not freed by the hook");
    assert_eq!(step(Step::Hook(generation)), (false, token), "joined once");
    session.finish().unwrap();
    assert!(first.upgrade().is_none(), "freed by the next finish");
    assert!(second.upgrade().is_some(), "the thread holds the second");

    let (session, generation, _) = start(3);
    let (joined, token) = step(Step::Hook(generation));
    assert!(joined && token == sample::sample_token(generation));
    session.finish().unwrap();
    assert!(second.upgrade().is_none(), "freed by the next finish");

    drop(steps);
    thread.join().unwrap();
    for n in 1..=3 {
        let _ = std::fs::remove_file(path(n));
    }
}

/// The step is at least the calibrated ticks per nanosecond.
#[test]
fn start_step_bounds_the_calibrated_rate() {
    let _g = sessions();
    let path = std::env::temp_dir().join(format!("fxt-step-{}.fxt", std::process::id()));
    let session = crate::start(crate::Config::new().output(&path)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let step = crate::clock::start_step();
    let stats = session.finish().unwrap();
    let _ = std::fs::remove_file(&path);
    let per_ns = stats.ticks_per_second as f64 / 1e9;
    assert!(
        step as f64 >= per_ns && (step as f64) < per_ns + 1.5,
        "step {step} for {per_ns} ticks per ns"
    );
}
