//! What a trace shows at every limit of the format, through the public API:
//! the thread table (255), the string table (32767), the string length
//! (32000 bytes), the argument count (15), the record size (4095 words),
//! special floats, empty strings and blobs, and a full buffer in each mode.
#![deny(warnings, clippy::all)]

mod reliability_support;

use std::sync::Barrier;

use fxt::format::encode::ArgValue as EncodeArg;
use fxt::{
    trace_blob, trace_counter, trace_duration, trace_duration_scope, trace_instant, trace_log, Koid,
};
use reliability_support::*;

fn pid() -> u64 {
    u64::from(std::process::id())
}

/// A large buffer with default chunks: nothing is dropped in these tests.
fn big() -> Config {
    Config::new().buffer_size(64 << 20)
}

// ---------------------------------------------------------------------------
// Thread table: 255 entries.
// ---------------------------------------------------------------------------

/// 300 threads (alive at once, so their OS ids are distinct) each name
/// themselves, emit an instant and a log. The first 255 to register get
/// thread records; the others' events carry inline (pid, tid). Every event
/// decodes to the (pid, tid) its thread's naming record gives.
#[test]
fn threads_past_the_thread_table_are_inline() {
    const THREADS: usize = 300;
    // Threads from this one on also write a large blob (which has a thread
    // ref too).
    const BLOBS_FROM: usize = 250;
    let trace = trace_with(big(), || {
        let done = Barrier::new(THREADS);
        std::thread::scope(|scope| {
            for i in 0..THREADS {
                let done = &done;
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn_scoped(scope, move || {
                        fxt::set_thread_name(&format!("t{i:03}"));
                        trace_instant!("limits", "thread event", "i" => i as u64);
                        trace_log!("limits", "log from {i}");
                        if i >= BLOBS_FROM {
                            trace_blob!(
                                "limits",
                                "thread blob",
                                vec![(i - BLOBS_FROM) as u8; 40_000]
                            );
                        }
                        // Stay alive until every thread has recorded.
                        done.wait();
                    })
                    .expect("spawn");
            }
        });
    });
    trace.check_accounting(Some((2 * THREADS + THREADS - BLOBS_FROM) as u64));
    assert_eq!(trace.stats.records_dropped, 0);
    assert_eq!(trace.stats.threads, THREADS as u64);

    // Thread table: exactly indices 1..=255, all of this process.
    let table = trace.thread_records();
    assert_eq!(table.len(), 255, "the thread table is full, not overfull");
    let indices: Vec<u8> = table.iter().map(|t| t.0).collect();
    assert_eq!(indices, (1..=255).collect::<Vec<u8>>());
    assert!(table.iter().all(|t| t.1 == pid()));

    // One naming record per thread: object type 2, arg process = pid.
    let mut koid_of = std::collections::HashMap::new();
    for (_, k) in trace.kernel_objects(OBJ_THREAD) {
        assert_eq!(
            args_of_object(k),
            [("process".to_string(), ArgValue::Koid(pid()))]
        );
        let name = k.name.to_string();
        assert!(
            koid_of.insert(name.clone(), k.koid).is_none(),
            "{name} named once"
        );
    }
    assert_eq!(koid_of.len(), THREADS);
    let koids: std::collections::HashSet<u64> = koid_of.values().copied().collect();
    assert_eq!(koids.len(), THREADS, "distinct thread koids");
    // And the process is named.
    let processes = trace.kernel_objects(OBJ_PROCESS);
    assert_eq!(processes.len(), 1);
    assert_eq!(processes[0].1.koid, pid());

    // Every event on the right (pid, tid); exactly 45 with inline refs.
    let mut inline = 0;
    for (header, e) in trace.events_with_headers() {
        if split_blob_parts(e).is_some() {
            // A large blob's split group: checked below with the blobs.
            continue;
        }
        let i = u64_arg(e, "i");
        let expected = Thread::Known {
            process: pid(),
            thread: koid_of[&format!("t{i:03}")],
        };
        assert_eq!(e.thread, expected, "event of thread {i}");
        inline += usize::from(event_thread_ref(header) == 0);
    }
    assert_eq!(
        inline,
        THREADS - 255,
        "events of threads past the table are inline"
    );
    // Logs too (their thread ref is in bits 32..40).
    for l in trace.logs() {
        let i: usize = l
            .message
            .strip_prefix("log from ")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            l.thread,
            Thread::Known {
                process: pid(),
                thread: koid_of[&format!("t{i:03}")]
            }
        );
    }
    // Large blobs too.
    let large = large_blobs(&trace);
    assert_eq!(large.len(), THREADS - BLOBS_FROM);
    for b in large {
        let i = BLOBS_FROM + usize::from(b.payload[0]);
        assert_eq!(b.payload, vec![(i - BLOBS_FROM) as u8; 40_000]);
        assert_eq!(
            b.thread,
            Thread::Known {
                process: pid(),
                thread: koid_of[&format!("t{i:03}")]
            }
        );
    }
}

fn args_of_object(k: &KernelObject) -> Vec<(String, ArgValue)> {
    k.args
        .iter()
        .map(|a| (a.name.to_string(), a.value.clone()))
        .collect()
}

// ---------------------------------------------------------------------------
// String table: 32767 entries.
// ---------------------------------------------------------------------------

