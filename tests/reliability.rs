//! Tracing under thread and session churn: threads exiting mid-trace,
//! events from thread-local destructors, many sessions in one process,
//! panics unwinding through traced functions, categories switched at run
//! time.
#![deny(warnings, clippy::all)]

mod reliability_support;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use fxt::{trace_counter, trace_duration, trace_duration_scope, trace_instant};
use reliability_support::*;

fn pid() -> u64 {
    u64::from(std::process::id())
}

/// Waits (bounded) until `cond` holds; panics after 10 s.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::yield_now();
    }
}

// ---------------------------------------------------------------------------
// Threads exiting mid-trace.
// ---------------------------------------------------------------------------

/// 320 short-lived threads (8 at a time) start, emit and exit while two
/// long-lived threads keep emitting. With a buffer that holds everything,
/// every record is in the trace, on the thread that emitted it.
#[test]
fn threads_exiting_mid_trace_lose_nothing() {
    const BATCHES: u64 = 40;
    const PER_BATCH: u64 = 8;
    const SHORT_EVENTS: u64 = 50;
    const LONG_MIN: u64 = 5_000;
    const LONG_MAX: u64 = 150_000;
    let _turn = lock();
    let session = fxt::start(Config::new().buffer_size(64 << 20).chunk_size(32 << 10)).unwrap();
    let churn_done = AtomicBool::new(false);
    let long_counts: Vec<u64> = std::thread::scope(|scope| {
        let long: Vec<_> = (0..2u64)
            .map(|t| {
                let churn_done = &churn_done;
                std::thread::Builder::new()
                    .name(format!("long-{t}"))
                    .spawn_scoped(scope, move || {
                        let mut seq = 0;
                        while seq < LONG_MAX
                            && (seq < LONG_MIN || !churn_done.load(Ordering::Relaxed))
                        {
                            trace_instant!("rel", "long", "t" => t, "seq" => seq);
                            seq += 1;
                            if seq % 64 == 0 {
                                std::thread::yield_now();
                            }
                        }
                        seq
                    })
                    .unwrap()
            })
            .collect();
        for b in 0..BATCHES {
            let batch: Vec<_> = (0..PER_BATCH)
                .map(|j| {
                    let k = b * PER_BATCH + j;
                    std::thread::Builder::new()
                        .name(format!("short-{k}"))
                        .spawn_scoped(scope, move || {
                            let _scope = trace_duration_scope!("rel", "short life", "k" => k);
                            for seq in 0..SHORT_EVENTS {
                                trace_instant!("rel", "short", "k" => k, "seq" => seq);
                            }
                        })
                        .unwrap()
                })
                .collect();
            for h in batch {
                h.join().unwrap();
            }
        }
        churn_done.store(true, Ordering::Relaxed);
        long.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let trace = finish(session);
    let shorts = BATCHES * PER_BATCH;
    let emitted = shorts * (SHORT_EVENTS + 1) + long_counts.iter().sum::<u64>();
    trace.check_accounting(Some(emitted));
    assert_eq!(trace.stats.records_dropped, 0);
    trace.check_resolved();
    assert_eq!(trace.stats.threads, shorts + 2);

    // The naming records tell which koid each thread had.
    let mut koid_of = std::collections::HashMap::new();
    for (_, k) in trace.kernel_objects(OBJ_THREAD) {
        assert!(
            koid_of.insert(k.name.to_string(), k.koid).is_none(),
            "{} named once",
            k.name
        );
    }
    let on = |name: &str| Thread::Known {
        process: pid(),
        thread: koid_of[name],
    };
    for k in 0..shorts {
        let name = format!("short-{k}");
        let seqs: Vec<u64> = trace
            .named("short")
            .filter(|e| u64_arg(e, "k") == k)
            .inspect(|e| assert_eq!(e.thread, on(&name)))
            .map(|e| u64_arg(e, "seq"))
            .collect();
        assert_eq!(seqs, (0..SHORT_EVENTS).collect::<Vec<_>>(), "{name}");
        let life: Vec<&Event> = trace
            .named("short life")
            .filter(|e| u64_arg(e, "k") == k)
            .collect();
        assert_eq!(life.len(), 1, "{name}");
        assert_eq!(life[0].thread, on(&name));
    }
    for (t, &n) in long_counts.iter().enumerate() {
        let name = format!("long-{t}");
        let seqs: Vec<u64> = trace
            .named("long")
            .filter(|e| u64_arg(e, "t") == t as u64)
            .inspect(|e| assert_eq!(e.thread, on(&name)))
            .map(|e| u64_arg(e, "seq"))
            .collect();
        assert_eq!(
            seqs,
            (0..n).collect::<Vec<_>>(),
            "{name}: every record, in order"
        );
    }
}

// ---------------------------------------------------------------------------
// Events from thread-local destructors.
// ---------------------------------------------------------------------------

/// Emits an instant when dropped (at thread exit, from a thread-local).
struct EmitOnDrop(&'static str);

impl Drop for EmitOnDrop {
    fn drop(&mut self) {
        trace_instant!("rel", "tls drop", "case" => self.0);
    }
}

thread_local! {
    static EMIT_AT_EXIT: RefCell<Option<EmitOnDrop>> = const { RefCell::new(None) };
}

fn arm(case: &'static str) {
    EMIT_AT_EXIT.with(|slot| *slot.borrow_mut() = Some(EmitOnDrop(case)));
}

/// Thread-local destructors run in reverse order of registration (a
/// thread-local registers its destructor on first use). So:
///
/// * `"fxt first"`: the thread traced before arming ours, so our destructor
///   runs first, while fxt's thread state is alive: the event is recorded.
/// * `"ours first"`: ours was armed first, so fxt's thread state is gone
///   when ours runs: the event is dropped, and counted as dropped (the
///   "buffer filled up" event announces it).
/// * `"only ours"`: the thread never traced before exit: fxt's thread state
///   is created during thread exit, the event is recorded.
///
/// In every case nothing panics and the trace decodes.
#[test]
fn events_from_thread_local_destructors() {
    let _turn = lock();
    let session = fxt::start(Config::new().buffer_size(4 << 20)).unwrap();
    std::thread::Builder::new()
        .name("fxt first".into())
        .spawn(|| {
            trace_instant!("rel", "alive", "case" => "fxt first");
            arm("fxt first");
        })
        .unwrap()
        .join()
        .expect("no panic at thread exit");
    std::thread::Builder::new()
        .name("ours first".into())
        .spawn(|| {
            arm("ours first");
            trace_instant!("rel", "alive", "case" => "ours first");
        })
        .unwrap()
        .join()
        .expect("no panic at thread exit");
    std::thread::Builder::new()
        .name("only ours".into())
        .spawn(|| arm("only ours"))
        .unwrap()
        .join()
        .expect("no panic at thread exit");
    let trace = finish(session);
    trace.check_accounting(Some(5));
    trace.check_resolved();
    let case = |e: &Event| match arg(e, "case") {
        ArgValue::Str(t) => t.to_string(),
        other => panic!("{other:?}"),
    };
    let alive: Vec<String> = trace.named("alive").map(case).collect();
    assert_eq!(alive, ["fxt first", "ours first"]);
    let dropped: Vec<String> = trace.named("tls drop").map(case).collect();
    assert_eq!(
        dropped,
        ["fxt first", "only ours"],
        "recorded destructor events"
    );
    assert_eq!(
        trace.stats.records_dropped, 1,
        "the 'ours first' event is counted as dropped"
    );
    // Recorded destructor events are on their thread.
    let koid = |name: &str| {
        trace
            .kernel_objects(OBJ_THREAD)
            .into_iter()
            .find(|(_, k)| k.name == name)
            .map(|(_, k)| k.koid)
            .unwrap_or_else(|| panic!("{name} is named"))
    };
    for e in trace.named("tls drop") {
        assert_eq!(
            e.thread,
            Thread::Known {
                process: pid(),
                thread: koid(&case(e))
            }
        );
    }
}

// ---------------------------------------------------------------------------
// Many sessions in one process.
// ---------------------------------------------------------------------------

/// 200 sessions, alternately oneshot and circular, while a background
/// thread emits across every start and stop. Each trace decodes, holds
/// exactly the main thread's events of its session (circular, or oneshot
/// unless the background thread filled the buffer first: then a counted
/// prefix), with category and name resolved through that trace's own
/// string records (call sites re-intern in every session), and one
/// contiguous run of background events; what the background thread
/// overwrote or could not store is counted as dropped.
#[test]
fn many_sessions_in_one_process() {
    const SESSIONS: u64 = 200;
    let _turn = lock();
    let stop = AtomicBool::new(false);
    let iterations = AtomicU64::new(0);
    std::thread::scope(|scope| {
        // Stops the background thread however this scope ends (a failed
        // check must not leave it running, which would hang the scope).
        let _stop = SetOnDrop(&stop);
        scope.spawn(|| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                trace_instant!("bg", "tick", "n" => n);
                n += 1;
                // Release: an iteration counted here was published before.
                iterations.store(n, Ordering::Release);
                if n.is_multiple_of(16) {
                    std::thread::yield_now();
                }
            }
        });
        let mut bg_total = 0;
        let mut filled = 0;
        for s in 0..SESSIONS {
            let mode = if s % 2 == 0 {
                Mode::Oneshot
            } else {
                Mode::Circular
            };
            let session = fxt::start(Config::new().buffer_size(8 << 20).mode(mode)).unwrap();
            assert!(matches!(
                fxt::start(Config::new()),
                Err(fxt::StartError::AlreadyRunning)
            ));
            assert!(fxt::is_enabled());
            let k = 3 + s % 7;
            for i in 0..k {
                trace_instant!("fg", "session event", "s" => s, "i" => i);
            }
            trace_counter!("fg", "session counter", "s" => s);
            // Let the background thread run at least one whole iteration
            // inside this session (bounded wait).
            let seen = iterations.load(Ordering::Acquire);
            wait_until("a background event", || {
                iterations.load(Ordering::Acquire) >= seen + 2
            });
            let trace = finish(session);
            assert!(!fxt::is_enabled());

            // The background thread may fill the buffer while this thread
            // waits (it runs unthrottled; on a loaded machine or one core,
            // for whole time slices): oneshot then drops the newest
            // records, circular overwrites the oldest. Either way what is
            // lost is counted and announced, and what is kept is intact.
            trace.check_accounting(None);
            trace.check_resolved();
            let dropped = trace.stats.records_dropped;
            filled += u64::from(dropped > 0);
            let fg: Vec<(u64, u64)> = trace
                .named("session event")
                .inspect(|e| assert_eq!(e.category, "fg"))
                .map(|e| (u64_arg(e, "s"), u64_arg(e, "i")))
                .collect();
            let counters: Vec<u64> = trace
                .named("session counter")
                .map(|e| u64_arg(e, "s"))
                .collect();
            let expected: Vec<(u64, u64)> = (0..k).map(|i| (s, i)).collect();
            if mode == Mode::Circular || dropped == 0 {
                // Circular never overwrites the chunk a thread holds: this
                // thread's events (a few records, one chunk) all survive.
                assert_eq!(fg, expected, "session {s} ({dropped} dropped)");
                assert_eq!(counters, [s], "session {s} ({dropped} dropped)");
            } else {
                // A full oneshot buffer keeps the oldest: a prefix of this
                // thread's events, the rest counted as dropped.
                assert!(expected.starts_with(&fg), "session {s}: {fg:?}");
                assert!(counters.is_empty() || (counters == [s] && fg == expected));
                let missing = (k - fg.len() as u64) + (1 - counters.len() as u64);
                assert!(missing <= dropped, "session {s}: {missing} > {dropped}");
            }
            let strings: Vec<&str> = trace.strings().into_iter().map(|x| x.1).collect();
            let mut needed = Vec::new();
            if !fg.is_empty() {
                needed.extend(["fg", "session event", "s", "i"]);
            }
            if !counters.is_empty() {
                needed.extend(["fg", "session counter", "s"]);
            }
            for needed in needed {
                assert!(strings.contains(&needed), "session {s} interns {needed:?}");
            }
            let ticks: Vec<u64> = trace
                .named("tick")
                .inspect(|e| assert_eq!(e.category, "bg"))
                .map(|e| u64_arg(e, "n"))
                .collect();
            let bg = ticks.len();
            assert!(bg >= 1, "session {s} has background events");
            assert_eq!(trace.check_increasing("n"), bg);
            // Either mode keeps one contiguous run of the background
            // thread's events: circular the newest, oneshot the oldest.
            assert!(
                ticks.windows(2).all(|w| w[1] == w[0] + 1),
                "session {s}: a gap in the background events"
            );
            // Event `seen + 1` was emitted inside the session (before this
            // thread saw `iterations` reach `seen + 2`). Whatever lies
            // between it and the kept run was lost and must be counted.
            let (first, last) = (ticks[0], ticks[bg - 1]);
            let lost = match mode {
                Mode::Circular => first.saturating_sub(seen + 1),
                _ => (seen + 1).saturating_sub(last),
            };
            assert!(
                lost <= dropped,
                "session {s}: {lost} background events lost, {dropped} counted as dropped"
            );
            assert!(trace
                .events()
                .all(|e| e.name == "tick" || e.category == "fg"));
            bg_total += bg;
        }
        assert!(bg_total as u64 >= SESSIONS);
        println!("{filled} of {SESSIONS} sessions filled or wrapped their buffer");
    });
}

/// Sets a flag when dropped.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

// ---------------------------------------------------------------------------
// Panics.
// ---------------------------------------------------------------------------

#[trace_duration(category = "rel", args(n))]
fn explode(n: u32) -> u32 {
    let _inner = trace_duration_scope!("rel", "scope in explode", "n" => n);
    if n > 0 {
        panic!("boom {n}");
    }
    n
}

#[trace_duration(category = "rel")]
fn calls_explode() -> u32 {
    explode(2) + 1
}

/// A panic unwinding through `#[trace_duration]` functions and a
/// `trace_duration_scope!` still records each duration, innermost first,
/// each nested in the next.
#[test]
fn panicking_traced_function_records_its_duration() {
    let trace = trace_with(Config::new().buffer_size(4 << 20), || {
        assert!(std::panic::catch_unwind(|| explode(3)).is_err());
        assert!(std::panic::catch_unwind(calls_explode).is_err());
        assert_eq!(explode(0), 0);
    });
    trace.check_accounting(Some(7));
    /// (name, arguments, begin, end)
    type Span = (String, Vec<(String, ArgValue)>, u64, u64);
    let durations: Vec<Span> = trace
        .events()
        .map(|e| match e.kind {
            EventKind::DurationComplete { end } => (e.name.to_string(), args(e), e.timestamp, end),
            other => panic!("{other:?}"),
        })
        .collect();
    let names: Vec<&str> = durations.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "scope in explode",
            "explode",
            "scope in explode",
            "explode",
            "calls_explode",
            "scope in explode",
            "explode"
        ]
    );
    assert_eq!(durations[1].1, [("n".to_string(), ArgValue::U32(3))]);
    assert_eq!(durations[3].1, [("n".to_string(), ArgValue::U32(2))]);
    for d in &durations {
        assert!(d.2 <= d.3, "begin <= end: {d:?}");
    }
    // Nesting: scope within explode within calls_explode.
    let within = |inner: usize, outer: usize| {
        assert!(
            durations[outer].2 <= durations[inner].2 && durations[inner].3 <= durations[outer].3
        );
    };
    within(0, 1);
    within(2, 3);
    within(3, 4);
}

