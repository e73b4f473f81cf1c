//! Events emitted by a signal handler that interrupts the thread's own
//! events: a handler event that lands while a record is being written is
//! dropped and counted (the cursor is busy), one that lands between records
//! is written whole; the interrupted thread's records are never damaged.
//!
//! A second thread sends the loop thread `SIGUSR2` about every 20 µs while
//! it writes 2,000,000 numbered events; the handler writes one numbered
//! event per signal. Afterwards every loop event is in the trace exactly
//! once and in order, and handler events written + records dropped = signals
//! handled.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fxt_format::decode::{ArgValue as DArg, Record};
use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};

static LOOP_KEYS: [KeyCache; 1] = [KeyCache::NEW];
static LOOP: Callsite = Callsite::new("reentry", "loop", &["n"], &LOOP_KEYS);
static HANDLER_KEYS: [KeyCache; 1] = [KeyCache::NEW];
static HANDLER: Callsite = Callsite::new("reentry", "handler", &["n"], &HANDLER_KEYS);

/// Signals handled so far (the handler's event number).
static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    let n = HANDLED.fetch_add(1, Ordering::Relaxed);
    if let Some(site) = HANDLER.site_with_keys(&HANDLER_KEYS) {
        instant(site, &[ArgValue::U64(n)]);
    }
}

fn emit_loop(n: u64) {
    if let Some(site) = LOOP.site_with_keys(&LOOP_KEYS) {
        instant(site, &[ArgValue::U64(n)]);
    }
}

fn install_handler() {
    // SAFETY: a zeroed `sigaction` is a valid starting value; the handler
    // is an `extern "C" fn(c_int)` (no SA_SIGINFO), the mask is emptied
    // before use, and `sigaction` only reads `action`.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR2, &action, std::ptr::null_mut()),
            0
        );
    }
}

#[test]
fn handler_events_never_damage_interrupted_records() {
    let _serial = common::serial();
    install_handler();
    const EVENTS: u64 = 2_000_000;
    let session = fxt_runtime::start(
        fxt_runtime::Config::new()
            .buffer_size(256 << 20)
            .output(std::env::temp_dir().join("fxt-reentry-unused.fxt")),
    )
    .unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<libc::pthread_t>();
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || {
            // Register the thread and both call sites before any signal
            // (registration takes locks, which a handler must not).
            emit_loop(0);
            on_signal(0);
            // SAFETY: `pthread_self` has no preconditions.
            tx.send(unsafe { libc::pthread_self() }).unwrap();
            for n in 1..EVENTS {
                emit_loop(n);
            }
            done.store(true, Ordering::Release);
        })
    };
    let target = rx.recv().unwrap();
    let mut sent = 0u64;
    while !done.load(Ordering::Acquire) {
        // SAFETY: `target` is the writer thread, alive until it sets
        // `done` (checked just before), and SIGUSR2 has a handler.
        unsafe { libc::pthread_kill(target, libc::SIGUSR2) };
        sent += 1;
        std::thread::sleep(Duration::from_micros(20));
    }
    writer.join().unwrap();

    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = common::decode(&bytes);
    let mut loop_ns = Vec::new();
    let mut handler_ns = Vec::new();
    for r in &records {
        if let Record::Event(e) = r {
            let n = match e.args.first().map(|a| &a.value) {
                Some(DArg::U64(v)) => *v,
                other => panic!("event without its number: {other:?}"),
            };
            match e.name.as_str().unwrap_or("") {
                "loop" => loop_ns.push(n),
                "handler" => handler_ns.push(n),
                other => panic!("unexpected event {other}"),
            }
        }
    }
    let handled = HANDLED.load(Ordering::Relaxed);
    assert_eq!(
        loop_ns,
        (0..EVENTS).collect::<Vec<_>>(),
        "every loop event once, in order"
    );
    assert!(
        handler_ns.windows(2).all(|w| w[0] < w[1]),
        "handler events in order"
    );
    assert_eq!(
        handler_ns.len() as u64 + stats.records_dropped,
        handled,
        "every handler event written or counted as dropped ({stats:?})"
    );
    // The test means something only if signals landed both inside and
    // between records.
    assert!(
        sent > 100 && stats.records_dropped > 0 && handler_ns.len() > 1,
        "sent {sent}, handled {handled}, written {}, dropped {}",
        handler_ns.len(),
        stats.records_dropped
    );
}
