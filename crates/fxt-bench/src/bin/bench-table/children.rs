//! The children: each measurement in a fresh process (`bench-table --cell …`),
//! and how the parent runs one and reads its answer.

use super::*;

/// Tracers that format or serialize every event on the calling thread, so
/// far slower than the others (the tables show by how much) that they
/// record a tenth of the events per measurement to keep a run short; their
/// ns per event is still an average over 100 000 events or more.
pub(crate) const SLOW: [&str; 4] = [
    "tracing-chrome",
    "tracing-perfetto",
    "tracing-tracy",
    "tracing-perfetto-sdk",
];

/// Events per thread per measurement for `tracer`.
pub(crate) fn events_for(tracer: &str, events: u64) -> u64 {
    if SLOW.contains(&tracer) {
        (events / 10).max(1)
    } else {
        events
    }
}

/// Bytes per event that the largest scenario (counter) needs, with room.
pub(crate) const MAX_EVENT_BYTES: usize = 48;

/// Child `--cell TRACER SCENARIO THREADS EVENTS PASSES BUFFER`: builds the
/// tracer (fxt variants with a BUFFER-byte buffer; 0 = the adapter's
/// default), runs PASSES measurements back to back and prints `RESULT
/// <ns>,<ns>,... <note>` or `RESULT n/a`.
pub(crate) fn run_cell(args: &[String]) {
    let [tracer, scenario, threads, events, passes, buffer] = args else {
        panic!("--cell TRACER SCENARIO THREADS EVENTS PASSES BUFFER")
    };
    let scenario: Scenario = scenario.parse().expect("scenario");
    let threads: usize = threads.parse().expect("threads");
    let events: u64 = events.parse().expect("events");
    let passes: usize = passes.parse().expect("passes");
    let buffer: usize = buffer.parse().expect("buffer");
    let name = adapters::NAMES
        .iter()
        .find(|n| *n == tracer)
        .unwrap_or_else(|| panic!("unknown tracer {tracer}"));
    let tracer: Box<dyn fxt_bench::harness::Tracer> = match adapters::fxt_variant(name) {
        Some(_) if buffer > 0 => Box::new(adapters::fxt_with_buffer(name, buffer).expect("fxt")),
        _ => adapters::by_name(name).expect("known tracer"),
    };
    if !tracer.supports(scenario) {
        println!("RESULT n/a");
        return;
    }
    let results: Vec<String> = (0..passes)
        .map(|_| {
            let wall = measure(tracer.as_ref(), scenario, threads, events);
            format!("{:.3}", ns_per_event(wall, threads, events))
        })
        .collect();
    let note = tracer.finish();
    println!("RESULT {} {}", results.join(","), note);
}

/// Child `--latency TRACER SCENARIO THREADS EVENTS`: prints `LAT <p50>
/// <p99> <p99.99> <max> <events over 50 µs>` in ns, or `LAT n/a`.
pub(crate) fn run_latency_cell(args: &[String]) {
    let [tracer, scenario, threads, events] = args else {
        panic!("--latency TRACER SCENARIO THREADS EVENTS")
    };
    let scenario: Scenario = scenario.parse().expect("scenario");
    let threads: usize = threads.parse().expect("threads");
    let events: u64 = events.parse().expect("events");
    let per_ns = ticks_per_ns(Duration::from_millis(20));
    let tracer = adapters::by_name(tracer).expect("known tracer");
    let Some(mut ticks) = measure_latency(tracer.as_ref(), scenario, threads, events) else {
        println!("LAT n/a");
        return;
    };
    let note = tracer.finish();
    ticks.sort_unstable();
    let ns = |t: u64| t as f64 / per_ns;
    let over = ticks.iter().filter(|&&t| ns(t) > 50_000.0).count();
    println!(
        "LAT {:.1} {:.1} {:.1} {:.1} {over} {note}",
        ns(quantile(&ticks, 0.5)),
        ns(quantile(&ticks, 0.99)),
        ns(quantile(&ticks, 0.9999)),
        ns(*ticks.last().expect("events")),
    );
}

/// Runs this binary with `args` and returns the words after `prefix` on
/// the line that starts with it (or `None`, reporting the failure).
pub(crate) fn child(args: &[String], prefix: &str) -> Option<Vec<String>> {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("spawn a child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.lines().find_map(|l| l.strip_prefix(prefix)) {
        Some(line) => Some(line.split_whitespace().map(str::to_string).collect()),
        None => {
            eprintln!(
                "child {args:?} failed: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
    }
}

pub(crate) fn strings(args: &[&dyn ToString]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}