// ---------------------------------------------------------------------------
// Categories at run time.
// ---------------------------------------------------------------------------

fn looped(i: u64) {
    trace_instant!("a", "loop", "i" => i);
}

/// `disable_category` / `enable_category` during a session: the same call
/// sites see each change on their next use, on this thread and on others.
#[test]
fn categories_switched_at_run_time() {
    let _turn = lock();
    // All categories; "a" switched off and on again.
    let session = fxt::start(Config::new().buffer_size(1 << 20)).unwrap();
    for i in 0..8 {
        match i {
            2 => fxt::disable_category("a"),
            5 => fxt::enable_category("a"),
            _ => {}
        }
        looped(i);
        trace_instant!("b", "other", "i" => i);
    }
    // Another thread, which used the call site before, sees the changes
    // too (each step waits for its acknowledgement).
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let (ack_tx, ack) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        for i in rx {
            looped(i);
            ack_tx.send(()).unwrap();
        }
    });
    for (i, on) in [(100, true), (101, false), (102, true)] {
        if on {
            fxt::enable_category("a");
        } else {
            fxt::disable_category("a");
        }
        tx.send(i).unwrap();
        ack.recv().unwrap();
    }
    drop(tx);
    worker.join().unwrap();
    let trace = finish(session);
    trace.check_accounting(None);
    // Sorted: across threads, file order is not time order (an exiting
    // thread's chunk is written out first).
    let mut loop_i: Vec<u64> = trace.named("loop").map(|e| u64_arg(e, "i")).collect();
    loop_i.sort_unstable();
    assert_eq!(loop_i, [0, 1, 5, 6, 7, 100, 102]);
    assert_eq!(
        trace.named("other").count(),
        8,
        "other categories unaffected"
    );

    // Only "a" configured; "b" switched on, then "a" off.
    let session = fxt::start(Config::new().buffer_size(1 << 20).categories(&["a"])).unwrap();
    looped(0);
    trace_instant!("b", "other", "i" => 0u64);
    fxt::enable_category("b");
    looped(1);
    trace_instant!("b", "other", "i" => 1u64);
    fxt::disable_category("a");
    looped(2);
    trace_instant!("b", "other", "i" => 2u64);
    let trace = finish(session);
    let loop_i: Vec<u64> = trace.named("loop").map(|e| u64_arg(e, "i")).collect();
    assert_eq!(loop_i, [0, 1]);
    let other_i: Vec<u64> = trace.named("other").map(|e| u64_arg(e, "i")).collect();
    assert_eq!(other_i, [1, 2]);

    // A change made with no session live does not outlive it: `start`
    // takes the categories from its Config.
    fxt::disable_category("a");
    let session = fxt::start(Config::new().buffer_size(1 << 20)).unwrap();
    looped(0);
    let trace = finish(session);
    assert_eq!(trace.named("loop").count(), 1);
    // And with no session, nothing is recorded anywhere (no panic either).
    looped(1);
    assert!(!fxt::is_enabled());
}

