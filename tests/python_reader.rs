//! An independent reader: the PyPI package `fxt` (0.3.0) must decode what
//! our encoders write, what the engine writes through the macros, and a
//! crash-safe trace whose writer was killed with SIGKILL, to the same values
//! our decoder finds.
//!
//! Python is `$FXT_PYTHON` if set; otherwise a virtual environment under the
//! cargo target directory (`target/pyfxt-venv`) is created on first use with
//! `python3 -m venv` and `pip install fxt==0.3.0`. The test fails, never
//! skips, if that cannot be done.
//!
//! What the Python reader cannot read is left out of the trace (see
//! `examples/all_records.rs --portable`): blob arguments (type 10) and
//! legacy context switch records (scheduling type 0). It also drops string,
//! thread, initialization and magic records (it only applies them), keeps
//! only the process of a userspace object's thread, and reports the end
//! time of a duration complete event as `duration_ns`.

#[allow(dead_code)]
#[path = "../examples/all_records.rs"]
mod all_records;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use fxt_format::decode::{ArgValue, EventKind, Record, SliceReader, Text, Thread};
use fxt_format::encode::{
    encode_into_vec, words_to_bytes, Arg, ArgValue as E, Event, EventKind as K, Initialization,
    ProviderInfo, StringRecord, StringRef, ThreadRecord, ThreadRef,
};
use serde_json::{json, Value};

const FXT_VERSION: &str = "0.3.0";

/// Runs `cmd`, failing the test with its output if it does not succeed.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn has_fxt(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, fxt.reader; print(m.version('fxt'))",
        ])
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == FXT_VERSION
        })
}

/// A Python interpreter with `fxt==0.3.0` importable (set up once per test
/// binary: the tests run in parallel and must not create the venv twice).
fn python() -> PathBuf {
    static PYTHON: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PYTHON.get_or_init(find_or_install_python).clone()
}

fn find_or_install_python() -> PathBuf {
    if let Some(python) = std::env::var_os("FXT_PYTHON") {
        let python = PathBuf::from(python);
        assert!(
            has_fxt(&python),
            "FXT_PYTHON={} cannot import fxt {FXT_VERSION}",
            python.display()
        );
        return python;
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp dir has a parent")
        .join("pyfxt-venv");
    let python = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if has_fxt(&python) {
        return python;
    }
    if !python.exists() {
        let base = ["python3", "python"]
            .into_iter()
            .find(|p| {
                Command::new(p)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
            .expect("no python3 or python on PATH (or set FXT_PYTHON)");
        run(Command::new(base).arg("-m").arg("venv").arg(&venv));
    }
    run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        &format!("fxt=={FXT_VERSION}"),
    ]));
    assert!(has_fxt(&python), "fxt {FXT_VERSION} still not importable");
    python
}

/// The all_records --portable content, then a provider exercising edge
/// values and a clock that is not 1 tick = 1 ns.
fn trace() -> Vec<u8> {
    let mut words = all_records::all_records(true);
    let long = format!("a{}", "é".repeat(16_000)); // cut to 31999 bytes
    let args = [
        Arg::new(StringRef::Inline("i32 min"), E::I32(i32::MIN)),
        Arg::new(StringRef::Inline("i32 max"), E::I32(i32::MAX)),
        Arg::new(StringRef::Inline("u32 max"), E::U32(u32::MAX)),
        Arg::new(StringRef::Inline("i64 min"), E::I64(i64::MIN)),
        Arg::new(StringRef::Inline("u64 max"), E::U64(u64::MAX)),
        Arg::new(StringRef::Inline("nan"), E::F64(f64::NAN)),
        Arg::new(StringRef::Inline("-inf"), E::F64(f64::NEG_INFINITY)),
        Arg::new(StringRef::Inline("-0"), E::F64(-0.0)),
        Arg::new(StringRef::Inline("tiny"), E::F64(f64::MIN_POSITIVE)),
        Arg::new(StringRef::Index(0x7fff), E::Str(StringRef::Empty)),
        Arg::new(StringRef::Inline("false"), E::Bool(false)),
        Arg::new(
            StringRef::Inline("emoji 🦀"),
            E::Str(StringRef::Inline("\"quoted\"\n\t\\")),
        ),
        Arg::new(StringRef::Inline("long"), E::Str(StringRef::Inline(&long))),
    ];
    let records: [&dyn fxt_format::encode::Encode; 5] = [
        &ProviderInfo {
            provider_id: 0xffff_ffff,
            name: "edge cases",
        },
        &Initialization {
            ticks_per_second: 3,
        },
        &StringRecord {
            index: 0x7fff,
            value: "last index",
        },
        &ThreadRecord {
            index: 255,
            process: u64::MAX,
            thread: 0,
        },
        &Event {
            kind: K::DurationComplete {
                end: u64::MAX / 1_000_000_000,
            },
            timestamp: 7,
            thread: ThreadRef::Index(255),
            category: StringRef::Index(0x7fff),
            name: StringRef::Empty,
            args: &args,
        },
    ];
    for r in records {
        encode_into_vec(r, &mut words).unwrap();
    }
    words_to_bytes(&words)
}

