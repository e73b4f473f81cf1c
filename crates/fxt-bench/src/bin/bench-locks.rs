//! What a recorded lock wait costs, in CPU time: `fxt::sync::Mutex` with
//! every wait recorded against the same lock with tracing off and
//! `parking_lot`, in the workloads of `benches/locks.rs` (`work-N`: tens
//! of ns inside the lock and a few hundred outside; `contended-N`: an
//! empty critical section), N = 4 and 16 threads.
//!
//! ```text
//! cargo run --release -p fxt-bench --bin bench-locks -- --reps 7
//! cargo run --release -p fxt-bench --bin bench-locks -- --timed-out-only  # for perf record
//! cargo run --release -p fxt-bench --bin bench-locks -- --instructions    # under callgrind
//! ```
//!
//! Each repetition runs every workload and lock in turn. Printed per
//! workload: the throughput (millions of acquisitions per second of wall
//! time; median and best repetition), the recorded run against
//! `parking_lot`, the process CPU time per acquisition
//! (`CLOCK_PROCESS_CPUTIME_ID`: time the threads ran, which another
//! process's load does not add to), and the CPU time per recorded wait:
//! the recorded run's CPU time less the tracing-off run's of the same
//! repetition, over the waits in its trace (median of the repetitions
//! with at least 1,000 waits; `NaN` when none had: on a machine whose
//! other load keeps the threads from running at once, they rarely
//! contend). The load average is printed before and after: on a shared
//! machine the wall-clock columns move with it.
//!
//! Last, what recording a wait costs whatever the load: one thread holds
//! the lock and takes it again with `try_lock_for(0)` (a first try that
//! fails, then a wait that times out), tracing off and recorded; the
//! difference of their thread CPU times per try is the CPU time of the
//! bookkeeping and the one record of a wait. `--instructions` counts the
//! same loop's instructions with callgrind instead (no load moves them).

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use fxt_bench::locks::{work, Lock};
use fxt_format::decode::{ArgValue, EventKind, Record, SliceReader};

/// Acquisitions per thread.
const PER_THREAD: u64 = 20_000;

/// A workload: threads, and steps of work inside and outside the lock.
#[derive(Clone, Copy)]
struct Workload {
    name: &'static str,
    threads: usize,
    inside: u32,
    outside: u32,
}

const WORKLOADS: [Workload; 4] = [
    Workload {
        name: "work-4",
        threads: 4,
        inside: 10,
        outside: 100,
    },
    Workload {
        name: "work-16",
        threads: 16,
        inside: 10,
        outside: 100,
    },
    Workload {
        name: "contended-4",
        threads: 4,
        inside: 0,
        outside: 0,
    },
    Workload {
        name: "contended-16",
        threads: 16,
        inside: 0,
        outside: 0,
    },
];

const LOCKS: [&str; 3] = ["parking_lot", "fxt-tracing-off", "fxt-recorded"];

/// One run: (wall ns from the first thread's start to the last one's
/// end, process CPU ns from the start barrier to the last thread done).
fn run<L: Lock>(lock: &Arc<L>, w: Workload) -> (u64, u64) {
    let barrier = Arc::new(Barrier::new(w.threads + 1));
    let workers: Vec<_> = (0..w.threads)
        .map(|_| {
            let (lock, barrier) = (lock.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let start = Instant::now();
                let mut local = 0u64;
                for i in 0..PER_THREAD {
                    lock.with(|v| {
                        *v = work(black_box(v.wrapping_mul(31).wrapping_add(i)), w.inside)
                    });
                    local = work(local, w.outside);
                }
                black_box(local);
                (start, Instant::now())
            })
        })
        .collect();
    let cpu = fxt_bench::host::process_cpu_ns();
    barrier.wait();
    let spans: Vec<(Instant, Instant)> = workers.into_iter().map(|t| t.join().unwrap()).collect();
    let cpu = fxt_bench::host::process_cpu_ns().saturating_sub(cpu);
    let start = spans.iter().map(|s| s.0).min().unwrap();
    let end = spans.iter().map(|s| s.1).max().unwrap();
    ((end - start).as_nanos() as u64, cpu)
}

