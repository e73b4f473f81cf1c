//! A small instrumented program: traced functions, instants and counters in
//! a hot loop, several named threads.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```
//!
//! writes `trace.fxt` in the working directory (or where `FXT_OUTPUT`
//! says; the other `FXT_*` variables of `Config::from_env` apply too).
//! Open it in <https://ui.perfetto.dev>.

use std::time::Instant;

use fxt::{trace_counter, trace_duration, trace_duration_scope, trace_instant, trace_log};

/// One unit of work: traced with its argument.
#[trace_duration(category = "work", args(n))]
fn collatz_steps(n: u64) -> u32 {
    let (mut n, mut steps) = (n, 0);
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

/// A batch: a traced function calling traced functions, with a hot loop of
/// instants and counters.
#[trace_duration(category = "work", args(worker, first, count))]
fn batch(worker: u32, first: u64, count: u64) -> u64 {
    let mut longest = 0;
    for n in first..first + count {
        let steps = collatz_steps(n);
        if steps > longest {
            longest = steps;
            trace_instant!("work", "new longest", "n" => n, "steps" => steps);
        }
        trace_counter!("work", "steps", id = worker as u64, "steps" => steps);
    }
    u64::from(longest)
}

#[trace_duration(category = "app")]
fn run(workers: u32, batches: u64, batch_size: u64) -> u64 {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|worker| {
                std::thread::Builder::new()
                    .name(format!("worker-{worker}"))
                    .spawn_scoped(scope, move || {
                        fxt::set_thread_name(&format!("worker-{worker}"));
                        let mut best = 0;
                        for b in 0..batches {
                            let first =
                                1 + (b * u64::from(workers) + u64::from(worker)) * batch_size;
                            best = best.max(batch(worker, first, batch_size));
                        }
                        trace_log!("app", "worker {worker} done, longest chain {best}");
                        best
                    })
                    .expect("spawn a worker")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker finished"))
            .max()
            .unwrap_or(0)
    })
}

/// `pub` so that `tests/perfetto_slices.rs` can run it.
pub fn main() {
    let config = fxt::Config::from_env();
    let session = fxt::start(config).expect("start the trace session");
    fxt::set_thread_name("main");

    let started = Instant::now();
    let longest = {
        let _setup = trace_duration_scope!("app", "setup");
        run(4, 50, 200)
    };
    let elapsed = started.elapsed();

    let stats = session.finish().expect("write the trace");
    println!("longest Collatz chain: {longest} steps, computed in {elapsed:.2?}");
    // The file written: `{pid}` and `{name}` replaced, or another name if
    // a live process had claimed the configured one.
    if let Some(output) = &stats.output {
        println!("wrote {}", output.display());
    }
    println!(
        "{} records ({} emitted by the program, {} dropped), {} bytes, {} threads",
        stats.records_written,
        stats.emitted_records_written,
        stats.records_dropped,
        stats.bytes_written,
        stats.threads
    );
}
