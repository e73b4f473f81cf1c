//! Every reading command of `fxt` on damaged copies of real traces: no
//! panic, no hang, bounded memory, and what `recover` writes passes
//! `check` (what `convert --perfetto` writes passes `check --perfetto`);
//! `export parquet` succeeds.
//!
//! The traces are written by the engine (an ordinary workload; the same
//! with a 100,000-byte blob as a split blob group; and as one large blob
//! record) plus the hand-built golden trace. Each case damages one of them
//! in one way chosen by a seeded generator:
//!
//! * bits flipped;
//! * a record header at a record boundary given an extreme size (0, 1,
//!   4095 words) or turned into a large record of a huge size (2^32 - 1
//!   words, one word past the end);
//! * a word anywhere overwritten (random, all ones);
//! * a cut at a record boundary, inside a header, inside a record on a word
//!   boundary, at any byte;
//! * two traces spliced (a prefix of one, a suffix of another, at record
//!   boundaries or anywhere);
//! * records swapped, repeated or left out (ends before begins, references
//!   before definitions);
//! * a zeroed region or garbage appended (a killed writer).
//!
//! Each command runs as a subprocess with a 30 s limit (killed then, and
//! failed) and a 1 GiB address-space limit (an allocation past it aborts the
//! process, a failure); it must end with status 0, 1 or 2 and print no
//! panic. A failing input is kept in the temporary directory, named in the
//! failure.
//!
//! A deeper campaign than CI's: `FXT_MUTATION_CASES=N` damaged copies and
//! `FXT_MUTATION_SEED=S` (decimal or `0x` hex) for other cases than the
//! fixed ones, e.g. `FXT_MUTATION_CASES=3000 FXT_MUTATION_SEED=7 cargo
//! test -p fxt-cli --release --test cli_mutation`.

mod cli_support;
use cli_support::*;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use fxt_format::compat::framing::decoder_walk;

/// Damaged copies tried (unless `FXT_MUTATION_CASES` says).
const CASES: usize = 300;
/// The generator's seed (unless `FXT_MUTATION_SEED` says).
const SEED: u64 = 0x5eed_f00d_cafe_b0ba;
/// Wall-clock limit of one command.
const TIME_LIMIT: Duration = Duration::from_secs(30);
/// Address-space limit of one command: far above what a command needs
/// for inputs of a few hundred KiB, so only an allocation that grows with
/// a field's claimed size (not with the input) reaches it.
const MEMORY_LIMIT: u64 = 1 << 30;

/// A small deterministic generator (xorshift64*), so a run repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Byte offsets of the records of `bytes` (as the decoder frames them).
fn starts(bytes: &[u8]) -> Vec<usize> {
    decoder_walk(bytes)
        .starts
        .into_iter()
        .map(|s| s as usize)
        .collect()
}

/// The byte span of every record.
fn spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let s = starts(bytes);
    let end = decoder_walk(bytes).end as usize;
    s.iter()
        .enumerate()
        .map(|(i, &a)| (a, s.get(i + 1).copied().unwrap_or(end)))
        .collect()
}

fn set_word(bytes: &mut [u8], at: usize, word: u64) {
    if let Some(w) = bytes.get_mut(at..at + 8) {
        w.copy_from_slice(&word.to_le_bytes());
    }
}

fn word(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap()))
}