/// Thread names are interned at run time (`set_thread_name` writes a naming
/// record whose name goes into the string table), so 33000 distinct names
/// overflow the table. Past it, names, call sites registered later
/// (category, name, argument key) and thread names are inline, and all of
/// them decode to the right text.
#[test]
fn strings_past_the_string_table_are_inline() {
    const NAMES: usize = 33_000;
    let trace = trace_with(big(), || {
        trace_instant!("limits", "warm up");
        for i in 0..NAMES {
            fxt::set_thread_name(&format!("name-{i:05}"));
        }
        // A call site first used now: every string of it is inline.
        trace_instant!("late category", "late name", "late key" => "late value", "n" => 7u32);
        trace_log!("late category", "late log");
        trace_blob!("late category", "late blob", [1u8, 2, 3]);
        trace_blob!("late category", "late large blob", vec![9u8; 40_000]);
        // Dynamic string values (always inline).
        for i in 0..100 {
            trace_instant!("limits", "dynamic", "v" => format!("value-{i}"));
        }
        // A thread registering now: its name is inline.
        std::thread::Builder::new()
            .name("late thread".into())
            .spawn(|| trace_instant!("limits", "from late thread"))
            .unwrap()
            .join()
            .unwrap();
        trace_instant!("limits", "warm up");
    });
    trace.check_accounting(Some(2 + 1 + 1 + 2 + 100 + 1));
    trace.check_resolved();

    // The table: exactly 32767 entries, each index once, no empty string.
    let strings = trace.strings();
    assert_eq!(strings.len(), 0x7fff);
    let mut indices: Vec<u16> = strings.iter().map(|s| s.0).collect();
    indices.sort_unstable();
    assert_eq!(indices, (1..=0x7fff).collect::<Vec<u16>>());
    assert!(strings.iter().all(|s| !s.1.is_empty()));
    // Strings interned before the loop; the loop's names fill the rest.
    let before = strings.iter().filter(|s| !s.1.starts_with("name-")).count();
    let indexed_names = 0x7fff - before;

    // Every name decodes right, in order, on the main thread's koid;
    // exactly the ones past the table are inline.
    let main_koid = match trace.named("warm up").next().unwrap().thread {
        Thread::Known { thread, .. } => thread,
        other => panic!("{other:?}"),
    };
    let named: Vec<(u64, &KernelObject)> = trace
        .kernel_objects(OBJ_THREAD)
        .into_iter()
        .filter(|(_, k)| k.name.as_str().is_some_and(|n| n.starts_with("name-")))
        .collect();
    assert_eq!(named.len(), NAMES);
    for (i, (header, k)) in named.iter().enumerate() {
        assert_eq!(k.name, format!("name-{i:05}").as_str());
        assert_eq!(k.koid, main_koid);
        assert_eq!(
            is_inline(kernel_object_name_ref(*header)),
            i >= indexed_names,
            "name {i}"
        );
    }

    // The late call site: inline category, name and key.
    let (header, late) = trace
        .events_with_headers()
        .find(|(_, e)| e.name == "late name")
        .expect("the late event");
    assert!(is_inline(event_category_ref(header)) && is_inline(event_name_ref(header)));
    assert_eq!(late.category, "late category");
    assert_eq!(
        args(late),
        [
            ("late key".to_string(), s("late value")),
            ("n".to_string(), ArgValue::U32(7))
        ]
    );
    assert_eq!(
        trace
            .logs()
            .iter()
            .filter(|l| l.message == "late log")
            .count(),
        1
    );
    let blobs: Vec<&Blob> = blobs(&trace).into_iter().map(|(_, b)| b).collect();
    assert_eq!(blobs.len(), 1);
    assert_eq!(
        (blobs[0].name.as_str(), &blobs[0].payload[..]),
        (Some("late blob"), &[1u8, 2, 3][..])
    );
    let large = large_blobs(&trace);
    assert_eq!(large.len(), 1);
    assert_eq!(
        (large[0].category.as_str(), large[0].name.as_str()),
        (Some("late category"), Some("late large blob"))
    );
    assert_eq!(large[0].payload, vec![9u8; 40_000]);

    let dynamic: Vec<String> = trace
        .named("dynamic")
        .map(|e| format!("{:?}", arg(e, "v")))
        .collect();
    let expected: Vec<String> = (0..100)
        .map(|i| format!("{:?}", s(&format!("value-{i}"))))
        .collect();
    assert_eq!(dynamic, expected);

    // The late thread: named inline, its event on its koid.
    let late_thread = trace
        .kernel_objects(OBJ_THREAD)
        .into_iter()
        .find(|(_, k)| k.name == "late thread")
        .expect("the late thread is named");
    assert!(is_inline(kernel_object_name_ref(late_thread.0)));
    assert_eq!(
        trace.one("from late thread").thread,
        Thread::Known {
            process: pid(),
            thread: late_thread.1.koid
        }
    );
    // Call sites interned before the table filled stay indexed.
    for (header, e) in trace
        .events_with_headers()
        .filter(|(_, e)| e.name == "warm up")
    {
        assert!(!is_inline(event_category_ref(header)) && !is_inline(event_name_ref(header)));
        assert_eq!(e.category, "limits");
    }
}

