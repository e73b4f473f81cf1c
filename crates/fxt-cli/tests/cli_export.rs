//! `fxt export parquet`: the tables, read back with DuckDB (PyPI, an engine
//! we did not write), agree exactly with `fxt stats` and with what our
//! decoder reads: counts, sums of durations, depths and parents, arguments,
//! pids; for the quickstart example's trace, a deep recursion of the
//! engine, a hand-built archive of several processes with scheduling
//! records, two hosts exporting into one folder, and a damaged trace (which
//! exports what `fxt recover` keeps). The schema uses only types Spark and
//! ClickHouse accept, and every row group's statistics (which fxt's own
//! page writer computes, and DuckDB prunes by) hold its values: both read
//! from the Parquet metadata with the Apache reader.
//!
//! Python: `$FXT_PYTHON`, else `target/pyfxt-venv` (see
//! `cli_support::python_with`), with `duckdb` pinned below.

#[allow(dead_code)]
#[path = "../../../examples/quickstart.rs"]
mod quickstart;

mod cli_support;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use cli_support::duckdb::query as duckdb;
use cli_support::*;
use fxt_format::decode::{
    Arg as DArg, ArgValue as DValue, EventKind as DKind, Record, SliceReader, Thread,
};
use serde_json::{json, Value};

/// Nanoseconds as the tables hold them (signed).
fn ticks_to_ns(ticks: u64, tps: u64) -> i64 {
    i64::try_from(fxt_format::time::ticks_to_ns(ticks, tps)).unwrap()
}

