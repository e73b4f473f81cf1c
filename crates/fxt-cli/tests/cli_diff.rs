//! `fxt diff`: the gate catches one function made 35% slower in five runs
//! against five, names it and nothing else, passes five unchanged runs,
//! draws it red in the differential flame graph; bad input exits 2.
//!
//! The runs are synthetic, built with `fxt_format::encode` from seeded
//! random durations (a skewed, log-normal spread with a long tail, and a
//! per-run offset as a machine's state gives), so the verdicts do not
//! depend on the load of the machine running the tests. The guide's noise
//! figures (docs/guide/compare.md) come from real runs (`scripts/diff-noise.sh`).

mod cli_support;
use cli_support::*;

use std::path::PathBuf;

use serde_json::Value;

/// The functions of one frame of the synthetic program: category, name,
/// typical duration in ns.
const FUNCTIONS: [(&str, &str, f64); 4] = [
    ("work", "parse", 40_000.0),
    ("work", "compact", 20_000.0),
    ("work", "hash", 30_000.0),
    ("work", "render", 60_000.0),
];

/// Frames per run.
const FRAMES: usize = 150;

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut fastrand::Rng) -> f64 {
    let u = rng.f64().max(f64::MIN_POSITIVE);
    let v = rng.f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// One run of the synthetic program as a trace: on thread `main`, frames
/// (`app/frame`, complete events) around the four functions, `compact`
/// made slower by the fraction `slow`; on thread `worker`, `io/flush`
/// begin/end pairs. Thread koids differ from run to run, as real ones do.
fn run_trace(seed: u64, slow: f64) -> Trace {
    let mut rng = fastrand::Rng::with_seed(seed);
    // The run's machine state: every duration of the run a few percent
    // faster or slower.
    let offset = (0.04 * normal(&mut rng)).exp();
    let koid = 1000 + seed * 10;
    let main = ThreadRef::Inline {
        process: koid,
        thread: koid + 1,
    };
    let worker = ThreadRef::Inline {
        process: koid,
        thread: koid + 2,
    };
    let mut trace = Trace::with_provider(1, "demo", 1_000_000_000);
    for (thread, name) in [(koid + 1, "main"), (koid + 2, "worker")] {
        trace = trace.push(&KernelObject {
            koid: thread,
            object_type: OBJ_TYPE_THREAD,
            name: StringRef::Inline(name),
            args: &[Arg::new(StringRef::Inline("process"), ArgValue::Koid(koid))],
        });
    }
    let mut draw = |typical: f64| {
        // Skewed: log-normal, and one slice in 50 four times longer.
        let tail = if rng.f64() < 0.02 { 4.0 } else { 1.0 };
        (typical * offset * (0.25 * normal(&mut rng)).exp() * tail) as u64
    };
    let mut t = 1_000u64;
    for _ in 0..FRAMES {
        let frame_start = t;
        for (category, name, typical) in FUNCTIONS {
            let factor = if name == "compact" { 1.0 + slow } else { 1.0 };
            let d = draw(typical * factor);
            let kind = EventKind::DurationComplete { end: t + d };
            let e = event(
                kind,
                t,
                main,
                StringRef::Inline(category),
                StringRef::Inline(name),
                &[],
            );
            trace = trace.push(&e);
            t += d + 500;
        }
        let frame = event(
            EventKind::DurationComplete { end: t },
            frame_start,
            main,
            StringRef::Inline("app"),
            StringRef::Inline("frame"),
            &[],
        );
        // Within its frame: one flush at a time on the worker.
        let flush = draw(25_000.0).min(t - frame_start);
        let (cat, name) = (StringRef::Inline("io"), StringRef::Inline("flush"));
        trace = trace
            .push(&frame)
            .push(&event(
                EventKind::DurationBegin,
                frame_start,
                worker,
                cat,
                name,
                &[],
            ))
            .push(&event(
                EventKind::DurationEnd,
                frame_start + flush,
                worker,
                cat,
                name,
                &[],
            ));
        t += 2_000;
    }
    trace
}

/// `count` runs from seeds `first..`, written to files named `tag-N.fxt`.
fn runs(tag: &str, first: u64, count: u64, slow: f64) -> Vec<PathBuf> {
    (first..first + count)
        .map(|seed| run_trace(seed, slow).file(&format!("{tag}-{seed}.fxt")))
        .collect()
}

/// `fxt diff --base BASE... --new NEW... EXTRA...`.
fn diff(base: &[PathBuf], new: &[PathBuf], extra: &[&str]) -> std::process::Output {
    let mut args = vec!["diff", "--base"];
    args.extend(base.iter().map(|f| p(f)));
    args.push("--new");
    args.extend(new.iter().map(|f| p(f)));
    args.extend(extra);
    fxt(&args)
}

/// The `names` of `fxt diff --json`, by `category/name`.
fn names(out: &std::process::Output) -> Vec<(String, Value)> {
    let doc: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(out), stderr(out)));
    doc["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let key = format!(
                "{}/{}",
                n["category"].as_str().unwrap(),
                n["name"].as_str().unwrap()
            );
            (key, n.clone())
        })
        .collect()
}