/// The durable region (strings, threads, names; 64 KiB with a 256 KiB
/// buffer) full: strings and threads registered after that are inline, and
/// every record still resolves. (Naming records that no longer fit are
/// left out: a thread registered then has no name in the trace.)
#[test]
fn durable_region_full() {
    let trace = trace_with(Config::new().buffer_size(256 << 10), || {
        trace_instant!("limits", "before full");
        // 3000 names of at least 6 words each (string + naming record)
        // overflow the region's 8192 words.
        for i in 0..3000 {
            fxt::set_thread_name(&format!("n{i}"));
        }
        trace_instant!("durable full category", "durable full name", "durable full key" => 5u64);
        std::thread::spawn(|| {
            trace_instant!("limits", "new thread after full", "k" => 1u32);
            trace_log!("limits", "log after full");
        })
        .join()
        .unwrap();
        trace_instant!("limits", "before full");
    });
    trace.check_accounting(Some(5));
    assert_eq!(trace.stats.records_dropped, 0);
    trace.check_resolved();
    let (h, e) = trace
        .events_with_headers()
        .find(|(_, e)| e.name == "durable full name")
        .expect("the event");
    assert!(is_inline(event_category_ref(h)) && is_inline(event_name_ref(h)));
    assert_eq!(e.category, "durable full category");
    assert_eq!(
        args(e),
        [("durable full key".to_string(), ArgValue::U64(5))]
    );
    let (h, e) = trace
        .events_with_headers()
        .find(|(_, e)| e.name == "new thread after full")
        .expect("the event");
    assert_eq!(
        event_thread_ref(h),
        0,
        "no room for a thread record: inline"
    );
    assert!(matches!(e.thread, Thread::Known { process, .. } if process == pid()));
    assert_eq!(args(e), [("k".to_string(), ArgValue::U32(1))]);
    let log = trace
        .logs()
        .into_iter()
        .find(|l| l.message == "log after full")
        .expect("the log");
    assert_eq!(log.thread, e.thread);
    let before: Vec<&Event> = trace.named("before full").collect();
    assert_eq!(before.len(), 2);
    assert_eq!(before[0].thread, before[1].thread);
    assert!(trace.thread_records().len() < 255);
}

/// A blob too large for one record, as the file holds it: a split blob
/// group (the default) or a large blob record with metadata.
struct LargeView {
    category: fxt_format::decode::Text,
    name: fxt_format::decode::Text,
    timestamp: u64,
    thread: Thread,
    payload: Vec<u8>,
}

/// Indices of the records of split blob groups: (event, parts).
fn split_groups(trace: &Trace) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    for (i, r) in trace.records.iter().enumerate() {
        if let Record::Event(e) = r {
            if let Some(n) = reliability_support::split_blob_parts(e) {
                out.push((i, i + 1..i + 1 + n as usize));
            }
        }
    }
    out
}

fn large_blobs(trace: &Trace) -> Vec<LargeView> {
    let mut out: Vec<LargeView> = trace
        .records
        .iter()
        .filter_map(|r| match r {
            Record::LargeBlobWithMetadata(b) => Some(LargeView {
                category: b.category.clone(),
                name: b.name.clone(),
                timestamp: b.timestamp,
                thread: b.thread,
                payload: b.payload.clone(),
            }),
            _ => None,
        })
        .collect();
    for (event, parts) in split_groups(trace) {
        let Record::Event(e) = &trace.records[event] else {
            unreachable!()
        };
        let mut payload = Vec::new();
        for r in &trace.records[parts] {
            match r {
                Record::Blob(b) => {
                    assert_eq!(b.name, e.name, "a part named like its group");
                    payload.extend_from_slice(&b.payload);
                }
                other => panic!("a split group part that is not a blob: {other:?}"),
            }
        }
        out.push(LargeView {
            category: e.category.clone(),
            name: e.name.clone(),
            timestamp: e.timestamp,
            thread: e.thread,
            payload,
        });
    }
    out
}