/// Sessions and a thread that starts before and keeps a barrier-synchronized
/// pace with them: every event the thread emits while a session is live is
/// in that session's trace (no stale call-site state across sessions).
#[test]
fn a_thread_emitting_in_lockstep_with_sessions() {
    const ROUNDS: u64 = 50;
    let _turn = lock();
    let started = Barrier::new(2);
    let emitted = Barrier::new(2);
    let finished = Barrier::new(2);
    let idle = Barrier::new(2);
    let traces = std::thread::scope(|scope| {
        scope.spawn(|| {
            for r in 0..ROUNDS {
                started.wait();
                for i in 0..=r % 5 {
                    trace_instant!("lockstep", "event", "r" => r, "i" => i);
                }
                emitted.wait();
                finished.wait();
                // Between sessions: disabled, not recorded anywhere.
                trace_instant!("lockstep", "between", "r" => r);
                idle.wait();
            }
        });
        // Collect first, check after the scope: a failed check inside it
        // would leave the other thread waiting at a barrier.
        (0..ROUNDS)
            .map(|_| {
                let session = fxt::start(Config::new().buffer_size(1 << 20)).unwrap();
                started.wait();
                emitted.wait();
                let trace = finish(session);
                finished.wait();
                idle.wait();
                trace
            })
            .collect::<Vec<Trace>>()
    });
    for (r, trace) in (0..ROUNDS).zip(&traces) {
        trace.check_accounting(Some(r % 5 + 1));
        let got: Vec<(u64, u64)> = trace
            .named("event")
            .map(|e| (u64_arg(e, "r"), u64_arg(e, "i")))
            .collect();
        assert_eq!(
            got,
            (0..=r % 5).map(|i| (r, i)).collect::<Vec<_>>(),
            "round {r}"
        );
        assert_eq!(trace.named("between").count(), 0, "round {r}");
    }
}

