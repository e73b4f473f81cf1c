//! CPU samples (`Config::sample_hz`) landing on a thread that emits in
//! bursts at full speed: a sample that interrupts a record in progress is
//! dropped and counted, one between records is written whole; the
//! thread's own events are never damaged; every sample taken is in the
//! file or counted as dropped; each sample carries its thread and a
//! timestamp between its neighbours'. Also in a crash-safe session
//! (samples through the samples-only gate, filler protocol), and with the
//! thread's chunks filling up (samples dropped at chunk boundaries,
//! counted).
//!
//! No timing is asserted: the counts hold on a loaded machine and on one
//! core (the thread runs long enough in CPU time for some samples to land
//! whatever the kernel's tick).

mod common;

use fxt_format::decode::{ArgValue as DArg, Record, Thread};
use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};

static KEYS: [KeyCache; 1] = [KeyCache::NEW];
static LOOP: Callsite = Callsite::new("samples", "loop", &["n"], &KEYS);

fn emit(n: u64) {
    if let Some(site) = LOOP.site_with_keys(&KEYS) {
        instant(site, &[ArgValue::U64(n)]);
    }
}

/// The calling thread's CPU time, in nanoseconds.
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A decoded `fxt.sample` payload.
#[derive(Debug)]
struct Sample {
    ts: u64,
    pid: u64,
    tid: u64,
    frames: Vec<u64>,
}

fn sample_of(r: &Record) -> Option<Sample> {
    let Record::Blob(b) = r else { return None };
    if b.name.as_str() != Some("fxt.sample") {
        return None;
    }
    let w: Vec<u64> = b
        .payload
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // The handler writes raw stacks: walk 4, no frames, then the raw
    // stack (arch x86-64, 3 registers, S words of stack).
    assert_eq!(w[3] & 0xffff, 0, "no frame list");
    assert_eq!((w[3] >> 16) & 0xff, 4, "walk: a raw stack");
    assert_eq!(w[3] >> 25, 0, "reserved flag bits");
    let head = w[4];
    assert_eq!(head & 0xffff, 1 | (3 << 8), "x86-64, three registers");
    let words = (head >> 32) as usize;
    assert!(words <= fxt_runtime::stack::MAX_STACK_WORDS);
    assert_eq!(
        w.len(),
        4 + 2 + 3 + words,
        "stack word count matches the payload"
    );
    let (stack_address, pc, sp) = (w[5], w[6], w[7]);
    if words > 0 {
        // The copy starts below the interrupted sp (its red zone) and
        // covers it.
        assert!(stack_address <= sp && sp < stack_address + words as u64 * 8);
    }
    Some(Sample {
        ts: w[0],
        pid: w[1],
        tid: w[2],
        frames: vec![pc],
    })
}

/// Runs a thread emitting at least `min_events` numbered events, in bursts
/// of a thousand as fast as it can, for at least `cpu_ms` of CPU time; after
/// each burst it works without recording for `rest` times the burst's CPU
/// time (0: none). Checks the trace.
fn run(
    config: fxt_runtime::Config,
    min_events: u64,
    cpu_ms: u64,
    rest: u64,
) -> (u64, fxt_runtime::Stats) {
    let session = fxt_runtime::start(config).unwrap();
    // SAFETY: `gettid` has no preconditions.
    let main_tid = unsafe { libc::gettid() } as u64;
    let (tid, written) = std::thread::spawn(move || {
        // SAFETY: `gettid` has no preconditions.
        let tid = unsafe { libc::gettid() } as u64;
        let start = cpu_ns();
        let mut n = 0;
        while n < min_events || cpu_ns() - start < cpu_ms * 1_000_000 {
            let burst = cpu_ns();
            for _ in 0..1000 {
                emit(n);
                n += 1;
            }
            let until = cpu_ns() + (cpu_ns() - burst) * rest;
            while rest > 0 && cpu_ns() < until {
                for i in 0..100u64 {
                    std::hint::black_box(i);
                }
            }
        }
        (tid, n)
    })
    .join()
    .unwrap();
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = common::decode(&bytes);

    let mut loop_ns = Vec::new();
    let mut samples = 0u64;
    let mut last_ts = 0u64;
    for r in &records {
        if let Some(s) = sample_of(r) {
            assert_eq!(s.pid, std::process::id() as u64);
            samples += 1;
            if s.tid != tid {
                // The thread that started the session (sampled from the
                // start) waiting for the writer.
                assert_eq!(s.tid, main_tid, "a sample of a recording thread");
                continue;
            }
            assert!(s.ts >= last_ts, "sample at {} after {last_ts}", s.ts);
            assert!(s.frames[0] != 0);
            last_ts = s.ts;
        } else if let Record::Event(e) = r {
            if e.category.as_str() == Some(fxt_format::samples::CATEGORY) {
                // The head of a split `fxt.symbols` blob in the samples'
                // appendix (after every chunk).
                continue;
            }
            let Some(DArg::U64(n)) = e.args.first().map(|a| &a.value) else {
                panic!("event without its number: {e:?}");
            };
            let Thread::Known { thread, .. } = e.thread else {
                panic!("unresolved thread in {e:?}");
            };
            assert_eq!(thread, tid);
            assert!(
                e.timestamp >= last_ts,
                "event {n} before the sample before it"
            );
            last_ts = e.timestamp;
            loop_ns.push(*n);
        }
    }
    let kept = loop_ns.len() as u64;
    if stats.records_dropped == 0 || kept == written {
        assert_eq!(
            loop_ns,
            (0..written).collect::<Vec<_>>(),
            "every event once, in order"
        );
    } else {
        assert!(loop_ns.windows(2).all(|w| w[0] < w[1]), "events in order");
    }
    assert_eq!(
        samples + kept + stats.records_dropped,
        stats.samples + written,
        "every sample and event written or counted as dropped ({stats:?})"
    );
    assert_eq!(samples + kept, stats.emitted_records_written, "({stats:?})");
    assert!(samples > 0, "no sample written ({stats:?})");
    eprintln!("{samples} samples written, {stats:?}");
    (samples, stats)
}