fn text(t: &Text) -> Value {
    json!(t.as_str().expect("no undefined refs in this trace"))
}

fn thread(t: &Thread) -> Value {
    match *t {
        Thread::Known { process, thread } => json!([process, thread]),
        Thread::Undefined(i) => panic!("undefined thread {i}"),
    }
}

fn args(args: &[fxt_format::decode::Arg]) -> Value {
    let pairs: Vec<Value> = args
        .iter()
        .map(|a| {
            let value = match &a.value {
                ArgValue::Null => Value::Null,
                ArgValue::I32(v) => json!(v),
                ArgValue::U32(v) => json!(v),
                ArgValue::I64(v) => json!(v),
                ArgValue::U64(v) | ArgValue::Pointer(v) | ArgValue::Koid(v) => json!(v),
                ArgValue::F64(v) => json!({ "f64": v.to_bits() }),
                ArgValue::Str(s) => text(s),
                ArgValue::Bool(v) => json!(v),
                other => panic!("the Python reader cannot read {other:?}"),
            };
            json!([text(&a.name), value])
        })
        .collect();
    Value::Array(pairs)
}

fn hex(bytes: &[u8]) -> Value {
    json!({ "hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() })
}

/// What the Python reader should report, from our decoder's records.
fn expected(bytes: &[u8]) -> Value {
    let mut providers: BTreeMap<String, Value> = BTreeMap::new();
    let mut current = None;
    let mut reader = SliceReader::new(bytes);
    while let Some(record) = reader.next() {
        let record = record.expect("our own trace decodes");
        let tps = u128::from(reader.ticks_per_second().unwrap_or(1_000_000_000));
        let ns = |ticks: u64| json!((u128::from(ticks) * 1_000_000_000 / tps) as u64);
        let value = match &record {
            Record::ProviderInfo { provider_id, name } => {
                current = Some(provider_id.to_string());
                providers.insert(
                    provider_id.to_string(),
                    json!({"name": name, "events": [], "records": []}),
                );
                continue;
            }
            Record::ProviderSection { provider_id } => {
                current = Some(provider_id.to_string());
                continue;
            }
            Record::ProviderEvent { provider_id, event } => {
                providers.get_mut(&provider_id.to_string()).unwrap()["events"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!(event));
                continue;
            }
            Record::Magic
            | Record::Initialization { .. }
            | Record::String { .. }
            | Record::Thread { .. } => continue,
            Record::Event(e) => {
                let (name, extra) = match e.kind {
                    EventKind::Instant => ("InstantEventRecord", None),
                    EventKind::Counter { id } => {
                        ("CounterEventRecord", Some(("counter_id", json!(id))))
                    }
                    EventKind::DurationBegin => ("DurationBeginEventRecord", None),
                    EventKind::DurationEnd => ("DurationEndEventRecord", None),
                    // The Python reader names the end time `duration_ns`.
                    EventKind::DurationComplete { end } => (
                        "DurationCompleteEventRecord",
                        Some(("duration_ns", ns(end))),
                    ),
                    EventKind::AsyncBegin { id } => {
                        ("AsyncBeginEventRecord", Some(("correlation_id", json!(id))))
                    }
                    EventKind::AsyncInstant { id } => (
                        "AsyncInstantEventRecord",
                        Some(("correlation_id", json!(id))),
                    ),
                    EventKind::AsyncEnd { id } => {
                        ("AsyncEndEventRecord", Some(("correlation_id", json!(id))))
                    }
                    EventKind::FlowBegin { id } => {
                        ("FlowBeginEventRecord", Some(("correlation_id", json!(id))))
                    }
                    EventKind::FlowStep { id } => {
                        ("FlowStepEventRecord", Some(("correlation_id", json!(id))))
                    }
                    EventKind::FlowEnd { id } => {
                        ("FlowEndEventRecord", Some(("correlation_id", json!(id))))
                    }
                };
                let mut v = json!({
                    "record": name,
                    "timestamp_ns": ns(e.timestamp),
                    "category": text(&e.category),
                    "name": text(&e.name),
                    "thread": thread(&e.thread),
                    "args": args(&e.args),
                });
                if let Some((key, value)) = extra {
                    v[key] = value;
                }
                v
            }
            Record::Blob(b) => json!({
                "record": "BlobRecord",
                "name": text(&b.name),
                "type": b.blob_type.value(),
                "payload": hex(&b.payload),
            }),
            Record::UserspaceObject(o) => json!({
                "record": "UserspaceObjectRecord",
                "name": text(&o.name),
                "process_id": match o.process {
                    fxt_format::decode::Process::Known(p) => p,
                    fxt_format::decode::Process::Undefined(i) => panic!("undefined thread {i}"),
                },
                "pointer": o.pointer,
                "args": args(&o.args),
            }),
            Record::KernelObject(o) => json!({
                "record": "KernelObjectRecord",
                "type": o.object_type,
                "id": o.koid,
                "name": text(&o.name),
                "args": args(&o.args),
            }),
            Record::ContextSwitch(c) => json!({
                "record": "ContextSwitchRecord",
                "timestamp_ns": ns(c.timestamp),
                "cpu_id": c.cpu,
                "outgoing_thread_id": c.outgoing_thread,
                "outgoing_thread_state": c.outgoing_state.value(),
                "incoming_thread_id": c.incoming_thread,
                "args": args(&c.args),
            }),
            Record::ThreadWakeup(w) => json!({
                "record": "ThreadWakeupRecord",
                "timestamp_ns": ns(w.timestamp),
                "cpu_id": w.cpu,
                "waking_thread_id": w.waking_thread,
                "args": args(&w.args),
            }),
            Record::Log(l) => json!({
                "record": "LogRecord",
                "timestamp_ns": ns(l.timestamp),
                "thread": thread(&l.thread),
                "message": l.message,
            }),
            Record::LargeBlobWithMetadata(b) => json!({
                "record": "LargeBlobWithMetadataRecord",
                "timestamp_ns": ns(b.timestamp),
                "category": text(&b.category),
                "name": text(&b.name),
                "thread": thread(&b.thread),
                "args": args(&b.args),
                "payload": hex(&b.payload),
            }),
            Record::LargeBlobNoMetadata(b) => json!({
                "record": "LargeBlobNoMetadataRecord",
                "category": text(&b.category),
                "name": text(&b.name),
                "payload": hex(&b.payload),
            }),
            other => panic!("the Python reader cannot read {other:?}"),
        };
        let provider = current.as_ref().expect("records follow provider info");
        providers.get_mut(provider).unwrap()["records"]
            .as_array_mut()
            .unwrap()
            .push(value);
    }
    json!({ "providers": providers, "eof_error": null })
}

/// Runs tests/python/dump.py on `bytes` and asserts that the Python reader
/// decodes exactly what ours does, record by record.
fn assert_python_agrees(name: &str, bytes: &[u8]) -> Value {
    let python = python();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python_reader");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/dump.py");
    let output = run(Command::new(&python).arg(&script).arg(&path));
    let theirs: Value = serde_json::from_str(&output).expect("dump.py prints JSON");
    let ours = expected(bytes);

    // Compare record by record first, for a readable failure.
    for (id, provider) in ours["providers"].as_object().unwrap() {
        let their_records = theirs["providers"][id]["records"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let our_records = provider["records"].as_array().unwrap();
        for (i, (a, b)) in our_records.iter().zip(&their_records).enumerate() {
            assert_eq!(
                a, b,
                "{name}: provider {id}, record {i}: ours (left) vs Python's (right)"
            );
        }
    }
    assert_eq!(ours, theirs, "{name}");
    ours
}

/// A trace written by the engine itself, through the macros, from several
/// threads, with every argument type the Python reader knows: it reads it
/// exactly as we do, and sees every event.
#[test]
fn python_fxt_package_reads_the_engines_traces_identically() {
    use fxt::{trace_counter, trace_duration_scope, trace_instant, trace_log};
    let _g = sessions();
    let session = fxt::start(fxt::Config::new().buffer_size(1 << 20)).unwrap();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            s.spawn(move || {
                fxt::set_thread_name(&format!("py-{t}"));
                for i in 0..100u64 {
                    let _d = trace_duration_scope!("py", "step", "i" => i);
                    trace_instant!("py", "tick", "t" => t, "i" => i as i32, "f" => 0.5, "ok" => i % 2 == 0, "s" => "text", "p" => 0x1000 as *const u8, "k" => fxt::Koid(7), "n" => ());
                    trace_counter!("py", "load", id = t, "v" => i as i64, "w" => 1.5f64);
                }
                trace_log!("py", "thread {t} done");
            });
        }
    });
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0);
    let ours = assert_python_agrees("engine.fxt", &bytes);
    let events = ours["providers"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|p| p["records"].as_array().unwrap().iter())
        .filter(|r| r.to_string().contains("\"py\""))
        .count();
    // 3 threads x 100 x (duration + instant + counter) + 3 logs (no category).
    assert_eq!(events, 3 * 100 * 3);
}

