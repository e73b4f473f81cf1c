//! Prints the comparison table of fxt, the floor and the other tracers.
//!
//! ```text
//! cargo run --profile bench -p fxt-bench --bin bench-table -- [options]
//!   --events N       events per thread per cell (default 1000000)
//!   --reps R         processes per cell; the median is shown (default 5)
//!   --threads LIST   thread counts (default 1,2,4)
//!   --tracers LIST   columns (default: all)
//!   --scenarios LIST rows (default: all)
//!   --no-checks      skip the record-size, memory and collection checks
//!   --no-instructions  skip the instruction counts (valgrind callgrind)
//! ```
//!
//! Wall-clock medians move with the machine's load; the instruction counts
//! (callgrind, the calling thread's instructions inside the measured loop,
//! one thread) do not, so the report shows both.
//!
//! Every cell runs in a fresh process (this binary, re-executed with
//! `--cell`), so tracers' global state, warm caches and allocator state do
//! not leak between cells; repetitions are interleaved across cells so a
//! burst of background load spreads over all of them.

use std::collections::HashMap;
use std::process::Command;

use fxt_bench::adapters;
use fxt_bench::checks;
use fxt_bench::harness::{measure, median, ns_per_event, Scenario};

struct Options {
    events: u64,
    reps: usize,
    threads: Vec<usize>,
    tracers: Vec<String>,
    scenarios: Vec<Scenario>,
    checks: bool,
    instructions: bool,
}

const USAGE: &str = "usage: bench-table [--events N] [--reps R] [--threads LIST] \
[--tracers LIST] [--scenarios LIST] [--no-checks] [--no-instructions]";

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
        tracers: adapters::NAMES.iter().map(|s| s.to_string()).collect(),
        scenarios: Scenario::ALL.to_vec(),
        checks: true,
        instructions: true,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--events" => o.events = number("--events", args.next())?,
            "--reps" => o.reps = number("--reps", args.next())?,
            "--threads" => o.threads = list("--threads", args.next(), |s| s.parse().ok())?,
            "--tracers" => {
                o.tracers = list("--tracers", args.next(), |s| {
                    adapters::NAMES.contains(&s).then(|| s.to_string())
                })?
            }
            "--scenarios" => o.scenarios = list("--scenarios", args.next(), |s| s.parse().ok())?,
            "--no-checks" => o.checks = false,
            "--no-instructions" => o.instructions = false,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(o)
}

/// Child mode: `--cell TRACER SCENARIO THREADS EVENTS`; prints one line
/// `RESULT <ns per event>` or `RESULT n/a`.
fn run_cell(args: &[String]) {
    let [tracer, scenario, threads, events] = args else {
        panic!("--cell TRACER SCENARIO THREADS EVENTS")
    };
    let scenario: Scenario = scenario.parse().expect("scenario");
    let threads: usize = threads.parse().expect("threads");
    let events: u64 = events.parse().expect("events");
    let tracer = adapters::by_name(tracer).unwrap_or_else(|| panic!("unknown tracer {tracer}"));
    if !tracer.supports(scenario) {
        println!("RESULT n/a");
        return;
    }
    let wall = measure(tracer.as_ref(), scenario, threads, events);
    let note = tracer.finish();
    println!("RESULT {:.3} {}", ns_per_event(wall, threads, events), note);
}

/// Runs one cell in a child process; `None` when the tracer has no
/// equivalent of the scenario.
fn spawn_cell(tracer: &str, s: Scenario, threads: usize, events: u64) -> Option<(f64, String)> {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .args([
            "--cell",
            tracer,
            s.id(),
            &threads.to_string(),
            &events.to_string(),
        ])
        .output()
        .expect("spawn a cell");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("RESULT "));
    match line {
        Some("n/a") => None,
        Some(l) => {
            let (ns, note) = l.split_once(' ').unwrap_or((l, ""));
            Some((ns.parse().expect("ns per event"), note.trim().to_string()))
        }
        None => {
            eprintln!(
                "cell {tracer} {s} {threads} failed: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            Some((f64::NAN, "failed".into()))
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--cell") => return run_cell(&args[1..]),
        Some("--check") => return checks::run_child(&args[1..]),
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
    let mut cells = Vec::new();
    for &s in &o.scenarios {
        for &t in &o.threads {
            for tr in &o.tracers {
                cells.push((s, t, tr.clone()));
            }
        }
    }
    let mut samples: HashMap<(Scenario, usize, String), Vec<f64>> = HashMap::new();
    let mut notes: HashMap<(Scenario, usize, String), String> = HashMap::new();
    let mut unsupported = std::collections::HashSet::new();
    for rep in 0..o.reps {
        eprintln!("repetition {}/{}", rep + 1, o.reps);
        for cell in &cells {
            if unsupported.contains(cell) {
                continue;
            }
            match spawn_cell(&cell.2, cell.0, cell.1, o.events) {
                None => {
                    unsupported.insert(cell.clone());
                }
                Some((ns, note)) => {
                    samples.entry(cell.clone()).or_default().push(ns);
                    if !note.is_empty() {
                        notes.insert(cell.clone(), note);
                    }
                }
            }
        }
    }
    let medians: HashMap<_, f64> = samples
        .into_iter()
        .map(|(k, mut v)| (k, median(&mut v)))
        .collect();

    println!("{}", checks::machine_header(&o.events, o.reps));
    println!();
    print!("| scenario | threads |");
    for tr in &o.tracers {
        print!(" {tr} |");
    }
    println!(" fxt ÷ floor |");
    print!("|---|---:|");
    for _ in &o.tracers {
        print!("---:|");
    }
    println!("---:|");
    for &s in &o.scenarios {
        for &t in &o.threads {
            print!("| {} | {t} |", s.describe());
            for tr in &o.tracers {
                match medians.get(&(s, t, tr.clone())) {
                    Some(v) => print!(" {} |", fmt_ns(*v)),
                    None => print!(" n/a |"),
                }
            }
            let fxt = medians.get(&(s, t, "fxt-oneshot".to_string()));
            let floor = medians.get(&(s, t, "floor".to_string()));
            match (fxt, floor) {
                (Some(a), Some(b)) if *b > 0.0 => println!(" {:.2}x |", a / b),
                _ => println!(" |"),
            }
        }
    }
    if !notes.is_empty() {
        println!();
        let mut n: Vec<_> = notes.into_iter().collect();
        n.sort_by(|a, b| format!("{:?}", a.0).cmp(&format!("{:?}", b.0)));
        for ((s, t, tr), note) in n {
            println!("* {tr}, {s}, {t} thread(s): {note}");
        }
    }
    println!();
    println!("{}", checks::verdicts(&medians));
    if o.instructions {
        println!();
        println!("{}", checks::instruction_table(&o.tracers, &o.scenarios));
    }
    if o.checks {
        println!();
        println!("{}", checks::run_checks());
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
