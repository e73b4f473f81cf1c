//! Measures fxt, the floor and the other tracers and writes the comparison
//! tables into `docs/PERFORMANCE.md`, one generated region per section (the
//! sections of a run replace theirs; the rest of the file stays).
//!
//! ```text
//! cargo run --profile bench -p fxt-bench --bin bench-table -- [options]
//!   --events N        events per thread per cell (default 1000000)
//!   --reps R          repetitions (fresh processes) per cell (default 5)
//!   --threads LIST    thread counts (default 1,2,4)
//!   --tracers LIST    columns of the event tables (default: all)
//!   --scenarios LIST  rows of the event tables (default: all)
//!   --sections LIST   sinks,fresh,realtime,long,latency,lifecycle,tracing,
//!                     instructions,checks
//!                     (default: all)
//!   --no-checks / --no-instructions   drop those sections
//!   --out FILE        the report to update (default: docs/PERFORMANCE.md)
//!   --stdout          print the tables instead of updating a report
//! ```
//!
//! Sections:
//! * `sinks`: where a trace's bytes can go (fresh memory, a file through
//!   the page cache, `O_DIRECT`), GB/s and CPU per byte;
//! * `fresh`: every repetition of every cell is a fresh process with a
//!   fresh session (what a user gets); median and spread (min–max);
//! * `realtime`: the default path (`Config::new()`, fresh session) with
//!   the writer at the normal policy, `SCHED_RR` and `SCHED_FIFO`, each
//!   beside the floor under the same policy;
//! * `long`: one process and one session per cell, the repetitions back to
//!   back in it after one untimed pass (a session that has been running);
//! * `latency`: the distribution of single-event times, quiet and with a
//!   CPU- and memory-heavy neighbour process;
//! * `lifecycle`: `start()`/`finish()` times and the first pass over a
//!   fresh buffer, default and crash-safe;
//! * `tracing`: `tracing` call sites with each trace-file layer;
//! * `instructions`: instruction counts (valgrind callgrind, repeatable);
//! * `checks`: bytes per record, memory, collection throughput.
//!
//! Every ratio is to the floor (`floor`: rdtsc, a plain thread-local
//! cursor and plain stores into pre-faulted memory) measured in the same run;
//! repetitions are interleaved across cells so a burst of background load
//! spreads over all of them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use fxt_bench::adapters;
use fxt_bench::checks;
use fxt_bench::harness::{
    measure, measure_latency, median, ns_per_event, quantile, ticks_per_ns, Scenario,
};
use fxt_bench::report::{self, SECTIONS};
use fxt_bench::{lifecycle, load, realtime, tracing_route};

struct Options {
    events: u64,
    reps: usize,
    threads: Vec<usize>,
    tracers: Vec<String>,
    scenarios: Vec<Scenario>,
    sections: Vec<String>,
    /// Where the tables go: `None` prints them.
    out: Option<std::path::PathBuf>,
}

impl Options {
    fn has(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s == section)
    }
}

const USAGE: &str = "usage: bench-table [--events N] [--reps R] [--threads LIST] \
[--tracers LIST] [--scenarios LIST] [--sections LIST] [--no-checks] [--no-instructions] \
[--out FILE | --stdout]";

/// Parses a comma-separated list with `parse`.
fn list<T>(
    name: &str,
    arg: Option<String>,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, String> {
    let arg = arg.ok_or_else(|| format!("{name} needs a comma-separated list"))?;
    arg.split(',')
        .map(|s| parse(s.trim()).ok_or_else(|| format!("{name}: cannot use {s:?}")))
        .collect()
}

/// Parses one number.
fn number<T: std::str::FromStr>(name: &str, arg: Option<String>) -> Result<T, String> {
    arg.as_deref()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("{name} needs a number"))
}

fn parse_options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut o = Options {
        events: 1_000_000,
        reps: 5,
        threads: vec![1, 2, 4],
        tracers: adapters::NAMES
            .iter()
            .filter(|n| **n != "fxt-crash-safe" && adapters::built(n))
            .map(|s| s.to_string())
            .collect(),
        scenarios: Scenario::ALL.to_vec(),
        sections: SECTIONS.iter().map(|s| s.to_string()).collect(),
        out: Some(report::default_path()),
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--events" => o.events = number("--events", args.next())?,
            "--reps" => o.reps = number("--reps", args.next())?,
            "--threads" => {
                o.threads = list("--threads", args.next(), |s| {
                    s.parse().ok().filter(|&t: &usize| t > 0)
                })?
            }
            "--tracers" => {
                o.tracers = list("--tracers", args.next(), |s| {
                    (adapters::NAMES.contains(&s) && adapters::built(s)).then(|| s.to_string())
                })?
            }
            "--scenarios" => o.scenarios = list("--scenarios", args.next(), |s| s.parse().ok())?,
            "--sections" => {
                o.sections = list("--sections", args.next(), |s| {
                    SECTIONS.contains(&s).then(|| s.to_string())
                })?
            }
            "--no-checks" => o.sections.retain(|s| s != "checks"),
            "--no-instructions" => o.sections.retain(|s| s != "instructions"),
            "--stdout" => o.out = None,
            "--out" => o.out = Some(args.next().ok_or("--out needs a path")?.into()),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if o.reps == 0 || o.events == 0 {
        return Err("--reps and --events must be at least 1".into());
    }
    Ok(o)
}