/// A thread emitting at full speed while sampled at 10 kHz (issue 31):
/// the PyPI parser reads every record, the `fxt.sample` blobs included,
/// exactly as our decoder does.
#[test]
fn python_fxt_package_reads_a_sampled_trace() {
    use fxt::trace_instant;
    let _g = sessions();
    let session = fxt::start(fxt::Config::new().buffer_size(16 << 20).sample_hz(10_000)).unwrap();
    std::thread::spawn(|| {
        let mut x = 0u64;
        for i in 0..20_000u64 {
            trace_instant!("py", "tick", "i" => i);
            for _ in 0..2_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
    })
    .join()
    .unwrap();
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let ours = assert_python_agrees("sampled.fxt", &bytes);
    let text = ours.to_string();
    let samples = text.matches("\"fxt.sample\"").count() as u64;
    assert!(samples > 0, "{stats:?}");
    assert_eq!(samples + stats.records_dropped, stats.samples, "{stats:?}");
}

/// One session at a time among the tests of this file that start one in
/// this process (they run in parallel).
fn sessions() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A snapshot of a live session (issue 14) is an ordinary trace plus its
/// `fxt`/`snapshot` instant: the PyPI parser reads it as we do.
#[test]
fn python_fxt_package_reads_a_snapshot() {
    use fxt::{trace_duration_scope, trace_instant};
    let _g = sessions();
    let session = fxt::start(fxt::Config::new().buffer_size(1 << 20)).unwrap();
    for i in 0..50u64 {
        let _d = trace_duration_scope!("py", "step", "i" => i);
        trace_instant!("py", "tick", "i" => i);
    }
    let (snapshot, stats) = session.snapshot_to_vec().unwrap();
    trace_instant!("py", "after");
    session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0);
    let ours = assert_python_agrees("snapshot.fxt", &snapshot);
    let text = ours.to_string();
    assert!(text.contains("\"snapshot\""), "the marker is read");
    assert!(
        !text.contains("\"after\""),
        "the snapshot ends where it was taken"
    );
}

