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

use fxt_format::encode::split_blob::part_capacity;
use fxt_format::samples::{Frame, Module, Modules, Sample, Sampling, Symbol, Symbols, Walk};
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

/// Provider 1 (1 GHz): thread A runs "phase1" over [1000, 100000] (in it
/// "inner_step" over [2000, 30000], holding 10 of its samples), thread
/// B "phase2" (begin/end) over [200000, 300000]; 30 samples of worker_a in
/// phase1, 10 of worker_b in phase2, 5 of phase_driver outside any slice;
/// `extra` more samples of many distinct addresses (a symbol table large
/// enough to be split over several records).
fn sampled_trace(extra: usize) -> Trace {
    let thread = |tid| ThreadRef::Inline {
        process: pid(),
        thread: tid,
    };
    let mut t = with_modules("sampled", 1_000_000_000, 0);
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
        EventKind::DurationComplete { end: 30_000 },
        2_000,
        thread(PID_THREAD_A),
        StringRef::Inline("demo"),
        StringRef::Inline("inner_step"),
        &[],
    ))
    .push(&event(
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

/// A trace of provider 1 `name` at `tps` that starts with this process's
/// modules (`fxt.modules`, at tick `ts` on thread A), so that `fxt
/// symbolize` names the samples added after them.
fn with_modules(name: &str, tps: u64, ts: u64) -> Trace {
    let modules = fxt_symbols::process_modules(std::process::id()).unwrap();
    let list: Vec<Module> = modules.modules.iter().map(|m| m.as_module()).collect();
    let thread = ThreadRef::Inline {
        process: pid(),
        thread: PID_THREAD_A,
    };
    let mut words = Vec::new();
    Modules {
        pid: pid(),
        modules: &list,
    }
    .encode_records(ts, thread, &mut words)
    .unwrap();
    Trace::with_provider(1, name, tps).raw(&words)
}

fn symbolized(name: &str, extra: usize) -> std::path::PathBuf {
    let path = sampled_trace(extra).file(name);
    let out = fxt(&["symbolize", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    path
}

/// `fxt flame --samples --folded ARGS`: stack → count.
fn folded(path: &Path, args: &[&str]) -> BTreeMap<String, u64> {
    folded_samples(path, args)
}

#[test]
fn symbolize_names_the_samples_of_a_trace_without_symbols() {
    let path = sampled_trace(0).file("unsymbolized.fxt");
    // Without symbols the reader names the samples from the trace's
    // modules with the binary on this machine (issue 42).
    let before = stdout(&fxt(&["dump", p(&path)]));
    let line = before.lines().find(|l| l.starts_with("sample ")).unwrap();
    assert!(
        line.ends_with("stack=cli_samples::worker_a <- cli_samples::phase_driver"),
        "{line}"
    );
    assert!(!before.contains("symbols pid="), "{before}");

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
    // --force resolves again and replaces the Perfetto packets (each
    // sample once).
    let forced = fxt(&["symbolize", "--force", p(&path)]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    let rescan = TraceSamples::read(&std::fs::read(&path).unwrap());
    assert_eq!(rescan.perfetto_records, scan.perfetto_records);
    assert_eq!(rescan.samples, scan.samples);
    assert!(rescan.is_symbolized());

    let after = stdout(&fxt(&["dump", p(&path)]));
    // Cut into small ranges on several threads, every range names the
    // samples with the symbols read first (they follow the samples).
    for threads in [2, 5] {
        let cut = fxt_cut(threads, 500, &["dump", p(&path)]);
        assert!(stdout(&cut) == after, "dump on {threads} threads");
    }
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

/// `flame --samples` reads a file on every core: cut into small ranges
/// (a phase's begin and its end, the split symbols records and the
/// samples falling in different ones), it draws, warns and exits as on
/// one thread.
#[test]
fn flame_samples_cut_into_ranges_draw_what_one_thread_draws() {
    let path = symbolized("flame_samples_cut.fxt", 0);
    let all = ["flame", "--samples", "--folded", p(&path)];
    let inside = [
        "flame",
        "--samples",
        "--inside",
        "phase1",
        "--folded",
        p(&path),
    ];
    for args in [&all[..], &inside[..]] {
        let one = fxt_cut(1, 1 << 20, args);
        assert!(one.status.success(), "{}", stderr(&one));
        assert!(!one.stdout.is_empty(), "{args:?}");
        for (threads, range_bytes) in [(2, 64), (3, 500), (5, 4096)] {
            let many = fxt_cut(threads, range_bytes, args);
            let what = format!("{args:?} on {threads} threads, ranges of {range_bytes} bytes");
            assert_eq!(stdout(&many), stdout(&one), "{what}");
            assert_eq!(stderr(&many), stderr(&one), "{what}");
            assert_eq!(many.status.code(), one.status.code(), "{what}");
        }
    }
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
    let names: Vec<_> = inside.iter().map(|d| d["name"].as_str().unwrap()).collect();
    // Most samples first, then by name.
    assert_eq!(names, ["phase1", "inner_step", "phase2"]);
    let top = |i: usize| (inside[i]["samples"].clone(), inside[i]["top"][0].clone());
    let function =
        |f: &str, n: u64| serde_json::json!({"function": f, "samples": n, "cpu_ns": null});
    assert_eq!(top(0), (30.into(), function("cli_samples::worker_a", 30)));
    assert_eq!(top(1), (10.into(), function("cli_samples::worker_a", 10)));
    assert_eq!(top(2), (10.into(), function("cli_samples::worker_b", 10)));
    // No fxt.sampling record: no rate, no CPU time.
    assert_eq!(s["sampling"], serde_json::json!([]));
    assert_eq!(inside[0]["cpu_ns"], serde_json::Value::Null);
    let table = stdout(&fxt(&["stats", p(&path)]));
    assert!(
        table.contains("CPU samples   45 on 2 threads (rate not recorded: no CPU time)"),
        "{table}"
    );
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

/// The sampled trace with `sampling` appended, symbolized, as file
/// `name`: its `fxt stats --json` samples section and its table.
fn stats_with_rate(sampling: Sampling, name: &str) -> (serde_json::Value, String) {
    let mut words = Vec::new();
    sampling.encode_records(&mut words).unwrap();
    let path = sampled_trace(0).raw(&words).file(name);
    let out = fxt(&["symbolize", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let table = stdout(&fxt(&["stats", p(&path)]));
    (doc["samples"].clone(), table)
}

/// A trace that says its sampling rate (`fxt.sampling`): `stats` prints
/// the rate and its sources, and the CPU time (samples x period) per
/// duration name, per function in it and per function overall.
#[test]
fn stats_says_the_sampled_cpu_time_where_the_rate_is_known() {
    // As a trace written before the counts of samples and periods.
    let rate = Sampling {
        pid: pid(),
        hz: 1000,
        perf_threads: 1,
        timer_threads: 1,
        samples: 0,
        merged_periods: 0,
    };
    let (s, table) = stats_with_rate(rate, "stats_rate.fxt");
    let sampling = serde_json::json!([{
        "pid": pid(), "hz": 1000, "source": "perf_event and timer",
        "perf_event_threads": 1, "timer_threads": 1,
        "effective_hz": 1000, "cpu_ns_per_sample": 1_000_000,
    }]);
    assert_eq!(s["sampling"], sampling);
    let ms = |n: u64| n * 1_000_000;
    let function =
        |f: &str, n: u64| serde_json::json!({"function": f, "samples": n, "cpu_ns": ms(n)});
    let inside = &s["inside"];
    assert_eq!(
        (inside[0]["name"].clone(), inside[0]["cpu_ns"].clone()),
        ("phase1".into(), ms(30).into())
    );
    assert_eq!(inside[0]["top"][0], function("cli_samples::worker_a", 30));
    assert_eq!(inside[2]["cpu_ns"], ms(10));
    assert_eq!(
        s["functions"],
        serde_json::json!([
            function("cli_samples::worker_a", 30),
            function("cli_samples::worker_b", 10),
            function("cli_samples::phase_driver", 5),
        ])
    );
    assert!(
        table.contains("CPU samples   45 on 2 threads, 1000 Hz (perf_event and timer)"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("phase1") && l.contains("30.0 ms")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("cli_samples::worker_b") && l.ends_with("10.0 ms")),
        "{table}"
    );
}

/// A trace whose samples a timer took at a 250 Hz kernel tick while 1000
/// Hz was asked (the `fxt.sampling` record: 45 samples, the timer's, with
/// 135 periods merged into them: 180 in all): `stats` says the rate they came at and
/// credits each sample 4 ms of CPU time, not 1.
#[test]
fn stats_weighs_a_timers_samples_by_the_periods_they_stood_for() {
    let rate = Sampling {
        pid: pid(),
        hz: 1000,
        perf_threads: 0,
        timer_threads: 2,
        samples: 45,
        merged_periods: 135,
    };
    let (s, table) = stats_with_rate(rate, "stats_timer_rate.fxt");
    assert_eq!(s["sampling"][0]["effective_hz"], 250);
    assert_eq!(s["sampling"][0]["cpu_ns_per_sample"], 4_000_000);
    assert_eq!(s["inside"][0]["name"], "phase1");
    assert_eq!(s["inside"][0]["cpu_ns"], 30 * 4_000_000);
    assert!(
        table.contains("CPU samples   45 on 2 threads, 1000 Hz asked, 250 Hz taken (timer)"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("phase1") && l.contains("120.0 ms")),
        "{table}"
    );
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

    for how in [&["check"][..], &["check", "--perfetto"]] {
        let check = fxt(&[how, &[p(&path)]].concat());
        assert!(
            check.status.success(),
            "{how:?}: {}{}",
            stdout(&check),
            stderr(&check)
        );
    }

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

/// `fxt export parquet`: a `samples` table DuckDB reads, each sample with
/// its named frames and the innermost slice it was taken in.
#[test]
fn export_writes_a_samples_table_joined_to_its_slices() {
    let path = symbolized("export_samples.fxt", 0);
    let dir = tmp("export_samples");
    let _ = std::fs::remove_dir_all(&dir);
    let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir), "--host", "h1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let python = python_with(&[("duckdb", "duckdb==2.0.1")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_query.py");
    let queries = [
        "select count(*), count(slice_id), min(pid) = max(pid), min(host) from {samples}",
        "select typeof(pid), typeof(tid), typeof(ts), typeof(slice_id), typeof(frames) from {samples} limit 1",
        // The innermost slice: inner_step for the first 10 of phase1's.
        "select s.name, sm.frames[1], sm.frames[2], count(*) from {samples} sm \
         join {slices} s on s.id = sm.slice_id and s.trace = sm.trace \
         group by all order by 1",
        "select count(*) from {samples} sm join {slices} s on s.id = sm.slice_id \
         where sm.ts between s.ts and s.ts + s.dur and sm.tid = s.tid",
        "select frames from {samples} where slice_id is null group by all",
    ];
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&dir)
        .args(queries)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r[0], serde_json::json!([[45, 40, true, "h1"]]));
    assert_eq!(
        r[1],
        serde_json::json!([["BIGINT", "BIGINT", "BIGINT", "BIGINT", "VARCHAR[]"]])
    );
    let (a, b, d) = (
        "cli_samples::worker_a",
        "cli_samples::worker_b",
        "cli_samples::phase_driver",
    );
    assert_eq!(
        r[2],
        serde_json::json!([
            ["inner_step", a, d, 10],
            ["phase1", a, d, 20],
            ["phase2", b, d, 10]
        ])
    );
    assert_eq!(r[3], serde_json::json!([[40]]));
    assert_eq!(r[4], serde_json::json!([[[d]]]));
}

/// Samples in no slice are written thread by thread in (pid, tid) order,
/// each thread's in time order, whatever the run (they wait in a hash map,
/// whose order differs from run to run): eight threads' samples, exported
/// three times, come out in the same order every time.
#[test]
fn export_writes_samples_in_no_slice_in_thread_order() {
    let mut t = Trace::with_provider(1, "sampled", 1_000_000_000);
    let mut expected = Vec::new();
    for (i, tid) in [7u64, 3, 8, 1, 5, 2, 6, 4].into_iter().enumerate() {
        for k in 0..2u64 {
            let ts = 1_000 + 10 * i as u64 + k;
            let sample = Sample {
                timestamp: ts,
                pid: pid(),
                tid,
                walk: Walk::FramePointers,
                truncated: false,
                frames: &[at(phase_driver, 2)],
            };
            t = t.raw(&encode_to_vec(&sample).unwrap());
            expected.push(serde_json::json!([tid, ts]));
        }
    }
    expected.sort_by_key(|v| v[0].as_u64());
    let path = t.file("export_samples_order.fxt");
    let python = python_with(&[("duckdb", "duckdb==2.0.1")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_query.py");
    for run in 0..3 {
        let dir = tmp(&format!("export_samples_order_{run}"));
        let _ = std::fs::remove_dir_all(&dir);
        let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir), "--host", "h1"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let out = std::process::Command::new(&python)
            .arg(&script)
            .arg(&dir)
            .arg("select tid, ts from {samples}")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            r[0],
            serde_json::Value::Array(expected.clone()),
            "run {run}"
        );
    }
}

/// A symbols table too large for one record, written as a split blob
/// group whose leading instant's category and name are string indices
/// (as a writer that interns its names writes it): export names the
/// samples' frames from it (its first pass looks for the symbols among
/// events named by index once a string record defines their name).
#[test]
fn export_names_frames_from_a_split_symbols_group_named_by_index() {
    let names: Vec<String> = (0..2000).map(|i| format!("function_{i:04}")).collect();
    let frames: Vec<[Frame<'_>; 1]> = names
        .iter()
        .map(|function| {
            [Frame {
                function,
                file: "",
                line: 0,
            }]
        })
        .collect();
    let address = |i: u64| 0x10_0000 + 16 * i;
    let symbols: Vec<Symbol<'_>> = (0..)
        .zip(&frames)
        .map(|(i, frames)| Symbol {
            address: address(i),
            frames,
        })
        .collect();
    let payload = Symbols {
        pid: 100,
        symbols: &symbols,
    }
    .payload();
    assert!(payload.len() > part_capacity(StringRef::Index(2)));
    let sample = Sample {
        timestamp: 10,
        pid: 100,
        tid: 101,
        walk: Walk::FramePointers,
        truncated: false,
        // As the symbols hold them: the addresses as the sample has them.
        frames: &[address(7), address(1999)],
    };
    let thread = ThreadRef::Inline {
        process: 100,
        thread: 101,
    };
    let group = SplitBlob::new(
        StringRef::Index(1),
        StringRef::Index(2),
        20,
        thread,
        &payload,
    );
    let path = Trace::with_provider(1, "interned", 1_000_000_000)
        .strings(&[(1, "fxt"), (2, "fxt.symbols")])
        .raw(&encode_to_vec(&sample).unwrap())
        .raw(&encode_to_vec(&group).unwrap())
        .file("export_split_symbols_by_index.fxt");
    let dir = tmp("export_split_symbols_by_index");
    let _ = std::fs::remove_dir_all(&dir);
    let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let python = python_with(&[("duckdb", "duckdb==2.0.1")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_query.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&dir)
        .arg("select frames from {samples}")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r[0],
        serde_json::json!([[["function_0007", "function_1999"]]])
    );
}

/// Perfetto reads the samples from the embedded packets: every sample is a
/// row of `perf_sample`, its frames carry the names, it falls inside the
/// slice it was taken in, and the import reports no error.
#[test]
fn perfetto_shows_the_samples_with_names_inside_their_slices() {
    let Some(shell) = perfetto::trace_processor() else {
        eprintln!("skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let path = symbolized("perfetto_samples.fxt", 0);
    let leaf = "join stack_profile_callsite c on c.id = ps.callsite_id \
                join stack_profile_frame f on f.id = c.frame_id";
    let inside = |slice: &str, function: &str| {
        format!(
            "(select count(*) from perf_sample ps {leaf} \
             join thread_track tt on tt.utid = ps.utid join slice s on s.track_id = tt.id \
             where s.name = '{slice}' and f.name = 'cli_samples::{function}' \
             and ps.ts between s.ts and s.ts + s.dur)"
        )
    };
    let query = format!(
        "select (select count(*) from perf_sample), \
         (select count(*) from perf_sample ps {leaf} where f.name = 'cli_samples::worker_a'), \
         (select count(*) from perf_sample ps {leaf} where f.name = 'cli_samples::phase_driver'), \
         {}, {}, \
         (select count(*) from perf_sample ps join thread using (utid) where thread.tid = {PID_THREAD_B}), \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);",
        inside("phase1", "worker_a"),
        inside("phase2", "worker_b"),
    );
    assert_eq!(
        perfetto::perfetto_row(&shell, &path, &query),
        [45, 30, 5, 30, 10, 10, 0],
        "samples, worker_a leaves, phase_driver leaves, in phase1, in phase2, on thread B, import errors"
    );
}

/// A program built without the symbolizer writes only its modules; `fxt
/// stats` names its samples from them with the binary on this machine.
#[test]
fn stats_names_the_samples_of_a_program_built_without_the_symbolizer() {
    let path = tmp("unsymbolized-program.fxt");
    std::fs::write(&path, unsymbolized_program_trace()).unwrap();
    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let samples = &json["samples"];
    assert_eq!(samples["symbolized"], true, "{samples}");
    let inside = samples["inside"].as_array().unwrap();
    assert!(
        inside.iter().any(|i| i["name"] == "sampled phase"),
        "no samples inside the phase: {samples}"
    );
    // Nearly every sample has the burning function on its stack, by name
    // (a debug build's leaf is often an inlined helper of it).
    let stacks = folded(&path, &["--inside", "sampled phase"]);
    let total: u64 = stacks.values().sum();
    let burning: u64 = stacks
        .iter()
        .filter(|(stack, _)| stack.contains("::burn_in_sampled_program"))
        .map(|(_, n)| n)
        .sum();
    assert!(total > 0 && burning * 10 >= total * 9, "{stacks:?}");
}

/// Samples at a slice's edges on a TSC-like clock far from its start
/// (2.3 GHz, 35 476 s of ticks: where Perfetto's conversion runs 13.5 µs
/// early): Perfetto puts inside the slice exactly the samples whose ticks
/// are inside it, as `fxt flame --inside` does, the one taken 1 000
/// ticks (435 ns) before its end included; the one taken before it
/// begins stays outside.
#[test]
fn perfetto_places_samples_at_a_slices_edges_by_their_ticks() {
    let Some(shell) = perfetto::trace_processor() else {
        eprintln!("skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let (tps, begin, end) = (2_300_129_261, 81_599_379_044_252, 81_599_612_672_123);
    let thread = ThreadRef::Inline {
        process: pid(),
        thread: PID_THREAD_A,
    };
    let mut t = with_modules("edges", tps, begin - 10_000);
    // Before the slice, at its first tick, inside, 1 000 ticks before its
    // end and at its last tick.
    for ts in [begin - 3_000, begin, begin + 1_000_000, end - 1_000, end] {
        let frames = [at(worker_a, 1), at(phase_driver, 4)];
        let sample = Sample {
            timestamp: ts,
            pid: pid(),
            tid: PID_THREAD_A,
            walk: Walk::FramePointers,
            truncated: false,
            frames: &frames,
        };
        t = t.raw(&encode_to_vec(&sample).unwrap());
    }
    let path = t
        .push(&event(
            EventKind::DurationComplete { end },
            begin,
            thread,
            StringRef::Inline("demo"),
            StringRef::Inline("edge"),
            &[],
        ))
        .file("perfetto_edges.fxt");
    let out = fxt(&["symbolize", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let inside_by_fxt: u64 = folded(&path, &["--inside", "edge"]).values().sum();
    assert_eq!(inside_by_fxt, 4, "fxt flame --inside edge");
    let query = "select (select count(*) from perf_sample), \
         (select count(*) from perf_sample ps join thread_track tt on tt.utid = ps.utid \
          join slice s on s.track_id = tt.id \
          where s.name = 'edge' and ps.ts between s.ts and s.ts + s.dur), \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);";
    assert_eq!(
        perfetto::perfetto_row(&shell, &path, query),
        [5, 4, 0],
        "samples, inside 'edge', import errors"
    );
}

/// Frames without symbols are named by their file and offset, not their
/// address: two runs of a program whose library was mapped at different
/// bases (address space randomization) give the same stacks, so `fxt
/// flame` and `fxt diff` line them up.
#[test]
fn unnamed_frames_are_the_same_in_every_run() {
    let run = |base: u64, name: &str| {
        let module = [Module {
            start: base,
            end: base + 0x10_0000,
            offset: 0x2000,
            build_id: &[],
            path: "/nowhere/libfake.so",
        }];
        let thread = ThreadRef::Inline {
            process: 100,
            thread: 101,
        };
        let mut words = Vec::new();
        Modules {
            pid: 100,
            modules: &module,
        }
        .encode_records(0, thread, &mut words)
        .unwrap();
        let sample = Sample {
            timestamp: 10,
            pid: 100,
            tid: 101,
            walk: Walk::FramePointers,
            truncated: false,
            frames: &[base + 0x1234, base + 0x5678],
        };
        words.extend(encode_to_vec(&sample).unwrap());
        let path = Trace::with_provider(1, "aslr", 1_000_000_000)
            .raw(&words)
            .file(name);
        stdout(&fxt(&["flame", "--samples", "--folded", p(&path)]))
    };
    let first = run(0x7f00_0000_0000, "aslr_1.fxt");
    let second = run(0x7f12_3450_0000, "aslr_2.fxt");
    assert_eq!(first.trim(), "libfake.so+0x7678;libfake.so+0x3234 1");
    assert_eq!(first, second);
}