/// Blob records that are not parts of a split blob group.
fn blobs(trace: &Trace) -> Vec<(u64, &Blob)> {
    let parts: std::collections::HashSet<usize> = split_groups(trace)
        .into_iter()
        .flat_map(|(_, p)| p)
        .collect();
    trace
        .records
        .iter()
        .zip(&trace.headers)
        .enumerate()
        .filter(|(i, _)| !parts.contains(i))
        .filter_map(|(_, (r, h))| match r {
            Record::Blob(b) => Some((*h, b)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------
// String length: 32000 bytes, cut on a char boundary.
// ---------------------------------------------------------------------------

/// Strings of every width of UTF-8 character straddling (or ending at) byte
/// 32000, and plain long ASCII strings.
fn long_strings() -> Vec<String> {
    let mut v = vec!["a".repeat(32_000), "b".repeat(32_001), "c".repeat(40_000)];
    for ch in ['é', '€', '😀'] {
        let w = ch.len_utf8();
        // The char starts from 32000 - w - 1 (ends before the cut) to 32000
        // (starts at the cut).
        for start in (32_000 - w - 1)..=32_000 {
            let mut s = "x".repeat(start);
            s.push(ch);
            s.push_str(&"y".repeat(50));
            v.push(s);
        }
    }
    v
}

/// A `&'static str` name of 32010 bytes with a 3-byte char at bytes
/// 31999..32002: cut to 31999 bytes. (A `const`, not a `static`: call site
/// names are `&'static str` constants.)
#[allow(clippy::large_const_arrays)]
const LONG_NAME_BYTES: [u8; 32_010] = {
    let mut b = [b'n'; 32_010];
    b[31_999] = 0xe2; // '€'
    b[32_000] = 0x82;
    b[32_001] = 0xac;
    b
};
const LONG_NAME: &str = match std::str::from_utf8(&LONG_NAME_BYTES) {
    Ok(s) => s,
    Err(_) => panic!("LONG_NAME_BYTES is UTF-8"),
};

#[test]
fn long_strings_are_cut_at_a_char_boundary() {
    let strings = long_strings();
    let trace = trace_with(big(), || {
        for (i, text) in strings.iter().enumerate() {
            trace_instant!("limits", "long arg", "i" => i as u64, "s" => text.as_str());
            trace_log!("limits", "{text}");
            let text = text.clone();
            std::thread::spawn(move || {
                fxt::set_thread_name(&text);
                trace_instant!("limits", "named thread", "i" => i as u64);
            })
            .join()
            .unwrap();
        }
        trace_instant!(LONG_NAME, LONG_NAME, "k" => 1u32);
    });
    trace.check_accounting(Some(3 * strings.len() as u64 + 1));
    let events: Vec<&Event> = trace.named("long arg").collect();
    assert_eq!(events.len(), strings.len());
    let logs = trace.logs();
    assert_eq!(logs.len(), strings.len());
    let names: Vec<&str> = trace
        .kernel_objects(OBJ_THREAD)
        .into_iter()
        .filter_map(|(_, k)| k.name.as_str())
        .filter(|n| n.len() > 31_000)
        .collect();
    assert_eq!(names.len(), strings.len());
    for (i, text) in strings.iter().enumerate() {
        let expected = cut_32000(text);
        assert!(expected.len() <= 32_000 && expected.len() > 31_990);
        assert_eq!(u64_arg(events[i], "i"), i as u64);
        assert!(
            *arg(events[i], "s") == s(expected),
            "argument {i} cut to {} bytes",
            expected.len()
        );
        assert!(logs[i].message == expected, "log {i}");
        assert!(names[i] == expected, "thread name {i}");
    }
    // The static call site's strings are cut the same way (string records).
    let long = trace
        .events()
        .find(|e| e.args.first().is_some_and(|a| a.name == "k"))
        .expect("the long-named event");
    assert_eq!(long.name.as_str().map(str::len), Some(31_999));
    assert!(long.name == cut_32000(LONG_NAME) && long.category == cut_32000(LONG_NAME));
    assert!(trace.strings().iter().any(|s| s.1 == cut_32000(LONG_NAME)));
}

// ---------------------------------------------------------------------------
// Arguments: 15 of them, every type, special floats, empty strings.
// ---------------------------------------------------------------------------

// 16 arguments are refused at compile time: tests/ui/fail/too_many_args.rs
// (function-like macros) and tests/ui/fail/too_many_args_attr.rs
// (`#[trace_duration(args(...))]`), run by tests/trybuild.rs.

#[trace_duration(category = "limits", args(a0 = 0u8, a1 = 1u16, a2 = 2u32, a3 = 3u64, a4 = 4usize, a5 = -5i8, a6 = -6i16, a7 = -7i32, a8 = -8i64, a9 = -9isize, a10 = 10.5f32, a11 = 11.5f64, a12 = true, a13 = "thirteen", a14 = ()))]
fn fifteen_attr_args() {}

fn fifteen_expected() -> Vec<(String, ArgValue)> {
    vec![
        ("a0".into(), ArgValue::U32(0)),
        ("a1".into(), ArgValue::U32(1)),
        ("a2".into(), ArgValue::U32(2)),
        ("a3".into(), ArgValue::U64(3)),
        ("a4".into(), ArgValue::U64(4)),
        ("a5".into(), ArgValue::I32(-5)),
        ("a6".into(), ArgValue::I32(-6)),
        ("a7".into(), ArgValue::I32(-7)),
        ("a8".into(), ArgValue::I64(-8)),
        ("a9".into(), ArgValue::I64(-9)),
        ("a10".into(), ArgValue::F64(10.5)),
        ("a11".into(), ArgValue::F64(11.5)),
        ("a12".into(), ArgValue::Bool(true)),
        ("a13".into(), s("thirteen")),
        ("a14".into(), ArgValue::Null),
    ]
}

#[test]
fn fifteen_arguments_of_every_type() {
    let ptr = std::ptr::null::<u8>().wrapping_add(0x1234);
    let owned = String::from("owned");
    let trace = trace_with(big(), || {
        // Only numbers: the fast path.
        trace_instant!("limits", "fifteen numbers",
            "a" => 1u8, "b" => 2u16, "c" => 3u32, "d" => u64::MAX, "e" => usize::MAX,
            "f" => i8::MIN, "g" => i16::MIN, "h" => i32::MIN, "i" => i64::MIN, "j" => isize::MIN,
            "k" => 0.5f32, "l" => f64::MAX, "m" => false, "n" => ptr, "o" => Koid(77));
        // With strings, null and options: the general path.
        trace_instant!("limits", "fifteen mixed",
            "a" => "str", "b" => &owned, "c" => (), "d" => None::<u32>, "e" => Some(5i64),
            "f" => -1i32, "g" => 2u32, "h" => 3i64, "i" => 4u64, "j" => 5.25f64,
            "k" => true, "l" => ptr, "m" => Koid(9), "n" => "", "o" => std::borrow::Cow::Borrowed("cow"));
        let _scope = trace_duration_scope!("limits", "fifteen scope",
            "a0" => 0u8, "a1" => 1u16, "a2" => 2u32, "a3" => 3u64, "a4" => 4usize,
            "a5" => -5i8, "a6" => -6i16, "a7" => -7i32, "a8" => -8i64, "a9" => -9isize,
            "a10" => 10.5f32, "a11" => 11.5f64, "a12" => true, "a13" => "thirteen", "a14" => ());
        fifteen_attr_args();
    });
    trace.check_accounting(Some(4));
    let p = 0x1234;
    assert_eq!(
        args(trace.one("fifteen numbers")),
        [
            ("a".to_string(), ArgValue::U32(1)),
            ("b".to_string(), ArgValue::U32(2)),
            ("c".to_string(), ArgValue::U32(3)),
            ("d".to_string(), ArgValue::U64(u64::MAX)),
            ("e".to_string(), ArgValue::U64(usize::MAX as u64)),
            ("f".to_string(), ArgValue::I32(i8::MIN.into())),
            ("g".to_string(), ArgValue::I32(i16::MIN.into())),
            ("h".to_string(), ArgValue::I32(i32::MIN)),
            ("i".to_string(), ArgValue::I64(i64::MIN)),
            ("j".to_string(), ArgValue::I64(isize::MIN as i64)),
            ("k".to_string(), ArgValue::F64(0.5)),
            ("l".to_string(), ArgValue::F64(f64::MAX)),
            ("m".to_string(), ArgValue::Bool(false)),
            ("n".to_string(), ArgValue::Pointer(p)),
            ("o".to_string(), ArgValue::Koid(77)),
        ]
    );
    assert_eq!(
        args(trace.one("fifteen mixed")),
        [
            ("a".to_string(), s("str")),
            ("b".to_string(), s("owned")),
            ("c".to_string(), ArgValue::Null),
            ("d".to_string(), ArgValue::Null),
            ("e".to_string(), ArgValue::I64(5)),
            ("f".to_string(), ArgValue::I32(-1)),
            ("g".to_string(), ArgValue::U32(2)),
            ("h".to_string(), ArgValue::I64(3)),
            ("i".to_string(), ArgValue::U64(4)),
            ("j".to_string(), ArgValue::F64(5.25)),
            ("k".to_string(), ArgValue::Bool(true)),
            ("l".to_string(), ArgValue::Pointer(p)),
            ("m".to_string(), ArgValue::Koid(9)),
            ("n".to_string(), s("")),
            ("o".to_string(), s("cow")),
        ]
    );
    assert_eq!(args(trace.one("fifteen scope")), fifteen_expected());
    assert_eq!(args(trace.one("fifteen_attr_args")), fifteen_expected());
}

/// NaN (with payloads, both signs, signalling), the infinities, -0.0 and
/// subnormals survive bit for bit (compared with `to_bits`), in instants
/// (fast path), with a string argument (general path) and in counters.
#[test]
fn special_doubles_round_trip_bit_exactly() {
    let values = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff8_dead_beef_0001), // quiet NaN with a payload
        f64::from_bits(0x7ff0_0000_0000_0001), // signalling NaN
        f64::from_bits(0xfff4_0000_0000_0000), // negative signalling NaN
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        f64::from_bits(1), // smallest subnormal
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
    ];
    let trace = trace_with(big(), || {
        for (i, &v) in values.iter().enumerate() {
            trace_instant!("limits", "double", "i" => i as u64, "v" => v);
            trace_instant!("limits", "double with text", "v" => v, "t" => "text");
            trace_counter!("limits", "double counter", id = i as u64, "v" => v);
        }
        trace_instant!("limits", "f32", "nan" => f32::NAN, "inf" => f32::INFINITY, "-inf" => f32::NEG_INFINITY);
    });
    trace.check_accounting(Some(3 * values.len() as u64 + 1));
    for name in ["double", "double with text", "double counter"] {
        let got: Vec<u64> = trace
            .named(name)
            .map(|e| match arg(e, "v") {
                ArgValue::F64(v) => v.to_bits(),
                other => panic!("{other:?}"),
            })
            .collect();
        let expected: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, expected, "{name}: bit-exact doubles");
    }
    let f = trace.one("f32");
    assert!(matches!(arg(f, "nan"), ArgValue::F64(v) if v.is_nan()));
    assert!(matches!(arg(f, "inf"), ArgValue::F64(v) if v.to_bits() == f64::INFINITY.to_bits()));
    assert!(
        matches!(arg(f, "-inf"), ArgValue::F64(v) if v.to_bits() == f64::NEG_INFINITY.to_bits())
    );
}

/// Empty category, name, key and value; empty log message; zero-length
/// blobs (named and unnamed). Empty strings are the empty ref (0), never a
/// string record.
#[test]
fn empty_strings_and_blobs() {
    let trace = trace_with(big(), || {
        trace_instant!("", "", "" => "");
        trace_instant!("limits", "empty value", "v" => "", "w" => String::new());
        trace_counter!("", "", "" => 0u32);
        trace_log!("limits", "");
        trace_blob!("limits", "empty blob", [0u8; 0]);
        trace_blob!("", "", Vec::<u8>::new());
        let _scope = trace_duration_scope!("", "", "" => "");
    });
    trace.check_accounting(Some(7));
    assert!(
        trace.strings().iter().all(|s| !s.1.is_empty()),
        "no string record for \"\""
    );
    let unnamed: Vec<(u64, &Event)> = trace
        .events_with_headers()
        .filter(|(_, e)| e.name == "")
        .collect();
    assert_eq!(unnamed.len(), 3);
    for (header, e) in &unnamed {
        assert_eq!(
            (event_category_ref(*header), event_name_ref(*header)),
            (0, 0)
        );
        assert_eq!(e.category, "");
    }
    assert_eq!(args(unnamed[0].1), [(String::new(), s(""))]);
    assert!(matches!(unnamed[1].1.kind, EventKind::Counter { id: 0 }));
    assert_eq!(args(unnamed[1].1), [(String::new(), ArgValue::U32(0))]);
    assert!(matches!(
        unnamed[2].1.kind,
        EventKind::DurationComplete { .. }
    ));
    assert_eq!(args(unnamed[2].1), [(String::new(), s(""))]);
    assert_eq!(
        args(trace.one("empty value")),
        [("v".to_string(), s("")), ("w".to_string(), s(""))]
    );
    let logs = trace.logs();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].message, "");
    let b = blobs(&trace);
    assert_eq!(b.len(), 2);
    assert_eq!(
        (b[0].1.name.as_str(), b[0].1.payload.len()),
        (Some("empty blob"), 0)
    );
    assert_eq!((b[1].1.name.as_str(), b[1].1.payload.len()), (Some(""), 0));
    assert_eq!(
        header_words(b[1].0),
        1,
        "an empty, unnamed blob is one header word"
    );
}