/// Contended acquisitions on one thread, whatever the machine's load: the
/// thread holds the lock and tries `n` times to take it again for no
/// time (`try_lock_for(0)`: a first try that fails, then a wait that
/// times out, recorded as one). Thread CPU ns per try, and the waits
/// recorded (tracing off: 0).
fn timed_out_waits(recorded: bool, n: u64) -> (f64, u64) {
    let m = fxt::sync::Mutex::named("bench", 0u64);
    let session = recorded.then(|| fxt::start(fxt::Config::new().buffer_size(64 << 20)).unwrap());
    let _held = m.lock();
    let cpu = fxt_bench::host::thread_cpu_ns();
    timed_out_loop(&m, n);
    let per_try = fxt_bench::host::thread_cpu_ns().saturating_sub(cpu) as f64 / n as f64;
    let waits = session.map_or(0, |s| {
        let (bytes, stats) = s.finish_to_vec().unwrap();
        assert_eq!(stats.records_dropped, 0, "every wait recorded");
        timed_out(&bytes)
    });
    (per_try, waits)
}

/// `n` tries to take `m`, which this thread holds (the loop callgrind
/// counts, by its name).
#[inline(never)]
fn timed_out_loop(m: &fxt::sync::Mutex<u64>, n: u64) {
    for _ in 0..n {
        assert!(black_box(m)
            .try_lock_for(std::time::Duration::ZERO)
            .is_none());
    }
}

/// Tries per run under callgrind.
const COUNTED: u64 = 20_000;

/// Instructions per timed-out wait, tracing off or recorded, counted by
/// callgrind in [`timed_out_loop`] (this program run again under it).
fn instructions(recorded: bool) -> f64 {
    let args = ["--timed-out-child", if recorded { "rec" } else { "off" }];
    let n = fxt_bench::callgrind::expect(&args, "*timed_out_loop*").instructions;
    n as f64 / COUNTED as f64
}

/// The `timed out` slices of the lock "bench" in `trace`.
fn timed_out(trace: &[u8]) -> u64 {
    SliceReader::new(trace)
        .flatten()
        .filter(|r| match r {
            Record::Event(e) => {
                e.category == "lock"
                    && e.name == "bench"
                    && e.args.iter().any(|a| {
                        a.name == "state"
                            && matches!(&a.value, ArgValue::Str(s) if *s == "timed out")
                    })
            }
            _ => false,
        })
        .count() as u64
}

/// The wait slices of the lock "bench" in `trace`.
fn waits(trace: &[u8]) -> u64 {
    SliceReader::new(trace)
        .flatten()
        .filter(|r| match r {
            Record::Event(e) => {
                e.category == "lock"
                    && e.name == "bench"
                    && matches!(e.kind, EventKind::DurationComplete { .. })
                    && e.args.iter().any(|a| {
                        a.name == "state" && matches!(&a.value, ArgValue::Str(s) if *s == "wait")
                    })
            }
            _ => false,
        })
        .count() as u64
}

/// One run of `lock` in workload `w`: (wall ns, CPU ns, waits recorded).
fn measure(lock: &str, w: Workload) -> (u64, u64, u64) {
    match lock {
        "parking_lot" => {
            let (wall, cpu) = run(&Arc::new(parking_lot::Mutex::new(0u64)), w);
            (wall, cpu, 0)
        }
        "fxt-tracing-off" => {
            let (wall, cpu) = run(&Arc::new(fxt::sync::Mutex::named("bench", 0u64)), w);
            (wall, cpu, 0)
        }
        _ => {
            let m = Arc::new(fxt::sync::Mutex::named("bench", 0u64));
            let session = fxt::start(fxt::Config::new().buffer_size(256 << 20)).unwrap();
            let (wall, cpu) = run(&m, w);
            let (bytes, stats) = session.finish_to_vec().unwrap();
            assert_eq!(stats.records_dropped, 0, "every wait recorded");
            (wall, cpu, waits(&bytes))
        }
    }
}

