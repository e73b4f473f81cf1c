//! `fxt::sync` against `parking_lot` and `std::sync`, in one run:
//!
//! * `lock/uncontended/*`: one thread, lock + unlock of a `Mutex<u64>`
//!   (increment inside): `parking_lot`, `std`, and `fxt::sync` with no
//!   session (tracing off), with a session whose categories leave `lock`
//!   out, and with `lock` recorded;
//! * `lock/contended-N/*`: N threads (4, 16) each taking the lock 2,000
//!   times around a short critical section (throughput: acquisitions per
//!   second); `fxt::sync` records every wait (checked: nothing dropped);
//! * `lock/work-N/*`: N threads (4, 16), each acquisition with some work
//!   inside (tens of ns) and more outside (a few hundred ns), as a lock in
//!   a program is used: `parking_lot`, `fxt::sync` with tracing off, and
//!   with every wait recorded.
//!
//! Recorded runs start a fresh session per run, as a user's first
//! session would be; `fxt-recorded-prefaulted` starts it with its buffer
//! already faulted in (`Prefault::AtStart`), since the default faults it
//! in on a background thread during the run, and on a machine with few
//! cores that thread's page faults compete with the lock's threads.
//!
//! ```text
//! cargo bench -p fxt-bench --bench locks
//! ```
//!
//! Wall-clock figures on a loaded machine are noisy; the instruction
//! counts of the uncontended path (`lock-instructions`, under callgrind)
//! are the robust comparison.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fxt_bench::locks::{work, Lock};

/// The tracing states `fxt::sync` is measured in.
#[derive(Clone, Copy)]
enum Tracing {
    Off,
    CategoryOff,
    On,
    /// Recorded, the buffer faulted in before the run (`Prefault::AtStart`).
    OnPrefaulted,
}

fn session(t: Tracing) -> Option<fxt::Session> {
    let config = fxt::Config::new().buffer_size(64 << 20);
    match t {
        Tracing::Off => None,
        Tracing::CategoryOff => Some(fxt::start(config.categories(&["other"])).unwrap()),
        Tracing::On => Some(fxt::start(config).unwrap()),
        Tracing::OnPrefaulted => Some(fxt::start(config.prefault(fxt::Prefault::AtStart)).unwrap()),
    }
}

fn finish(s: Option<fxt::Session>) {
    if let Some(s) = s {
        let (_, stats) = s.finish_to_vec().unwrap();
        assert_eq!(stats.records_dropped, 0, "every wait recorded");
    }
}

fn uncontended(c: &mut Criterion) {
    let mut g = c.benchmark_group("lock/uncontended");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(1));
    let pl = parking_lot::Mutex::new(0u64);
    g.bench_function("parking_lot", |b| b.iter(|| pl.with(|v| *v += 1)));
    let std = std::sync::Mutex::new(0u64);
    g.bench_function("std", |b| b.iter(|| std.with(|v| *v += 1)));
    for (name, t) in [
        ("fxt-tracing-off", Tracing::Off),
        ("fxt-category-off", Tracing::CategoryOff),
        ("fxt-category-on", Tracing::On),
    ] {
        let m = fxt::sync::Mutex::named("bench", 0u64);
        let s = session(t);
        g.bench_function(name, |b| b.iter(|| m.with(|v| *v += 1)));
        finish(s);
    }
    g.finish();
}

/// `threads` threads taking `lock` `per_thread` times each; the time from
/// the start barrier to the last thread done.
fn run<L: Lock>(lock: &Arc<L>, threads: usize, per_thread: u64) -> Duration {
    run_with(lock, threads, per_thread, 0, 0)
}

/// [`run`] with `inside` steps of [`work`] in each critical section and
/// `outside` between them.
fn run_with<L: Lock>(
    lock: &Arc<L>,
    threads: usize,
    per_thread: u64,
    inside: u32,
    outside: u32,
) -> Duration {
    let barrier = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (lock, barrier) = (lock.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut local = 0u64;
                for i in 0..per_thread {
                    // A short critical section: a few dependent operations.
                    lock.with(|v| *v = work(black_box(v.wrapping_mul(31).wrapping_add(i)), inside));
                    local = work(local, outside);
                }
                black_box(local);
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    workers.into_iter().for_each(|w| w.join().unwrap());
    start.elapsed()
}

fn contended(c: &mut Criterion) {
    const PER_THREAD: u64 = 2_000;
    for threads in [4, 16] {
        let mut g = c.benchmark_group(format!("lock/contended-{threads}"));
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .throughput(Throughput::Elements(threads as u64 * PER_THREAD));
        let bench = |g: &mut criterion::BenchmarkGroup<_>, name: &str, f: &dyn Fn() -> Duration| {
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| f()).sum())
            });
        };
        let pl = Arc::new(parking_lot::Mutex::new(0u64));
        bench(&mut g, "parking_lot", &|| run(&pl, threads, PER_THREAD));
        let std = Arc::new(std::sync::Mutex::new(0u64));
        bench(&mut g, "std", &|| run(&std, threads, PER_THREAD));
        let fx = Arc::new(fxt::sync::Mutex::named("bench", 0u64));
        bench(&mut g, "fxt-tracing-off", &|| run(&fx, threads, PER_THREAD));
        // A session per sample, so the buffer never fills: every wait is in it.
        bench(&mut g, "fxt-category-on", &|| {
            let s = session(Tracing::On);
            let d = run(&fx, threads, PER_THREAD);
            finish(s);
            d
        });
        bench(&mut g, "fxt-recorded-prefaulted", &|| {
            let s = session(Tracing::OnPrefaulted);
            let d = run(&fx, threads, PER_THREAD);
            finish(s);
            d
        });
        g.finish();
    }
}

/// Work inside and outside the lock: about 10 steps inside (tens of ns)
/// and 100 outside (a few hundred ns) of dependent multiply-adds.
fn with_work(c: &mut Criterion) {
    const PER_THREAD: u64 = 2_000;
    const INSIDE: u32 = 10;
    const OUTSIDE: u32 = 100;
    for threads in [4, 16] {
        let mut g = c.benchmark_group(format!("lock/work-{threads}"));
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .throughput(Throughput::Elements(threads as u64 * PER_THREAD));
        let bench = |g: &mut criterion::BenchmarkGroup<_>, name: &str, f: &dyn Fn() -> Duration| {
            g.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| f()).sum())
            });
        };
        let go = |l: &Arc<_>| run_with(l, threads, PER_THREAD, INSIDE, OUTSIDE);
        let pl = Arc::new(parking_lot::Mutex::new(0u64));
        bench(&mut g, "parking_lot", &|| {
            run_with(&pl, threads, PER_THREAD, INSIDE, OUTSIDE)
        });
        let fx = Arc::new(fxt::sync::Mutex::named("bench", 0u64));
        bench(&mut g, "fxt-tracing-off", &|| go(&fx));
        // A session per sample, so the buffer never fills: every wait is in it.
        bench(&mut g, "fxt-category-on", &|| {
            let s = session(Tracing::On);
            let d = go(&fx);
            finish(s);
            d
        });
        bench(&mut g, "fxt-recorded-prefaulted", &|| {
            let s = session(Tracing::OnPrefaulted);
            let d = go(&fx);
            finish(s);
            d
        });
        g.finish();
    }
}

criterion_group!(benches, uncontended, contended, with_work);
criterion_main!(benches);