// ---------------------------------------------------------------------------
// Record size: 4095 words for a normal record.
// ---------------------------------------------------------------------------

/// Blob records: a payload of 32752 bytes makes a blob record of exactly
/// 4095 words; one byte more needs a large blob record (format 0, with
/// metadata); so do payloads at and past the 15-bit size field (32767).
#[test]
fn blob_records_at_the_record_size_limit() {
    let sizes = [32_752usize, 32_753, 32_767, 32_768, 40_000];
    let payloads: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
        .collect();
    let trace = trace_with(big(), || {
        for p in &payloads {
            trace_blob!("limits", "sized blob", p);
        }
    });
    trace.check_accounting(Some(sizes.len() as u64));
    let small = blobs(&trace);
    assert_eq!(small.len(), 1);
    assert_eq!(header_words(small[0].0), 4095, "the largest normal record");
    assert_eq!(small[0].1.payload, payloads[0]);
    let large = large_blobs(&trace);
    assert_eq!(large.len(), sizes.len() - 1);
    for (b, p) in large.iter().zip(&payloads[1..]) {
        assert_eq!(b.payload, *p);
        assert_eq!(
            (b.category.as_str(), b.name.as_str()),
            (Some("limits"), Some("sized blob"))
        );
        assert!(matches!(b.thread, Thread::Known { process, .. } if process == pid()));
    }
}

