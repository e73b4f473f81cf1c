//! Raw-stack CPU samples (issue 42): a program built with default
//! features copies the interrupted registers and stack, and the `fxt`
//! command unwinds them with the binary's unwind tables. The known chain
//! of nested functions of this test binary comes out whole and in order in
//! `fxt flame` and `fxt stats`; `fxt symbolize` writes frames and names
//! into the file, so that it reads the same once the binary is gone.

mod cli_support;
use cli_support::*;

use std::collections::BTreeMap;
use std::path::Path;

use fxt_format::decode::Record;
use fxt_format::samples::{SampleBlob, Walk};

#[inline(never)]
fn raw_stack_outer(ms: u64) -> u64 {
    // Not a tail call: each function keeps its frame.
    std::hint::black_box(raw_stack_middle(ms)).wrapping_add(1)
}

#[inline(never)]
fn raw_stack_middle(ms: u64) -> u64 {
    std::hint::black_box(raw_stack_inner(ms)).wrapping_add(1)
}

#[inline(never)]
fn raw_stack_inner(ms: u64) -> u64 {
    std::hint::black_box(burn_in_sampled_program(ms)).wrapping_add(1)
}

/// The chain a sample burning in the innermost function must show, root
/// first (as `fxt flame --folded` writes a stack).
const CHAIN: [&str; 4] = [
    "::raw_stack_outer",
    "::raw_stack_middle",
    "::raw_stack_inner",
    "::burn_in_sampled_program",
];

/// The trace of this program sampling itself at 1 kHz (default features:
/// raw stacks and `fxt.modules` only) while in the chain.
fn nested_trace() -> Vec<u8> {
    let bytes = sampled_engine_trace(fxt::Config::new().sample_hz(1000), || {
        let _phase = fxt::trace_duration_scope!("work", "nested phase");
        std::hint::black_box(raw_stack_outer(300));
    });
    let raw = fxt_format::decode::decode_all(&bytes)
        .unwrap()
        .iter()
        .filter(|r| match r {
            Record::Blob(b) => matches!(
                SampleBlob::from_blob(b),
                Some(Ok(SampleBlob::Sample(s))) if s.walk == Walk::RawStack
            ),
            _ => false,
        })
        .count();
    assert!(raw > 0, "no raw-stack sample written");
    bytes
}

/// `fxt flame --samples --folded PATH --inside NAME`: stack → count.
fn folded(path: &Path, inside: &str) -> BTreeMap<String, u64> {
    folded_samples(path, &["--inside", inside])
}

/// Whether `stack` (frames joined by `;`, root first) holds the chain's
/// functions in order, each the caller of the next.
fn has_chain(stack: &str) -> bool {
    let frames: Vec<&str> = stack.split(';').collect();
    let at = |suffix: &str| frames.iter().position(|f| f.ends_with(suffix));
    let positions: Option<Vec<usize>> = CHAIN.iter().map(|s| at(s)).collect();
    positions.is_some_and(|p| p.windows(2).all(|w| w[1] == w[0] + 1))
}

/// Of the samples in the phase, how many have the whole chain (and how
/// many there are).
fn chain_count(stacks: &BTreeMap<String, u64>) -> (u64, u64) {
    let total = stacks.values().sum();
    let chained = stacks
        .iter()
        .filter(|(s, _)| has_chain(s))
        .map(|(_, n)| n)
        .sum();
    (chained, total)
}

/// The reader unwinds the raw stacks: nearly every sample taken in the
/// phase (the rest are in the clock call the burning loop makes, whose
/// vDSO code has no file) shows outer → middle → inner → burning, each
/// calling the next, in `fxt flame`; `fxt stats` names the functions.
#[test]
fn the_reader_unwinds_raw_stacks_into_the_known_chain() {
    let path = tmp("raw-stacks-nested.fxt");
    std::fs::write(&path, nested_trace()).unwrap();
    let (chained, total) = chain_count(&folded(&path, "nested phase"));
    eprintln!("{chained} of {total} samples show the chain");
    assert!(
        total > 0 && chained * 10 >= total * 8,
        "{chained} of {total} samples show the chain: {:?}",
        folded(&path, "nested phase")
    );
    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["samples"]["symbolized"], true, "{}", json["samples"]);
    let dump = fxt(&["dump", p(&path)]);
    assert!(dump.status.success(), "{}", stderr(&dump));
    assert!(
        stdout(&dump)
            .lines()
            .any(|l| l.contains("walk=raw_stack") && l.contains("raw_stack_middle")),
        "dump shows no unwound raw stack"
    );
}