#[test]
fn one_function_35_percent_slower_fails_the_gate_naming_only_it() {
    let base = runs("base", 1, 5, 0.0);
    let slower = runs("slower", 101, 5, 0.35);
    let svg = tmp("diff.svg");
    let out = diff(
        &base,
        &slower,
        &["--fail-above", "10", "--json", "-o", p(&svg)],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let names = names(&out);
    // Sorted: the largest significant change first.
    let (first, compact) = &names[0];
    assert_eq!(first, "work/compact");
    let change = compact["change"].as_f64().unwrap();
    assert!(change >= 0.20, "{change}");
    assert_eq!(compact["significant"], true);
    assert_eq!(compact["regression"], true);
    assert_eq!(compact["test"], "runs");
    assert_eq!(compact["base"]["count"], 5 * FRAMES as u64);
    assert_eq!(compact["new"]["runs"], 5);
    for (key, n) in &names[1..] {
        assert_eq!(n["regression"], false, "{key}: {n}");
        if key != "app/frame" {
            // The functions around it did not move; the frame that holds
            // it grew by its share (a tenth of the frame).
            assert!(n["change"].as_f64().unwrap().abs() < 0.10, "{key}: {n}");
        }
    }
    assert_eq!(names.len(), 6, "{names:?}");
    let err = stderr(&out);
    assert!(
        err.contains("work/compact +") && !err.contains("work/parse"),
        "{err}"
    );

    // The differential flame graph: `compact` is the frame that grew most,
    // drawn red; its neighbours are not.
    let svg = std::fs::read_to_string(&svg).unwrap();
    let frames = svg_frames(&svg);
    let of = |name: &str| {
        frames
            .iter()
            .find(|f| f.0 == name)
            .unwrap_or_else(|| panic!("no frame {name} in {frames:?}"))
    };
    let (_, delta, fill) = of("compact");
    assert!(*delta > 1.0, "compact grew by {delta}% of the graph");
    assert!(fill.0 == 255 && fill.1 < 200 && fill.2 < 200, "{fill:?}");
    for other in ["parse", "hash", "render"] {
        assert!(of(other).1.abs() < *delta / 3.0, "{other}: {:?}", of(other));
    }
    assert!(of("main").0 == "main" && of("worker").0 == "worker");
}

/// `(name, delta percent, fill rgb)` of every frame of an inferno
/// differential SVG.
fn svg_frames(svg: &str) -> Vec<(String, f64, (u8, u8, u8))> {
    svg.split("<g><title>")
        .skip(1)
        .map(|g| {
            let title = &g[..g.find("</title>").unwrap()];
            let open = title.rfind(" (").unwrap();
            let name = title[..open].to_owned();
            let delta = title[open..]
                .rsplit_once("; ")
                .map_or(0.0, |(_, d)| d.trim_end_matches("%)").parse().unwrap());
            let fill = &g[g.find("fill=\"rgb(").unwrap() + 10..];
            let rgb: Vec<u8> = fill[..fill.find(')').unwrap()]
                .split(',')
                .map(|c| c.trim().parse().unwrap())
                .collect();
            (name, delta, (rgb[0], rgb[1], rgb[2]))
        })
        .collect()
}

#[test]
fn five_more_unchanged_runs_pass_the_gate() {
    // Files of its own: tests run at once, and another writes `base-N`.
    let base = runs("unchanged-base", 1, 5, 0.0);
    let same = runs("same", 201, 5, 0.0);
    let out = diff(&base, &same, &["--fail-above", "10", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for (key, n) in names(&out) {
        assert_eq!(n["regression"], false, "{key}: {n}");
        assert!(n["change"].as_f64().unwrap().abs() < 0.10, "{key}: {n}");
    }
    // The table says the same, for people.
    let out = diff(&base, &same, &["--fail-above", "10"]);
    assert_eq!(out.status.code(), Some(0));
    let table = stdout(&out);
    assert!(
        table.contains("work/compact") && !table.contains("REGRESSION"),
        "{table}"
    );
}

#[test]
fn the_table_marks_the_regression() {
    let base = runs("tbase", 11, 5, 0.0);
    let slower = runs("tslower", 111, 5, 0.35);
    let out = diff(&base, &slower, &["--fail-above", "10"]);
    assert_eq!(out.status.code(), Some(1));
    let table = stdout(&out);
    let marked: Vec<&str> = table
        .lines()
        .filter(|l| l.ends_with("REGRESSION"))
        .collect();
    assert_eq!(marked.len(), 1, "{table}");
    assert!(marked[0].starts_with("work/compact "), "{table}");
}

#[test]
fn selections_keep_their_names_only() {
    let base = runs("sbase", 21, 3, 0.0);
    let new = runs("snew", 121, 3, 0.0);
    let keys = |extra: &[&str]| -> Vec<String> {
        let out = diff(&base, &new, &[&["--json"], extra].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        let mut k: Vec<String> = names(&out).into_iter().map(|(k, _)| k).collect();
        k.sort();
        k
    };
    assert_eq!(keys(&["--name", "hash"]), ["work/hash"]);
    assert_eq!(keys(&["--category", "io"]), ["io/flush"]);
    assert_eq!(keys(&["--thread", "worker"]), ["io/flush"]);
    assert_eq!(
        keys(&["--thread", "main", "--category", "app"]),
        ["app/frame"]
    );
    // Begin/end pairs are matched: one flush per frame per run.
    let out = diff(&base, &new, &["--json", "--name", "flush"]);
    assert_eq!(names(&out)[0].1["base"]["count"], 3 * FRAMES as u64);
}

#[test]
fn one_run_per_side_tests_the_slices_and_says_so() {
    let base = runs("obase", 31, 1, 0.0);
    let slower = runs("oslower", 131, 1, 0.35);
    let out = fxt(&["diff", p(&base[0]), p(&slower[0]), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names = names(&out);
    assert_eq!(names[0].0, "work/compact");
    assert_eq!(names[0].1["test"], "slices");
    assert_eq!(names[0].1["significant"], true);
    let out = fxt(&["diff", p(&base[0]), p(&slower[0])]);
    assert!(
        stdout(&out).contains("run-to-run noise is not seen"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn archives_of_several_providers_are_one_run_each() {
    // Each run: an archive of two providers' traces (`fxt merge`, as `fxt
    // record` and `fxt trace` write them).
    let archive = |tag: &str, seed: u64, slow: f64| {
        let a = run_trace(seed, slow).file(&format!("{tag}-{seed}-a.fxt"));
        let b = run_trace(seed + 500, slow).file(&format!("{tag}-{seed}-b.fxt"));
        let out = tmp(&format!("{tag}-{seed}.fxt"));
        let merged = fxt(&["merge", p(&a), p(&b), "-o", p(&out)]);
        assert!(merged.status.success(), "{}", stderr(&merged));
        out
    };
    let base: Vec<PathBuf> = (41..46).map(|s| archive("abase", s, 0.0)).collect();
    let new: Vec<PathBuf> = (141..146).map(|s| archive("anew", s, 0.35)).collect();
    let out = diff(&base, &new, &["--json", "--fail-above", "10"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let names = names(&out);
    assert_eq!(names[0].0, "work/compact");
    assert_eq!(names[0].1["base"]["count"], 2 * 5 * FRAMES as u64);
    assert_eq!(names[0].1["base"]["runs"], 5);
}

#[test]
fn bad_input_is_said_and_exits_2() {
    let base = runs("bbase", 51, 2, 0.0);
    let t = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let one = |name: &'static str, file: &str| {
        Trace::with_provider(1, "p", 1_000_000_000)
            .push(&event(
                EventKind::DurationComplete { end: 900 },
                100,
                t,
                StringRef::Inline("other"),
                StringRef::Inline(name),
                &[],
            ))
            .file(file)
    };
    let fails = |args: &[&str], says: &str| {
        let out = fxt(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
        out
    };
    // Nothing in common: the names of each side are given.
    let other = one("elsewhere", "other.fxt");
    fails(
        &["diff", p(&base[0]), p(&other)],
        "no duration name in common",
    );
    // An empty side: a trace with no durations (only its header).
    let empty = Trace::with_provider(1, "p", 1_000_000_000).file("empty.fxt");
    fails(&["diff", p(&base[0]), p(&empty)], "the new side (");
    fails(&["diff", p(&empty), p(&base[0])], "has no durations");
    // A selection that keeps nothing.
    fails(
        &["diff", p(&base[0]), p(&base[1]), "--name", "nope"],
        "with --thread/--category/--name as given",
    );
    // One slice on each side: nothing to test.
    let (a, b) = (one("x", "one-a.fxt"), one("x", "one-b.fxt"));
    fails(&["diff", p(&a), p(&b)], "enough slices");
    // A damaged run: read up to the damage, compared, and said.
    let mut bytes = std::fs::read(&base[1]).unwrap();
    bytes.truncate(bytes.len() / 2 + 3);
    let damaged = tmp("damaged.fxt");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = fails(
        &["diff", "--base", p(&base[0]), "--new", p(&damaged)],
        "damaged",
    );
    assert!(stderr(&out).contains("damaged.fxt"), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("work/compact"),
        "the report of what was read"
    );
    // A file that is not a trace, refused before it is read.
    let text = tmp("not-a-trace.txt");
    std::fs::write(&text, "name,duration\ncompact,20000\n").unwrap();
    fails(&["diff", p(&base[0]), p(&text)], "not-a-trace.txt");
    // A missing file, a lone file, a bad option value.
    fails(&["diff", p(&base[0]), "/nonexistent.fxt"], "cannot open");
    fails(&["diff", p(&base[0])], "give BASE NEW");
    fails(
        &["diff", p(&base[0]), p(&base[1]), "--fail-above=-3"],
        "--fail-above",
    );
}

#[inline(never)]
fn compute(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(7)
}

#[inline(never)]
fn decode_input(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_add(3)
}

#[inline(never)]
fn sampled_driver(x: u64) -> u64 {
    compute(x) ^ decode_input(x)
}

/// One sampled run: this test binary's modules, a `work/step` slice on
/// thread `main` holding `compute` samples (their count from the run's
/// seed, scaled by `1 + slow`) and `decode` samples (unchanged), and some
/// `compute` samples outside the slice; named by `fxt` from the modules,
/// as a program built without the symbolizer leaves them.
fn sampled_run(seed: u64, slow: f64) -> Trace {
    use fxt_format::samples::{Module, Modules, Sample, Walk};
    let pid = u64::from(std::process::id());
    let tid = 7000 + seed;
    let thread = ThreadRef::Inline {
        process: pid,
        thread: tid,
    };
    let found = fxt_symbols::process_modules(std::process::id()).unwrap();
    let list: Vec<Module> = found.modules.iter().map(|m| m.as_module()).collect();
    let mut words = Vec::new();
    Modules {
        pid,
        modules: &list,
    }
    .encode_records(0, thread, &mut words)
    .unwrap();
    // Sampled at 1 kHz: a sample stands for 1 ms of CPU time.
    fxt_format::samples::Sampling {
        pid,
        hz: 1000,
        perf_threads: 1,
        timer_threads: 0,
        samples: 0,
        merged_periods: 0,
    }
    .encode_records(&mut words)
    .unwrap();
    let mut trace = Trace::with_provider(1, "sampled", 1_000_000_000)
        .raw(&words)
        .push(&KernelObject {
            koid: tid,
            object_type: OBJ_TYPE_THREAD,
            name: StringRef::Inline("main"),
            args: &[],
        });
    let at = |f: fn(u64) -> u64, offset: u64| f as usize as u64 + offset;
    let compute_n = ((100 + seed % 5) as f64 * (1.0 + slow)) as u64;
    let stacks = [
        (compute_n, [at(compute, 1), at(sampled_driver, 4)]),
        (
            50 + (seed * 7) % 5,
            [at(decode_input, 1), at(sampled_driver, 9)],
        ),
    ];
    let mut ts = 1_000;
    for (count, frames) in stacks {
        for _ in 0..count {
            ts += 1_000;
            trace = trace.raw(
                &encode_to_vec(&Sample {
                    timestamp: ts,
                    pid,
                    tid,
                    walk: Walk::FramePointers,
                    truncated: false,
                    frames: &frames,
                })
                .unwrap(),
            );
        }
    }
    let outside = encode_to_vec(&Sample {
        timestamp: ts + 10_000,
        pid,
        tid,
        walk: Walk::FramePointers,
        truncated: false,
        frames: &[at(compute, 2)],
    })
    .unwrap();
    trace.raw(&outside).raw(&outside).push(&event(
        EventKind::DurationComplete { end: ts + 500 },
        500,
        thread,
        StringRef::Inline("work"),
        StringRef::Inline("step"),
        &[],
    ))
}

/// `fxt diff` with CPU samples on both sides: per function, samples per
/// run with the rank-sum test on the runs, `--name` keeps the samples
/// inside that slice, and `-o` draws the samples' differential flame
/// graph with the grown function red.
#[test]
fn samples_per_function_name_the_function_that_took_more_cpu() {
    let write = |tag: &str, seeds: std::ops::Range<u64>, slow: f64| -> Vec<PathBuf> {
        seeds
            .map(|s| sampled_run(s, slow).file(&format!("{tag}-{s}.fxt")))
            .collect()
    };
    let base = write("sampled-base", 1..6, 0.0);
    let new = write("sampled-new", 11..16, 0.35);
    let out = diff(&base, &new, &["--json", "--name", "step"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let functions = doc["samples"].as_array().unwrap();
    let of = |suffix: &str| {
        functions
            .iter()
            .find(|f| f["function"].as_str().unwrap().ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix} in {functions:?}"))
    };
    let compute = of("::compute");
    assert_eq!(compute["significant"], true, "{compute}");
    // Sampled CPU time (1 ms a sample), inside `step` only: the two
    // samples outside it are left out.
    assert_eq!(compute["unit"], "ns", "{compute}");
    assert_eq!(compute["base_per_run"], 102e6, "{compute}");
    // 136, 137, 139, 140 and 135: the seeds' counts scaled by 1.35, floored.
    assert_eq!(compute["new_per_run"], 137.4e6, "{compute}");
    assert_eq!(of("::decode_input")["significant"], false);
    assert_eq!(functions[0], *compute, "the significant change first");

    let svg = tmp("sampled-diff.svg");
    let out = diff(&base, &new, &["-o", p(&svg)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains("CPU samples per function"), "{table}");
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("CPU samples per thread"), "drawn from samples");
    let frames = svg_frames(&svg);
    // `compute` under `sampled_driver` grew (its two samples a run
    // outside the slice, a stack of their own, did not).
    let grew = frames
        .iter()
        .filter(|f| f.0.ends_with("::compute"))
        .any(|(_, delta, fill)| *delta > 1.0 && fill.0 == 255 && fill.1 < 200);
    assert!(grew, "{frames:?}");
}