/// Event records: a blob argument or two string arguments sized so the
/// record is exactly 4095 words are written; one word more and the record
/// is dropped and counted (a record cannot be larger).
#[test]
fn event_records_at_the_record_size_limit() {
    // header + timestamp + arg header + 4092 words = 4095.
    let fits: Vec<u8> = (0..4092 * 8).map(|i| i as u8).collect();
    let too_big: Vec<u8> = (0..4092 * 8 + 1).map(|i| i as u8).collect();
    // header + timestamp + (1 + 4000) + (1 + 91) = 4095.
    let s1 = "s".repeat(32_000);
    let s2 = "t".repeat(91 * 8);
    let s2_long = "t".repeat(91 * 8 + 1);
    let trace = {
        let _turn = lock();
        let session = fxt::start(big()).unwrap();
        trace_instant!("limits", "blob arg", "b" => EncodeArg::Blob(&fits));
        trace_instant!("limits", "blob arg too big", "b" => EncodeArg::Blob(&too_big));
        trace_instant!("limits", "string args", "a" => s1.as_str(), "b" => s2.as_str());
        trace_instant!("limits", "string args too big", "a" => s1.as_str(), "b" => s2_long.as_str());
        finish(session)
    };
    trace.check_accounting(Some(4));
    assert_eq!(trace.stats.records_dropped, 2, "the two oversized records");
    let (h, e) = trace
        .events_with_headers()
        .find(|(_, e)| e.name == "blob arg")
        .unwrap();
    assert_eq!(header_words(h), 4095);
    assert_eq!(args(e), [("b".to_string(), ArgValue::Blob(fits.clone()))]);
    let (h, e) = trace
        .events_with_headers()
        .find(|(_, e)| e.name == "string args")
        .unwrap();
    assert_eq!(header_words(h), 4095);
    assert_eq!(
        args(e),
        [("a".to_string(), s(&s1)), ("b".to_string(), s(&s2))]
    );
    assert_eq!(trace.named("blob arg too big").count(), 0);
    assert_eq!(trace.named("string args too big").count(), 0);
}

/// A 100 KiB blob with a chunk size that holds it: one large blob record
/// with metadata, payload byte-exact.
#[test]
fn large_blob_within_a_chunk() {
    let payload: Vec<u8> = (0..100 << 10).map(|i: u32| (i % 251) as u8).collect();
    let trace = trace_with(big().chunk_size(256 << 10), || {
        trace_blob!("limits", "big blob", &payload);
    });
    trace.check_accounting(Some(1));
    let large = large_blobs(&trace);
    assert_eq!(large.len(), 1, "one split blob group");
    assert_eq!(large[0].payload, payload);
    assert_eq!(
        (large[0].category.as_str(), large[0].name.as_str()),
        (Some("limits"), Some("big blob"))
    );
    assert!(blobs(&trace).is_empty());
}

/// Blob payloads of every name, in file order: large blob records and blob
/// records (chunks of one blob are blob records with the same name).
fn reassemble(trace: &Trace, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for r in &trace.records {
        match r {
            Record::Blob(b) if b.name == name => out.extend_from_slice(&b.payload),
            Record::LargeBlobWithMetadata(b) if b.name == name => out.extend_from_slice(&b.payload),
            Record::LargeBlobNoMetadata(b) if b.name == name => out.extend_from_slice(&b.payload),
            _ => {}
        }
    }
    out
}

/// A 100 KiB blob (larger than the default 64 KiB chunk) in each mode: the
/// payload is in the trace, byte-exact. The runtime writes it as one split
/// blob group (an instant carrying category, name, thread and timestamp,
/// then blob records of at most 32 KiB), kept outside the ring and written
/// before the chunks.
#[test]
fn large_blob_larger_than_a_chunk() {
    let payload: Vec<u8> = (0..100 << 10).map(|i: u32| (i % 253) as u8).collect();
    for (mode, name) in [
        (Mode::Oneshot, "huge-oneshot"),
        (Mode::Circular, "huge-circular"),
        (Mode::Streaming, "huge-streaming"),
    ] {
        let _turn = lock();
        let config = Config::new()
            .buffer_size(8 << 20)
            .mode(mode)
            .output(temp_path(name));
        let path = config.output_path().to_path_buf();
        let session = fxt::start(config).unwrap();
        trace_instant!("limits", "before blob");
        trace_blob!("limits", "huge blob", &payload);
        trace_instant!("limits", "after blob");
        let trace = finish_any(session, mode, &path);
        trace.check_accounting(Some(3));
        assert_eq!(
            trace.stats.records_dropped, 0,
            "{mode:?}: the blob is not dropped"
        );
        assert_eq!(
            reassemble(&trace, "huge blob"),
            payload,
            "{mode:?}: the payload reassembles exactly"
        );
        let large = large_blobs(&trace);
        assert_eq!(large.len(), 1, "{mode:?}: one split blob group");
        assert_eq!(large[0].category, "limits");
        let before = trace.one("before blob");
        assert_eq!(
            large[0].thread, before.thread,
            "{mode:?}: on the emitting thread"
        );
        assert!(
            before.timestamp <= large[0].timestamp
                && large[0].timestamp <= trace.one("after blob").timestamp
        );
    }
}

