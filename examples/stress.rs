//! Stress the engine: N threads each emit M instant events with arguments
//! `thread` (0..N) and `seq` (0..M), then the trace is collected and one
//! JSON line of statistics is printed.
//!
//! ```text
//! cargo run --release --example stress -- --threads 4 --events 1000000 \
//!     --mode oneshot --buffer 256M --out /tmp/stress.fxt
//! ```
//!
//! Options (all optional): `--threads N` (default 2), `--events M`
//! (default 1000000), `--mode oneshot|circular|streaming` (default
//! oneshot), `--buffer BYTES` (K/M/G suffixes; default 256M), `--out PATH`
//! (default stress.fxt), `--prefault` (touch the whole buffer at start),
//! `--crash-safe` (back the buffer with the `--out` file: killed with
//! `SIGKILL` at any moment, the process leaves a decodable trace there),
//! `--forever` (with `--crash-safe`: emit until killed; each thread prints
//! nothing, the main thread prints `started` once tracing).
//!
//! The events go through `fxt_runtime::__macro_support` exactly as the
//! `trace_instant!` macro expands, so this measures the engine alone.

use std::process::ExitCode;
use std::time::Instant;

use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};
use fxt_runtime::{parse_size, start, Config, Mode};

static KEYS: [KeyCache; 2] = [KeyCache::NEW, KeyCache::NEW];
static EV: Callsite = Callsite::new("stress", "ev", &["thread", "seq"], &KEYS);

struct Args {
    threads: u64,
    events: u64,
    mode: Mode,
    mode_name: String,
    buffer: usize,
    out: String,
    prefault: bool,
    crash_safe: bool,
    forever: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 2,
        events: 1_000_000,
        mode: Mode::Oneshot,
        mode_name: "oneshot".into(),
        buffer: 256 << 20,
        out: "stress.fxt".into(),
        prefault: false,
        crash_safe: false,
        forever: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--threads" => a.threads = value()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--events" => a.events = value()?.parse().map_err(|e| format!("--events: {e}"))?,
            "--mode" => {
                let v = value()?;
                a.mode = Mode::parse(&v).ok_or_else(|| format!("--mode: unknown mode {v:?}"))?;
                a.mode_name = v.to_ascii_lowercase();
            }
            "--buffer" => {
                let v = value()?;
                a.buffer = parse_size(&v).ok_or_else(|| format!("--buffer: cannot parse {v:?}"))?;
            }
            "--out" => a.out = value()?,
            "--prefault" => a.prefault = true,
            "--crash-safe" => a.crash_safe = true,
            "--forever" => a.forever = true,
            "-h" | "--help" => {
                return Err("usage: stress [--threads N] [--events M] \
                            [--mode oneshot|circular|streaming] [--buffer BYTES] [--out PATH] \
                            [--prefault] [--crash-safe [--forever]]"
                    .into())
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(a)
}

/// Escapes a string for JSON.
fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// `pub` so that `crates/fxt-cli/tests/doc_commands.rs` can run it.
pub fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let config = Config::new()
        .buffer_size(args.buffer)
        .mode(args.mode)
        .output(&args.out)
        .prefault(args.prefault)
        .crash_safe(args.crash_safe);
    let session = match start(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stress: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let t0 = Instant::now();
    if args.forever {
        println!("started");
    }
    std::thread::scope(|s| {
        for t in 0..args.threads {
            let events = if args.forever { u64::MAX } else { args.events };
            s.spawn(move || {
                for i in 0..events {
                    if let Some(site) = EV.site() {
                        instant(site, &[ArgValue::U64(t), ArgValue::U64(i)]);
                    }
                }
            });
        }
    });
    let elapsed = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let stats = match session.finish() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("stress: collecting failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let collect = t1.elapsed().as_secs_f64();
    let emitted = args.threads * args.events;
    println!(
        "{{\"threads\":{},\"events_per_thread\":{},\"mode\":{},\"buffer\":{},\"out\":{},\
         \"events_emitted\":{},\"records_written\":{},\"events_written\":{},\"records_dropped\":{},\
         \"bytes\":{},\"elapsed\":{:.6},\"events_per_sec\":{:.0},\"collect_elapsed\":{:.6},\
         \"ticks_per_second\":{}}}",
        args.threads,
        args.events,
        json_str(&args.mode_name),
        args.buffer,
        json_str(&args.out),
        emitted,
        stats.records_written,
        stats.emitted_records_written,
        stats.records_dropped,
        stats.bytes_written,
        elapsed,
        emitted as f64 / elapsed.max(1e-9),
        collect,
        stats.ticks_per_second,
    );
    ExitCode::SUCCESS
}