/// One damaged copy of `traces[i]` (with another trace for splices), and
/// what was done.
fn damage(traces: &[(&str, Vec<u8>)], rng: &mut Rng) -> (Vec<u8>, String) {
    let (name, good) = &traces[rng.below(traces.len())];
    let mut bytes = good.clone();
    let records = starts(&bytes);
    let spans = spans(&bytes);
    let at = *rng.pick(&records);
    let what = match rng.below(7) {
        0 => {
            let n = 1 + rng.below(8);
            for _ in 0..n {
                let bit = rng.below(bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
            format!("{n} bits flipped")
        }
        1 => {
            let h = word(&bytes, at);
            let left_words = ((bytes.len() - at) / 8) as u64;
            let header = match rng.below(6) {
                0 => h & !0xfff0,
                1 => (h & !0xfff0) | (1 << 4),
                2 => (h & !0xfff0) | (0xfff << 4),
                3 => (h & !0xf_ffff_ffff) | (0xffff_ffff << 4) | 15,
                4 => (h & !0xf_ffff_ffff) | ((left_words + 1) << 4) | 15,
                _ => (h & !0xf_ffff_ffff) | (left_words.min(0xffff_ffff) << 4) | 15,
            };
            set_word(&mut bytes, at, header);
            format!("header at {at:#x}: {h:#018x} -> {header:#018x}")
        }
        2 => {
            let w = rng.below(bytes.len() / 8) * 8;
            let v = if rng.below(2) == 0 {
                rng.next()
            } else {
                u64::MAX
            };
            set_word(&mut bytes, w, v);
            format!("word at {w:#x} = {v:#018x}")
        }
        3 => {
            let (a, b) = *rng.pick(&spans);
            let cut = match rng.below(4) {
                0 => a,
                1 => a + 1 + rng.below(7),
                2 => a + 8 * rng.below((b - a) / 8).max(1),
                _ => rng.below(bytes.len()),
            }
            .min(bytes.len());
            bytes.truncate(cut);
            format!("cut at {cut:#x}")
        }
        4 => {
            let (other_name, other) = &traces[rng.below(traces.len())];
            let boundary = rng.below(2) == 0;
            let head = if boundary {
                at
            } else {
                rng.below(bytes.len() / 8) * 8
            };
            let other_starts = starts(other);
            let tail = if boundary {
                *rng.pick(&other_starts)
            } else {
                rng.below(other.len() / 8) * 8
            };
            bytes.truncate(head);
            bytes.extend_from_slice(&other[tail..]);
            format!("{name}[..{head:#x}] + {other_name}[{tail:#x}..]")
        }
        5 => {
            let (a, b) = *rng.pick(&spans);
            let (c, d) = *rng.pick(&spans);
            let (first, second) = if a <= c {
                ((a, b), (c, d))
            } else {
                ((c, d), (a, b))
            };
            let mut out = bytes[..first.0].to_vec();
            let how = match rng.below(3) {
                0 if first.1 <= second.0 => {
                    out.extend_from_slice(&bytes[second.0..second.1]);
                    out.extend_from_slice(&bytes[first.1..second.0]);
                    out.extend_from_slice(&bytes[first.0..first.1]);
                    out.extend_from_slice(&bytes[second.1..]);
                    "swapped"
                }
                1 => {
                    out.extend_from_slice(&bytes[first.0..first.1]);
                    out.extend_from_slice(&bytes[first.0..]);
                    "repeated"
                }
                _ => {
                    out.extend_from_slice(&bytes[first.1..]);
                    "left out"
                }
            };
            bytes = out;
            format!("records at {:#x}, {:#x} {how}", first.0, second.0)
        }
        _ => {
            let n = 8 * (1 + rng.below(64));
            if rng.below(2) == 0 {
                bytes.resize(bytes.len() + n, 0);
                format!("{n} zero bytes appended")
            } else {
                bytes.extend((0..n).map(|_| rng.next() as u8));
                format!("{n} random bytes appended")
            }
        }
    };
    (bytes, format!("{name}: {what}"))
}

/// How one command ended.
struct Ran {
    status: Option<ExitStatus>,
    /// The last lines of stdout and stderr.
    tail: String,
    panicked: bool,
    elapsed: Duration,
}

/// Runs `fxt args` with its output to files (a pipe nobody reads would
/// block it), within the time and memory limits.
fn run_bounded(args: &[&str], stdout_file: &Path, stderr_file: &Path) -> Ran {
    let started = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_fxt"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(stdout_file).unwrap())
        .stderr(File::create(stderr_file).unwrap());
    limit_memory(&mut command);
    let mut child = command.spawn().expect("fxt runs");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = started.elapsed();
    let read =
        |f: &Path| String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()).into_owned();
    let (stdout, stderr) = (read(stdout_file), read(stderr_file));
    let last = |s: &str| {
        s.lines()
            .rev()
            .take(4)
            .map(|l| l.chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    Ran {
        status,
        tail: format!("stdout: {} / stderr: {}", last(&stdout), last(&stderr)),
        panicked: stderr.contains("panicked"),
        elapsed,
    }
}

#[cfg(unix)]
fn limit_memory(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe calls are allowed: it calls setrlimit (a
    // system call, async-signal-safe) on a value on its own stack, and
    // allocates nothing.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: MEMORY_LIMIT as libc::rlim_t,
                rlim_max: MEMORY_LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn limit_memory(_command: &mut Command) {}

/// The traces the cases damage.
fn traces() -> Vec<(&'static str, Vec<u8>)> {
    let blob: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let workload = engine_trace(fxt::Config::new(), engine_workload);
    let split = engine_trace(fxt::Config::new(), || {
        engine_workload();
        fxt::trace_blob!("app", "image", &blob);
        fxt::trace_instant!("app", "after the blob");
    });
    let large = engine_trace(fxt::Config::new().large_records(true), || {
        engine_workload();
        fxt::trace_blob!("app", "image", &blob);
        fxt::trace_instant!("app", "after the blob");
    });
    vec![
        ("workload", workload),
        ("split-blob", split),
        ("large-blob", large),
        ("golden", golden().bytes()),
    ]
}

/// One worker's files.
struct Files {
    input: PathBuf,
    good: PathBuf,
    recovered: PathBuf,
    converted: PathBuf,
    merged: PathBuf,
    flame: PathBuf,
    tables: PathBuf,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Files {
    fn new(worker: usize, good: &[u8]) -> Files {
        let f = |what: &str| tmp(&format!("mutation-{worker}-{what}.fxt"));
        let files = Files {
            input: f("input"),
            good: f("good"),
            recovered: f("recovered"),
            converted: f("converted"),
            merged: f("merged"),
            flame: f("flame.svg"),
            tables: tmp(&format!("mutation-{worker}-tables")),
            stdout: f("stdout"),
            stderr: f("stderr"),
        };
        std::fs::write(&files.good, good).unwrap();
        files
    }
}

/// What one worker saw.
#[derive(Default)]
struct Tally {
    failures: Vec<String>,
    slowest: Duration,
    /// Cases whose input `check` refused (the damage is visible to it).
    refused: usize,
    /// Cases whose input `check --perfetto` refused.
    refused_perfetto: usize,
}

/// Runs every reading command on `bytes`; returns what went wrong.
fn try_case(bytes: &[u8], files: &Files, tally: &mut Tally) -> Vec<String> {
    std::fs::write(&files.input, bytes).unwrap();
    // Each export adds parts: start every case from an empty folder.
    let _ = std::fs::remove_dir_all(&files.tables);
    let input = p(&files.input);
    let (recovered, converted) = (p(&files.recovered), p(&files.converted));
    let commands: Vec<Vec<&str>> = vec![
        vec!["dump", "--offsets", "--payloads", input],
        vec!["dump", "--no-join", input],
        vec!["stats", "--json", input],
        vec!["json", input],
        vec!["check", input],
        vec!["check", "--perfetto", input],
        vec!["recover", input, "-o", recovered],
        vec!["check", recovered],
        vec!["convert", "--perfetto", input, "-o", converted],
        vec!["check", "--perfetto", converted],
        vec!["merge", input, p(&files.good), "-o", p(&files.merged)],
        vec!["flame", "--folded", input, "-o", p(&files.flame)],
        // The damaged trace as the new run against the good one (its
        // differential flame graph over the flame graph's file).
        vec![
            "diff",
            p(&files.good),
            input,
            "--fail-above",
            "10",
            "-o",
            p(&files.flame),
        ],
        vec!["export", "parquet", input, "-o", p(&files.tables)],
    ];
    // A case that damaged the magic record is not a trace: every command
    // refuses it (exit status 2) and writes nothing to check.
    let is_trace = bytes.starts_with(&Trace::new().push(&MagicNumber).bytes());
    let _ = std::fs::remove_file(&files.recovered);
    let _ = std::fs::remove_file(&files.converted);
    let mut failures = Vec::new();
    for args in &commands {
        let checks_output = args[0] == "check"
            && args
                .last()
                .is_some_and(|a| *a == recovered || *a == converted);
        if checks_output && !is_trace {
            continue;
        }
        let ran = run_bounded(args, &files.stdout, &files.stderr);
        tally.slowest = tally.slowest.max(ran.elapsed);
        if args[0] == "check" && !checks_output && ran.status.and_then(|s| s.code()) == Some(1) {
            match args[1] {
                "--perfetto" => tally.refused_perfetto += 1,
                _ => tally.refused += 1,
            }
        }
        let command = format!("fxt {}", args.join(" "));
        let tail = &ran.tail;
        match ran.status {
            None => failures.push(format!("`{command}` still running after {TIME_LIMIT:?}")),
            Some(s) if !matches!(s.code(), Some(0..=2)) || ran.panicked => {
                failures.push(format!("`{command}` ended with {s}: {tail}"))
            }
            Some(s) if !is_trace && s.code() != Some(2) => failures.push(format!(
                "`{command}` read a file that is not a trace ({s}): {tail}"
            )),
            Some(_) if !is_trace => {}
            // What recover and convert write must pass the checks.
            Some(s) if checks_output && s.code() != Some(0) => {
                failures.push(format!("`{command}` fails on the output ({s}): {tail}"))
            }
            // A damaged trace always exports (what recover keeps).
            Some(s)
                if matches!(args[0], "recover" | "convert" | "export") && s.code() != Some(0) =>
            {
                failures.push(format!("`{command}` ended with {s}: {tail}"))
            }
            Some(_) => {}
        }
    }
    failures
}

#[test]
fn every_command_survives_damaged_engine_traces() {
    let started = Instant::now();
    let traces = traces();
    // Every case is generated up front, so that the cases do not depend
    // on how they are shared out among the workers.
    let (count, seed) = campaign();
    let mut rng = Rng(seed);
    let cases: Vec<(Vec<u8>, String)> = (0..count).map(|_| damage(&traces, &mut rng)).collect();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (cases, next, good) = (&cases, &next, &traces[0].1);
                s.spawn(move || {
                    let files = Files::new(w, good);
                    let mut tally = Tally::default();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((bytes, what)) = cases.get(i) else {
                            break;
                        };
                        let found = try_case(bytes, &files, &mut tally);
                        if !found.is_empty() {
                            let kept = tmp(&format!("mutation-failed-{i}.fxt"));
                            std::fs::write(&kept, bytes).unwrap();
                            for f in found {
                                tally.failures.push(format!(
                                    "case {i} ({what}; input kept as {}): {f}",
                                    kept.display()
                                ));
                            }
                        }
                    }
                    tally
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let slowest = tallies.iter().map(|t| t.slowest).max().unwrap_or_default();
    let refused: usize = tallies.iter().map(|t| t.refused).sum();
    let refused_perfetto: usize = tallies.iter().map(|t| t.refused_perfetto).sum();
    let failures: Vec<&String> = tallies.iter().flat_map(|t| &t.failures).collect();
    eprintln!(
        "{count} damaged traces (seed {seed:#x}), {workers} workers: {:.1?}, slowest command \
         {slowest:.1?}; check refused {refused}, check --perfetto {refused_perfetto}",
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The damage is real: most copies are refused by the strict check
    // (the rest are flips in payloads, timestamps or argument values).
    assert!(refused > count / 2, "only {refused} of {count} refused");
}

/// The cases to try and the seed: CI's, or those the environment names.
fn campaign() -> (usize, u64) {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let count = var("FXT_MUTATION_CASES").map_or(CASES, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("FXT_MUTATION_CASES={v}: not a count"))
    });
    let seed = var("FXT_MUTATION_SEED").map_or(SEED, |v| {
        let parsed = match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => v.parse(),
        };
        // A zero state would make xorshift give zeros only.
        parsed
            .ok()
            .filter(|&s| s != 0)
            .unwrap_or_else(|| panic!("FXT_MUTATION_SEED={v}: not a nonzero number"))
    });
    (count, seed)
}