/// Large blobs are kept outside the ring within a budget of a quarter of
/// the buffer: with a 256 KiB buffer, a 100 KiB blob is dropped and counted
/// (and the "buffer filled up" event says so), a 40 KiB one is kept.
#[test]
fn large_blob_over_its_budget_is_dropped_and_counted() {
    let huge = vec![7u8; 100 << 10];
    let fits = vec![8u8; 40 << 10];
    let trace = trace_with(Config::new().buffer_size(256 << 10), || {
        trace_blob!("limits", "over budget", &huge);
        trace_blob!("limits", "within budget", &fits);
    });
    trace.check_accounting(Some(2));
    assert_eq!(trace.stats.records_dropped, 1);
    assert!(reassemble(&trace, "over budget").is_empty());
    assert_eq!(reassemble(&trace, "within budget"), fits);
}

// ---------------------------------------------------------------------------
// Counters.
// ---------------------------------------------------------------------------

/// A counter with 15 series, one of each numeric type (and extremes), and
/// the largest id.
#[test]
fn counters_with_fifteen_series_of_every_type() {
    let trace = trace_with(big(), || {
        trace_counter!("limits", "all types", id = u64::MAX,
            "i8" => i8::MIN, "i16" => i16::MAX, "i32" => i32::MIN, "i64" => i64::MAX, "isize" => isize::MIN,
            "u8" => u8::MAX, "u16" => u16::MAX, "u32" => u32::MAX, "u64" => u64::MAX, "usize" => usize::MAX,
            "f32" => f32::MAX, "f64" => f64::MIN_POSITIVE, "zero" => 0u64, "neg" => -1i64, "inf" => f64::INFINITY);
        trace_counter!("limits", "one series", "v" => 3u8);
    });
    trace.check_accounting(Some(2));
    let c = trace.one("all types");
    assert!(matches!(c.kind, EventKind::Counter { id: u64::MAX }));
    assert_eq!(
        args(c),
        [
            ("i8".to_string(), ArgValue::I32(i8::MIN.into())),
            ("i16".to_string(), ArgValue::I32(i16::MAX.into())),
            ("i32".to_string(), ArgValue::I32(i32::MIN)),
            ("i64".to_string(), ArgValue::I64(i64::MAX)),
            ("isize".to_string(), ArgValue::I64(isize::MIN as i64)),
            ("u8".to_string(), ArgValue::U32(u8::MAX.into())),
            ("u16".to_string(), ArgValue::U32(u16::MAX.into())),
            ("u32".to_string(), ArgValue::U32(u32::MAX)),
            ("u64".to_string(), ArgValue::U64(u64::MAX)),
            ("usize".to_string(), ArgValue::U64(usize::MAX as u64)),
            ("f32".to_string(), ArgValue::F64(f32::MAX.into())),
            ("f64".to_string(), ArgValue::F64(f64::MIN_POSITIVE)),
            ("zero".to_string(), ArgValue::U64(0)),
            ("neg".to_string(), ArgValue::I64(-1)),
            ("inf".to_string(), ArgValue::F64(f64::INFINITY)),
        ]
    );
    let one = trace.one("one series");
    assert!(matches!(one.kind, EventKind::Counter { id: 0 }));
    assert_eq!(args(one), [("v".to_string(), ArgValue::U32(3))]);
}

// ---------------------------------------------------------------------------
// A full buffer in each mode.
// ---------------------------------------------------------------------------

/// 256 KiB buffer, 32 KiB chunks: a 64 KiB durable region and a ring of 6
/// chunks of 4096 words; a drained oneshot session's file limit is those 6
/// chunks too (by default it would be far larger than the buffer).
fn small(mode: Mode, crash_safe: bool, name: &str) -> Config {
    Config::new()
        .buffer_size(256 << 10)
        .chunk_size(32 << 10)
        .file_limit(CHUNKS * (32 << 10))
        .mode(mode)
        .crash_safe(crash_safe)
        .output(temp_path(name))
}

/// Every buffering mode, and the crash-safe (file-backed) variants of the
/// modes that have one: (mode, crash safe, file name).
const VARIANTS: [(Mode, bool, &str); 5] = [
    (Mode::Oneshot, false, "oneshot"),
    (Mode::Circular, false, "circular"),
    (Mode::Streaming, false, "streaming"),
    (Mode::Oneshot, true, "oneshot-crash-safe"),
    (Mode::Circular, true, "circular-crash-safe"),
];

const CHUNKS: u64 = 6;
/// An instant with one u64 argument is 4 words: 1024 fit a chunk.
const PER_CHUNK: u64 = 1024;

fn emit_numbered(n: u64) {
    for i in 0..n {
        trace_instant!("limits", "numbered", "i" => i);
    }
}

fn numbers(trace: &Trace) -> Vec<u64> {
    trace.named("numbered").map(|e| u64_arg(e, "i")).collect()
}

