//! `fxt json`: Chrome Trace Event JSON for every event type, metadata
//! events, typed args, output file, damaged input.

mod cli_support;
use cli_support::*;
use serde_json::{json, Value};

fn ev<'a>(kind: EventKind, ts: u64, name: &'a str, args: &'a [Arg<'a>]) -> Event<'a> {
    event(
        kind,
        ts,
        ThreadRef::Inline {
            process: 5,
            thread: 6,
        },
        StringRef::Inline("cat"),
        StringRef::Inline(name),
        args,
    )
}

fn trace() -> Trace {
    let args = [
        Arg::new(StringRef::Inline("i32"), ArgValue::I32(-1)),
        Arg::new(StringRef::Inline("u32"), ArgValue::U32(2)),
        Arg::new(StringRef::Inline("i64"), ArgValue::I64(-3)),
        Arg::new(StringRef::Inline("u64"), ArgValue::U64(u64::MAX)),
        Arg::new(StringRef::Inline("f64"), ArgValue::F64(0.25)),
        Arg::new(
            StringRef::Inline("str"),
            ArgValue::Str(StringRef::Inline("a \"q\"")),
        ),
        Arg::new(StringRef::Inline("bool"), ArgValue::Bool(true)),
        Arg::new(StringRef::Inline("ptr"), ArgValue::Pointer(0xbeef)),
        Arg::new(StringRef::Inline("koid"), ArgValue::Koid(77)),
        Arg::new(StringRef::Inline("null"), ArgValue::Null),
    ];
    let counter_args = [Arg::new(StringRef::Inline("value"), ArgValue::I64(42))];
    // 2 GHz: 3000 ticks = 1.5 µs.
    Trace::with_provider(1, "app", 2_000_000_000)
        .push(&KernelObject {
            koid: 5,
            object_type: OBJ_TYPE_PROCESS,
            name: StringRef::Inline("server"),
            args: &[],
        })
        .push(&KernelObject {
            koid: 6,
            object_type: OBJ_TYPE_THREAD,
            name: StringRef::Inline("main"),
            args: &[Arg::new(StringRef::Inline("process"), ArgValue::Koid(5))],
        })
        .push(&ev(EventKind::Instant, 3000, "instant", &args))
        .push(&ev(
            EventKind::Counter { id: 5 },
            4000,
            "counter",
            &counter_args,
        ))
        .push(&ev(EventKind::DurationBegin, 6000, "b", &[]))
        .push(&ev(EventKind::DurationEnd, 8000, "b", &[]))
        .push(&ev(
            EventKind::DurationComplete { end: 9001 },
            2000,
            "x",
            &[],
        ))
        .push(&ev(EventKind::AsyncBegin { id: 9 }, 2000, "a", &[]))
        .push(&ev(EventKind::AsyncInstant { id: 9 }, 2002, "a", &[]))
        .push(&ev(EventKind::AsyncEnd { id: 9 }, 2004, "a", &[]))
        .push(&ev(EventKind::FlowBegin { id: 3 }, 2000, "f", &[]))
        .push(&ev(EventKind::FlowStep { id: 3 }, 2000, "f", &[]))
        .push(&ev(EventKind::FlowEnd { id: 3 }, 2000, "f", &[]))
        .push(&Log {
            timestamp: 2000,
            thread: ThreadRef::Inline {
                process: 5,
                thread: 6,
            },
            message: "hello",
        })
}