/// The child run of [`symbolize_makes_raw_stacks_readable_without_the_binary`]
/// (a copy of this test binary, which is deleted after): writes the
/// nested trace where `FXT_RAW_STACK_CHILD` says. Does nothing otherwise.
#[test]
fn raw_stack_child_writes_its_trace() {
    if let Some(out) = std::env::var_os("FXT_RAW_STACK_CHILD") {
        std::fs::write(out, nested_trace()).unwrap();
    }
}

/// A program run from a binary that is deleted after `fxt symbolize`: the
/// symbolized file still shows the chain (frames and names are in it),
/// and the unsymbolized one no longer does (nothing left to unwind with).
#[test]
fn symbolize_makes_raw_stacks_readable_without_the_binary() {
    let dir = tmp("raw-stacks-elsewhere");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("copied-program");
    std::fs::copy(std::env::current_exe().unwrap(), &program).unwrap();
    let trace = dir.join("raw.fxt");
    let run = std::process::Command::new(&program)
        .args(["--exact", "raw_stack_child_writes_its_trace", "--nocapture"])
        .env("FXT_RAW_STACK_CHILD", &trace)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let symbolized = dir.join("symbolized.fxt");
    let out = fxt(&["symbolize", p(&trace), "-o", p(&symbolized)]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_file(&program).unwrap();

    let (chained, total) = chain_count(&folded(&symbolized, "nested phase"));
    assert!(
        total > 0 && chained * 10 >= total * 8,
        "{chained} of {total} samples show the chain without the binary"
    );
    let bytes = std::fs::read(&symbolized).unwrap();
    let scan = fxt_symbols::scan::TraceSamples::read(&bytes);
    assert!(
        scan.unwound.is_empty(),
        "raw stacks left in the symbolized file"
    );
    assert!(scan.samples.iter().all(|s| s.walk == Walk::UnwindTables));
    assert!(scan.is_symbolized());
    // The same trace unsymbolized: the chain came from the binary.
    let (chained, _) = chain_count(&folded(&trace, "nested phase"));
    assert_eq!(chained, 0, "unwound without the binary?");
}

/// Perfetto's trace_processor_shell at `$FXT_TRACE_PROCESSOR`, or where
/// `shared/tools/perfetto-build.sh` builds it; `None` (the test then says
/// so and passes) where there is none: CI does not build Perfetto.
fn trace_processor() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("FXT_TRACE_PROCESSOR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "/tmp/perfetto-src/out/tp/trace_processor_shell".into());
    path.is_file().then_some(path)
}

/// Perfetto reads the symbolized raw-stack trace: one `perf_sample` per
/// sample, callstacks as deep as the chain with its functions named, and
/// no import error.
#[test]
fn perfetto_shows_the_unwound_chain() {
    let Some(shell) = trace_processor() else {
        eprintln!("skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let path = tmp("raw-stacks-perfetto.fxt");
    std::fs::write(&path, nested_trace()).unwrap();
    let out = fxt(&["symbolize", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let samples = fxt_symbols::scan::TraceSamples::read(&std::fs::read(&path).unwrap())
        .samples
        .len() as i64;
    let query = tmp("raw-stacks-perfetto.sql");
    std::fs::write(
        &query,
        "select (select count(*) from perf_sample), \
         (select count(distinct f.name) from stack_profile_frame f \
          where f.name like '%raw_stack_outer' or f.name like '%raw_stack_middle' \
          or f.name like '%raw_stack_inner'), \
         (select max(depth) from stack_profile_callsite) >= 4, \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);",
    )
    .unwrap();
    let out = std::process::Command::new(shell)
        .args(["-q", p(&query), p(&path)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    let row: Vec<i64> = last
        .split(',')
        .map(|v| v.trim().trim_matches('"').parse().unwrap())
        .collect();
    assert_eq!(
        row,
        [samples, 3, 1, 0],
        "samples, chain functions named, deep callstacks, import errors"
    );
}