// ---------------------------------------------------------------------------
// Children (each measurement in a fresh process).

/// Tracers that format or serialize every event on the calling thread, so
/// far slower than the others (the tables show by how much) that they
/// record a tenth of the events per measurement to keep a run short; their
/// ns per event is still an average over 100 000 events or more.
const SLOW: [&str; 4] = [
    "tracing-chrome",
    "tracing-perfetto",
    "tracing-tracy",
    "tracing-perfetto-sdk",
];

/// Events per thread per measurement for `tracer`.
fn events_for(tracer: &str, events: u64) -> u64 {
    if SLOW.contains(&tracer) {
        (events / 10).max(1)
    } else {
        events
    }
}

/// Bytes per event that the largest scenario (counter) needs, with room.
const MAX_EVENT_BYTES: usize = 48;

/// Child `--cell TRACER SCENARIO THREADS EVENTS PASSES BUFFER`: builds the
/// tracer (fxt variants with a BUFFER-byte buffer; 0 = the adapter's
/// default), runs PASSES measurements back to back and prints `RESULT
/// <ns>,<ns>,... <note>` or `RESULT n/a`.
fn run_cell(args: &[String]) {
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
fn run_latency_cell(args: &[String]) {
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
fn child(args: &[String], prefix: &str) -> Option<Vec<String>> {
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

fn strings(args: &[&dyn ToString]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

// ---------------------------------------------------------------------------
// Samples and formatting.

/// Key of an event-table cell: (scenario, threads, tracer).
type Key = (Scenario, usize, String);

/// ns-per-event samples of each cell (`None`: the tracer has no such
/// event).
#[derive(Default)]
struct Samples {
    values: HashMap<Key, Vec<f64>>,
    unsupported: std::collections::HashSet<Key>,
    notes: HashMap<Key, String>,
}

impl Samples {
    fn get(&self, s: Scenario, t: usize, tracer: &str) -> Option<&[f64]> {
        self.values
            .get(&(s, t, tracer.to_string()))
            .map(Vec::as_slice)
            .filter(|v| !v.is_empty())
    }

    fn median(&self, s: Scenario, t: usize, tracer: &str) -> Option<f64> {
        self.get(s, t, tracer)
            .map(|v| median(&mut v.to_vec()))
            .filter(|v| !v.is_nan())
    }
}

fn fmt_ns(v: f64) -> String {
    if v.is_nan() {
        "failed".into()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// `median (min–max)` of samples.
fn fmt_spread(v: &[f64]) -> String {
    let med = median(&mut v.to_vec());
    if v.len() < 2 {
        return fmt_ns(med);
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{} ({}–{})", fmt_ns(med), fmt_ns(min), fmt_ns(max))
}

/// Prints an event table: rows scenario × threads, one column per tracer
/// (median and spread), then `name ÷ floor` columns for `ratio_of`.
fn event_table(o: &Options, samples: &Samples, columns: &[&str], ratio_of: &[&str]) -> String {
    let mut out = String::from("| scenario | threads |");
    for c in columns {
        let _ = write!(out, " {c} |");
    }
    for r in ratio_of {
        let _ = write!(out, " {r} ÷ floor |");
    }
    out.push_str("\n|---|---:|");
    for _ in 0..columns.len() + ratio_of.len() {
        out.push_str("---:|");
    }
    out.push('\n');
    for &s in &o.scenarios {
        for &t in &o.threads {
            let _ = write!(out, "| {} | {t} |", s.describe());
            for c in columns {
                match samples.get(s, t, c) {
                    Some(v) => {
                        let _ = write!(out, " {} |", fmt_spread(v));
                    }
                    None => out.push_str(" n/a |"),
                }
            }
            let floor = samples.median(s, t, "floor");
            for r in ratio_of {
                match (samples.median(s, t, r), floor) {
                    (Some(a), Some(b)) if b > 0.0 && s != Scenario::Disabled => {
                        let _ = write!(out, " {:.2}x |", a / b);
                    }
                    _ => out.push_str(" |"),
                }
            }
            out.push('\n');
        }
    }
    out
}

/// The cells' notes (records dropped...), except the circular mode's
/// overwrites, which are that mode's purpose and are summed up in one line.
fn notes(samples: &Samples) -> String {
    let mut n: Vec<_> = samples.notes.iter().collect();
    n.sort_by_key(|(k, _)| format!("{:?}", k));
    let mut out = String::new();
    let mut overwritten = 0;
    for ((s, t, tr), note) in n {
        if note.contains("overwritten (circular)") {
            overwritten += 1;
            continue;
        }
        let _ = writeln!(out, "* {tr}, {s}, {t} thread(s): {note}");
    }
    if overwritten > 0 {
        let _ = writeln!(
            out,
            "* circular cells: in {overwritten} of them most records were overwritten (the 8 MiB ring wraps many times; that is the mode)"
        );
    }
    out
}

// ---------------------------------------------------------------------------
// Sections.

/// Fresh mode: each repetition of each cell is its own process.
fn fresh(o: &Options) -> Samples {
    let mut samples = Samples::default();
    let mut cells = Vec::new();
    for &s in &o.scenarios {
        for &t in &o.threads {
            for tr in &o.tracers {
                cells.push((s, t, tr.clone()));
            }
        }
    }
    for rep in 0..o.reps {
        eprintln!("fresh: repetition {}/{}", rep + 1, o.reps);
        for cell in &cells {
            if samples.unsupported.contains(cell) {
                continue;
            }
            let args = strings(&[&"--cell", &cell.2, &cell.0.id(), &cell.1, &o.events, &1, &0]);
            let entry = samples.values.entry(cell.clone()).or_default();
            match child(&args, "RESULT ") {
                Some(words) if words.first().map(String::as_str) == Some("n/a") => {
                    samples.unsupported.insert(cell.clone());
                }
                Some(words) => {
                    entry.push(words[0].parse().unwrap_or(f64::NAN));
                    if words.len() > 1 {
                        samples.notes.insert(cell.clone(), words[1..].join(" "));
                    }
                }
                None => entry.push(f64::NAN),
            }
        }
    }
    samples
}

/// Long-session mode: one process and session per cell; one untimed pass,
/// then `reps` timed passes in the same session.
fn long(o: &Options, tracers: &[&str]) -> Samples {
    let mut samples = Samples::default();
    for &s in &o.scenarios {
        for &t in &o.threads {
            for tr in tracers {
                eprintln!("long: {s} {t} {tr}");
                let key = (s, t, tr.to_string());
                // A oneshot buffer that holds every pass (fresh pages all
                // along, as a long oneshot session has); the other modes
                // keep their own sizes (circular wraps, streaming drains).
                let buffer = match adapters::fxt_variant(tr) {
                    Some((fxt::Mode::Oneshot, ..)) => {
                        (t * (o.events as usize + 1000) * MAX_EVENT_BYTES * (o.reps + 1))
                            .next_power_of_two()
                    }
                    _ => 0,
                };
                let args = strings(&[
                    &"--cell",
                    tr,
                    &s.id(),
                    &t,
                    &o.events,
                    &(o.reps + 1),
                    &buffer,
                ]);
                match child(&args, "RESULT ") {
                    Some(words) if words.first().map(String::as_str) == Some("n/a") => {}
                    Some(words) => {
                        let v: Vec<f64> = words[0]
                            .split(',')
                            .skip(1)
                            .map(|x| x.parse().unwrap_or(f64::NAN))
                            .collect();
                        samples.values.insert(key.clone(), v);
                        if words.len() > 1 {
                            samples.notes.insert(key, words[1..].join(" "));
                        }
                    }
                    None => {
                        samples.values.insert(key, vec![f64::NAN]);
                    }
                }
            }
        }
    }
    samples
}

/// The latency section: quiet, then with the neighbour.
fn latency(o: &Options) -> String {
    const TRACERS: [&str; 4] = ["floor", "fxt", "fxt-prefault", "fxt-memory"];
    const SCENARIOS: [Scenario; 2] = [Scenario::Instant, Scenario::DurationAttr];
    let threads: Vec<usize> = o.threads.iter().copied().filter(|&t| t <= 2).collect();
    let mut out = String::from(
        "| load | scenario | threads | tracer | p50 | p99 | p99.99 | max | events > 50 µs |\n\
         |---|---|---:|---|---:|---:|---:|---:|---:|\n",
    );
    // Verdicts of the rows without a neighbour: (scenario, threads, tracer,
    // p99.99 ns, events over 50 µs).
    let mut quiet: Vec<(Scenario, usize, &str, f64, u64)> = Vec::new();
    let exe = std::env::current_exe().expect("own path");
    for loaded in [false, true] {
        let _neighbour = loaded.then(|| {
            load::Neighbour::start(&exe, load::NEIGHBOUR_BYTES, Duration::from_secs(600))
                .expect("start the neighbour process")
        });
        let load_name = if loaded { "neighbour" } else { "no neighbour" };
        for s in SCENARIOS {
            for &t in &threads {
                for tr in TRACERS {
                    eprintln!("latency: {load_name} {s} {t} {tr}");
                    let args = strings(&[&"--latency", &tr, &s.id(), &t, &o.events]);
                    let Some(w) = child(&args, "LAT ") else {
                        continue;
                    };
                    if w.first().map(String::as_str) == Some("n/a") || w.len() < 5 {
                        continue;
                    }
                    let f = |i: usize| w[i].parse::<f64>().map_or("?".into(), fmt_ns);
                    if !loaded {
                        let p9999 = w[2].parse().unwrap_or(f64::NAN);
                        quiet.push((s, t, tr, p9999, w[4].parse().unwrap_or(u64::MAX)));
                    }
                    let _ = writeln!(
                        out,
                        "| {load_name} | {} | {t} | {tr} | {} | {} | {} | {} | {}{} |",
                        s.describe(),
                        f(0),
                        f(1),
                        f(2),
                        f(3),
                        w[4],
                        if w.len() > 5 {
                            format!(" ({})", w[5..].join(" "))
                        } else {
                            String::new()
                        }
                    );
                }
            }
        }
    }
    out.push_str(
        "\nTargets without the neighbour (p99.99 under 1 µs; no event over 50 µs, next to the floor's count in the same run, which is the machine's own preemption):\n",
    );
    for &(s, t, tr, p9999, over) in quiet.iter().filter(|q| q.2 != "floor") {
        let floor_over = quiet
            .iter()
            .find(|q| q.0 == s && q.1 == t && q.2 == "floor")
            .map_or(String::from("?"), |q| q.4.to_string());
        let _ = writeln!(
            out,
            "* {tr}, {}, {t} thread(s): p99.99 {} ns — {}; events over 50 µs: {over} (floor {floor_over}) — {}",
            s.describe(),
            fmt_ns(p9999),
            if p9999 < 1000.0 { "met" } else { "**missed**" },
            if over == 0 { "met" } else { "**missed**" },
        );
    }
    out
}

/// The lifecycle section: start/finish times and the first pass.
fn lifecycle_section(o: &Options) -> String {
    const SIZES: [(usize, &str); 3] =
        [(64 << 20, "64 MiB"), (1 << 30, "1 GiB"), (4 << 30, "4 GiB")];
    let reps = o.reps.clamp(1, 3);
    let mut out = format!(
        "`start()` and `finish()` (one instant recorded in between; finish writes the configured file), median of {reps} fresh processes, ms:\n\n\
         | buffer | start, default | start, crash-safe | finish, default | finish, crash-safe |\n|---|---:|---:|---:|---:|\n"
    );
    for (bytes, label) in SIZES {
        let mut cols = Vec::new();
        for crash_safe in ["0", "1"] {
            let mut starts = Vec::new();
            let mut finishes = Vec::new();
            for _ in 0..reps {
                eprintln!("lifecycle: {label} crash-safe={crash_safe}");
                let args = strings(&[&"--start-finish", &bytes, &crash_safe]);
                if let Some(w) = child(&args, "LIFE ") {
                    starts.push(w[0].parse().unwrap_or(f64::NAN));
                    finishes.push(w[1].parse().unwrap_or(f64::NAN));
                }
            }
            cols.push((starts, finishes));
        }
        let m = |v: &[f64]| {
            if v.is_empty() {
                "failed".to_string()
            } else {
                fmt_spread(v)
            }
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            m(&cols[0].0),
            m(&cols[1].0),
            m(&cols[0].1),
            m(&cols[1].1)
        );
    }
    let pass_bytes: usize = 1 << 30;
    let _ = write!(
        out,
        "\nFirst pass over a fresh 1 GiB oneshot buffer: one thread writes instants into 90% of it right after `start()`; ns per event and `start()` ms, median of {reps} fresh processes:\n\n\
         | configuration | ns per event | ÷ prefault | start ms |\n|---|---:|---:|---:|\n"
    );
    let mut rows = Vec::new();
    for (label, crash_safe, prefault) in [
        ("default (`Config::new()`)", "0", "0"),
        ("`.prefault(true)`", "0", "1"),
        ("`.crash_safe(true)`", "1", "0"),
    ] {
        let mut ns = Vec::new();
        let mut start = Vec::new();
        for _ in 0..reps {
            eprintln!("first pass: {label}");
            let args = strings(&[&"--first-pass", &pass_bytes, &crash_safe, &prefault]);
            if let Some(w) = child(&args, "PASS ") {
                ns.push(w[0].parse().unwrap_or(f64::NAN));
                start.push(w[1].parse().unwrap_or(f64::NAN));
            }
        }
        rows.push((label, ns, start));
    }
    let base = rows
        .iter()
        .find(|r| r.0.contains("prefault"))
        .filter(|r| !r.1.is_empty())
        .map(|r| median(&mut r.1.clone()));
    for (label, ns, start) in rows {
        if ns.is_empty() {
            let _ = writeln!(out, "| {label} | failed | | |");
            continue;
        }
        let med = median(&mut ns.clone());
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} |",
            fmt_spread(&ns),
            base.map_or(String::new(), |b| format!("{:.2}x", med / b)),
            fmt_spread(&start)
        );
    }
    out
}

/// The `tracing` section.
fn tracing_section(o: &Options) -> String {
    let subscribers = tracing_route::subscribers();
    let mut samples: HashMap<(&str, &str), Vec<f64>> = HashMap::new();
    let mut notes = Vec::new();
    for rep in 0..o.reps {
        eprintln!("tracing: repetition {}/{}", rep + 1, o.reps);
        for (call, _) in tracing_route::CALLS {
            for &sub in &subscribers {
                let args = strings(&[&"--tracing-cell", &sub, &call, &events_for(sub, o.events)]);
                let words = child(&args, "RESULT ").unwrap_or_default();
                let v = words
                    .first()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(f64::NAN);
                samples.entry((call, sub)).or_default().push(v);
                if words.len() > 1 {
                    notes.push(format!("* {sub}, {call}: {}", words[1..].join(" ")));
                }
            }
        }
    }
    let med = |call: &str, sub: &str| {
        samples
            .get(&(call, sub))
            .map(|v| median(&mut v.clone()))
            .unwrap_or(f64::NAN)
    };
    let mut out = format!(
        "ns per event, 1 thread, median (min–max) of {} fresh processes of {} events (tracing-chrome, tracing-perfetto, tracing-tracy, tracing-perfetto-sdk: a tenth of that); goal: fxt-layer ≤ 1.5 × (registry + fxt-macro-prefault):\n\n| call |",
        o.reps, o.events
    );
    for sub in &subscribers {
        let _ = write!(out, " {sub} |");
    }
    out.push_str(" goal | fxt-layer ÷ goal | fxt-layer-prefault ÷ goal |\n|---|");
    for _ in 0..subscribers.len() + 3 {
        out.push_str("---:|");
    }
    out.push('\n');
    for (call, describe) in tracing_route::CALLS {
        let _ = write!(out, "| {describe} |");
        for sub in &subscribers {
            let _ = write!(out, " {} |", fmt_spread(&samples[&(call, *sub)]));
        }
        let goal = 1.5 * (med(call, "registry") + med(call, "fxt-macro-prefault"));
        let _ = writeln!(
            out,
            " {} | {:.2} | {:.2} |",
            fmt_ns(goal),
            med(call, "fxt-layer") / goal,
            med(call, "fxt-layer-prefault") / goal
        );
    }
    notes.sort();
    notes.dedup();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n{}", notes.join("\n"));
    }
    out
}

/// The issue's targets checked against the fresh-mode medians.
fn verdicts(o: &Options, fresh: &Samples) -> String {
    let mut out = String::from("Targets (fresh sessions, medians of this run):\n");
    let mark = |ok: bool| if ok { "met" } else { "**missed**" };
    let goals = [
        Scenario::Instant,
        Scenario::InstantArg,
        Scenario::Counter,
        Scenario::DurationAttr,
    ];
    for tracer in ["fxt", "fxt-prefault"] {
        for s in goals {
            for t in o.threads.iter().copied().filter(|&t| t <= 2) {
                if let (Some(v), Some(floor)) =
                    (fresh.median(s, t, tracer), fresh.median(s, t, "floor"))
                {
                    // Beside it, the ratio to the floor faulting fresh memory in
                    // as it goes (what the kernel's part of a fresh buffer costs).
                    let cold = match fresh.median(s, t, "floor-fresh") {
                        Some(c) => format!("; {:.2}x floor-fresh ({} ns)", v / c, fmt_ns(c)),
                        None => String::new(),
                    };
                    let _ = writeln!(
                        out,
                        "* {tracer}, {}, {t} thread(s): ≤1.15x the floor: {:.2}x ({} vs {} ns{cold}) — {}",
                        s.describe(),
                        v / floor,
                        fmt_ns(v),
                        fmt_ns(floor),
                        mark(v / floor <= 1.15)
                    );
                }
            }
        }
    }
    for s in goals {
        let mut parts = Vec::new();
        for tracer in ["floor", "floor-fresh", "fxt", "fxt-prefault", "fxt-memory"] {
            if let (Some(one), Some(two)) = (fresh.median(s, 1, tracer), fresh.median(s, 2, tracer))
            {
                parts.push((tracer, two / one));
            }
        }
        if let Some(&(_, fxt)) = parts.iter().find(|p| p.0 == "fxt") {
            let text: Vec<String> = parts.iter().map(|(n, r)| format!("{n} {r:.2}x")).collect();
            let _ = writeln!(
                out,
                "* {}, 2 threads' aggregate ≤0.6x of 1 thread's: {} — {}",
                s.describe(),
                text.join(", "),
                mark(fxt <= 0.6)
            );
        }
        if let (Some(two), Some(four)) = (fresh.median(s, 2, "fxt"), fresh.median(s, 4, "fxt")) {
            let floor = match (fresh.median(s, 2, "floor"), fresh.median(s, 4, "floor")) {
                (Some(a), Some(b)) => format!(" (floor {:.2}x)", b / a),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "* {}, 4 threads do not collapse (4-thread aggregate ≤1.2x of 2 threads' on 2 cores): {:.2}x{floor} — {}",
                s.describe(),
                four / two,
                mark(four / two <= 1.2)
            );
        }
    }
    let alternatives = ["fastrace", "tracy", "puffin", "tracing-chrome"];
    let mut slower = Vec::new();
    let mut compared = 0;
    for &s in &o.scenarios {
        if s == Scenario::Disabled {
            continue;
        }
        for &t in &o.threads {
            let Some(fxt) = fresh.median(s, t, "fxt") else {
                continue;
            };
            for a in alternatives {
                if let Some(v) = fresh.median(s, t, a) {
                    compared += 1;
                    if fxt >= v {
                        slower.push(format!("{} x{t} vs {a} ({fxt:.1} vs {v:.1})", s.id()));
                    }
                }
            }
        }
    }
    if compared > 0 {
        let _ = writeln!(
            out,
            "* fxt (default) faster than fastrace, tracy, puffin and tracing-chrome in every cell: {compared} cells compared{} — {}",
            if slower.is_empty() {
                String::new()
            } else {
                format!("; slower in {}", slower.join(", "))
            },
            mark(slower.is_empty())
        );
    }
    out
}

/// The fresh-process tables (oneshot, then the modes) and their verdicts.
fn fresh_section(o: &Options, text: &mut String) {
    let samples = fresh(o);
    let has = |names: &[&str]| o.tracers.iter().any(|t| names.contains(&t.as_str()));
    let main_columns: Vec<&str> = o
        .tracers
        .iter()
        .map(String::as_str)
        .filter(|t| !t.starts_with("fxt-circular") && !t.starts_with("fxt-streaming"))
        .collect();
    let ratio_columns: Vec<&str> = ["floor-fresh", "fxt", "fxt-prefault", "fxt-memory"]
        .into_iter()
        .filter(|t| main_columns.contains(t))
        .collect();
    let _ = writeln!(
            text,
            "\n### Fresh session per repetition (oneshot)\n\n\
             Aggregate ns per event (wall time of all threads / all events), median (min–max) of {} fresh processes per cell, each a new session, {} events per thread after 1 000 untimed (tracing-chrome: a tenth of that):\n",
            o.reps, o.events
        );
    let _ = writeln!(
        text,
        "{}",
        event_table(o, &samples, &main_columns, &ratio_columns)
    );
    let modes = [
        "fxt-circular",
        "fxt-circular-prefault",
        "fxt-streaming",
        "fxt-streaming-prefault",
    ];
    if has(&modes) {
        let mut columns = vec!["floor"];
        columns.extend(modes.iter().filter(|m| o.tracers.iter().any(|t| t == *m)));
        let _ = writeln!(
            text,
                "\n### Circular (8 MiB, wraps) and streaming (64 MiB, drained to a file) modes, fresh session per repetition\n"
            );
        let _ = writeln!(
            text,
            "{}",
            event_table(o, &samples, &columns, &columns[1..])
        );
    }
    let n = notes(&samples);
    if !n.is_empty() {
        let _ = writeln!(text, "{n}");
    }
    let _ = writeln!(text, "{}", verdicts(o, &samples));
}

/// What the realtime section measured, per (row, tracer): ns per event;
/// from the latency runs, the events over `realtime::LONG_EVENT_US` in all
/// and the longest event (ns); and the children's notes.
#[derive(Default)]
struct RealtimeSamples {
    ns: HashMap<(usize, &'static str), Vec<f64>>,
    over: HashMap<(usize, &'static str), u64>,
    longest: HashMap<(usize, &'static str), f64>,
    notes: Vec<String>,
}

/// One child of the realtime section: row `i`, `tracer`, timed as a whole
/// or (`latency`) event by event.
fn realtime_cell(
    o: &Options,
    s: &mut RealtimeSamples,
    i: usize,
    tracer: &'static str,
    latency: bool,
) {
    let row = &realtime::ROWS[i];
    let mut args = strings(&[&"--realtime", &row.policy, &row.helpers, &tracer, &o.events]);
    if latency {
        args.push("latency".to_string());
    }
    let Some(words) = child(&args, "RESULT ") else {
        return;
    };
    if words.first().map(String::as_str) == Some("n/a") {
        s.notes
            .push(format!("{}: {}", row.label, words[1..].join(" ")));
        return;
    }
    let num = |k: usize| {
        words
            .get(k)
            .and_then(|w| w.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    let rest = if latency {
        *s.over.entry((i, tracer)).or_default() += num(0) as u64;
        let longest = s.longest.entry((i, tracer)).or_default();
        *longest = longest.max(num(1));
        &words[2.min(words.len())..]
    } else {
        s.ns.entry((i, tracer)).or_default().push(num(0));
        &words[1.min(words.len())..]
    };
    if !rest.is_empty() {
        s.notes
            .push(format!("{} {tracer}: {}", row.label, rest.join(" ")));
    }
}

/// The realtime table: per row of `realtime::ROWS`, the floor and fxt's
/// default path under that policy, repetitions interleaved across rows.
fn realtime_section(o: &Options, text: &mut String) {
    let mut s = RealtimeSamples::default();
    for rep in 0..o.reps {
        eprintln!("realtime: repetition {}/{}", rep + 1, o.reps);
        for i in 0..realtime::ROWS.len() {
            for tracer in ["floor", "fxt"] {
                realtime_cell(o, &mut s, i, tracer, false);
                realtime_cell(o, &mut s, i, tracer, true);
            }
        }
    }
    let _ = writeln!(
        text,
        "### A real-time writer\n\n\
         One thread records {} instants into a fresh session (`Config::new()`: drained to its file, helpers at their default scheduling) from a process whose main thread set the row's policy (`sched_setscheduler`, priority 1) before starting the session and the writer; the floor runs under the same policy. ns per event, median (min–max) of {} fresh processes per cell, repetitions interleaved across rows. The last row leaves fxt's helper threads the writer's policy (`HelperScheduling::Inherit`, what they had before they set their own). The last two columns come from as many more fresh processes per cell, each event timed on its own (`lfence; rdtsc` around it): the events over 50 µs in all of them and the longest event; the floor's show what the machine itself does to the thread. Read it with the load average above: on a busy machine a writer at a real-time policy takes its core from every other process, and a streamer at the normal policy shares the other core with them.\n",
        o.events, o.reps
    );
    text.push_str(
        "| writer's policy | floor | fxt | fxt ÷ floor | events over 50 µs: floor / fxt | longest event (µs): floor / fxt |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for (i, row) in realtime::ROWS.iter().enumerate() {
        let (floor, fxt) = (
            s.ns.get(&(i, "floor")).map(Vec::as_slice),
            s.ns.get(&(i, "fxt")).map(Vec::as_slice),
        );
        let show = |v: Option<&[f64]>| v.map_or("n/a".to_string(), fmt_spread);
        let ratio = match (fxt, floor) {
            (Some(a), Some(b)) => {
                format!("{:.2}x", median(&mut a.to_vec()) / median(&mut b.to_vec()))
            }
            _ => String::new(),
        };
        let over = |t| {
            s.over
                .get(&(i, t))
                .map_or("n/a".to_string(), u64::to_string)
        };
        let longest = |t| {
            s.longest
                .get(&(i, t))
                .map_or("n/a".to_string(), |ns| format!("{:.1}", ns / 1000.0))
        };
        let _ = writeln!(
            text,
            "| {} | {} | {} | {ratio} | {} / {} | {} / {} |",
            row.label,
            show(floor),
            show(fxt),
            over("floor"),
            over("fxt"),
            longest("floor"),
            longest("fxt")
        );
    }
    let mut notes = s.notes;
    notes.sort();
    notes.dedup();
    for n in notes.iter().filter(|n| !n.ends_with(": ")) {
        let _ = writeln!(text, "\n* {n}");
    }
}

/// The long-session table.
fn long_section(o: &Options, text: &mut String) {
    let tracers: Vec<&str> = [
        "floor",
        "fxt",
        "fxt-prefault",
        "fxt-memory",
        "fxt-circular",
        "fxt-circular-prefault",
        "fxt-streaming",
        "fxt-streaming-prefault",
    ]
    .into_iter()
    .filter(|t| o.tracers.iter().any(|x| x == t))
    .collect();
    let samples = long(o, &tracers);
    let _ = writeln!(
            text,
            "\n### Long session\n\nOne process and one session per cell: one untimed pass of {} events per thread, then {} timed passes back to back in the same session (oneshot buffers sized to hold every pass: kept in memory, `fxt-memory`'s passes land on pages no one wrote before; drained, `fxt`'s reuse the chunks written out); median (min–max) over the passes:\n",
            o.events, o.reps
        );
    let _ = writeln!(
        text,
        "{}",
        event_table(o, &samples, &tracers, &tracers[1..])
    );
    let n = notes(&samples);
    if !n.is_empty() {
        let _ = writeln!(text, "{n}");
    }
}

/// The instruction counts.
fn instructions_section(o: &Options, text: &mut String) {
    // The mode and prefault variants run the same instructions on the
    // calling thread as `fxt`; the atomic floors are named alternatives.
    let tracers: Vec<String> = o
        .tracers
        .iter()
        .filter(|t| {
            !matches!(
                t.as_str(),
                "floor-atomic"
                    | "floor-shared"
                    | "fxt-circular-prefault"
                    | "fxt-streaming-prefault"
                    | "fxt-prefault"
                    | "fxt-memory"
            )
        })
        .cloned()
        .collect();
    let _ = writeln!(
        text,
        "{}",
        checks::instruction_table(&tracers, &o.scenarios)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--cell") => return run_cell(&args[1..]),
        Some("--latency") => return run_latency_cell(&args[1..]),
        Some("--check") => return checks::run_child(&args[1..]),
        Some("--start-finish") => return lifecycle::start_finish_child(&args[1..]),
        Some("--first-pass") => return lifecycle::first_pass_child(&args[1..]),
        Some("--tracing-cell") => return tracing_route::cell_child(&args[1..]),
        Some("--hog") => return load::hog(&args[1..]),
        Some("--realtime") => return realtime::child(&args[1..]),
        _ => {}
    }
    let o = match parse_options(args.into_iter()) {
        Ok(o) => o,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("bench-table: {message}");
            }
            eprintln!("{USAGE}");
            std::process::exit(if message.is_empty() { 0 } else { 2 });
        }
    };
    let header = checks::machine_header(&o.events, o.reps);
    let sections = sections(&o);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let provenance = format!(
        "{header}\nLoad average at the end of the run: {}.",
        load.trim()
    );
    let Some(path) = &o.out else {
        println!("{provenance}");
        for (_, text) in &sections {
            println!("\n{text}");
        }
        return;
    };
    let sections: Vec<(&str, String)> = sections
        .into_iter()
        .map(|(name, text)| (name, format!("{provenance}\n\n{}", text.trim())))
        .collect();
    if let Err(e) = report::write_sections(path, &sections) {
        eprintln!("bench-table: cannot update {}: {e}", path.display());
        std::process::exit(1);
    }
    let names: Vec<&str> = sections.iter().map(|(name, _)| *name).collect();
    eprintln!(
        "bench-table: wrote {} to {}",
        names.join(", "),
        path.display()
    );
}

/// Runs the sections `o` asks for; each one's Markdown text, by name.
fn sections(o: &Options) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for &name in SECTIONS.iter().filter(|s| o.has(s)) {
        let mut text = String::new();
        match name {
            "sinks" => {
                let _ = writeln!(text, "### Where the bytes go\n");
                let _ = writeln!(text, "{}", fxt_bench::sinks::table(&std::env::temp_dir()));
            }
            "fresh" => fresh_section(o, &mut text),
            "realtime" => realtime_section(o, &mut text),
            "long" => long_section(o, &mut text),
            "latency" => {
                let _ = writeln!(
                    text,
                    "### Single-event latency\n\nEach event timed on its own (`lfence; rdtsc` before and after, included in every row alike), {} events per thread on a fresh session, every thread's events together, ns. \"neighbour\": a child process that fills and frees {} GiB in a loop runs beside the benchmark the whole time. The floor's rows show what the machine itself does to a thread (preemption by other processes shows in every column's max).\n",
                    o.events,
                    load::NEIGHBOUR_BYTES >> 30
                );
                let _ = writeln!(text, "{}", latency(o));
            }
            "lifecycle" => {
                let _ = writeln!(text, "### Session start and finish\n");
                let _ = writeln!(text, "{}", lifecycle_section(o));
            }
            "tracing" => {
                let _ = writeln!(text, "### The `tracing` route\n");
                let _ = writeln!(text, "{}", tracing_section(o));
                let _ = writeln!(text, "{}", tracing_route::instruction_profile());
            }
            "instructions" => instructions_section(o, &mut text),
            "checks" => {
                let _ = writeln!(text, "{}", checks::run_checks());
            }
            _ => unreachable!("SECTIONS lists {name}"),
        }
        out.push((name, text));
    }
    out
}