#[test]
fn python_fxt_package_reads_our_traces_identically() {
    let bytes = trace();
    let ours = assert_python_agrees("portable.fxt", &bytes);
    // Everything written was seen: 3 providers, every readable record type.
    let records: usize = ours["providers"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| p["records"].as_array().unwrap().len())
        .sum();
    assert_eq!(records, 25 + 1 + 1);
}

/// A split blob of 100,000 bytes (an instant and four blob records, see
/// `fxt_format::encode::split_blob`) between two events: the Python reader
/// walks every record as we do, and its blob records concatenate to the
/// payload our joiner gives back.
#[test]
fn python_fxt_package_reads_a_split_blob() {
    use fxt_format::decode::join_split_blobs;
    use fxt_format::encode::{MagicNumber, SplitBlob};
    let payload: Vec<u8> = (0..100_000u32).map(|i| (i * 13 % 251) as u8).collect();
    let thread = ThreadRef::Inline {
        process: 3,
        thread: 4,
    };
    let event = |timestamp| Event {
        kind: K::Instant,
        timestamp,
        thread,
        category: StringRef::Inline("cat"),
        name: StringRef::Inline("around"),
        args: &[],
    };
    let mut words = Vec::new();
    encode_into_vec(&MagicNumber, &mut words).unwrap();
    encode_into_vec(
        &ProviderInfo {
            provider_id: 1,
            name: "split",
        },
        &mut words,
    )
    .unwrap();
    encode_into_vec(
        &Initialization {
            ticks_per_second: 1_000_000_000,
        },
        &mut words,
    )
    .unwrap();
    encode_into_vec(&event(1), &mut words).unwrap();
    let blob = SplitBlob::new(
        StringRef::Inline("cat"),
        StringRef::Inline("image"),
        2,
        thread,
        &payload,
    );
    encode_into_vec(&blob, &mut words).unwrap();
    encode_into_vec(&event(3), &mut words).unwrap();
    let bytes = words_to_bytes(&words);

    let ours = assert_python_agrees("split_blob.fxt", &bytes);
    let records = ours["providers"]["1"]["records"].as_array().unwrap();
    // instant, the group's instant, 4 blob records, instant.
    assert_eq!(records.len(), 7);
    let python_payload: String = records
        .iter()
        .filter(|r| r["record"] == "BlobRecord")
        .map(|r| r["payload"]["hex"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(python_payload, hex(&payload)["hex"].as_str().unwrap());
    let joined: Vec<_> = join_split_blobs(&bytes).collect();
    // magic, provider info, initialization, instant, the group's instant,
    // the joined blob, instant.
    assert_eq!(joined.len(), 7);
    assert_eq!(joined[5].joined_parts, 4);
    match &joined[5].item {
        Ok(Record::Blob(b)) => assert_eq!(b.payload, payload),
        other => panic!("expected the joined blob, got {other:?}"),
    }
}

/// The environment variable that turns a run of this test binary into the
/// child of [`python_fxt_package_reads_a_killed_crash_safe_trace`].
const CRASH_CHILD: &str = "FXT_PY_CRASH_CHILD";

/// The child process of [`python_fxt_package_reads_a_killed_crash_safe_trace`]:
/// traces from two threads into a crash-safe circular file until killed.
#[test]
#[ignore = "child process of python_fxt_package_reads_a_killed_crash_safe_trace"]
fn crash_child() {
    use fxt::{trace_counter, trace_duration_scope, trace_instant};
    use std::io::Write;
    let Some(path) = std::env::var_os(CRASH_CHILD) else {
        return;
    };
    let config = fxt::Config::new()
        .buffer_size(1 << 20)
        .mode(fxt::Mode::Circular)
        .crash_safe(true)
        .output(path);
    let _session = fxt::start(config).unwrap();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            s.spawn(move || {
                for i in 0u64.. {
                    let _d = trace_duration_scope!("crash", "step", "i" => i);
                    trace_instant!("crash", "tick", "t" => t, "i" => i);
                    trace_counter!("crash", "load", "v" => i as i64);
                    if t == 0 && i == 20_000 {
                        println!("ready");
                        std::io::stdout().flush().unwrap();
                    }
                }
            });
        }
    });
}