/// One test at a time touches the engine's session and the environment.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fresh, empty folder.
fn folder(name: &str) -> PathBuf {
    let dir = tmp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `fxt export parquet FILES -o DIR --host HOST` on one thread (so
/// one part per call, which the tests of parts count on); returns stderr.
fn export(files: &[&Path], dir: &Path, host: &str) -> String {
    export_on(1, files, dir, host)
}

/// [`export`] on `threads` threads (`FXT_THREADS`).
fn export_on(threads: usize, files: &[&Path], dir: &Path, host: &str) -> String {
    let mut args = vec!["export", "parquet"];
    args.extend(files.iter().map(|f| p(f)));
    args.extend(["-o", p(dir), "--host", host]);
    let out = fxt_threads(threads, &args);
    let err = stderr(&out);
    assert!(out.status.success(), "fxt {args:?} failed: {err}");
    err
}

/// `fxt stats --json FILE`.
fn stats(file: &Path) -> Value {
    let out = fxt(&["stats", "--json", p(file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// The text form `fxt export` gives an argument (docs/guide/query.md, "Arguments").
fn text(v: &DValue) -> Value {
    match v {
        DValue::Null | DValue::Unknown { .. } => Value::Null,
        DValue::I32(x) => json!(x.to_string()),
        DValue::U32(x) => json!(x.to_string()),
        DValue::I64(x) => json!(x.to_string()),
        DValue::U64(x) | DValue::Koid(x) => json!(x.to_string()),
        DValue::F64(x) => json!(x.to_string()),
        DValue::Str(s) => json!(s.to_string()),
        DValue::Pointer(x) => json!(format!("{x:#x}")),
        DValue::Bool(b) => json!(b.to_string()),
        DValue::Blob(b) => json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    }
}

/// A slice as the decoder gives it, in the order slices end.
struct Slice {
    thread: (Option<u32>, Thread),
    pid: u64,
    tid: u64,
    category: String,
    name: String,
    ts: i64,
    end: i64,
    args: Vec<DArg>,
}

/// Every duration slice of a clean trace (complete events, begin/end
/// pairs matched per thread), in the order they end in the file.
fn decoded_slices(bytes: &[u8]) -> Vec<Slice> {
    let mut out = Vec::new();
    let mut open: HashMap<(Option<u32>, Thread), Vec<Slice>> = HashMap::new();
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next() {
        let Ok(Record::Event(e)) = item else { continue };
        let tps = reader.ticks_per_second().unwrap_or(1_000_000_000);
        let Thread::Known { process, thread } = e.thread else {
            continue;
        };
        let key = (reader.provider_id(), e.thread);
        let slice = |end: i64, args: Vec<DArg>| Slice {
            thread: key,
            pid: process,
            tid: thread,
            category: e.category.to_string(),
            name: e.name.to_string(),
            ts: ticks_to_ns(e.timestamp, tps),
            end,
            args,
        };
        match e.kind {
            DKind::DurationComplete { end } => {
                out.push(slice(ticks_to_ns(end, tps), e.args.clone()))
            }
            DKind::DurationBegin => open.entry(key).or_default().push(slice(0, e.args.clone())),
            DKind::DurationEnd => {
                let mut s = open.get_mut(&key).and_then(Vec::pop).expect("a begin");
                s.end = ticks_to_ns(e.timestamp, tps);
                s.args.extend(e.args.iter().cloned());
                out.push(s);
            }
            _ => {}
        }
    }
    out
}

/// Depth and parent (index) of every slice, by sorting each thread's
/// slices by begin (outermost first: later end, then later record) and
/// walking a stack: an algorithm other than the export's.
fn nesting(slices: &[Slice]) -> Vec<(i64, Option<usize>)> {
    let mut by_thread: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, s) in slices.iter().enumerate() {
        by_thread
            .entry(format!("{:?}", s.thread))
            .or_default()
            .push(i);
    }
    let mut out = vec![(0, None); slices.len()];
    for mut ids in by_thread.into_values() {
        ids.sort_by_key(|&i| (slices[i].ts, std::cmp::Reverse((slices[i].end, i))));
        let mut stack: Vec<usize> = Vec::new();
        for i in ids {
            while let Some(&top) = stack.last() {
                if slices[top].ts <= slices[i].ts && slices[i].end <= slices[top].end {
                    break;
                }
                stack.pop();
            }
            out[i] = (stack.len() as i64, stack.last().copied());
            stack.push(i);
        }
    }
    out
}

/// The slice rows the export must write for a clean trace, as DuckDB
/// returns them for [`SLICE_ROWS`].
fn expected_slice_rows(bytes: &[u8]) -> Vec<Value> {
    let slices = decoded_slices(bytes);
    let places = nesting(&slices);
    slices
        .iter()
        .zip(places)
        .enumerate()
        .map(|(id, (s, (depth, parent)))| {
            let mut keys = Vec::new();
            let mut values = Vec::new();
            for a in &s.args {
                let k = json!(a.name.to_string());
                if !keys.contains(&k) {
                    keys.push(k);
                    values.push(text(&a.value));
                }
            }
            json!([
                id,
                s.pid,
                s.tid,
                s.category,
                s.name,
                s.ts,
                s.end - s.ts,
                depth,
                parent,
                keys,
                values
            ])
        })
        .collect()
}

const SLICE_ROWS: &str = "select id, pid, tid, category, name, ts, dur, depth, parent, \
     map_keys(args), map_values(args) from {slices} where kind <> 'async' order by id";

/// Count and total duration per category and name, from `fxt stats`.
fn stats_durations(stats: &Value) -> Vec<Value> {
    let mut v: Vec<Value> = stats["durations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| json!([d["category"], d["name"], d["count"], d["total_ns"]]))
        .collect();
    v.sort_by_key(|x| x.to_string());
    v
}

const DURATIONS: &str = "select category, name, count(*), sum(dur)::BIGINT from {slices} \
     where kind <> 'async' group by all";

fn sorted(v: &Value) -> Vec<Value> {
    let mut v = v.as_array().unwrap().clone();
    v.sort_by_key(|x| x.to_string());
    v
}

/// Runs the quickstart example; returns its trace file.
fn quickstart_trace(path: &Path) {
    // Edition 2021: safe; the tests of this binary that read the
    // environment are serialized.
    std::env::set_var("FXT_OUTPUT", path);
    quickstart::main();
    std::env::remove_var("FXT_OUTPUT");
}

#[test]
fn quickstart_tables_agree_with_stats_and_the_decoder() {
    let dir = folder("export-quickstart");
    let trace = dir.join("quickstart.fxt");
    {
        let _g = serial();
        quickstart_trace(&trace);
    }
    let bytes = std::fs::read(&trace).unwrap();
    let out = dir.join("tables");
    let summary = export(&[&trace], &out, "q");
    assert!(summary.contains("fxt: exported 1 input"), "{summary}");
    let stats = stats(&trace);
    let r = duckdb(
        &out,
        &[
            SLICE_ROWS,
            DURATIONS,
            "select category, name, count(*) from {instants} group by all",
            "select count(*), sum(int_value)::BIGINT from {counters}",
            "select pid, tid, thread from {threads}",
            "select pid, process from {processes}",
            "select distinct trace, host from {slices}",
        ],
    );
    assert_eq!(r[0].as_array().unwrap(), &expected_slice_rows(&bytes));
    assert_eq!(sorted(&r[1]), stats_durations(&stats));
    assert!(r[0].as_array().unwrap().len() > 40_000);

    // Instants and counters, from the decoder.
    let mut instants: BTreeMap<(String, String), u64> = BTreeMap::new();
    let (mut counter_rows, mut counter_sum) = (0u64, 0i64);
    let mut threads = std::collections::BTreeSet::new();
    for record in SliceReader::new(&bytes).flatten() {
        if let Record::Event(e) = record {
            if let Thread::Known { process, thread } = e.thread {
                threads.insert((process, thread));
            }
            match e.kind {
                DKind::Instant => {
                    *instants
                        .entry((e.category.to_string(), e.name.to_string()))
                        .or_default() += 1
                }
                DKind::Counter { .. } => {
                    for a in &e.args {
                        counter_rows += 1;
                        if let DValue::U32(v) = a.value {
                            counter_sum += i64::from(v);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let expected: Vec<Value> = instants
        .iter()
        .map(|((c, n), k)| json!([c, n, k]))
        .collect();
    assert_eq!(sorted(&r[2]), expected);
    assert_eq!(r[3], json!([[counter_rows, counter_sum]]));
    // Threads: every thread of the stats, with its name and pid.
    let mut want: Vec<Value> = stats["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["process"], t["thread"], t["name"]]))
        .collect();
    want.sort_by_key(|x| x.to_string());
    assert_eq!(sorted(&r[4]), want);
    assert_eq!(
        threads.len(),
        want.len(),
        "every thread of an event is in the table"
    );
    let processes: Vec<Value> = stats["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| json!([p["process"], p["name"]]))
        .collect();
    assert_eq!(r[5].as_array().unwrap(), &processes);
    assert_eq!(r[5][0][0], std::process::id());
    assert_eq!(r[6], json!([[p(&trace), "q"]]));
}

/// A recursion `depth` deep: scopes (complete events, written when they
/// end, children first) and begin/end pairs on alternate levels.
fn recurse(depth: u32) {
    if depth == 0 {
        return;
    }
    if depth.is_multiple_of(2) {
        let _s = fxt::trace_duration_scope!("deep", "scope", "level" => depth);
        recurse(depth - 1);
    } else {
        fxt::trace_duration_begin!("deep", "pair", "level" => depth);
        recurse(depth - 1);
        fxt::trace_duration_end!("deep", "pair", "back" => true);
    }
}

#[test]
fn deep_recursion_nests_exactly() {
    const DEPTH: u32 = 300;
    const REPS: u64 = 250; // 75,000 slices: more than one block of the nesting pass
    let bytes = {
        let _g = serial();
        engine_trace(fxt::Config::new().buffer_size(64 << 20), || {
            for _ in 0..REPS {
                recurse(DEPTH);
            }
        })
    };
    let dir = folder("export-deep");
    let trace = dir.join("deep.fxt");
    std::fs::write(&trace, &bytes).unwrap();
    let out = dir.join("tables");
    export(&[&trace], &out, "deep");
    let r = duckdb(
        &out,
        &[
            SLICE_ROWS,
            DURATIONS,
            "select depth, count(*) from {slices} group by depth order by depth",
            "select count(*) from {slices} c join {slices} p on c.parent = p.id \
             where p.depth <> c.depth - 1 or p.ts > c.ts or p.ts + p.dur < c.ts + c.dur",
            "select count(*) from {slices} where (parent is null) <> (depth = 0)",
        ],
    );
    assert_eq!(r[0].as_array().unwrap(), &expected_slice_rows(&bytes));
    assert_eq!(sorted(&r[1]), stats_durations(&stats(&trace)));
    let per_depth: Vec<Value> = (0..DEPTH).map(|d| json!([d, REPS])).collect();
    assert_eq!(r[2].as_array().unwrap(), &per_depth);
    assert_eq!(r[3], json!([[0]]));
    assert_eq!(r[4], json!([[0]]));
}

fn kobj(koid: u64, object_type: u8, name: &str, process: Option<u64>) -> Vec<u64> {
    let args = [Arg::new(
        StringRef::Inline("process"),
        ArgValue::Koid(process.unwrap_or(0)),
    )];
    encode_to_vec(&KernelObject {
        koid,
        object_type,
        name: StringRef::Inline(name),
        args: if process.is_some() { &args } else { &[] },
    })
    .unwrap()
}

fn ev<'a>(
    kind: EventKind,
    ts: u64,
    pid: u64,
    tid: u64,
    name: &'a str,
    args: &'a [Arg<'a>],
) -> Event<'a> {
    event(
        kind,
        ts,
        ThreadRef::Inline {
            process: pid,
            thread: tid,
        },
        StringRef::Inline("cat"),
        StringRef::Inline(name),
        args,
    )
}

fn switch(ts: u64, cpu: u16, out: u64, state: ThreadState, inc: u64) -> ContextSwitch<'static> {
    ContextSwitch {
        timestamp: ts,
        cpu,
        outgoing_state: state,
        outgoing_thread: out,
        incoming_thread: inc,
        args: &[],
    }
}

/// Two processes' providers (one at 1 tick = 1 µs) and a scheduler's.
fn archive() -> Trace {
    let n = [Arg::new(StringRef::Inline("n"), ArgValue::I64(-7))];
    let f = [
        Arg::new(StringRef::Inline("x"), ArgValue::F64(2.5)),
        Arg::new(
            StringRef::Inline("s"),
            ArgValue::Str(StringRef::Inline("hi")),
        ),
    ];
    let series = [
        Arg::new(StringRef::Inline("used"), ArgValue::U64(40)),
        Arg::new(StringRef::Inline("ratio"), ArgValue::F64(0.25)),
    ];
    Trace::with_provider(1, "alpha", 1_000_000)
        .raw(&kobj(10, OBJ_TYPE_PROCESS, "alpha", None))
        .raw(&kobj(11, OBJ_TYPE_THREAD, "a-main", Some(10)))
        .raw(&kobj(12, OBJ_TYPE_THREAD, "a-worker", Some(10)))
        .push(&ev(EventKind::DurationBegin, 150, 10, 12, "pair", &n))
        .push(&ev(
            EventKind::DurationComplete { end: 200 },
            100,
            10,
            11,
            "outer",
            &f,
        ))
        .push(&ev(EventKind::DurationEnd, 180, 10, 12, "pair", &[]))
        .push(&ev(EventKind::Instant, 120, 10, 11, "tick", &n))
        .push(&ev(
            EventKind::Counter { id: 3 },
            130,
            10,
            12,
            "mem",
            &series,
        ))
        .push(&ProviderInfo {
            provider_id: 2,
            name: "beta",
        })
        .raw(&kobj(20, OBJ_TYPE_PROCESS, "beta", None))
        .raw(&kobj(21, OBJ_TYPE_THREAD, "b-main", Some(20)))
        .push(&ev(EventKind::AsyncBegin { id: 5 }, 290, 20, 21, "req", &n))
        .push(&ev(
            EventKind::DurationComplete { end: 320 },
            310,
            20,
            21,
            "inner",
            &[],
        ))
        .push(&ev(
            EventKind::DurationComplete { end: 400 },
            300,
            20,
            21,
            "outer",
            &[],
        ))
        .push(&ev(EventKind::FlowBegin { id: 9 }, 305, 20, 21, "msg", &[]))
        .push(&ev(EventKind::AsyncEnd { id: 5 }, 450, 20, 22, "req", &[]))
        .push(&ProviderInfo {
            provider_id: 3,
            name: "kernel scheduler",
        })
        .raw(&kobj(22, OBJ_TYPE_THREAD, "b-helper", Some(20)))
        .push(&switch(1000, 0, 11, ThreadState::Blocked, 21))
        .push(&switch(1100, 1, 12, ThreadState::Running, 22))
        .push(&ThreadWakeup {
            timestamp: 1200,
            cpu: 0,
            waking_thread: 11,
            args: &[],
        })
        .push(&switch(1300, 0, 21, ThreadState::Blocked, 11))
}

#[test]
fn archive_with_scheduling_exports_every_table() {
    let dir = folder("export-archive");
    let trace = archive().file("export-archive.fxt");
    let bytes = std::fs::read(&trace).unwrap();
    export(&[&trace], &dir, "h");
    let stats = stats(&trace);
    let r = duckdb(
        &dir,
        &[
            SLICE_ROWS,
            DURATIONS,
            "select ts, cpu, out_pid, out_tid, out_thread, out_state, in_pid, in_tid, in_thread \
             from {sched} order by ts",
            "select ts, cpu, pid, tid, thread from {wakeups}",
            "select pid, process from {processes} order by pid",
            "select pid, process, tid, thread from {threads} order by tid",
            "select pid, tid, name, ts, dur, depth, async_id, args from {slices} where kind = 'async'",
            "select pid, tid, counter_id, series, value, int_value from {counters} order by series",
            "select tid, ts, flow_id, phase from {flows}",
            "select name, ts, args_int from {instants}",
            "select out_tid, count(*), count(*) filter (where out_state = 'running') \
             from {sched} group by out_tid",
            "select tid, count(*) from {wakeups} group by tid",
            "select name, args_float, args_int from {slices} where name = 'outer' and pid = 10",
        ],
    );
    assert_eq!(r[0].as_array().unwrap(), &expected_slice_rows(&bytes));
    assert_eq!(sorted(&r[1]), stats_durations(&stats));
    assert_eq!(
        r[2],
        json!([
            [1000, 0, 10, 11, "a-main", "blocked", 20, 21, "b-main"],
            [1100, 1, 10, 12, "a-worker", "running", 20, 22, "b-helper"],
            [1300, 0, 20, 21, "b-main", "blocked", 10, 11, "a-main"]
        ])
    );
    assert_eq!(r[3], json!([[1200, 0, 10, 11, "a-main"]]));
    assert_eq!(r[4], json!([[10, "alpha"], [20, "beta"]]));
    assert_eq!(
        r[5],
        json!([
            [10, "alpha", 11, "a-main"],
            [10, "alpha", 12, "a-worker"],
            [20, "beta", 21, "b-main"],
            [20, "beta", 22, "b-helper"]
        ])
    );
    // The async span runs from its begin on thread 21 to its end on 22
    // (1 tick = 1 µs in the first provider only).
    assert_eq!(r[6], json!([[20, 21, "req", 290, 160, 0, 5, {"n": "-7"}]]));
    assert_eq!(
        r[7],
        json!([
            [10, 12, 3, "ratio", 0.25, null],
            [10, 12, 3, "used", 40.0, 40]
        ])
    );
    assert_eq!(r[8], json!([[21, 305, 9, "begin"]]));
    assert_eq!(r[9], json!([["tick", 120_000, {"n": -7}]]));
    // Scheduling per thread, as `fxt stats` counts it.
    let mut want_switches: Vec<Value> = Vec::new();
    let mut want_wakeups: Vec<Value> = Vec::new();
    for t in stats["scheduling"].as_array().unwrap() {
        if t["context_switches"] != 0 {
            want_switches.push(json!([t["thread"], t["context_switches"], t["preempted"]]));
        }
        if t["wakeups"] != 0 {
            want_wakeups.push(json!([t["thread"], t["wakeups"]]));
        }
    }
    want_switches.sort_by_key(|x| x.to_string());
    want_wakeups.sort_by_key(|x| x.to_string());
    assert_eq!(sorted(&r[10]), want_switches);
    assert_eq!(sorted(&r[11]), want_wakeups);
    assert_eq!(r[12], json!([["outer", {"x": 2.5}, {}]]));
}

#[test]
fn two_hosts_share_one_folder() {
    let dir = folder("export-hosts");
    let trace = archive().file("export-hosts.fxt");
    let copies = [
        archive().file("export-hosts-2.fxt"),
        archive().file("export-hosts-3.fxt"),
    ];
    export(&[&trace], &dir, "alpha");
    export(&[&trace], &dir, "beta");
    // A second export from one host adds a part; it overwrites nothing.
    export(&[&copies[0], &copies[1]], &dir, "alpha");
    for table in [
        "slices",
        "instants",
        "counters",
        "flows",
        "threads",
        "processes",
        "sched",
        "wakeups",
    ] {
        let mut files: Vec<String> = std::fs::read_dir(dir.join(table))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(
            files,
            [
                "part-alpha-0.parquet",
                "part-alpha-1.parquet",
                "part-beta-0.parquet"
            ],
            "{table}"
        );
    }
    let r = duckdb(
        &dir,
        &[
            "select host, count(*), sum(dur)::BIGINT from {slices} group by host order by host",
            "select host, count(*) from {sched} group by host order by host",
        ],
    );
    // Per copy of the archive: 4 thread slices and one async span.
    let one_copy = duckdb(
        &dir,
        &["select count(*), sum(dur)::BIGINT from {slices} where host = 'beta'"],
    );
    let (n, total) = (
        one_copy[0][0][0].as_i64().unwrap(),
        one_copy[0][0][1].as_i64().unwrap(),
    );
    assert_eq!(n, 5);
    assert_eq!(
        r[0],
        json!([["alpha", 3 * n, 3 * total], ["beta", n, total]])
    );
    assert_eq!(r[1], json!([["alpha", 9], ["beta", 3]]));
}

#[test]
fn a_failed_export_leaves_no_file() {
    let dir = folder("export-failed");
    let trace = archive().file("export-failed.fxt");
    export(&[&trace], &dir, "h");
    let other = archive().file("export-failed-2.fxt");
    let missing = dir.join("missing.fxt");
    let out = fxt(&[
        "export",
        "parquet",
        p(&other),
        p(&missing),
        "-o",
        p(&dir),
        "--host",
        "h",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("missing.fxt"), "{}", stderr(&out));
    for table in std::fs::read_dir(&dir).unwrap() {
        let table = table.unwrap().path();
        if !table.is_dir() {
            continue;
        }
        let files: Vec<String> = std::fs::read_dir(&table)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, ["part-h-0.parquet"], "{}", table.display());
    }
}

#[test]
fn a_damaged_trace_exports_what_recover_keeps() {
    let n = [Arg::new(StringRef::Inline("n"), ArgValue::U32(1))];
    let mut t = golden()
        .push(&ev(
            EventKind::DurationBegin,
            2000,
            10,
            11,
            "never ended",
            &[],
        ))
        .push(&ev(EventKind::DurationEnd, 2100, 10, 12, "no begin", &[]))
        .push(&ev(EventKind::DurationBegin, 2200, 10, 13, "a", &n))
        .push(&ev(EventKind::DurationBegin, 2300, 10, 13, "inner", &[]))
        .push(&ev(EventKind::DurationEnd, 2400, 10, 13, "inner", &[]))
        .push(&ev(EventKind::DurationEnd, 2500, 10, 13, "not a", &[]))
        .push(&ev(
            EventKind::DurationComplete { end: 2600 },
            2700,
            10,
            13,
            "backwards",
            &[],
        ))
        .push(&event(
            EventKind::Instant,
            2800,
            ThreadRef::Index(1),
            StringRef::Index(77),
            StringRef::Index(2),
            &[],
        ))
        .push(&ev(EventKind::Counter { id: 1 }, 2900, 10, 11, "c", &n));
    // Cut the last record short, as a killed writer leaves it.
    let last = t.words.len() - 1;
    t.words.truncate(last);
    let damaged = t.file("export-damaged.fxt");
    let recovered = tmp("export-recovered.fxt");
    let out = fxt(&["recover", p(&damaged), "-o", p(&recovered)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let a = folder("export-damaged");
    let b = folder("export-recovered");
    let summary = export(&[&damaged], &a, "h");
    export(&[&recovered], &b, "h");
    for line in [
        "left out 1 (as fxt recover would): duration ends without a begin",
        "left out 1 (as fxt recover would): duration begins never ended",
        "left out 2 (as fxt recover would): duration ends naming another begin",
        "left out 1 (as fxt recover would): complete durations ending before they begin",
        "left out 1 (as fxt recover would): referring to an undefined string or thread",
        "1 damaged inputs",
    ] {
        assert!(summary.contains(line), "{line:?} in {summary}");
    }
    let queries = [
        "select * exclude (trace, args, args_int, args_float), args::VARCHAR from {slices} order by all",
        "select * exclude (trace, args, args_int, args_float), args::VARCHAR from {instants} order by all",
        "select * exclude (trace) from {counters} order by all",
        "select * exclude (trace) from {threads} order by all",
        "select * exclude (trace) from {processes} order by all",
    ];
    let from_damaged = duckdb(&a, &queries);
    assert_eq!(from_damaged, duckdb(&b, &queries));
    // What is left: golden's slice, and the inner pair at depth 0 (its
    // enclosing begin went with its mismatched end).
    let names: Vec<&Value> = from_damaged[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| &row[7])
        .collect();
    assert_eq!(names, [&json!("work"), &json!("inner")]);
    assert_eq!(from_damaged[2].as_array().unwrap().len(), 0);
}

#[test]
fn schema_uses_types_spark_and_clickhouse_read() {
    use parquet::basic::{ConvertedType, LogicalType, Type as Physical};
    use parquet::file::reader::{FileReader, SerializedFileReader};

    let dir = folder("export-schema");
    let trace = archive().file("export-schema.fxt");
    export(&[&trace], &dir, "h");
    let expected: [(&str, &[&str]); 8] = [
        (
            "slices",
            &[
                "trace",
                "host",
                "provider",
                "pid",
                "process",
                "tid",
                "thread",
                "category",
                "name",
                "ts",
                "dur",
                "id",
                "depth",
                "parent",
                "kind",
                "async_id",
                "args",
                "args_int",
                "args_float",
            ],
        ),
        (
            "instants",
            &[
                "trace",
                "host",
                "provider",
                "pid",
                "process",
                "tid",
                "thread",
                "category",
                "name",
                "ts",
                "kind",
                "async_id",
                "args",
                "args_int",
                "args_float",
            ],
        ),
        (
            "counters",
            &[
                "trace",
                "host",
                "provider",
                "pid",
                "process",
                "tid",
                "thread",
                "category",
                "name",
                "ts",
                "counter_id",
                "series",
                "value",
                "int_value",
            ],
        ),
        (
            "flows",
            &[
                "trace",
                "host",
                "provider",
                "pid",
                "process",
                "tid",
                "thread",
                "category",
                "name",
                "ts",
                "flow_id",
                "phase",
                "args",
                "args_int",
                "args_float",
            ],
        ),
        (
            "threads",
            &[
                "trace", "host", "provider", "pid", "process", "tid", "thread",
            ],
        ),
        (
            "processes",
            &["trace", "host", "provider", "pid", "process"],
        ),
        (
            "sched",
            &[
                "trace",
                "host",
                "provider",
                "ts",
                "cpu",
                "out_pid",
                "out_tid",
                "out_thread",
                "out_state",
                "in_pid",
                "in_tid",
                "in_thread",
            ],
        ),
        (
            "wakeups",
            &[
                "trace", "host", "provider", "ts", "cpu", "pid", "tid", "thread",
            ],
        ),
    ];
    for (table, columns) in expected {
        let file = std::fs::File::open(dir.join(table).join("part-h-0.parquet")).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let top: Vec<&str> = schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| f.name())
            .collect();
        assert_eq!(top, columns, "{table}");
        for c in schema.columns() {
            let what = format!("{table}.{}", c.path());
            assert!(
                matches!(
                    c.physical_type(),
                    Physical::INT32 | Physical::INT64 | Physical::DOUBLE | Physical::BYTE_ARRAY
                ),
                "{what}: {:?}",
                c.physical_type()
            );
            match c.logical_type_ref() {
                None | Some(LogicalType::String) => {}
                Some(LogicalType::Integer(int)) if int.is_signed => {}
                other => panic!("{what}: logical type {other:?}"),
            }
            assert!(
                matches!(
                    c.converted_type(),
                    ConvertedType::NONE
                        | ConvertedType::UTF8
                        | ConvertedType::INT_32
                        | ConvertedType::INT_64
                ),
                "{what}: converted type {:?}",
                c.converted_type()
            );
        }
    }
}

/// The part files of every table in `dir`, sorted, per table.
fn part_files(dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut tables: Vec<(String, Vec<String>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|t| t.unwrap().path())
        .filter(|t| t.is_dir())
        .map(|t| {
            let mut files: Vec<String> = std::fs::read_dir(&t)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            (t.file_name().unwrap().to_string_lossy().into_owned(), files)
        })
        .collect();
    tables.sort();
    tables
}

#[test]
fn a_trace_exported_again_is_refused_unless_replaced() {
    let dir = folder("export-again");
    let a = archive().file("again-a.fxt");
    let b = archive().file("again-b.fxt");
    let (a_name, b_name) = (p(&a), p(&b));
    export(&[&a, &b], &dir, "h");
    let before = part_files(&dir);
    assert_eq!(before.len(), 12); // every table, samples, tasks and allocations included

    let again = |extra: &[&str], files: &[&str], host: &str| {
        let mut args = vec!["export", "parquet"];
        args.extend(files);
        args.extend(["-o", p(&dir), "--host", host]);
        args.extend(extra);
        fxt(&args)
    };
    // Refused, nothing written: its rows would be there twice.
    let out = again(&[], &[a_name], "h");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "already holds {a_name} from host h (part-h-0.parquet)"
        )) && stderr(&out).contains("--replace"),
        "{}",
        stderr(&out)
    );
    assert_eq!(part_files(&dir), before);
    // So is a trace named twice in one export.
    let twice = archive().file("again-twice.fxt");
    let out = again(&[], &[p(&twice), p(&twice)], "h");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(part_files(&dir), before);

    // Another host's copy is another trace.
    export(&[&a], &dir, "h2");
    // --replace: the new rows, the earlier part rewritten without them
    // (b's rows stay).
    let out = again(&["--replace"], &[a_name], "h");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "replaced the earlier rows of {a_name} in part-h-0.parquet"
        )),
        "{}",
        stderr(&out)
    );
    let one_copy = "select trace, host, count(*) from {slices} group by all order by all";
    // A child slice joins its one parent (per trace and host).
    let join = "select count(*) from {slices} c join {slices} p \
                on c.parent = p.id and c.trace = p.trace and c.host = p.host";
    let parents = "select count(*) from {slices} where parent is not null";
    let per_trace = "select trace, host, count(*) from {processes} group by all order by all";
    let r = duckdb(&dir, &[one_copy, join, parents, per_trace]);
    let n = duckdb(&dir, &["select count(*) from {slices} where host = 'h2'"])[0][0][0]
        .as_i64()
        .unwrap();
    assert_eq!(
        r[0],
        json!([[a_name, "h", n], [a_name, "h2", n], [b_name, "h", n]])
    );
    assert_eq!(r[1], r[2], "one parent per child");
    assert_eq!(
        r[3],
        json!([[a_name, "h", 2], [a_name, "h2", 2], [b_name, "h", 2]])
    );
    // b again: the part that held only b goes.
    let out = again(&["--replace"], &[b_name], "h");
    assert!(out.status.success(), "{}", stderr(&out));
    for (table, files) in part_files(&dir) {
        assert_eq!(
            files,
            ["part-h-1.parquet", "part-h-2.parquet", "part-h2-0.parquet"],
            "{table}"
        );
    }
    let r = duckdb(&dir, &[one_copy]);
    assert_eq!(
        r[0],
        json!([[a_name, "h", n], [a_name, "h2", n], [b_name, "h", n]])
    );
}

/// Every row of every table of the export in `dir`, in one order, as
/// text (the maps included).
fn every_row(dir: &Path) -> Vec<Value> {
    let queries: Vec<String> = [
        "slices",
        "instants",
        "counters",
        "flows",
        "threads",
        "processes",
        "sched",
        "wakeups",
        "samples",
    ]
    .iter()
    .map(|t| format!("select * from {{{t}}} order by all"))
    .collect();
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    duckdb(dir, &queries)
}

#[test]
fn many_inputs_export_on_many_threads_as_one_at_a_time() {
    let traces: Vec<PathBuf> = (0..4)
        .map(|i| archive().file(&format!("export-many-{i}.fxt")))
        .collect();
    let all: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
    let one_at_a_time = folder("export-many-one");
    for trace in &all {
        export(&[trace], &one_at_a_time, "h");
    }
    let at_once = folder("export-many-at-once");
    export_on(3, &all, &at_once, "h");
    let rows = every_row(&one_at_a_time);
    assert_eq!(rows[0].as_array().unwrap().len(), 4 * 5, "slices");
    assert_eq!(every_row(&at_once), rows);
    // Three threads, three parts (equal sizes: the first input's thread
    // takes the fourth); each footer names exactly the traces its rows
    // hold.
    for (table, files) in part_files(&at_once) {
        assert_eq!(
            files,
            ["part-h-0.parquet", "part-h-1.parquet", "part-h-2.parquet"],
            "{table}"
        );
    }
    let r = duckdb(
        &at_once,
        &[
            "select parse_filename(filename), list(distinct trace order by trace) \
             from read_parquet({slices_glob}, filename = true) group by all order by all",
            "select parse_filename(file_name), decode(value) \
             from parquet_kv_metadata({slices_glob}) where decode(key) = 'fxt.traces' order by all",
        ]
        .map(|q| {
            q.replace(
                "{slices_glob}",
                &format!("'{}/slices/*.parquet'", p(&at_once)),
            )
        })
        .each_ref()
        .map(String::as_str),
    );
    let names: Vec<&str> = all.iter().map(|t| p(t)).collect();
    let footers: Vec<(String, Vec<String>)> = r[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let traces: Vec<String> = serde_json::from_str(row[1].as_str().unwrap()).unwrap();
            (row[0].as_str().unwrap().to_owned(), traces)
        })
        .collect();
    let mut held: Vec<(String, Vec<String>)> = r[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let traces = row[1].as_array().unwrap();
            let traces = traces.iter().map(|t| t.as_str().unwrap().to_owned());
            (row[0].as_str().unwrap().to_owned(), traces.collect())
        })
        .collect();
    let mut sorted_footers = footers.clone();
    for (_, t) in &mut sorted_footers {
        t.sort();
    }
    held.sort();
    assert_eq!(held, sorted_footers);
    assert_eq!(
        footers[0],
        (
            "part-h-0.parquet".to_owned(),
            vec![names[0].to_owned(), names[3].to_owned()]
        )
    );
}

#[test]
fn one_input_on_two_cores_writes_the_same_bytes() {
    // One input, a spare core: the tables' row groups are encoded on
    // threads of their own; the files are those of one thread, byte for
    // byte (a small archive: several row groups' worth would make the test
    // slow; the hand-off is the same for the last, partial one).
    let trace = archive().file("export-spare-core.fxt");
    let one = folder("export-spare-core-1");
    let two = folder("export-spare-core-2");
    export_on(1, &[&trace], &one, "h");
    export_on(2, &[&trace], &two, "h");
    let listing = part_files(&one);
    assert_eq!(listing, part_files(&two));
    assert_eq!(listing.len(), 12);
    for (table, files) in listing {
        for file in files {
            let a = std::fs::read(one.join(&table).join(&file)).unwrap();
            let b = std::fs::read(two.join(&table).join(&file)).unwrap();
            assert!(a == b, "{table}/{file} differs");
        }
    }
}

#[test]
fn an_input_that_fails_on_one_thread_fails_the_export_on_every_thread() {
    let dir = folder("export-many-failed");
    let good: Vec<PathBuf> = (0..3)
        .map(|i| archive().file(&format!("export-many-failed-{i}.fxt")))
        .collect();
    let not_fxt = dir.join("notes.txt");
    std::fs::write(&not_fxt, b"not a trace, just some text\n").unwrap();
    let out = fxt_threads(
        2,
        &[
            "export",
            "parquet",
            p(&good[0]),
            p(&good[1]),
            p(&not_fxt),
            p(&good[2]),
            "-o",
            p(&dir),
            "--host",
            "h",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("notes.txt"), "{}", stderr(&out));
    for (table, files) in part_files(&dir) {
        assert!(files.is_empty(), "{table}: {files:?}");
    }
    // Named twice: refused before any thread starts.
    let out = fxt_threads(
        2,
        &[
            "export",
            "parquet",
            p(&good[0]),
            p(&good[1]),
            p(&good[0]),
            "-o",
            p(&dir),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("named twice"), "{}", stderr(&out));
}

#[test]
fn rows_name_the_provider_that_recorded_them() {
    // Two providers of one program (the process named alike, as two
    // `fxt trace --name svc1` / `svc2` providers of one binary are).
    let trace = Trace::with_provider(1, "svc1", 1_000_000_000)
        .raw(&kobj(10, OBJ_TYPE_PROCESS, "hidden-provider", None))
        .push(&ev(
            EventKind::DurationComplete { end: 20 },
            10,
            10,
            11,
            "work",
            &[],
        ))
        .push(&ProviderInfo {
            provider_id: 2,
            name: "svc2",
        })
        .raw(&kobj(20, OBJ_TYPE_PROCESS, "hidden-provider", None))
        .push(&ev(EventKind::Instant, 30, 20, 21, "tick", &[]))
        .file("export-providers.fxt");
    let dir = folder("export-providers");
    export(&[&trace], &dir, "h");
    let sched_dir = folder("export-providers-sched");
    export(
        &[&archive().file("export-providers-sched.fxt")],
        &sched_dir,
        "h",
    );
    let r = duckdb(
        &dir,
        &[
            "select pid, process, provider from {processes} order by pid",
            "select tid, provider from {threads} order by tid",
            "select name, provider from {slices}",
            "select name, provider from {instants}",
        ],
    );
    assert_eq!(
        r[0],
        json!([
            [10, "hidden-provider", "svc1"],
            [20, "hidden-provider", "svc2"]
        ])
    );
    assert_eq!(r[1], json!([[11, "svc1"], [21, "svc2"]]));
    assert_eq!(r[2], json!([["work", "svc1"]]));
    assert_eq!(r[3], json!([["tick", "svc2"]]));
    let r = duckdb(
        &sched_dir,
        &[
            "select distinct provider from {sched}",
            "select distinct provider from {wakeups}",
            "select distinct provider from {counters}",
        ],
    );
    assert_eq!(r[0], json!([["kernel scheduler"]]));
    assert_eq!(r[1], json!([["kernel scheduler"]]));
    assert_eq!(r[2], json!([["alpha"]]));
}

/// Row `i` of the statistics test: pid, tid, name and arguments vary in
/// runs and cycles, some rows have no arguments, doubles include NaN and
/// zero.
fn varied_instant(i: u64) -> (u64, u64, &'static str, Option<i64>, Option<f64>) {
    const NAMES: [&str; 5] = ["a", "bb", "a-name-longer-than-sixteen", "ccc", "dddd"];
    let pid = 100 + i / 40_000;
    let tid = 1_000 + i % 3;
    let name = NAMES[(i / 7 % 5) as usize];
    let int = (i % 4 == 1 || i % 4 == 3).then(|| (i as i64 - 75_000) * 3);
    let float = (i % 4 == 2).then(|| match i {
        _ if i.is_multiple_of(7) => f64::NAN,
        _ if i.is_multiple_of(11) => 0.0,
        _ => i as f64 * -0.5,
    });
    (pid, tid, name, int, float)
}

#[test]
fn every_row_groups_statistics_hold_its_values() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::statistics::Statistics;

    const ROWS: u64 = 150_000;
    const GROUP: u64 = 64 * 1024;
    let mut trace = Trace::with_provider(1, "p", 1_000_000_000);
    for i in 0..ROWS {
        let (pid, tid, name, int, float) = varied_instant(i);
        let mut args = Vec::new();
        if let Some(v) = int {
            args.push(Arg::new(StringRef::Inline("v"), ArgValue::I64(v)));
        }
        if let Some(f) = float {
            args.push(Arg::new(StringRef::Inline("f"), ArgValue::F64(f)));
        }
        if i % 4 == 3 {
            args.push(Arg::new(StringRef::Inline("s"), ArgValue::Null));
        }
        trace = trace.push(&ev(
            EventKind::Instant,
            5_000 + i * 7,
            pid,
            tid,
            name,
            &args,
        ));
    }
    let file = trace.file("export-statistics.fxt");
    let dir = folder("export-statistics");
    export(&[&file], &dir, "h");

    let path = std::fs::read_dir(dir.join("instants"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "parquet"))
        .unwrap();
    let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let groups = reader.metadata().row_groups();
    assert_eq!(groups.len(), ROWS.div_ceil(GROUP) as usize);
    for (g, group) in groups.iter().enumerate() {
        let rows: Vec<u64> = (g as u64 * GROUP..((g as u64 + 1) * GROUP).min(ROWS)).collect();
        assert_eq!(group.num_rows(), rows.len() as i64);
        let stats = |column: &str| {
            group
                .columns()
                .iter()
                .find(|c| c.column_path().string() == column)
                .unwrap()
                .statistics()
                .cloned()
        };
        let range = |values: Vec<i64>| (values.iter().min().copied(), values.iter().max().copied());
        let int_range = |stats: Option<Statistics>| match stats {
            Some(Statistics::Int64(s)) => (
                s.min_opt().copied(),
                s.max_opt().copied(),
                s.null_count_opt(),
            ),
            other => panic!("{other:?}"),
        };
        let ts = range(rows.iter().map(|&i| 5_000 + i as i64 * 7).collect());
        assert_eq!(int_range(stats("ts")), (ts.0, ts.1, Some(0)), "group {g}");
        let pid = range(rows.iter().map(|&i| varied_instant(i).0 as i64).collect());
        assert_eq!(
            int_range(stats("pid")),
            (pid.0, pid.1, Some(0)),
            "group {g}"
        );
        // A map value's nulls are its rows without an entry.
        let ints: Vec<i64> = rows.iter().filter_map(|&i| varied_instant(i).3).collect();
        let v = range(ints.clone());
        let empty = rows.len() - ints.len();
        assert_eq!(
            int_range(stats("args_int.key_value.value")),
            (v.0, v.1, Some(empty as u64)),
            "group {g}"
        );
        let floats: Vec<f64> = rows
            .iter()
            .filter_map(|&i| varied_instant(i).4)
            .filter(|f| !f.is_nan())
            .collect();
        let lo = floats.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = floats.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        match stats("args_float.key_value.value") {
            Some(Statistics::Double(s)) => {
                assert_eq!(
                    s.min_opt().map(|v| v.to_bits()),
                    Some(lo.to_bits()),
                    "group {g}"
                );
                assert_eq!(
                    s.max_opt().map(|v| v.to_bits()),
                    Some(if hi == 0.0 { 0.0f64 } else { hi }.to_bits())
                );
            }
            other => panic!("{other:?}"),
        }
        // Text the footer ranges (the source columns) and text it does not.
        match stats("trace") {
            Some(Statistics::ByteArray(s)) => {
                assert_eq!(s.min_opt().unwrap().data(), p(&file).as_bytes());
                assert_eq!(s.max_opt().unwrap().data(), p(&file).as_bytes());
                assert_eq!(s.null_count_opt(), Some(0));
            }
            other => panic!("{other:?}"),
        }
        assert!(stats("name").is_none());
    }

    // Queries whose filters DuckDB answers from those ranges agree with a
    // count of the rows generated.
    let count = |f: &dyn Fn(u64) -> bool| (0..ROWS).filter(|&i| f(i)).count() as u64;
    let r = duckdb(
        &dir,
        &[
            "select count(*) from {instants} where ts >= 600000",
            "select count(*) from {instants} where pid = 101",
            "select count(*) from {instants} where args_int['v'] < -100000",
            "select count(*) from {instants} where name = 'a-name-longer-than-sixteen' and tid = 1001",
            "select count(*) from {instants} where cardinality(args) = 0",
            "select count(*) from {instants} where args['s'] is null and map_contains(args, 's')",
            "select count(*) from {instants} where isnan(args_float['f'])",
        ],
    );
    let expected = [
        count(&|i| 5_000 + i * 7 >= 600_000),
        count(&|i| varied_instant(i).0 == 101),
        count(&|i| varied_instant(i).3.is_some_and(|v| v < -100_000)),
        count(&|i| {
            varied_instant(i).2 == "a-name-longer-than-sixteen" && varied_instant(i).1 == 1001
        }),
        count(&|i| i % 4 == 0),
        count(&|i| i % 4 == 3),
        count(&|i| varied_instant(i).4.is_some_and(f64::is_nan)),
    ];
    for (got, want) in r.iter().zip(expected) {
        assert_eq!(got, &json!([[want]]));
    }
}

/// An instant of provider-relative string indices: category 1, name 2,
/// the arguments named by index.
fn indexed<'a>(ts: u64, args: &'a [Arg<'a>]) -> Event<'a> {
    event(
        EventKind::Instant,
        ts,
        ThreadRef::Inline {
            process: 1,
            thread: 2,
        },
        StringRef::Index(1),
        StringRef::Index(2),
        args,
    )
}

#[test]
fn arguments_named_by_index_read_their_names_as_the_strings_then_stand() {
    // Rows of one shape (two integers named by index 3 and 4), the
    // names redefined between them, a second provider whose index 3 is
    // another name, a name repeated within a row, a value only the text
    // map holds, and a row of another shape.
    let strings = |t: Trace, names: [&'static str; 3]| {
        t.push(&StringRecord {
            index: 1,
            value: "cat",
        })
        .push(&StringRecord {
            index: 2,
            value: names[2],
        })
        .push(&StringRecord {
            index: 3,
            value: names[0],
        })
        .push(&StringRecord {
            index: 4,
            value: names[1],
        })
    };
    let pair = |a: u64, b: i32| {
        [
            Arg::new(StringRef::Index(3), ArgValue::U64(a)),
            Arg::new(StringRef::Index(4), ArgValue::I32(b)),
        ]
    };
    let (r1, r2, r3, r4) = (pair(1, -1), pair(2, -2), pair(3, -3), pair(u64::MAX, -4));
    let repeated = [
        Arg::new(StringRef::Index(3), ArgValue::I64(5)),
        Arg::new(StringRef::Index(3), ArgValue::I64(6)),
    ];
    let other = [Arg::new(StringRef::Index(4), ArgValue::U32(7))];
    let mut trace = strings(
        Trace::with_provider(1, "p1", 1_000_000_000),
        ["alpha", "beta", "ev"],
    )
    .push(&indexed(10, &r1))
    .push(&indexed(20, &r2));
    // The event's name changes with the strings: a row of one provider,
    // thread and string indices is not its last row's again.
    trace = strings(trace, ["gamma", "beta", "ev-b"]).push(&indexed(30, &r3));
    trace = strings(
        trace.push(&ProviderInfo {
            provider_id: 2,
            name: "p2",
        }),
        ["delta", "eps", "ev-c"],
    )
    .push(&indexed(40, &r2));
    let trace = trace
        .push(&ProviderSection { provider_id: 1 })
        .push(&indexed(50, &r3))
        .push(&indexed(60, &r4))
        .push(&indexed(70, &repeated))
        .push(&indexed(80, &other))
        .push(&indexed(90, &r1))
        .file("export-shapes.fxt");
    let dir = folder("export-shapes");
    let summary = export(&[&trace], &dir, "h");
    let r = duckdb(
        &dir,
        &[
            "select ts, provider, map_keys(args), map_values(args), map_keys(args_int), \
             map_values(args_int), cardinality(args_float) from {instants} order by ts",
            "select ts, category, name from {instants} order by ts",
        ],
    );
    let names = [
        "ev", "ev", "ev-b", "ev-c", "ev-b", "ev-b", "ev-b", "ev-b", "ev-b",
    ];
    let expected: Vec<Value> = [10, 20, 30, 40, 50, 60, 70, 80, 90]
        .iter()
        .zip(names)
        .map(|(ts, name)| json!([ts, "cat", name]))
        .collect();
    assert_eq!(r[1], json!(expected));
    let row = |ts: i64, p: &str, keys: [&str; 2], text: [&str; 2], ints: Value| {
        json!([ts, p, keys, text, keys, ints, 0])
    };
    assert_eq!(
        r[0],
        json!([
            row(10, "p1", ["alpha", "beta"], ["1", "-1"], json!([1, -1])),
            row(20, "p1", ["alpha", "beta"], ["2", "-2"], json!([2, -2])),
            row(30, "p1", ["gamma", "beta"], ["3", "-3"], json!([3, -3])),
            row(40, "p2", ["delta", "eps"], ["2", "-2"], json!([2, -2])),
            row(50, "p1", ["gamma", "beta"], ["3", "-3"], json!([3, -3])),
            // u64::MAX is beyond the integer map: text only.
            json!([
                60,
                "p1",
                ["gamma", "beta"],
                ["18446744073709551615", "-4"],
                ["beta"],
                [-4],
                0
            ]),
            json!([70, "p1", ["gamma"], ["5"], ["gamma"], [5], 0]),
            json!([80, "p1", ["beta"], ["7"], ["beta"], [7], 0]),
            row(90, "p1", ["gamma", "beta"], ["1", "-1"], json!([1, -1])),
        ])
    );
    assert!(
        summary.contains("fxt:   1 repeated argument names (first value kept)"),
        "the repeated name is counted: {summary}"
    );
}

#[test]
fn a_counter_that_writes_no_row_is_not_the_last_row_of_its_table() {
    // Counter "a" (a row), counter "b" of text only (no row), counter "b"
    // again with a number: its row is named "b", not "a".
    let counter = |ts: u64, name: u16, args: &'static [Arg<'static>]| {
        event(
            EventKind::Counter { id: 1 },
            ts,
            ThreadRef::Inline {
                process: 1,
                thread: 2,
            },
            StringRef::Index(1),
            StringRef::Index(name),
            args,
        )
    };
    static NUMBER: [Arg<'static>; 1] = [Arg::new(StringRef::Index(4), ArgValue::I64(7))];
    static TEXT: [Arg<'static>; 1] = [Arg::new(
        StringRef::Index(4),
        ArgValue::Str(StringRef::Inline("seven")),
    )];
    let trace = Trace::with_provider(1, "p", 1_000_000_000).strings(&[
        (1, "cat"),
        (2, "a"),
        (3, "b"),
        (4, "v"),
    ]);
    let trace = trace
        .push(&counter(10, 2, &NUMBER))
        .push(&counter(20, 3, &TEXT))
        .push(&counter(30, 3, &NUMBER))
        .file("export-counter-again.fxt");
    let dir = folder("export-counter-again");
    export(&[&trace], &dir, "h");
    let r = duckdb(
        &dir,
        &["select ts, name, series, int_value from {counters} order by ts"],
    );
    assert_eq!(r[0], json!([[10, "a", "v", 7], [30, "b", "v", 7]]));
}

#[test]
fn runs_of_one_threads_rows_keep_every_rows_columns_across_row_groups() {
    // Rows of one provider, thread, category and name are appended as
    // copies of their table's last row: runs that straddle both row group
    // ends (65,536 and 131,072), keys that change at every row, a thread
    // without a name (null columns repeated), and one row of another
    // thread inside a run.
    const ROWS: u64 = 150_000;
    let key = |i: u64| -> (u64, u16) {
        match i {
            60_000 => (3, 2),
            0..70_000 => (2, 2),
            70_000..70_100 => (2 + i % 3, 2 + (i % 2) as u16),
            70_100..140_000 => (4, 3),
            _ => (2, 3),
        }
    };
    let mut trace = Trace::with_provider(1, "p", 1_000_000_000)
        .raw(&kobj(1, OBJ_TYPE_PROCESS, "proc", None))
        .raw(&kobj(2, OBJ_TYPE_THREAD, "worker", Some(1)))
        .raw(&kobj(3, OBJ_TYPE_THREAD, "other", Some(1)))
        .strings(&[(1, "cat"), (2, "tick"), (3, "tock")]);
    for i in 0..ROWS {
        let (tid, name) = key(i);
        trace = trace.push(&event(
            EventKind::Instant,
            5_000 + i * 7,
            ThreadRef::Inline {
                process: 1,
                thread: tid,
            },
            StringRef::Index(1),
            StringRef::Index(name),
            &[],
        ));
    }
    let file = trace.file("export-runs.fxt");
    let dir = folder("export-runs");
    export(&[&file], &dir, "h");
    let r = duckdb(
        &dir,
        &[
            "select ts, provider, pid, process, tid, thread, category, name \
           from {instants} order by ts",
        ],
    );
    let expected: Vec<Value> = (0..ROWS)
        .map(|i| {
            let (tid, name) = key(i);
            let thread = match tid {
                2 => json!("worker"),
                3 => json!("other"),
                _ => Value::Null,
            };
            let name = ["tick", "tock"][usize::from(name - 2)];
            json!([5_000 + i * 7, "p", 1, "proc", tid, thread, "cat", name])
        })
        .collect();
    let rows = r[0].as_array().unwrap();
    assert_eq!(rows.len(), expected.len());
    for (i, (got, want)) in rows.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "row {i}");
    }
}

#[test]
fn a_complete_events_row_is_its_begin_and_ends_row() {
    // The same arguments (every type, names by index and inline, a name
    // repeated, a value beyond the integer map) on a complete event and on
    // a begin whose end adds one more: their slices hold the same maps,
    // texts and times.
    let trace = Trace::with_provider(1, "p", 1_000_000_000).strings(&[
        (1, "cat"),
        (2, "work"),
        (3, "n"),
        (4, "label"),
    ]);
    let args = [
        Arg::new(StringRef::Index(3), ArgValue::I32(-3)),
        Arg::new(StringRef::Inline("u"), ArgValue::U64(u64::MAX)),
        Arg::new(StringRef::Inline("x"), ArgValue::F64(0.1)),
        Arg::new(StringRef::Index(4), ArgValue::Str(StringRef::Index(2))),
        Arg::new(
            StringRef::Inline("s"),
            ArgValue::Str(StringRef::Inline("hi")),
        ),
        Arg::new(StringRef::Inline("p"), ArgValue::Pointer(0xbeef)),
        Arg::new(StringRef::Inline("k"), ArgValue::Koid(7)),
        Arg::new(StringRef::Inline("b"), ArgValue::Bool(true)),
        Arg::new(StringRef::Inline("z"), ArgValue::Null),
        Arg::new(StringRef::Index(3), ArgValue::I64(9)),
    ];
    let ints = [
        Arg::new(StringRef::Index(3), ArgValue::U32(1)),
        Arg::new(StringRef::Index(4), ArgValue::I64(-2)),
    ];
    let end_args = [Arg::new(StringRef::Inline("e"), ArgValue::U32(5))];
    let at = |kind, ts, args| {
        event(
            kind,
            ts,
            ThreadRef::Inline {
                process: 1,
                thread: 2,
            },
            StringRef::Index(1),
            StringRef::Index(2),
            args,
        )
    };
    let trace = trace
        .push(&at(EventKind::DurationComplete { end: 150 }, 100, &args))
        .push(&at(EventKind::DurationBegin, 200, &args))
        .push(&at(EventKind::DurationEnd, 260, &end_args))
        .push(&at(EventKind::DurationComplete { end: 330 }, 300, &ints))
        .push(&at(EventKind::DurationBegin, 400, &ints))
        .push(&at(EventKind::DurationEnd, 430, &[]))
        .file("export-complete.fxt");
    let dir = folder("export-complete");
    export(&[&trace], &dir, "h");
    let r = duckdb(
        &dir,
        &[
            "select ts, dur, kind, pid, tid, category, name, map_keys(args), map_values(args), \
             map_keys(args_int), map_values(args_int), map_keys(args_float), \
             map_values(args_float) from {slices} order by ts",
        ],
    );
    let keys = json!(["n", "u", "x", "label", "s", "p", "k", "b", "z"]);
    let text = json!([
        "-3",
        "18446744073709551615",
        "0.1",
        "work",
        "hi",
        "0xbeef",
        "7",
        "true",
        null
    ]);
    let (mut end_keys, mut end_text) = (keys.clone(), text.clone());
    end_keys.as_array_mut().unwrap().push(json!("e"));
    end_text.as_array_mut().unwrap().push(json!("5"));
    let int_keys = |more: &[&str]| {
        let mut k = vec!["n", "k"];
        k.extend(more);
        json!(k)
    };
    let row = |ts: i64, dur: i64, kind: &str| json!([ts, dur, kind, 1, 2, "cat", "work"]);
    let with = |mut row: Value, maps: [Value; 6]| {
        row.as_array_mut().unwrap().extend(maps);
        row
    };
    assert_eq!(
        r[0],
        json!([
            with(
                row(100, 50, "complete"),
                [
                    keys,
                    text,
                    int_keys(&[]),
                    json!([-3, 7]),
                    json!(["x"]),
                    json!([0.1])
                ]
            ),
            with(
                row(200, 60, "duration"),
                [
                    end_keys,
                    end_text,
                    int_keys(&["e"]),
                    json!([-3, 7, 5]),
                    json!(["x"]),
                    json!([0.1])
                ]
            ),
            with(
                row(300, 30, "complete"),
                [
                    json!(["n", "label"]),
                    json!(["1", "-2"]),
                    json!(["n", "label"]),
                    json!([1, -2]),
                    json!([]),
                    json!([])
                ]
            ),
            with(
                row(400, 30, "duration"),
                [
                    json!(["n", "label"]),
                    json!(["1", "-2"]),
                    json!(["n", "label"]),
                    json!([1, -2]),
                    json!([]),
                    json!([])
                ]
            ),
        ])
    );
}

#[test]
fn rows_found_again_by_their_key_keep_their_own_thread_and_names() {
    // More threads than the writer keeps keys for (each key's columns are
    // found again by its provider, thread, strings epoch and string
    // indices), every thread an instant, a complete event and a duration
    // of indices 1 and 2; then index 2 renamed and every thread again. A
    // row's tid and name follow from its ts: a key taken for another's
    // (two in one slot, or the strings before the renaming) shows.
    const THREADS: u64 = 1500;
    let thread = |t: u64| ThreadRef::Inline {
        process: 7,
        thread: 1000 + t,
    };
    let at = |kind, ts, t| {
        event(
            kind,
            ts,
            thread(t),
            StringRef::Index(1),
            StringRef::Index(2),
            &[],
        )
    };
    let mut trace = Trace::with_provider(1, "p", 1_000_000_000);
    for (round, name) in [(0, "first"), (1, "second")] {
        trace = trace
            .push(&StringRecord {
                index: 1,
                value: "cat",
            })
            .push(&StringRecord {
                index: 2,
                value: name,
            });
        for t in 0..THREADS {
            let ts = round * 100_000 + t * 10;
            trace = trace
                .push(&at(EventKind::Instant, ts, t))
                .push(&at(EventKind::DurationComplete { end: ts + 5 }, ts, t))
                .push(&at(EventKind::DurationBegin, ts, t))
                .push(&at(EventKind::DurationEnd, ts + 3, t));
        }
    }
    let trace = trace.file("export-keys.fxt");
    let dir = folder("export-keys");
    export(&[&trace], &dir, "h");
    let wrong = |table: &str| {
        format!(
            "select count(*), count(*) filter (where tid != 1000 + (ts % 100000) // 10 \
             or name != (case when ts >= 100000 then 'second' else 'first' end) \
             or category != 'cat' or pid != 7) from {{{table}}}"
        )
    };
    let r = duckdb(&dir, &[&wrong("instants"), &wrong("slices")]);
    assert_eq!(r[0], json!([[2 * THREADS, 0]]), "instants");
    assert_eq!(r[1], json!([[4 * THREADS, 0]]), "slices");
}

#[test]
fn two_inputs_in_one_part_keep_their_own_trace_by_the_same_key() {
    // Events before any provider or string record (no provider, the
    // first strings epoch, empty texts: one key in both inputs), both
    // inputs exported into one part: each row names its own trace.
    let thread = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let at = |kind, ts| event(kind, ts, thread, StringRef::Empty, StringRef::Empty, &[]);
    let trace = Trace::new()
        .push(&MagicNumber)
        .push(&at(EventKind::Instant, 10))
        .push(&at(EventKind::DurationComplete { end: 30 }, 20));
    let (a, b) = (
        trace.file("export-same-key-a.fxt"),
        trace.file("export-same-key-b.fxt"),
    );
    let dir = folder("export-same-key");
    export(&[&a, &b], &dir, "h");
    let r = duckdb(
        &dir,
        &[
            "select trace, count(*) from {instants} group by trace order by trace",
            "select trace, count(*) from {slices} group by trace order by trace",
        ],
    );
    let each = json!([[p(&a), 1], [p(&b), 1]]);
    assert_eq!(r[0], each, "instants");
    assert_eq!(r[1], each, "slices");
}

#[test]
fn rows_of_one_thread_from_two_providers_name_each_its_own() {
    // One thread's events (pid 1, tid 2) from two providers in turn, then
    // another thread between two of the first's: a row's provider and tid
    // follow from its ts. A row whose source or thread columns were taken
    // as its table's last row's by the thread alone, or by the provider
    // alone, shows.
    let both = |trace: Trace, ts: u64, tid: u64| {
        trace
            .push(&ev(EventKind::Instant, ts, 1, tid, "tick", &[]))
            .push(&ev(
                EventKind::DurationComplete { end: ts + 5 },
                ts,
                1,
                tid,
                "work",
                &[],
            ))
    };
    let mut trace = Trace::with_provider(1, "svc1", 1_000_000_000);
    trace = both(trace, 10, 2);
    trace = trace.push(&ProviderInfo {
        provider_id: 2,
        name: "svc2",
    });
    trace = both(trace, 20, 2);
    trace = trace.push(&ProviderSection { provider_id: 1 });
    trace = both(trace, 30, 2);
    trace = both(trace, 40, 2);
    trace = trace.push(&ProviderSection { provider_id: 2 });
    for (ts, tid) in [(50, 2), (60, 3), (70, 2)] {
        trace = both(trace, ts, tid);
    }
    let file = trace.file("export-two-providers-one-thread.fxt");
    let dir = folder("export-two-providers-one-thread");
    export(&[&file], &dir, "h");
    let r = duckdb(
        &dir,
        &[
            "select ts, provider, pid, tid from {instants} order by ts",
            "select ts, provider, pid, tid from {slices} order by ts",
        ],
    );
    let expected = json!([
        [10, "svc1", 1, 2],
        [20, "svc2", 1, 2],
        [30, "svc1", 1, 2],
        [40, "svc1", 1, 2],
        [50, "svc2", 1, 2],
        [60, "svc2", 1, 3],
        [70, "svc2", 1, 2]
    ]);
    assert_eq!(r[0], expected, "instants");
    assert_eq!(r[1], expected, "slices");
}

#[test]
fn counters_of_one_shape_keep_their_columns_across_row_groups_and_shapes() {
    // Counters of three series (a counter's rows straddle the row group
    // end at 65,536), two threads taking turns, a thread whose counters
    // change shape (the value types, a u64 beyond the integer map), and
    // the series' name redefined part way: every row has its counter's
    // thread, name, series and values.
    const EVENTS: u64 = 23_000;
    // Beyond the integer map, and a double exactly.
    let big = |i: u64| (1 << 63) + (i << 11);
    let trace = Trace::with_provider(1, "p", 1_000_000_000)
        .raw(&kobj(1, OBJ_TYPE_PROCESS, "proc", None))
        .raw(&kobj(2, OBJ_TYPE_THREAD, "worker", Some(1)))
        .strings(&[(1, "cat"), (2, "load"), (3, "a"), (4, "b"), (5, "c")]);
    let mut trace = trace;
    let mut expected = Vec::new();
    for i in 0..EVENTS {
        let (tid, ts) = (2 + i % 2, 100 + i * 10);
        if i == 20_000 {
            trace = trace.strings(&[(3, "a2")]);
        }
        let a = if i < 20_000 { "a" } else { "a2" };
        let shape_b = tid == 3 && i % 10 == 1;
        let args = if shape_b {
            [
                Arg::new(StringRef::Index(3), ArgValue::U64(big(i))),
                Arg::new(StringRef::Index(4), ArgValue::I32(-(i as i32))),
                Arg::new(StringRef::Index(5), ArgValue::U32(i as u32)),
            ]
        } else {
            [
                Arg::new(StringRef::Index(3), ArgValue::I64(i as i64)),
                Arg::new(StringRef::Index(4), ArgValue::F64(i as f64 / 4.0)),
                Arg::new(StringRef::Index(5), ArgValue::U32(i as u32)),
            ]
        };
        let thread = ThreadRef::Inline {
            process: 1,
            thread: tid,
        };
        let (category, name) = (StringRef::Index(1), StringRef::Index(2));
        let kind = EventKind::Counter { id: 9 };
        trace = trace.push(&event(kind, ts, thread, category, name, &args));
        let thread = if tid == 2 {
            json!("worker")
        } else {
            Value::Null
        };
        let series =
            |name: &str, value: f64, int: Value| json!([ts, tid, thread, "load", name, value, int]);
        if shape_b {
            expected.push(series(a, big(i) as f64, Value::Null));
            expected.push(series("b", -(i as f64), json!(-(i as i64))));
        } else {
            expected.push(series(a, i as f64, json!(i)));
            expected.push(series("b", i as f64 / 4.0, Value::Null));
        }
        expected.push(series("c", i as f64, json!(i)));
    }
    let file = trace.file("export-counter-shapes.fxt");
    let dir = folder("export-counter-shapes");
    export(&[&file], &dir, "h");
    let r = duckdb(
        &dir,
        &["select ts, tid, thread, name, series, value, int_value \
           from {counters} order by ts, series"],
    );
    let rows = r[0].as_array().unwrap();
    assert_eq!(rows.len(), expected.len());
    // The doubles as DuckDB prints them (15 digits): compared as near.
    let value = |row: &Value| row[5].as_f64().unwrap();
    let but_value = |row: &Value| {
        let mut row = row.clone();
        row[5] = Value::Null;
        row
    };
    for (i, (got, want)) in rows.iter().zip(&expected).enumerate() {
        assert_eq!(but_value(got), but_value(want), "row {i}");
        let (g, w) = (value(got), value(want));
        assert!((g - w).abs() <= w.abs() * 1e-14, "row {i}: {g} for {w}");
    }
}
