//! The parts of the `bench-table` report that are not a ns/event grid: the
//! machine header, the instruction counts, and the checks that run
//! real fxt sessions (bytes per record from real trace files, memory fixed
//! by the buffer size, collection throughput to a file).

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

use fxt::Mode;

use crate::adapters::fxt::Fxt;
use crate::harness::{measure, median, Scenario, Tracer};

fn shell(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The machine, toolchain and command, as Markdown.
pub fn machine_header(events: &u64, reps: usize) -> String {
    let model = shell("lscpu", &[])
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Model name:"))
                .map(|l| l["Model name:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let rustc = shell("rustc", &["--version"]).unwrap_or_else(|| "rustc ?".into());
    let kernel = shell("uname", &["-sr"]).unwrap_or_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!(
        "Machine: {model}, {cores} logical cores, {kernel}; {rustc}.\n\
         Command: `cargo run --profile bench -p fxt-bench{} --bin bench-table --{}{}`\n\
         {events} events per thread per measurement, {reps} repetitions. \
         Load average at the start: {}.",
        if cfg!(feature = "perfetto-sdk") {
            " --features perfetto-sdk"
        } else {
            ""
        },
        if args.is_empty() { "" } else { " " },
        args.join(" "),
        crate::host::load_average()
    )
}

/// Child mode `--check KIND ...`: prints one `CHECK ...` line.
pub fn run_child(args: &[String]) {
    match args.first().map(String::as_str) {
        Some("bytes") => {
            let scenario: Scenario = args[1].parse().expect("scenario");
            let events: u64 = args[2].parse().expect("events");
            let (bytes, sizes) = trace_of(scenario, events);
            println!("CHECK {} {}", bytes.len(), sizes);
        }
        Some("memory") => {
            let mode = Mode::parse(&args[1]).expect("mode");
            let mib: usize = args[2].parse().expect("buffer MiB");
            let events: u64 = args[3].parse().expect("events");
            let fxt = Fxt::with_buffer(mode, mib << 20);
            measure(&fxt, Scenario::Counter, 1, events);
            let rss = max_rss_kib();
            let note = fxt.finish();
            println!("CHECK {rss} {note}");
        }
        Some("collect") => {
            let fxt = Fxt::with_buffer(Mode::Oneshot, 256 << 20);
            // 16 bytes per instant: fill the buffer (the excess is dropped).
            measure(&fxt, Scenario::Instant, 1, (256 << 20) / 16 + 1);
            let session = fxt.take_session().expect("live session");
            let path = std::env::temp_dir().join(format!("fxt-collect-{}.fxt", std::process::id()));
            let start = Instant::now();
            let stats = session.finish_to_path(&path).expect("collect to a file");
            let secs = start.elapsed().as_secs_f64();
            let _ = std::fs::remove_file(&path);
            println!(
                "CHECK {:.3} {} {}",
                stats.bytes_written as f64 / secs / 1e9,
                stats.bytes_written,
                stats.records_dropped
            );
        }
        other => panic!("unknown check {other:?}"),
    }
}

/// Records `WARMUP + events` events of `scenario` on one thread in a fresh
/// oneshot session and returns the trace and a summary of the event record
/// sizes found in it (`type:bytes` for each event type seen).
fn trace_of(scenario: Scenario, events: u64) -> (Vec<u8>, String) {
    let fxt = Fxt::with_buffer(Mode::Oneshot, 64 << 20);
    measure(&fxt, scenario, 1, events);
    let session = fxt.take_session().expect("live session");
    let (bytes, _stats) = session.finish_to_vec().expect("collect");
    let mut sizes: std::collections::BTreeMap<(u64, u64), u64> = Default::default();
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let mut i = 0;
    while i < words.len() {
        let h = words[i];
        let ty = h & 0xf;
        let len = if ty == 15 {
            (h >> 4) & 0xffff_ffff
        } else {
            (h >> 4) & 0xfff
        } as usize;
        if len == 0 {
            break;
        }
        if ty == 4 {
            *sizes.entry(((h >> 16) & 0xf, len as u64 * 8)).or_default() += 1;
        }
        i += len;
    }
    let summary = sizes
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|((t, b), n)| format!("{}:{b}x{n}", event_type_name(*t)))
        .collect::<Vec<_>>()
        .join(",");
    (bytes, summary)
}

fn event_type_name(t: u64) -> &'static str {
    match t {
        0 => "instant",
        1 => "counter",
        2 => "begin",
        3 => "end",
        4 => "complete",
        _ => "other",
    }
}

fn max_rss_kib() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_maxrss
    }
}