/// Threads that exit while a circular session is being collected: their
/// chunks were owned when the collector took its snapshot and are released
/// (same sequence number, data untouched) while it copies. Nothing was
/// overwritten, so nothing may be lost: every record is in the file and
/// none is counted as dropped.
#[test]
fn threads_exiting_during_circular_collection() {
    const HOLDERS: u64 = 8;
    let _turn = lock();
    let text = "x".repeat(4000);
    let session = fxt::start(Config::new().buffer_size(64 << 20).mode(Mode::Circular)).unwrap();
    // Fill most of the ring (without wrapping) so that copying it takes a
    // while; the holders' chunks come last.
    const FILL: u64 = 12_000;
    for i in 0..FILL {
        trace_instant!("rel", "fill", "i" => i, "text" => text.as_str());
    }
    let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
    let exit_rx = std::sync::Mutex::new(exit_rx);
    let holding = Barrier::new(HOLDERS as usize + 1);
    let trace = std::thread::scope(|scope| {
        for t in 0..HOLDERS {
            let (holding, exit_rx) = (&holding, &exit_rx);
            scope.spawn(move || {
                trace_instant!("rel", "holder", "t" => t);
                holding.wait();
                // Returns when the sender is dropped: the thread exits.
                let _ = exit_rx.lock().unwrap().recv();
            });
        }
        holding.wait();
        scope.spawn(move || {
            // Once the session is stopping, let the holders exit a little
            // after the grace period: while the collector copies chunks.
            wait_until("the session to stop", || !fxt::is_enabled());
            std::thread::sleep(Duration::from_millis(4)); // FINISH_GRACE is 2 ms
            drop(exit_tx);
        });
        finish(session)
    });
    trace.check_accounting(Some(FILL + HOLDERS));
    assert_eq!(trace.stats.records_dropped, 0, "nothing was overwritten");
    assert_eq!(trace.named("holder").count() as u64, HOLDERS);
    assert_eq!(trace.named("fill").count() as u64, FILL);
}