/// A crash-safe trace whose writer was killed with SIGKILL in the middle of
/// writing decodes, as it is, in the Python reader exactly as in ours.
#[test]
fn python_fxt_package_reads_a_killed_crash_safe_trace() {
    use std::io::BufRead;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python_reader");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("killed-{}.fxt", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "crash_child", "--nocapture"])
        .env(CRASH_CHILD, &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let ready = stdout
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("ready"));
    assert!(ready, "the child never got ready");
    std::thread::sleep(std::time::Duration::from_millis(30));
    child.kill().unwrap(); // SIGKILL: no destructor, no hook, no finish
    child.wait().unwrap();

    let bytes = std::fs::read(&path).unwrap();
    let (records, error) = fxt_format::decode::decode_all_lossy(&bytes);
    assert_eq!(error, None, "the killed file decodes to the end");
    let events = records
        .iter()
        .filter(|r| matches!(r, Record::Event(e) if e.category == "crash"))
        .count();
    assert!(events > 1000, "{events} events survived");
    assert_python_agrees("killed.fxt", &bytes);
    std::fs::remove_file(&path).unwrap();
}

/// CPU samples (issue 31): `fxt.sample`, `fxt.modules` and a split
/// `fxt.symbols` blob group. The PyPI parser reads them as the blob records
/// they are, and the payloads it gives back decode with our decoders to
/// exactly what was written.
#[test]
fn python_fxt_package_reads_sample_records() {
    use fxt_format::encode::MagicNumber;
    use fxt_format::samples::{
        Frame, Module, Modules, Sample, SampleRecord, Symbol, Symbols, Walk,
    };
    let thread = ThreadRef::Inline {
        process: 40,
        thread: 41,
    };
    let mut words = Vec::new();
    encode_into_vec(&MagicNumber, &mut words).unwrap();
    encode_into_vec(
        &ProviderInfo {
            provider_id: 1,
            name: "samples",
        },
        &mut words,
    )
    .unwrap();
    encode_into_vec(
        &Initialization {
            ticks_per_second: 1_000_000_000,
        },
        &mut words,
    )
    .unwrap();
    let modules = [Module {
        start: 0x5555_0000_0000,
        end: 0x5555_0010_0000,
        offset: 0x1000,
        build_id: &[0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5],
        path: "/usr/bin/app",
    }];
    Modules {
        pid: 40,
        modules: &modules,
    }
    .encode_records(0, thread, &mut words)
    .unwrap();
    let frames = [0x5555_0000_1234u64, 0x5555_0000_5678, 0x5555_0000_9abc];
    let sample = Sample {
        timestamp: 1000,
        pid: 40,
        tid: 41,
        walk: Walk::UnwindTables,
        truncated: true,
        frames: &frames,
    };
    encode_into_vec(&sample, &mut words).unwrap();
    let names: Vec<String> = (0..2000).map(|i| format!("app::work::step_{i}")).collect();
    let symbol_frames: Vec<[Frame; 1]> = names
        .iter()
        .map(|n| {
            [Frame {
                function: n,
                file: "src/work.rs",
                line: 7,
            }]
        })
        .collect();
    let symbols: Vec<Symbol> = symbol_frames
        .iter()
        .enumerate()
        .map(|(i, f)| Symbol {
            address: 0x5555_0000_0000 + i as u64,
            frames: f,
        })
        .collect();
    let table = Symbols {
        pid: 40,
        symbols: &symbols,
    };
    table.encode_records(2000, thread, &mut words).unwrap();
    let ours = assert_python_agrees("samples.fxt", &words_to_bytes(&words));

    // Python's blob payloads, decoded by ours.
    let records = ours["providers"]["1"]["records"].as_array().unwrap();
    let payload = |name: &str| -> Vec<u8> {
        let hex: String = records
            .iter()
            .filter(|r| r["record"] == "BlobRecord" && r["name"] == name)
            .map(|r| r["payload"]["hex"].as_str().unwrap().to_owned())
            .collect();
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    };
    let got = SampleRecord::decode(&payload("fxt.sample")).unwrap();
    assert_eq!(got.frames, frames);
    assert_eq!((got.timestamp, got.pid, got.tid), (1000, 40, 41));
    let got = fxt_format::samples::ModulesRecord::decode(&payload("fxt.modules")).unwrap();
    assert_eq!(got.modules[0].as_module(), modules[0]);
    // The split symbol table's parts, concatenated in file order.
    let symbols_payload = payload("fxt.symbols");
    assert_eq!(symbols_payload, table.payload());
    let got = fxt_format::samples::SymbolsRecord::decode(&symbols_payload).unwrap();
    assert_eq!(got.symbols.len(), 2000);
    assert_eq!(got.symbols[1999].frames[0].function, names[1999]);
    let blobs = records
        .iter()
        .filter(|r| r["record"] == "BlobRecord")
        .count();
    assert!(blobs > 3, "the symbols were split into several records");
}
