//! A soak test, bounded in time: worker threads emit every kind of record
//! without pause while sessions of every mode (and the crash-safe variants)
//! start and finish over and over, and short-lived threads come and go. Every collected trace must
//! decode and add up.
//!
//! Runs about 4 s by default; `FXT_SOAK_SECS=60 cargo test --test soak`
//! runs longer.
#![deny(warnings, clippy::all)]

mod reliability_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fxt::{trace_blob, trace_counter, trace_duration_scope, trace_instant, trace_log};
use reliability_support::*;

const WORKERS: u64 = 4;
const CHURN_THREADS: u64 = 2;
const CHURN_EVENTS: u64 = 200;

fn soak_time() -> Duration {
    let secs = std::env::var("FXT_SOAK_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(4.0);
    Duration::from_secs_f64(secs)
}

/// Sets a flag when dropped: stops the workers however the test ends.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A worker: numbered instants, and now and then a duration with a
/// counter inside, a log, a blob, a new thread name.
fn worker(t: u64, stop: &AtomicBool) {
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        trace_instant!("soak", "tick", "t" => t, "seq" => seq, "label" => "worker");
        if seq.is_multiple_of(8) {
            let _work = trace_duration_scope!("soak", "work", "t" => t, "seq" => seq);
            trace_counter!("soak", "load", id = t, "seq" => seq, "ratio" => seq as f64 / 7.0);
        }
        if seq.is_multiple_of(64) {
            trace_log!("soak", "worker {t} at {seq}");
        }
        if seq.is_multiple_of(128) {
            trace_blob!("soak", "state", seq.to_le_bytes());
        }
        if seq.is_multiple_of(4096) {
            fxt::set_thread_name(&format!("worker-{t}-{seq}"));
        }
        if seq.is_multiple_of(32) {
            std::thread::yield_now();
        }
    }
}

/// What the soak saw, for the summary line.
#[derive(Debug, Default)]
struct Totals {
    sessions: u64,
    by_variant: [u64; 5],
    events: u64,
    written: u64,
    dropped: u64,
    sessions_with_drops: u64,
}

fn check(trace: &Trace, round: u64) {
    trace.check_accounting(None);
    trace.check_resolved();
    let pid = u64::from(std::process::id());
    for e in trace.events() {
        assert!(
            matches!(e.thread, Thread::Known { process, .. } if process == pid),
            "round {round}: {e:?}"
        );
        if let EventKind::DurationComplete { end } = e.kind {
            assert!(e.timestamp <= end, "round {round}: begin <= end in {e:?}");
        }
    }
    // Per thread and event name, "seq" strictly increases in file order.
    trace.check_increasing("seq");
}

#[test]
fn sessions_start_and_finish_while_threads_emit() {
    // (mode, crash safe): every mode, and the crash-safe (file-backed)
    // variants of the modes that have one.
    let variants = [
        (Mode::Oneshot, false),
        (Mode::Circular, false),
        (Mode::Streaming, false),
        (Mode::Oneshot, true),
        (Mode::Circular, true),
    ];
    let _turn = lock();
    let deadline = Instant::now() + soak_time();
    let stop = AtomicBool::new(false);
    let totals = std::thread::scope(|scope| {
        let _stop = SetOnDrop(&stop);
        for t in 0..WORKERS {
            let stop = &stop;
            std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .spawn_scoped(scope, move || worker(t, stop))
                .unwrap();
        }
        let mut totals = Totals::default();
        let mut round = 0u64;
        // At least one session of each variant, however short the soak.
        while round < variants.len() as u64 || Instant::now() < deadline {
            let variant = (round % variants.len() as u64) as usize;
            let (mode, crash_safe) = variants[variant];
            // Every fourth session has the smallest buffer: it fills up.
            let size = if round % 4 == 3 { 256 << 10 } else { 4 << 20 };
            let path = temp_path(&format!("soak-{round}"));
            let config = Config::new()
                .buffer_size(size)
                .mode(mode)
                .crash_safe(crash_safe)
                .output(&path);
            let session = fxt::start(config).expect("no other session is live");
            for c in 0..CHURN_THREADS {
                std::thread::Builder::new()
                    .name(format!("churn-{round}-{c}"))
                    .spawn(move || {
                        for seq in 0..CHURN_EVENTS {
                            trace_instant!("soak", "churn", "seq" => seq);
                        }
                    })
                    .unwrap()
                    .join()
                    .unwrap();
            }
            // The session's length (workload, not synchronization).
            std::thread::sleep(Duration::from_millis(1 + round % 7));
            let trace = if crash_safe {
                finish_to_file(session, &path)
            } else {
                finish_any(session, mode, &path)
            };
            check(&trace, round);
            // The churn threads ran entirely inside the session.
            let churn = trace.named("churn").count() as u64;
            if trace.stats.records_dropped == 0 {
                assert_eq!(
                    churn,
                    CHURN_THREADS * CHURN_EVENTS,
                    "round {round} ({mode:?}, crash safe: {crash_safe})"
                );
            }
            totals.sessions += 1;
            totals.by_variant[variant] += 1;
            totals.events += trace.events().count() as u64;
            totals.written += trace.stats.emitted_records_written;
            totals.dropped += trace.stats.records_dropped;
            totals.sessions_with_drops += u64::from(trace.stats.records_dropped > 0);
            round += 1;
        }
        totals
    });
    eprintln!("soak: {totals:?}");
    assert!(totals.by_variant.iter().all(|&n| n > 0));
    assert!(totals.events > 0);
}