fn child(args: &[&str]) -> Option<Vec<String>> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe).arg("--check").args(args).output().ok()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|l| l.strip_prefix("CHECK "));
    if line.is_none() {
        eprintln!(
            "check {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Some(line?.split_whitespace().map(str::to_string).collect())
}

/// Runs the checks (each in a child process) and returns them as Markdown.
pub fn run_checks() -> String {
    let mut out = String::from("Bytes per record, from real trace files (file size difference between 101 000 and 1 000 events on one thread; sizes of the event records found by walking the file):\n\n| record | bytes per event | event records in the file | target |\n|---|---:|---|---:|\n");
    for (s, target) in [
        (Scenario::Instant, "16"),
        (Scenario::InstantArg, "32"),
        (Scenario::Counter, "40"),
        (Scenario::DurationAttr, "24"),
        (Scenario::DurationGuard, "24"),
    ] {
        let small = child(&["bytes", s.id(), "0"]);
        let big = child(&["bytes", s.id(), "100000"]);
        if let (Some(a), Some(b)) = (small, big) {
            let a: f64 = a[0].parse().unwrap_or(f64::NAN);
            let n: f64 = b[0].parse().unwrap_or(f64::NAN);
            let sizes = b.get(1).cloned().unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {:.2} | {} | {target} |",
                s.describe(),
                (n - a) / 100_000.0,
                sizes
            );
        }
    }
    out.push_str("\nMemory (max RSS of a process recording counters on one thread; the buffer is allocated once):\n\n| mode | buffer | events | max RSS |\n|---|---:|---:|---:|\n");
    for (mode, mib, events) in [
        ("oneshot", 16, 1_000_000u64),
        ("oneshot", 16, 8_000_000),
        ("circular", 16, 1_000_000),
        ("circular", 16, 8_000_000),
    ] {
        if let Some(r) = child(&["memory", mode, &mib.to_string(), &events.to_string()]) {
            let kib: f64 = r[0].parse().unwrap_or(f64::NAN);
            let _ = writeln!(
                out,
                "| {mode} | {mib} MiB | {events} | {:.1} MiB{} |",
                kib / 1024.0,
                if r.len() > 1 {
                    format!(" ({})", r[1..].join(" "))
                } else {
                    String::new()
                }
            );
        }
    }
    let mut rates = Vec::new();
    let mut size = String::new();
    for _ in 0..3 {
        if let Some(r) = child(&["collect"]) {
            rates.push(r[0].parse().unwrap_or(f64::NAN));
            size = r.get(1).cloned().unwrap_or_default();
        }
    }
    if !rates.is_empty() {
        let _ = writeln!(
            out,
            "\nCollection of a full 256 MiB oneshot buffer to a file (page cache), median of {}: {:.2} GB/s ({size} bytes written; target ≥1 GB/s).",
            rates.len(),
            median(&mut rates)
        );
    }
    out
}

/// Events per instruction-count cell (plus the warm-up).
const INSTRUCTION_EVENTS: u64 = 20_000;

/// Instructions per event of the calling thread inside the measured loop
/// (valgrind callgrind, one thread), or `None` without valgrind.
fn instructions_per_event(tracer: &str, scenario: Scenario) -> Option<f64> {
    let events = INSTRUCTION_EVENTS.to_string();
    let args = ["--cell", tracer, scenario.id(), "1", &events, "1", "0"];
    let counted = crate::callgrind::count(&args, "*as fxt_bench::harness::Tracer>::run").ok()?;
    if counted.stdout.contains("RESULT n/a") {
        return None;
    }
    Some(counted.instructions as f64 / (INSTRUCTION_EVENTS + crate::harness::WARMUP_EVENTS) as f64)
}

/// The instruction-count table (Markdown), or a note when valgrind is
/// missing.
pub fn instruction_table(tracers: &[String], scenarios: &[Scenario]) -> String {
    if Command::new("valgrind").arg("--version").output().is_err() {
        return "(valgrind not found: no instruction counts)".into();
    }
    let mut out = format!(
        "Instructions per event (valgrind callgrind; the calling thread inside the measured loop, 1 thread, {INSTRUCTION_EVENTS} events; background threads of a tracer are not counted):\n\n| scenario |"
    );
    for t in tracers {
        let _ = write!(out, " {t} |");
    }
    out.push_str("\n|---|");
    for _ in tracers {
        out.push_str("---:|");
    }
    out.push('\n');
    for &s in scenarios {
        eprintln!("instruction counts: {s}");
        let _ = write!(out, "| {} |", s.describe());
        for t in tracers {
            match instructions_per_event(t, s) {
                Some(v) => {
                    let _ = write!(out, " {v:.0} |");
                }
                None => out.push_str(" n/a |"),
            }
        }
        out.push('\n');
    }
    out
}