#[test]
fn samples_at_10khz_never_damage_a_full_speed_writer() {
    let _serial = common::serial();
    // Written at the end (no streamer to keep up with: on a loaded machine
    // a drained ring can fill and drop events, which is not what this
    // asserts), in a buffer large enough for every event: the thread
    // spends a tenth of its CPU time recording (at most some 6 M events
    // even at 5 ns an event), so only samples that interrupted a record
    // (or hit a chunk's end) are dropped. The event count is small enough
    // that a debug build's slower events (its CPU time, and so its
    // samples of some 2 KiB each) stay far below the buffer: 500 k events
    // took 8 to 12 s of CPU, whose samples filled 256 MiB in CI.
    let config = fxt_runtime::Config::new()
        .buffer_size(256 << 20)
        .drain(false)
        .sample_hz(10_000)
        .output(std::env::temp_dir().join("fxt-samples-unused.fxt"));
    let (samples, stats) = run(config, 50_000, 300, 9);
    assert!(!stats.limit_reached, "{stats:?}");
    assert!(stats.records_dropped < stats.samples, "{stats:?}");
    assert!(
        samples + stats.records_dropped == stats.samples,
        "{stats:?}"
    );
}

#[test]
fn samples_in_a_crash_safe_session() {
    let _serial = common::serial();
    let path = std::env::temp_dir().join(format!("fxt-samples-cs-{}.fxt", std::process::id()));
    let config = fxt_runtime::Config::new()
        .buffer_size(64 << 20)
        .crash_safe(true)
        .sample_hz(10_000)
        .output(&path);
    run(config, 200_000, 200, 0);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn samples_when_the_buffer_fills() {
    let _serial = common::serial();
    let config = fxt_runtime::Config::new()
        .buffer_size(1 << 20)
        .chunk_size(16 << 10)
        .drain(false)
        .sample_hz(10_000)
        .output(std::env::temp_dir().join("fxt-samples-full-unused.fxt"));
    // At full speed the buffer would fill before the thread's first
    // samples, most of which interrupt a record: at a tenth of its time
    // recording, samples land whole until the buffer fills.
    let (_, stats) = run(config, 0, 200, 9);
    assert!(stats.limit_reached, "{stats:?}");
}

/// One thread records in two sampling sessions in turn (its writer still
/// holds the first when the second starts): its first event in the second
/// registers it again, which leaves the first and arms it for the second,
/// so its CPU samples are in each trace (a thread is sampled from its
/// first event in a session, as any).
#[test]
fn a_thread_is_sampled_again_in_a_later_session() {
    let _serial = common::serial();
    let (go, steps) = std::sync::mpsc::channel::<()>();
    let (done, finished) = std::sync::mpsc::channel::<u64>();
    let worker = std::thread::spawn(move || {
        // SAFETY: `gettid` has no preconditions.
        let tid = unsafe { libc::gettid() } as u64;
        for () in steps {
            let start = cpu_ns();
            let mut n = 0;
            // 100 ms of CPU time, an event now and then (the buffer never
            // fills).
            while cpu_ns() - start < 100_000_000 {
                emit(n);
                n += 1;
                for i in 0..10_000u64 {
                    std::hint::black_box(i);
                }
            }
            done.send(tid).unwrap();
        }
    });
    for session in 0..2 {
        let config = fxt_runtime::Config::new()
            .sample_hz(1000)
            .output(std::env::temp_dir().join("fxt-samples-again-unused.fxt"));
        let running = fxt_runtime::start(config).unwrap();
        go.send(()).unwrap();
        let tid = finished.recv().unwrap();
        let (bytes, stats) = running.finish_to_vec().unwrap();
        let records = common::decode(&bytes);
        let ours = records
            .iter()
            .filter_map(sample_of)
            .filter(|s| s.tid == tid)
            .count();
        assert!(
            ours > 0,
            "session {session}: no sample of the thread ({stats:?})"
        );
    }
    drop(go);
    worker.join().unwrap();
}
