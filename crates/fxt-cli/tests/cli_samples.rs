//! CPU samples through the command line (issue 31), on traces built with
//! the encoders whose samples hold real addresses of this test binary's
//! functions, so that symbolization is real: `fxt symbolize` names them
//! from the binary (the trace's `fxt.modules`), then `dump`, `flame
//! --samples [--inside]` and `stats` show the names; `check`, `recover`
//! and `merge` keep the sample, modules and symbols records whole.

mod cli_support;
use cli_support::*;

use std::collections::BTreeMap;
use std::path::Path;

use fxt_format::samples::{Module, Modules, Sample, Walk};
use fxt_symbols::scan::TraceSamples;

#[inline(never)]
fn worker_a(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(3)
}

#[inline(never)]
fn worker_b(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_add(5)
}

#[inline(never)]
fn phase_driver(x: u64) -> u64 {
    worker_a(x) ^ worker_b(x)
}

fn at(f: fn(u64) -> u64, offset: u64) -> u64 {
    f as usize as u64 + offset
}

const PID_THREAD_A: u64 = 101;
const PID_THREAD_B: u64 = 102;

/// This process's pid: the modules record is this test binary's real one.
fn pid() -> u64 {
    u64::from(std::process::id())
}

/// Provider 1 (1 GHz): thread A runs "phase1" over [1000, 100000], thread
/// B "phase2" (begin/end) over [200000, 300000]; 30 samples of worker_a in
/// phase1, 10 of worker_b in phase2, 5 of phase_driver outside any slice;
/// `extra` more samples of many distinct addresses (a symbol table large
/// enough to be split over several records).
fn sampled_trace(extra: usize) -> Trace {
    let modules = fxt_symbols::process_modules(std::process::id()).unwrap();
    let list: Vec<Module> = modules.modules.iter().map(|m| m.as_module()).collect();
    let mut words = Vec::new();
    Modules {
        pid: pid(),
        modules: &list,
    }
    .encode_records(
        0,
        ThreadRef::Inline {
            process: pid(),
            thread: PID_THREAD_A,
        },
        &mut words,
    )
    .unwrap();
    let thread = |tid| ThreadRef::Inline {
        process: pid(),
        thread: tid,
    };
    let mut t = Trace::with_provider(1, "sampled", 1_000_000_000).raw(&words);
    t = t.push(&event(
        EventKind::DurationBegin,
        200_000,
        thread(PID_THREAD_B),
        StringRef::Inline("demo"),
        StringRef::Inline("phase2"),
        &[],
    ));
    let sample = |ts, tid, frames: &[u64]| -> Vec<u64> {
        encode_to_vec(&Sample {
            timestamp: ts,
            pid: pid(),
            tid,
            walk: Walk::FramePointers,
            truncated: false,
            frames,
        })
        .unwrap()
    };
    for i in 0..30 {
        let stack = [at(worker_a, 1), at(phase_driver, 4)];
        t = t.raw(&sample(2_000 + i * 3_000, PID_THREAD_A, &stack));
    }
    for i in 0..10 {
        let stack = [at(worker_b, 1), at(phase_driver, 9)];
        t = t.raw(&sample(210_000 + i * 5_000, PID_THREAD_B, &stack));
    }
    for i in 0..5 {
        t = t.raw(&sample(400_000 + i, PID_THREAD_A, &[at(phase_driver, 2)]));
    }
    for i in 0..extra {
        let stack: Vec<u64> = (0..200)
            .map(|k| at(phase_driver, (i * 200 + k) as u64 % 4000))
            .collect();
        t = t.raw(&sample(500_000 + i as u64, PID_THREAD_A, &stack));
    }
    t.push(&event(
        EventKind::DurationComplete { end: 100_000 },
        1_000,
        thread(PID_THREAD_A),
        StringRef::Inline("demo"),
        StringRef::Inline("phase1"),
        &[],
    ))
    .push(&event(
        EventKind::DurationEnd,
        300_000,
        thread(PID_THREAD_B),
        StringRef::Inline("demo"),
        StringRef::Inline("phase2"),
        &[],
    ))
}

