//! `fxt::sync` against `parking_lot` and `std::sync`, in one run:
//!
//! * `lock/uncontended/*`: one thread, lock + unlock of a `Mutex<u64>`
//!   (increment inside): `parking_lot`, `std`, and `fxt::sync` with no
//!   session (tracing off), with a session whose categories leave `lock`
//!   out, and with `lock` recorded;
//! * `lock/contended-N/*`: N threads (4, 16) each taking the lock 2,000
//!   times around a short critical section (throughput: acquisitions per
//!   second); `fxt::sync` records every wait (checked: nothing dropped).
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

/// A mutex of each kind, behind one interface.
trait Lock: Send + Sync + 'static {
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl Lock for parking_lot::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

impl Lock for std::sync::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap())
    }
}

impl Lock for fxt::sync::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

/// The tracing states `fxt::sync` is measured in.
#[derive(Clone, Copy)]
enum Tracing {
    Off,
    CategoryOff,
    On,
}

fn session(t: Tracing) -> Option<fxt::Session> {
    let config = fxt::Config::new().buffer_size(64 << 20);
    match t {
        Tracing::Off => None,
        Tracing::CategoryOff => Some(fxt::start(config.categories(&["other"])).unwrap()),
        Tracing::On => Some(fxt::start(config).unwrap()),
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
    let barrier = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (lock, barrier) = (lock.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    // A short critical section: a few dependent operations.
                    lock.with(|v| *v = black_box(v.wrapping_mul(31).wrapping_add(i)));
                }
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
        g.finish();
    }
}

criterion_group!(benches, uncontended, contended);
criterion_main!(benches);
