//! Criterion benchmark of collection: a oneshot buffer filled to the brim
//! with instants (untimed), then `finish_to_path` into the temporary
//! directory (page cache) is timed. Throughput is the bytes written.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use fxt::Mode;
use fxt_bench::adapters::fxt::Fxt;
use fxt_bench::harness::{measure, Scenario};

/// Buffer collected per iteration (the table's check uses 256 MiB).
const BUFFER: usize = 64 << 20;

fn collect(c: &mut Criterion) {
    let path = std::env::temp_dir().join(format!("fxt-bench-collect-{}.fxt", std::process::id()));
    let mut group = c.benchmark_group("collect");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes(BUFFER as u64));
    group.bench_function("oneshot-64MiB-to-file", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let fxt = Fxt::with_buffer(Mode::Oneshot, BUFFER);
                measure(&fxt, Scenario::Instant, 1, (BUFFER / 16) as u64 + 1);
                let session = fxt.take_session().expect("live session");
                let start = Instant::now();
                session.finish_to_path(&path).expect("collect");
                total += start.elapsed();
            }
            total
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, collect);
criterion_main!(benches);
