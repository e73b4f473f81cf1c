//! Criterion benchmarks of one event: fxt (oneshot with `Config::new()` and
//! with `.prefault(true)`, circular, streaming), the floor (`floor`: plain
//! thread-local cursor and plain stores; `floor-atomic` and `floor-shared`:
//! the atomic alternatives) and the other tracers, at 1, 2 and 4 threads. Each sample spawns its threads, lets them warm up, and
//! times `iters / threads` events on each (criterion reports aggregate time
//! per event).
//!
//! What is timed is the recording path, never the drop path:
//! * fxt oneshot (`fxt`, `fxt-prefault`) starts a fresh 256 MiB session
//!   for every sample (so every sample is a first pass over a fresh buffer,
//!   as in the table's fresh mode) and collects it (untimed) afterwards; flat sampling keeps a sample well
//!   under the buffer (a warning is printed if a measured sample dropped);
//! * fxt circular (8 MiB, overwriting) and streaming (64 MiB, to
//!   `/dev/null`) keep one session per benchmark;
//! * the other tracers keep their memory bounded (see their adapters).
//!
//! `cargo bench -p fxt-bench --bench events -- instant/` runs one group.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use fxt::Mode;
use fxt_bench::adapters::{self, fxt::Fxt, fxt::ONESHOT_BUFFER};
use fxt_bench::harness::{criterion_iter, Scenario, Tracer};

const THREADS: [usize; 3] = [1, 2, 4];

/// Benchmarks `tracer` on every thread count of one group.
fn bench_tracer(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    tracer: &dyn Tracer,
    scenario: Scenario,
) {
    if !tracer.supports(scenario) {
        return;
    }
    for threads in THREADS {
        group.bench_with_input(
            BenchmarkId::new(tracer.name(), threads),
            &threads,
            |b, &threads| b.iter_custom(|iters| criterion_iter(tracer, scenario, threads, iters)),
        );
    }
}

/// fxt oneshot (`name`: `fxt` or `fxt-prefault`): a fresh session per
/// sample, so the buffer never fills.
fn bench_fxt_oneshot(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    scenario: Scenario,
    name: &'static str,
) {
    for threads in THREADS {
        group.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
            b.iter_custom(|iters| {
                let fxt = adapters::fxt_with_buffer(name, ONESHOT_BUFFER).expect("an fxt variant");
                let d = criterion_iter(&fxt, scenario, threads, iters);
                let note = fxt.finish();
                if !note.is_empty() && iters < (1 << 22) {
                    eprintln!("warning: {name} {scenario} x{threads}: {note}");
                }
                d
            })
        });
    }
}

fn events(c: &mut Criterion) {
    // Process-global tracers, built once.
    let others: Vec<Box<dyn Tracer>> = [
        "floor",
        "floor-atomic",
        "floor-shared",
        "fastrace",
        "tracy",
        "puffin",
        "tracing-chrome",
    ]
    .into_iter()
    .map(|n| adapters::by_name(n).expect("known tracer"))
    .collect();
    for scenario in Scenario::ALL {
        let mut group = c.benchmark_group(scenario.id());
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(1));
        bench_fxt_oneshot(&mut group, scenario, "fxt");
        bench_fxt_oneshot(&mut group, scenario, "fxt-prefault");
        for mode in [Mode::Circular, Mode::Streaming] {
            let fxt = match mode {
                Mode::Streaming => Fxt::with_output(mode, "/dev/null"),
                _ => Fxt::new(mode),
            };
            bench_tracer(&mut group, &fxt, scenario);
            fxt.finish();
        }
        for tracer in &others {
            bench_tracer(&mut group, tracer.as_ref(), scenario);
        }
        group.finish();
    }
}

criterion_group!(benches, events);
criterion_main!(benches);
