//! Criterion benchmarks of `tracing` instrumentation recorded by fxt's
//! layer (`fxt::tracing_layer::FxtLayer`) against tracing-chrome, with the
//! same spans and events in the same run, plus the bare registry as the
//! floor both layers sit on.
//!
//! * fxt: one circular session (8 MiB, overwriting) for the whole run, so
//!   the buffer never fills and every event takes the recording path;
//! * tracing-chrome 0.7: arguments included, JSON to `io::sink()` on its
//!   writer thread (as in `fxt_bench::adapters::tracing_chrome`);
//! * registry: `tracing_subscriber::registry()` alone (span bookkeeping,
//!   nothing recorded).
//!
//! Each subscriber is installed with `dispatcher::with_default` around its
//! benchmark only. Single-threaded.
//!
//! `cargo bench -p fxt-bench --bench tracing_layer`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use fxt::tracing_layer::FxtLayer;
use tracing::dispatcher::{self, Dispatch};
use tracing_chrome::ChromeLayerBuilder;
use tracing_subscriber::layer::SubscriberExt;

/// A named workload: one call per iteration.
type Workload = (&'static str, fn(u64));

#[tracing::instrument]
#[inline(never)]
fn span_with_arg(n: u64) -> u64 {
    black_box(n)
}

#[inline(never)]
fn nested(n: u64) -> u64 {
    let _outer = tracing::info_span!("outer", n).entered();
    let a = {
        let _inner = tracing::info_span!("inner").entered();
        black_box(n)
    };
    let _inner = tracing::info_span!("inner").entered();
    a + black_box(1)
}

#[inline(never)]
fn event_constant(_n: u64) {
    tracing::info!("ev");
}

#[inline(never)]
fn span_enter(n: u64) {
    let span = tracing::info_span!("sp");
    let _entered = span.enter();
    black_box(n);
}

#[inline(never)]
fn event_with_arg(n: u64) {
    tracing::info!(value = n, "instant");
}

#[inline(never)]
fn event_debug_arg(n: u64) {
    tracing::info!(value = ?(n, "x"), "debug");
}

fn bench(c: &mut Criterion) {
    let session = fxt::start(
        fxt::Config::new()
            .buffer_size(8 << 20)
            .mode(fxt::Mode::Circular),
    )
    .expect("fxt session");
    let fxt = Dispatch::new(tracing_subscriber::registry().with(FxtLayer::new()));
    let (chrome_layer, chrome_guard) = ChromeLayerBuilder::new()
        .writer(std::io::sink())
        .include_args(true)
        .build();
    let chrome = Dispatch::new(tracing_subscriber::registry().with(chrome_layer));
    let registry = Dispatch::new(tracing_subscriber::registry());
    let subscribers = [
        ("fxt", &fxt),
        ("tracing-chrome", &chrome),
        ("registry", &registry),
    ];

    let workloads: [Workload; 6] = [
        ("event-constant", event_constant),
        ("span-enter", span_enter),
        ("span", |i| {
            black_box(span_with_arg(i));
        }),
        ("nested-spans", |i| {
            black_box(nested(i));
        }),
        ("event", event_with_arg),
        ("event-debug-arg", event_debug_arg),
    ];
    for (workload, f) in workloads {
        let mut group = c.benchmark_group(format!("tracing_layer/{workload}"));
        for (name, dispatch) in subscribers {
            group.bench_function(name, |b| {
                dispatcher::with_default(dispatch, || {
                    let mut i = 0u64;
                    b.iter(|| {
                        i = i.wrapping_add(1);
                        f(i)
                    })
                })
            });
        }
        group.finish();
    }

    drop(chrome_guard);
    let _ = session.finish_to_writer(std::io::sink());
}

criterion_group!(benches, bench);
criterion_main!(benches);
