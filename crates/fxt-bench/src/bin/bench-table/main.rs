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

mod children;
mod policies;
mod samples;
mod sections;
mod verdicts;

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

use children::*;
use policies::*;
use samples::*;
use sections::*;
use verdicts::*;

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
    let provenance = format!(
        "{header}\nLoad average at the end of the run: {}.",
        fxt_bench::host::load_average()
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
