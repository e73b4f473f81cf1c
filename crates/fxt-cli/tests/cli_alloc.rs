//! Issue 45's "done when" on `examples/alloc.rs`, run in this test binary
//! (whose global allocator is `fxt::alloc::Sampled`), read through the
//! command line: `fxt flame --alloc` splits the bytes between the two
//! sites as they split them (3:1 within 25%), `--live` names the site
//! holding the live bytes and estimates them within 25%, the total
//! estimate is within 20% of the truth, `fxt stats` has the allocations
//! section; the same run as an ordinary user (`setpriv`, when root);
//! Perfetto's importer reads the heap profile `fxt symbolize` appends.
//!
//! The tolerances are near-certainties, not coin flips: at a sampling mean
//! of 8 KiB a 1000-byte block is sampled with probability
//! p = 1 - exp(-1000/8192) = 0.115, so `site_b`'s 16 000 blocks give about
//! 1840 samples (relative standard deviation sqrt((1-p)/(n p)) = 2.2%),
//! `site_a`'s 48 000 about 5520 (1.3%): their ratio (deviation 2.6%) is
//! off by 25% only beyond 9 deviations; the 4000 live blocks give about
//! 460 samples (4.4%: 25% is 5.7 deviations, a chance below 1e-8); the
//! total's deviation is 1.1% (20% is 18).

mod cli_support;
use cli_support::*;

#[allow(dead_code)]
#[path = "../../../examples/alloc.rs"]
mod alloc_example;

use std::path::Path;

/// The sampling mean of these runs.
const MEAN: u64 = 8192;

/// Runs the example's workload in a session sampling at [`MEAN`] into
/// `path`.
fn record(path: &Path) {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut kept = Vec::with_capacity(alloc_example::B_BLOCKS / alloc_example::KEEP_EVERY);
    // The default buffer: records dropped at the end would count against
    // `site_b`, which runs last.
    let config = fxt::Config::new().alloc_sample_bytes(MEAN).output(path);
    let session = fxt::start(config).unwrap();
    alloc_example::run(&mut kept);
    let stats = session.finish().unwrap();
    // 64 MB at 8 KiB is some 7 400 samples (p = 0.115 of 64 000 blocks),
    // all at the session's mean: the run is a burst of well under a
    // second, which the cap's credit (16 384 samples at 8 KiB) covers
    // however fast the build allocates. Without the credit a release
    // build allocates fast enough for the cap to raise the mean (2 429
    // samples in one run).
    assert!(stats.alloc_samples > 6_000, "{stats:?}");
    assert_eq!(stats.alloc_untracked, 0, "{stats:?}");
    // Drops would bias the split (records dropped at the end would be
    // `site_b`'s).
    assert!(
        stats.records_dropped == 0 && !stats.limit_reached,
        "records dropped: {stats:?}"
    );
    drop(kept);
}

/// Bytes of the folded lines whose stack names `function`, and of all.
fn bytes_in(folded: &str, function: &str) -> (f64, f64) {
    let mut inside = 0.0;
    let mut all = 0.0;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').expect("`stack BYTES`");
        let n: f64 = n.parse().expect("a byte count");
        all += n;
        if stack.split(';').any(|f| f.contains(function)) {
            inside += n;
        }
    }
    (inside, all)
}