fn events(out: &std::process::Output) -> Vec<Value> {
    assert!(out.status.success(), "{}", stderr(out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    doc["traceEvents"].as_array().unwrap().clone()
}

#[test]
fn json_maps_every_event_type() {
    let file = trace().file("json.fxt");
    let ev = events(&fxt(&["json", p(&file)]));
    assert_eq!(ev.len(), 14);
    assert_eq!(
        ev[0],
        json!({"ph": "M", "name": "process_name", "pid": 5, "args": {"name": "server"}})
    );
    assert_eq!(
        ev[1],
        json!({"ph": "M", "name": "thread_name", "pid": 5, "tid": 6, "args": {"name": "main"}})
    );
    assert_eq!(
        ev[2],
        json!({"ph": "i", "cat": "cat", "name": "instant", "ts": 1.5, "pid": 5, "tid": 6, "s": "t",
               "args": {"i32": -1, "u32": 2, "i64": -3, "u64": u64::MAX, "f64": 0.25,
                        "str": "a \"q\"", "bool": true, "ptr": "0xbeef", "koid": 77, "null": null}})
    );
    assert_eq!(
        ev[3],
        json!({"ph": "C", "cat": "cat", "name": "counter", "ts": 2, "pid": 5, "tid": 6,
               "id": "0x5", "args": {"value": 42}})
    );
    assert_eq!(ev[4]["ph"], "B");
    assert_eq!(ev[4]["ts"], 3);
    assert_eq!(ev[5]["ph"], "E");
    assert_eq!(ev[5]["ts"], 4);
    assert_eq!(
        ev[6],
        json!({"ph": "X", "cat": "cat", "name": "x", "ts": 1, "pid": 5, "tid": 6, "dur": 3.5})
    );
    let phases: Vec<_> = ev[7..13]
        .iter()
        .map(|e| e["ph"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["b", "n", "e", "s", "t", "f"]);
    for e in &ev[7..10] {
        assert_eq!(e["id"], "0x9");
        assert_eq!(e["cat"], "cat");
    }
    assert_eq!(ev[8]["ts"], 1.001);
    assert_eq!(ev[10]["id"], "0x3");
    assert!(ev[10].get("bp").is_none());
    assert_eq!(ev[11]["bp"], "e");
    assert_eq!(ev[12]["bp"], "e");
    assert_eq!(
        ev[13],
        json!({"ph": "i", "s": "t", "cat": "log", "name": "hello", "ts": 1, "pid": 5, "tid": 6})
    );
}

#[test]
fn json_to_file_and_from_stdin() {
    let out_file = tmp("json_out.json");
    let out = fxt_stdin(&["json", "-", "-o", p(&out_file)], &trace().bytes());
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let doc: Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(doc["traceEvents"].as_array().unwrap().len(), 14);
}

#[test]
fn json_of_damaged_trace_is_still_valid_json() {
    let mut bytes = trace().bytes();
    let len = bytes.len();
    bytes.truncate(len - 4);
    let file = tmp("json_damaged.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let out = fxt(&["json", p(&file)]);
    let ev = events(&out);
    assert_eq!(ev.len(), 13, "the cut log record is left out");
    assert!(stderr(&out).contains("warning"));
}

#[test]
fn json_of_empty_trace() {
    let file = Trace::new().push(&MagicNumber).file("json_empty.fxt");
    assert!(events(&fxt(&["json", p(&file)])).is_empty());
}

#[test]
fn json_on_several_threads_prints_what_one_thread_prints() {
    // Cut at many places: ranges without events, commas between ranges,
    // ticks per second of two providers, malformed records, a damaged tail.
    let (one, _) = assert_same_when_cut("json_cut.fxt", &["json", "{}"], None);
    let v: Value = serde_json::from_slice(&one.stdout).expect("valid JSON");
    let events = v["traceEvents"].as_array().unwrap();
    let begins = events.iter().filter(|e| e["ph"] == "B").count();
    assert_eq!(begins, 240, "one open begin per step of the trace");
    assert!(
        stderr(&one).contains("up to the damage"),
        "{}",
        stderr(&one)
    );
    let file = tmp("json_cut_out.json");
    let (_, written) = assert_same_when_cut(
        "json_cut_o.fxt",
        &["json", "-o", p(&file), "{}"],
        Some(&file),
    );
    assert_eq!(written, one.stdout);
    assert_same_on_any_threads("json_threads.fxt", &["json", "{}"]);
}

#[test]
fn json_follows_string_indices_that_change_meaning() {
    let file = redefined_strings_trace().file("json_redefined.fxt");
    let out = fxt(&["json", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<_> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["cat"].clone(), e["name"].clone(), e["args"].clone()))
        .collect();
    let undefined = |i: u16| json!(format!("<undefined string #{i}>"));
    assert_eq!(
        names,
        [
            (json!("x"), json!("x"), json!({"k": 7})),
            (json!("y\"q"), json!("y\"q"), json!({"k": 7})),
            (
                undefined(1),
                undefined(1),
                json!({"<undefined string #2>": 7})
            ),
            (json!("y\"q"), json!("y\"q"), json!({"k": 7})),
            (
                json!("k"),
                json!("k"),
                json!({"fxt.blob.size": 4, "fxt.blob.parts": 1})
            ),
        ]
    );
}

/// Threads taking turns, two of them in the same slot of the pieces kept
/// by thread (koids 3 and 67), a thread index redefined, and the usual
/// events of each phase (with and without arguments): every event's
/// `pid`, `tid` and `s` are its own.
#[test]
fn json_events_of_threads_taking_turns_carry_their_own_ids() {
    let args = [Arg::new(StringRef::Index(2), ArgValue::U64(7))];
    let mut t = Trace::with_provider(1, "a", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "c",
        })
        .push(&StringRecord {
            index: 2,
            value: "k",
        });
    let kinds = [
        EventKind::Instant,
        EventKind::DurationBegin,
        EventKind::DurationEnd,
        EventKind::DurationComplete { end: 0 },
        EventKind::Counter { id: 0 },
    ];
    let mut expected = Vec::new();
    let mut ts = 0;
    for (round, koids) in [[(1, 3), (1, 67), (2, 4)], [(9, 67), (9, 3), (8, 5)]]
        .into_iter()
        .enumerate()
    {
        for (index, &(process, thread)) in koids.iter().enumerate() {
            t = t.push(&ThreadRecord {
                index: index as u8 + 1,
                process,
                thread,
            });
        }
        for i in 0..30 {
            let index = i % 3;
            let kind = match kinds[(i / 3 + round) % kinds.len()] {
                EventKind::DurationComplete { .. } => EventKind::DurationComplete { end: ts + 5 },
                other => other,
            };
            let with_args = if i % 2 == 0 { &args[..] } else { &[][..] };
            ts += 10;
            t = t.push(&event(
                kind,
                ts,
                ThreadRef::Index(index as u8 + 1),
                StringRef::Index(1),
                StringRef::Index(1),
                with_args,
            ));
            let (pid, tid) = koids[index];
            let s = matches!(kind, EventKind::Instant).then_some("t");
            expected.push((json!(pid), json!(tid), json!(s), !with_args.is_empty()));
        }
    }
    let file = t.file("json_threads_taking_turns.fxt");
    // On one thread in one range, and on two cutting the trace where its
    // thread records are read in another range than its events.
    for (threads, range_bytes) in [(1, 1 << 20), (2, 512)] {
        let out = fxt_cut(threads, range_bytes, &["json", p(&file)]);
        let got: Vec<_> = events(&out)
            .iter()
            .map(|e| {
                (
                    e["pid"].clone(),
                    e["tid"].clone(),
                    e["s"].clone(),
                    e["args"] == json!({"k": 7}),
                )
            })
            .collect();
        assert_eq!(got, expected, "{threads} threads, ranges of {range_bytes}");
    }
}

/// Threads taking turns with events of every kind that carries an id,
/// arguments strings by index (escaped, longer than a block of a line, one
/// redefined) and floats of every form, names whose head is longer than a
/// block: each event's phase, name, thread, id and arguments are its own,
/// on one thread and cut in small ranges alike.
#[test]
fn json_events_with_ids_strings_and_floats_carry_their_own_values() {
    let long = "a string value longer than one block of a line, to be copied whole";
    let long_name = "a name long enough that the head of its event is more than one block";
    let strings = [
        "demo",
        "frame",
        "phase",
        "steady",
        "bytes",
        "say \"hi\"",
        long,
        long_name,
    ];
    let mut t = Trace::with_provider(1, "app", 1_000_000_000);
    for (i, value) in strings.into_iter().enumerate() {
        let index = i as u16 + 1;
        t = t.push(&StringRecord { index, value });
    }
    for index in 1..=2 {
        t = t.push(&ThreadRecord {
            index,
            process: 10,
            thread: 10 + u64::from(index),
        });
    }
    let kinds = [
        (EventKind::Counter { id: 3 }, "C", Some("0x3"), false),
        (EventKind::AsyncBegin { id: 0x1f }, "b", Some("0x1f"), false),
        (EventKind::FlowStep { id: 0xabc }, "t", Some("0xabc"), true),
        (EventKind::DurationBegin, "B", None, false),
        (EventKind::Instant, "i", None, false),
    ];
    let floats = [0.5, 0.1 + 0.2, 1e20, -2.25, f64::NAN, 0.0, 1e-7, 123456.789];
    let mut expected = Vec::new();
    let mut ts = 1000;
    for round in 0..2 {
        if round == 1 {
            t = t.push(&StringRecord {
                index: 4,
                value: "paused",
            });
        }
        for (i, &x) in floats.iter().enumerate() {
            for thread in [1, 2] {
                for value in [4, 6, 7] {
                    let args = [
                        Arg::new(StringRef::Index(3), ArgValue::Str(StringRef::Index(value))),
                        Arg::new(StringRef::Index(5), ArgValue::F64(x)),
                        Arg::new(StringRef::Index(2), ArgValue::U64(7)),
                    ];
                    let (kind, ph, id, bp) = kinds[(i + usize::from(value)) % kinds.len()];
                    let name = [2, 8][usize::from(thread) - 1];
                    t = t.push(&event(
                        kind,
                        ts,
                        ThreadRef::Index(thread),
                        StringRef::Index(1),
                        StringRef::Index(name),
                        &args,
                    ));
                    ts += 1;
                    let value = match (value, round) {
                        (4, 0) => "steady",
                        (4, _) => "paused",
                        (6, _) => "say \"hi\"",
                        _ => long,
                    };
                    expected.push(json!({
                        "ph": ph,
                        "name": strings[usize::from(name) - 1],
                        "tid": 10 + u64::from(thread),
                        "id": id,
                        "bp": bp.then_some("e"),
                        "args": {"phase": value, "bytes": x, "frame": 7},
                    }));
                }
            }
        }
    }
    let file = t.file("json_ids_strings_floats.fxt");
    let one = fxt_cut(1, 1 << 20, &["json", p(&file)]);
    let got: Vec<Value> = events(&one)
        .iter()
        .map(|e| {
            assert_eq!(e["cat"], "demo");
            assert_eq!(e["pid"], 10);
            json!({
                "ph": e["ph"],
                "name": e["name"],
                "tid": e["tid"],
                "id": e["id"],
                "bp": e["bp"],
                "args": e["args"],
            })
        })
        .collect();
    assert_eq!(got, expected);
    let cut = fxt_cut(2, 512, &["json", p(&file)]);
    assert_eq!(stdout(&cut), stdout(&one));
}

/// Thread indices in one slot of the pieces kept by thread, inline koids
/// of the same numbers, threads and strings each defined anew alone
/// ([`indices_and_koids_trace`]): every event's `pid`, `tid`, name and
/// arguments are its own, on one thread and cut in small ranges.
#[test]
fn json_events_keep_thread_indices_koids_and_epochs_apart() {
    let args = [Arg::new(StringRef::Index(2), ArgValue::U64(7))];
    let (t, written) = indices_and_koids_trace(&args);
    let expected: Vec<_> = written
        .iter()
        .enumerate()
        .map(|(i, &(ts, pid, tid, name))| {
            let args = if i % 36 % 4 < 2 {
                json!({"k": 7})
            } else {
                Value::Null
            };
            (
                json!(ts as f64 / 1000.0),
                json!(pid),
                json!(tid),
                json!(name),
                args,
            )
        })
        .collect();
    let file = t.file("json_indices_and_koids.fxt");
    for (threads, range_bytes) in [(1, 1 << 20), (2, 512)] {
        let out = fxt_cut(threads, range_bytes, &["json", p(&file)]);
        let got: Vec<_> = events(&out)
            .iter()
            .map(|e| {
                let ts = json!(e["ts"].as_f64().unwrap());
                let (pid, tid) = (e["pid"].clone(), e["tid"].clone());
                (ts, pid, tid, e["name"].clone(), e["args"].clone())
            })
            .collect();
        assert_eq!(got, expected, "{threads} threads, ranges of {range_bytes}");
    }
}

/// Counters of one header word (thread, strings and arguments by index)
/// with and without an id, in both orders: each object is its own
/// (its id where it has one, its arguments after it), whichever came
/// first. The id is not in the header word, which the shape of a line is
/// keyed by.
#[test]
fn json_counters_with_and_without_ids_share_a_header() {
    let args = [Arg::new(StringRef::Index(2), ArgValue::U64(7))];
    let mut t = Trace::with_provider(1, "a", 1_000_000_000)
        .strings(&[(1, "c"), (2, "k")])
        .push(&ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        });
    let ids = [0, 5, 0, 9, 9, 0];
    for (i, &id) in ids.iter().enumerate() {
        t = t.push(&event(
            EventKind::Counter { id },
            10 * (i as u64 + 1),
            ThreadRef::Index(1),
            StringRef::Index(1),
            StringRef::Index(1),
            &args,
        ));
    }
    let file = t.file("json_counter_ids.fxt");
    let got: Vec<(Value, Value)> = events(&fxt(&["json", p(&file)]))
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| (e["id"].clone(), e["args"].clone()))
        .collect();
    let want: Vec<(Value, Value)> = ids
        .iter()
        .map(|&id| {
            let id = if id == 0 {
                Value::Null
            } else {
                json!(format!("{id:#x}"))
            };
            (id, json!({"k": 7}))
        })
        .collect();
    assert_eq!(got, want);
}