fn run_small(mode: Mode, crash_safe: bool, name: &str, f: impl FnOnce()) -> Trace {
    let _turn = lock();
    let config = small(mode, crash_safe, name);
    let path = config.output_path().to_path_buf();
    let session = fxt::start(config).expect("session starts");
    f();
    if crash_safe {
        finish_to_file(session, &path)
    } else {
        finish_any(session, mode, &path)
    }
}

/// Oneshot keeps the first records: exactly 6 chunks of 1024 (drained to
/// a 6-chunk file limit, or crash-safe), and says it reached its limit.
#[test]
fn full_buffer_oneshot() {
    const N: u64 = 20_000;
    for crash_safe in [false, true] {
        let trace = run_small(Mode::Oneshot, crash_safe, "full-oneshot", || {
            emit_numbered(N)
        });
        trace.check_accounting(Some(N));
        assert_eq!(
            trace.stats.emitted_records_written,
            CHUNKS * PER_CHUNK,
            "crash safe: {crash_safe}"
        );
        assert_eq!(trace.stats.records_dropped, N - CHUNKS * PER_CHUNK);
        assert!(trace.stats.limit_reached);
        assert_eq!(
            numbers(&trace),
            (0..CHUNKS * PER_CHUNK).collect::<Vec<_>>(),
            "the oldest records"
        );
    }
}

/// Circular keeps the newest: the last 5 full chunks and the partial one
/// (crash-safe or not).
#[test]
fn full_buffer_circular() {
    const N: u64 = 20_000;
    for crash_safe in [false, true] {
        let trace = run_small(Mode::Circular, crash_safe, "full-circular", || {
            emit_numbered(N)
        });
        trace.check_accounting(Some(N));
        let partial = N % PER_CHUNK;
        let kept = (CHUNKS - 1) * PER_CHUNK + partial;
        assert_eq!(
            trace.stats.emitted_records_written, kept,
            "crash safe: {crash_safe}"
        );
        assert_eq!(trace.stats.records_dropped, N - kept);
        assert_eq!(
            numbers(&trace),
            (N - kept..N).collect::<Vec<_>>(),
            "the newest records"
        );
    }
}

/// Streaming writes as it goes: a writer that waits for the streamer to
/// keep up outgrows the buffer many times; whatever it drops is counted,
/// and every record is in the file at most once, in order.
#[test]
fn full_buffer_streaming() {
    const N: u64 = 200_000;
    const CHUNK_BYTES: u64 = 32 << 10;
    let path = small(Mode::Streaming, false, "full-streaming")
        .output_path()
        .to_path_buf();
    let trace = run_small(Mode::Streaming, false, "full-streaming", || {
        // In bursts of a chunk; after each, wait (a condition, not a
        // pause: the streamer may get no core for a while on a loaded
        // machine) until the file holds all but the newest few of the
        // 6 chunks' worth emitted so far.
        for i in 0..N {
            trace_instant!("limits", "numbered", "i" => i);
            if i % PER_CHUNK == PER_CHUNK - 1 {
                let chunks = (i + 1) / PER_CHUNK;
                wait_for_len(&path, chunks.saturating_sub(3) * CHUNK_BYTES);
            }
        }
    });
    trace.check_accounting(Some(N));
    let got = numbers(&trace);
    assert_eq!(got.len() as u64, trace.stats.emitted_records_written);
    assert!(got.windows(2).all(|w| w[0] < w[1]), "in order, each once");
    assert!(
        got.len() as u64 > CHUNKS * PER_CHUNK,
        "streaming outgrows the buffer: {} records written, {:?}",
        got.len(),
        trace.stats
    );
}

/// In every mode a chunk a thread owns is never taken from it: with 6
/// threads each holding one of the 6 chunks, a 7th thread's record is
/// dropped (and counted, and announced by the "buffer filled up" event).
#[test]
fn full_buffer_every_mode_when_threads_hold_every_chunk() {
    for (mode, crash_safe, name) in VARIANTS {
        let trace = run_small(mode, crash_safe, &format!("held-{name}"), || {
            let holding = Barrier::new(CHUNKS as usize + 1);
            let release = Barrier::new(CHUNKS as usize + 1);
            std::thread::scope(|scope| {
                for t in 0..CHUNKS {
                    let (holding, release) = (&holding, &release);
                    scope.spawn(move || {
                        trace_instant!("limits", "holder", "t" => t);
                        holding.wait();
                        release.wait();
                    });
                }
                holding.wait();
                scope
                    .spawn(|| trace_instant!("limits", "starved", "t" => CHUNKS))
                    .join()
                    .unwrap();
                release.wait();
            });
        });
        trace.check_accounting(Some(CHUNKS + 1));
        assert_eq!(trace.stats.records_dropped, 1, "{name}");
        assert_eq!(trace.named("holder").count() as u64, CHUNKS, "{name}");
        assert_eq!(trace.named("starved").count(), 0, "{name}");
    }
}

/// The same small buffers, not filled: nothing dropped, no "buffer filled
/// up" event.
#[test]
fn small_buffer_not_full_has_no_buffer_filled_event() {
    for (mode, crash_safe, name) in VARIANTS {
        let trace = run_small(mode, crash_safe, &format!("ok-{name}"), || {
            emit_numbered(PER_CHUNK * 3)
        });
        trace.check_accounting(Some(PER_CHUNK * 3));
        assert_eq!(trace.stats.records_dropped, 0, "{name}");
        assert_eq!(trace.buffer_filled_events(), 0, "{name}");
        assert_eq!(
            numbers(&trace),
            (0..PER_CHUNK * 3).collect::<Vec<_>>(),
            "{name}"
        );
    }
}