fn folded(trace: &Path, extra: &[&str]) -> String {
    let mut args = vec!["flame", "--alloc", "--folded"];
    args.extend_from_slice(extra);
    args.push(p(trace));
    let out = fxt(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// The "done when" checks on a trace of the workload: the split and the
/// total, and with `full` the live bytes and `--inside`.
fn check(trace: &Path, full: bool) {
    let all = folded(trace, &[]);
    let (a, total) = bytes_in(&all, "site_a");
    let (b, _) = bytes_in(&all, "site_b");
    let truth = (alloc_example::A_BYTES + alloc_example::B_BYTES) as f64;
    let report = format!("site_a {a:.0}, site_b {b:.0}, total {total:.0} (truth {truth})");
    let ratio = a / b;
    assert!((2.25..=3.75).contains(&ratio), "split {ratio:.3}: {report}");
    assert!(
        (total - truth).abs() <= 0.2 * truth,
        "total off by more than 20%: {report}"
    );
    // Every line but fxt's own allocations goes through the helper.
    let (helper, _) = bytes_in(&all, "make_block");
    assert!(helper >= 0.9 * total, "{helper:.0}: {report}");
    assert!(
        !all.contains("fxt_runtime::alloc"),
        "the hook's frames are left out"
    );

    if !full {
        return;
    }
    let live = folded(trace, &["--live"]);
    let (b_live, live_total) = bytes_in(&live, "site_b");
    let (a_live, _) = bytes_in(&live, "site_a");
    let want = alloc_example::LIVE_BYTES as f64;
    let report =
        format!("live: site_b {b_live:.0}, site_a {a_live:.0}, all {live_total:.0}, truth {want}");
    assert!((b_live - want).abs() <= 0.25 * want, "{report}");
    assert!(a_live < 0.05 * want, "{report}");

    // --inside: the slice each site ran in.
    let in_a = folded(trace, &["--inside", "site a"]);
    let (a_in, in_total) = bytes_in(&in_a, "site_a");
    assert!(
        a_in > 0.0 && a_in >= 0.95 * in_total,
        "{a_in} of {in_total}"
    );
    assert_eq!(bytes_in(&in_a, "site_b").0, 0.0);
}

#[test]
fn flame_alloc_splits_the_bytes_as_the_sites_do() {
    let trace = tmp("alloc-done-when.fxt");
    record(&trace);
    check(&trace, true);

    // fxt stats: the allocations section names the sites through the
    // helper, most bytes first.
    let out = fxt(&["stats", "--json", p(&trace)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let allocations = &doc["allocations"];
    let sites = allocations["top_allocated"].as_array().expect("sites");
    let first = sites[0]["site"].as_str().unwrap();
    assert!(
        first.contains("make_block") && first.contains("site_a"),
        "{allocations}"
    );
    export_checked_with_duckdb(&trace);
    diff_compares_the_bytes_per_name(&trace);
    let live = allocations["live_bytes"].as_f64().unwrap();
    let want = alloc_example::LIVE_BYTES as f64;
    assert!(
        // The session's other live blocks are a few kilobytes.
        (live - want).abs() <= 0.3 * want,
        "{allocations}"
    );
}

/// Perfetto's own importer (trace_processor_shell) reads the heap profile
/// that `fxt symbolize` appends, and that an archive of `fxt merge` carries
/// (`append_names`, as `fxt record` and `fxt trace` archives):
/// `heap_profile_allocation` rows whose bytes split between the two
/// sites' callsites as the sites split them (3:1 within 25%), allocated
/// bytes in all within 1% of `fxt flame --alloc`'s total (the same
/// estimates, summed per callstack and rounded), frees recorded (negative
/// rows) so that the unreleased bytes are `--alloc --live`'s within 1%,
/// the heap counter track (derived from the records) ending at that
/// estimate too, and no import error.
#[test]
fn perfetto_shows_the_heap_profile() {
    let Some(shell) = cli_support::perfetto::trace_processor() else {
        eprintln!("skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let trace = tmp("alloc-perfetto.fxt");
    record(&trace);
    let (_, flame_total) = bytes_in(&folded(&trace, &[]), "");
    let (_, live_total) = bytes_in(&folded(&trace, &["--live"]), "");
    let merged = tmp("alloc-perfetto-merged.fxt");
    let out = fxt(&["merge", "-o", p(&merged), p(&trace)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = fxt(&["symbolize", p(&trace)]);
    assert!(out.status.success(), "{}", stderr(&out));
    for path in [&trace, &merged] {
        check_heap_profile(&shell, path, (flame_total, live_total));
    }
}

/// The heap profile of `trace` as trace_processor_shell reads it, against
/// the bytes `fxt flame --alloc` and `--alloc --live` give.
fn check_heap_profile(shell: &Path, trace: &Path, (flame_total, live_total): (f64, f64)) {
    // Each allocation row with the callsites from it to the root.
    let site = |name: &str| {
        format!(
            "(select coalesce(sum(size), 0) from (select distinct up.id, up.size from up \
              join stack_profile_callsite c on c.id = up.cs \
              join stack_profile_frame f on f.id = c.frame_id \
              where f.name like '%::{name}'))"
        )
    };
    let query = format!(
        "with recursive up(id, size, cs) as ( \
           select id, size, callsite_id from heap_profile_allocation where size > 0 \
           union all select up.id, up.size, c.parent_id from up \
           join stack_profile_callsite c on c.id = up.cs where c.parent_id is not null) \
         select (select count(*) from heap_profile_allocation where size > 0), \
         (select count(*) from heap_profile_allocation where size < 0), \
         (select sum(size) from heap_profile_allocation where size > 0), {}, {}, \
         (select sum(size) from heap_profile_allocation), \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0), \
         (select count(*) from counter c join counter_track t on c.track_id = t.id \
           where t.name like 'heap:live_bytes%'), \
         (select cast(c.value as int) from counter c join counter_track t on c.track_id = t.id \
           where t.name like 'heap:live_bytes%' order by c.ts desc, c.id desc limit 1);",
        site("site_a"),
        site("site_b"),
    );
    let row = cli_support::perfetto::perfetto_row(shell, trace, &query);
    let report = format!(
        "{}: allocation rows, free rows, bytes, site_a, site_b, unreleased, import errors, \
         heap counter values, the last: {row:?}; flame --alloc total {flame_total:.0}, \
         --live {live_total:.0}",
        trace.display()
    );
    assert!(row[0] > 0 && row[1] > 0, "{report}");
    let (total, a, b) = (row[2] as f64, row[3] as f64, row[4] as f64);
    assert!(
        (total - flame_total).abs() <= 0.01 * flame_total,
        "{report}"
    );
    assert!((2.25..=3.75).contains(&(a / b)), "{report}");
    assert!(a + b >= 0.9 * total, "{report}");
    // Allocated less freed: what is live at the end, as --live pairs them.
    let unreleased = row[5] as f64;
    assert!(
        (unreleased - live_total).abs() <= 0.01 * live_total,
        "{report}"
    );
    assert_eq!(row[6], 0, "{report}");
    // The heap counter derived from the records (`fxt symbolize`, the
    // archive): a value after each, the last what --live estimates.
    assert!(row[7] >= row[0] + row[1], "{report}");
    let last = row[8] as f64;
    assert!((last - live_total).abs() <= 0.01 * live_total, "{report}");
}

/// `fxt flame --live` without `--alloc`, and `--inside` alone, are usage
/// errors (exit status 2).
#[test]
fn flags_that_need_alloc_are_refused() {
    let trace = tmp("alloc-flags.fxt");
    std::fs::write(&trace, golden().bytes()).unwrap();
    for args in [
        vec!["flame", "--live", "--folded", p(&trace)],
        vec!["flame", "--inside", "x", "--folded", p(&trace)],
        vec!["flame", "--alloc", "--samples", "--folded", p(&trace)],
    ] {
        let out = fxt(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

/// `fxt record --alloc-sample` and `fxt trace start --alloc-sample`
/// refuse a mean they cannot use before doing anything (exit status 2).
#[test]
fn record_and_trace_start_refuse_a_bad_mean() {
    for bad in ["2G", "lots", "12Q"] {
        let out = fxt(&["record", "--alloc-sample", bad, "--", "true"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("--alloc-sample"), "{}", stderr(&out));
        let out = fxt(&["trace", "start", "--alloc-sample", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
    }
}

/// The environment variable that makes [`child_records_when_asked`] the
/// child that records.
const CHILD: &str = "FXT_TEST_ALLOC_CHILD_OUT";

/// As a child (the variable set), records the workload into the path the
/// variable gives; otherwise does nothing.
#[test]
fn child_records_when_asked() {
    if let Some(out) = std::env::var_os(CHILD) {
        record(Path::new(&out));
    }
}

/// The environment variable that makes [`child_runs_the_example`] run
/// the example's `main` (its session from the environment).
const EXAMPLE: &str = "FXT_TEST_ALLOC_EXAMPLE";

/// As a child (the variable set), runs `examples/alloc.rs`'s `main` on a
/// thread of its own (whose stack is as deep as a program's main thread,
/// where the test harness's is deeper); otherwise does nothing.
#[test]
fn child_runs_the_example() {
    if std::env::var_os(EXAMPLE).is_some() {
        std::thread::spawn(|| alloc_example::main().map_err(|e| e.to_string()))
            .join()
            .unwrap()
            .unwrap();
    }
}

/// `fxt record --alloc-sample 4K` of the example (this binary running its
/// `main`), with the recorder's default buffer: no record is dropped (the
/// stacks of about 16 000 sampled allocations, some 50 MB of records in a
/// crash-safe file that grows as the allocation hook fills it), and the
/// archive holds the split and the total.
#[test]
fn record_at_a_small_mean_drops_nothing() {
    let dir = tmp("alloc-record");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("rel.fxt");
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(["record", "--alloc-sample", "4K", "-o", p(&trace), "--"])
        .arg(&exe)
        .args(["--exact", "child_runs_the_example", "--nocapture"])
        .env(EXAMPLE, "1")
        .current_dir(&dir)
        .output()
        .expect("fxt record runs");
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("(0 dropped records)") && err.contains(", 0 dropped ->"),
        "records dropped: {err}"
    );
    check(&trace, false);
}

/// The same program run as an ordinary user (nobody, via `setpriv`; needs
/// root to switch, skipped without except under `CI`).
#[test]
fn works_as_an_ordinary_user() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run this test as root (to act as another user with setpriv)"
        );
        println!("skipped: needs root (to act as another user with setpriv)");
        return;
    }
    let dir = tmp("alloc-nobody");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    // The test binary may sit where another user cannot read it.
    let exe = dir.join("program");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let trace = dir.join("nobody.fxt");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["--exact", "child_records_when_asked", "--test-threads=1"])
        .env(CHILD, &trace)
        .output()
        .expect("run the child (setpriv is in util-linux)");
    assert!(out.status.success(), "{out:?}");
    check(&trace, false);
}

/// `fxt export parquet`'s `allocations` table, read with DuckDB (PyPI): one
/// row per record, signed integers, the bytes split between the sites as
/// the flame graph splits them, frees paired with allocations by address.
fn export_checked_with_duckdb(trace: &Path) {
    let dir = tmp("alloc-export");
    let _ = std::fs::remove_dir_all(&dir);
    let out = fxt(&["export", "parquet", p(trace), "-o", p(&dir), "--host", "h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let python = python_with(&[("duckdb", "duckdb==2.0.1")]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_query.py");
    let queries = [
        "select kind, count(*), sum(bytes) from {allocations} group by kind order by kind",
        "select sum(bytes) filter (where array_to_string(frames, ';') like '%site_a%'), \
                sum(bytes) filter (where array_to_string(frames, ';') like '%site_b%') \
         from {allocations} where kind = 'alloc'",
        "select typeof(address), typeof(size), typeof(bytes), typeof(pid), min(mean), max(mean), sum(untracked) \
         from {allocations} group by all",
        "select count(*) from {allocations} f join {allocations} a \
           on f.kind = 'free' and a.kind = 'alloc' and a.address = f.address and a.ts <= f.ts",
    ];
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(&dir)
        .args(queries)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "duckdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let int = |v: &serde_json::Value| -> f64 {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
            .unwrap_or_else(|| panic!("a number: {v}"))
    };
    let kinds = r[0].as_array().unwrap();
    assert_eq!(kinds.len(), 2, "{r}");
    assert_eq!(kinds[0][0], "alloc");
    assert_eq!(kinds[1][0], "free");
    assert_eq!(int(&kinds[1][2]), 0.0, "frees stand for no bytes");
    let (a, b) = (int(&r[1][0][0]), int(&r[1][0][1]));
    assert!((2.25..=3.75).contains(&(a / b)), "{a} {b}");
    let types = &r[2][0];
    assert_eq!(types[0], "BIGINT", "{r}");
    assert_eq!(types[1], "BIGINT");
    assert_eq!(types[2], "BIGINT");
    assert_eq!(types[3], "BIGINT");
    // Each sample's mean: the session's (the run is within the cap's
    // credit, see `record`).
    let (least, most) = (int(&types[4]), int(&types[5]));
    assert_eq!((least, most), (MEAN as f64, MEAN as f64), "{r}");
    assert_eq!(int(&types[6]), 0.0);
    // Every free follows an allocation of its address.
    let frees = int(&kinds[1][1]);
    assert!(int(&r[3][0][0]) >= frees, "{r}");
}

/// `fxt diff`: the estimated bytes allocated per slice name, base against
/// new (here the same run twice on both sides: no change, 3:1 between
/// the sites' slices).
fn diff_compares_the_bytes_per_name(trace: &Path) {
    let t = p(trace);
    let out = fxt(&["diff", "--json", "--base", t, t, "--new", t, t]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = doc["allocations"].as_array().expect("allocations");
    let by = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {rows:?}"))
    };
    let (a, b) = (by("site a"), by("site b"));
    assert_eq!(a["change"].as_f64(), Some(0.0));
    let ratio = a["base_per_run"].as_f64().unwrap() / b["base_per_run"].as_f64().unwrap();
    assert!((2.25..=3.75).contains(&ratio), "{ratio}: {rows:?}");
}
