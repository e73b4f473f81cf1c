//! Snapshots of a live session (issue 14): the time to snapshot a full
//! 256 MiB oneshot buffer into memory (criterion), and what a writer
//! recording meanwhile sees — the distribution of its single-event times
//! while snapshots run back to back, next to the same writer with no
//! snapshot, printed once (p50, p99, p99.99, max).
//!
//! ```text
//! cargo bench -p fxt-bench --bench snapshot
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};

const BUFFER: usize = 256 << 20;

fn fill(session_buffer: usize) -> fxt::Session {
    let session = fxt::start(
        fxt::Config::new()
            .buffer_size(session_buffer)
            .prefault(true),
    )
    .expect("start");
    // 16-byte instants until the buffer is full (then they are dropped).
    for i in 0..(session_buffer / 16) as u64 {
        fxt::trace_instant!("bench", "fill", "i" => i);
    }
    session
}

fn snapshot_time(c: &mut Criterion) {
    let session = fill(BUFFER);
    let mut group = c.benchmark_group("snapshot");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Bytes(BUFFER as u64));
    group.bench_function("full-256MiB-to-memory", |b| {
        b.iter(|| {
            session
                .snapshot_to_writer(std::io::sink())
                .expect("snapshot")
        })
    });
    group.finish();
    drop(session.finish_to_vec());
    writer_latency();
}

/// Single-event times (ns) of one writer, 200k events, while `busy` runs.
fn latencies(during_snapshots: bool) -> Vec<u64> {
    let session = fxt::start(fxt::Config::new().buffer_size(64 << 20).prefault(true)).unwrap();
    for i in 0..500_000u64 {
        fxt::trace_instant!("bench", "warm", "i" => i);
    }
    let stop = AtomicBool::new(false);
    let times = std::thread::scope(|s| {
        if during_snapshots {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    session
                        .snapshot_to_writer(std::io::sink())
                        .expect("snapshot");
                }
            });
        }
        let mut times = Vec::with_capacity(200_000);
        for i in 0..200_000u64 {
            let t = Instant::now();
            fxt::trace_instant!("bench", "timed", "i" => i);
            times.push(t.elapsed().as_nanos() as u64);
        }
        stop.store(true, Ordering::Relaxed);
        times
    });
    drop(session.finish_to_vec());
    times
}

fn writer_latency() {
    for during in [false, true] {
        let mut t = latencies(during);
        t.sort_unstable();
        let q = |p: f64| t[((t.len() as f64 * p) as usize).min(t.len() - 1)];
        println!(
            "writer single-event time {}: p50 {} ns, p99 {} ns, p99.99 {} ns, max {} ns",
            if during {
                "during back-to-back snapshots"
            } else {
                "without snapshots"
            },
            q(0.5),
            q(0.99),
            q(0.9999),
            t[t.len() - 1]
        );
    }
}

criterion_group!(benches, snapshot_time);
criterion_main!(benches);