/// Timed-out waits per run of [`timed_out_waits`].
const TRIES: u64 = 100_000;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .map_or(7, |v| v.parse().expect("a number"));
    if let Some(i) = args.iter().position(|a| a == "--timed-out-child") {
        timed_out_waits(args.get(i + 1).map(String::as_str) == Some("rec"), COUNTED);
        return;
    }
    if args.iter().any(|a| a == "--instructions") {
        let (off, rec) = (instructions(false), instructions(true));
        println!(
            "timed-out wait, instructions (callgrind): tracing off {off:.0}, recorded {rec:.0}; recording one wait: {:.0}",
            rec - off
        );
        return;
    }
    if args.iter().any(|a| a == "--timed-out-only") {
        // For a profiler: the recorded timed-out waits alone.
        for _ in 0..reps {
            timed_out_waits(true, TRIES);
        }
        return;
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("bench-locks: {reps} reps, {PER_THREAD} acquisitions per thread, {cores} cores");
    println!("load average before: {}", fxt_bench::host::load_average());
    // [workload][lock] -> per rep (wall, cpu, waits)
    let mut runs = vec![vec![Vec::new(); LOCKS.len()]; WORKLOADS.len()];
    let (mut off_tries, mut rec_tries) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        for (i, &w) in WORKLOADS.iter().enumerate() {
            for (j, lock) in LOCKS.iter().enumerate() {
                runs[i][j].push(measure(lock, w));
            }
        }
        off_tries.push(timed_out_waits(false, TRIES).0);
        let (ns, waits) = timed_out_waits(true, TRIES);
        assert_eq!(waits, TRIES, "a record per timed-out wait");
        rec_tries.push(ns);
    }
    let per_wait: Vec<f64> = rec_tries
        .iter()
        .zip(&off_tries)
        .map(|(r, o)| r - o)
        .collect();
    println!(
        "\none thread, {TRIES} timed-out waits a run (thread CPU ns per wait, median of {reps}): tracing off {:.1}, recorded {:.1}; recording one wait: {:.1} ns",
        median(&mut off_tries),
        median(&mut rec_tries),
        median(&mut per_wait.clone()),
    );
    table(&mut runs);
    println!("\n(rec/pl: parking_lot's median throughput over the recorded one's; cpu: process CPU ns per acquisition; cpu/wait: CPU ns per recorded wait)");
    println!("load average after: {}", fxt_bench::host::load_average());
}

/// One run of a workload: wall ns, CPU ns, recorded waits.
type Run = (u64, u64, u64);

/// The table of the workloads' runs (`runs[workload][lock]`: per rep).
fn table(runs: &mut [Vec<Vec<Run>>]) {
    println!(
        "\n{:<13} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9}",
        "M acq/s",
        "pl med",
        "off med",
        "rec med",
        "pl best",
        "off best",
        "rec best",
        "rec/pl",
        "pl cpu",
        "off cpu",
        "rec cpu",
        "waits",
        "cpu/wait"
    );
    for (i, w) in WORKLOADS.iter().enumerate() {
        let acquisitions = (w.threads as u64 * PER_THREAD) as f64;
        let rate = |r: &(u64, u64, u64)| acquisitions / r.0 as f64 * 1e3;
        let cpu = |r: &(u64, u64, u64)| r.1 as f64 / acquisitions;
        let med = |j: usize, f: &dyn Fn(&(u64, u64, u64)) -> f64| {
            median(&mut runs[i][j].iter().map(f).collect::<Vec<_>>())
        };
        let best = |j: usize| runs[i][j].iter().map(rate).fold(0.0, f64::max);
        // Paired with the tracing-off run of the same repetition; only
        // where the recorded run waited enough to divide by.
        let mut per_wait: Vec<f64> = runs[i][2]
            .iter()
            .zip(&runs[i][1])
            .filter(|(rec, _)| rec.2 >= 1_000)
            .map(|(rec, off)| (rec.1 as f64 - off.1 as f64) / rec.2 as f64)
            .collect();
        let per_wait = match per_wait.is_empty() {
            true => f64::NAN,
            false => median(&mut per_wait),
        };
        let waits = med(2, &|r| r.2 as f64);
        let (pl, off, rec) = (med(0, &rate), med(1, &rate), med(2, &rate));
        println!(
            "{:<13} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>6.2}x {:>7.1} {:>7.1} {:>7.1} {:>8.0} {:>9.1}",
            w.name, pl, off, rec, best(0), best(1), best(2), pl / rec,
            med(0, &cpu), med(1, &cpu), med(2, &cpu), waits, per_wait
        );
    }
}