fn symbolized(name: &str, extra: usize) -> std::path::PathBuf {
    let path = sampled_trace(extra).file(name);
    let out = fxt(&["symbolize", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// `fxt flame --samples --folded ARGS`: stack → count.
fn folded(path: &Path, args: &[&str]) -> BTreeMap<String, u64> {
    let out = fxt(&[&["flame", "--samples", "--folded", p(path)], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (stack.to_owned(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn symbolize_names_the_samples_of_a_trace_without_symbols() {
    let path = sampled_trace(0).file("unsymbolized.fxt");
    let before = stdout(&fxt(&["dump", p(&path)]));
    let line = before.lines().find(|l| l.starts_with("sample ")).unwrap();
    assert!(
        line.contains(&format!("stack={:#x} <- ", at(worker_a, 1))),
        "{line}"
    );

    let out = fxt(&["symbolize", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("45 samples of 1 process, 5 of 5 addresses named"),
        "{}",
        stderr(&out)
    );
    let scan = TraceSamples::read(&std::fs::read(&path).unwrap());
    assert!(scan.is_symbolized());
    assert!(scan.perfetto_records > 0);
    // A second run has nothing to do.
    let again = fxt(&["symbolize", p(&path)]);
    assert!(
        stderr(&again).contains("symbolized already"),
        "{}",
        stderr(&again)
    );

    let after = stdout(&fxt(&["dump", p(&path)]));
    let line = after.lines().find(|l| l.starts_with("sample ")).unwrap();
    assert!(
        line.ends_with("stack=cli_samples::worker_a <- cli_samples::phase_driver"),
        "{line}"
    );
    assert!(
        after.contains(&format!("symbols pid={} count=5", pid())),
        "{after}"
    );
    assert!(after.contains(&format!("modules pid={} count=", pid())));
}

#[test]
fn flame_draws_samples_and_only_those_inside_a_slice() {
    let path = symbolized("flame_samples.fxt", 0);
    let all = folded(&path, &[]);
    let a = "cli_samples::phase_driver;cli_samples::worker_a";
    let b = "cli_samples::phase_driver;cli_samples::worker_b";
    assert_eq!(all.get(a), Some(&30), "{all:?}");
    assert_eq!(all.get(b), Some(&10));
    assert_eq!(all.get("cli_samples::phase_driver"), Some(&5));
    assert_eq!(all.values().sum::<u64>(), 45);
    let inside = folded(&path, &["--inside", "phase1"]);
    assert_eq!(inside, BTreeMap::from([(a.to_owned(), 30)]));
    let inside = folded(&path, &["--inside", "phase2"]);
    assert_eq!(inside, BTreeMap::from([(b.to_owned(), 10)]));
    let none = fxt(&[
        "flame",
        "--samples",
        "--inside",
        "nothing",
        p(&path),
        "-o",
        p(&tmp("none.svg")),
    ]);
    assert!(!none.status.success());
    assert!(
        stderr(&none).contains("no samples to draw"),
        "{}",
        stderr(&none)
    );
    let svg = tmp("samples.svg");
    let out = fxt(&["flame", "--samples", p(&path), "-o", p(&svg)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(
        svg.contains("cli_samples::worker_a (30 samples"),
        "the frame's title counts samples"
    );
}

#[test]
fn stats_names_the_functions_sampled_most_per_duration() {
    let path = symbolized("stats_samples.fxt", 0);
    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &doc["samples"];
    assert_eq!(s["total"], 45);
    assert_eq!(s["threads"], 2);
    assert_eq!(s["symbolized"], true);
    let inside = s["inside"].as_array().unwrap();
    assert_eq!(inside.len(), 2);
    assert_eq!(inside[0]["name"], "phase1");
    assert_eq!(inside[0]["samples"], 30);
    assert_eq!(inside[0]["top"][0]["function"], "cli_samples::worker_a");
    assert_eq!(inside[0]["top"][0]["samples"], 30);
    assert_eq!(inside[1]["name"], "phase2");
    assert_eq!(inside[1]["top"][0]["function"], "cli_samples::worker_b");
    let table = stdout(&fxt(&["stats", p(&path)]));
    assert!(table.contains("CPU samples   45 on 2 threads"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("phase1") && l.contains("cli_samples::worker_a 100.0%")),
        "{table}"
    );
    // A trace without samples has no such section.
    let plain = golden().file("stats_plain.fxt");
    let doc: serde_json::Value =
        serde_json::from_slice(&fxt(&["stats", "--json", p(&plain)]).stdout).unwrap();
    assert!(doc["samples"].is_null());
}

/// What a killed writer leaves: the trace cut inside a record. Symbolize
/// refuses to append in place, and writes a whole copy with -o.
#[test]
fn symbolize_writes_a_cut_trace_whole_to_a_copy() {
    let mut bytes = sampled_trace(0).bytes();
    bytes.truncate(bytes.len() - 12);
    let path = tmp("killed.fxt");
    std::fs::write(&path, &bytes).unwrap();
    let out = fxt(&["symbolize", p(&path)]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("ends inside a record"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the input is untouched"
    );
    let copy = tmp("killed-symbolized.fxt");
    let out = fxt(&["symbolize", p(&path), "-o", p(&copy)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let check = fxt(&["check", p(&copy)]);
    // The cut record was the phase2 end: phase2 is never ended, the rest is whole.
    let report = stdout(&check) + &stderr(&check);
    assert!(!report.contains("truncated"), "{report}");
    let scan = TraceSamples::read(&std::fs::read(&copy).unwrap());
    assert_eq!(scan.samples.len(), 45);
    assert!(scan.is_symbolized() && scan.errors.is_empty());
}

/// Sample, modules and symbols records, a symbol table split over several
/// records included, survive `check`, `recover` and `merge` whole.
#[test]
fn check_recover_and_merge_keep_sample_records_whole() {
    let path = symbolized("whole.fxt", 20);
    let original = TraceSamples::read(&std::fs::read(&path).unwrap());
    assert_eq!(original.samples.len(), 65);
    let split = stdout(&fxt(&["dump", p(&path)]));
    assert!(
        split
            .lines()
            .any(|l| l.starts_with("symbols ") && l.contains("(joined from")),
        "the big table is split"
    );

    let check = fxt(&["check", p(&path)]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );

    let recovered = tmp("whole-recovered.fxt");
    let out = fxt(&["recover", p(&path), "-o", p(&recovered)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = TraceSamples::read(&std::fs::read(&recovered).unwrap());
    assert_eq!(after.samples, original.samples);
    assert_eq!(after.symbols, original.symbols);
    assert_eq!(after.modules, original.modules);
    assert_eq!(after.perfetto_records, original.perfetto_records);

    let other = symbolized("other.fxt", 0);
    let merged = tmp("whole-merged.fxt");
    let out = fxt(&["merge", p(&path), p(&other), "-o", p(&merged)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let m = TraceSamples::read(&std::fs::read(&merged).unwrap());
    assert_eq!(m.samples.len(), 65 + 45);
    assert!(m.errors.is_empty());
    assert_eq!(m.symbols.len(), 2);
    assert!(m.is_symbolized());
    let check = fxt(&["check", p(&merged)]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
}
