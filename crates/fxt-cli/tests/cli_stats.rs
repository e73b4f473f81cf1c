//! `fxt stats`: counts, durations (complete events and begin/end pairs
//! matched per thread), threads, dropped records; table and JSON.

mod cli_support;
use cli_support::*;
use serde_json::Value;

fn ev<'a>(kind: EventKind, ts: u64, thread: u64, name: &'a str) -> Event<'a> {
    event(
        kind,
        ts,
        ThreadRef::Inline { process: 1, thread },
        StringRef::Inline("cat"),
        StringRef::Inline(name),
        &[],
    )
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

/// 1 tick = 1 µs. "work": 100 complete events of 1..=100 ticks. Thread 2:
/// outer [0, 20] containing inner [10, 15]; thread 3: outer [5, 8], its
/// begin and end interleaved with thread 2's.
fn trace() -> Trace {
    let mut t = Trace::with_provider(7, "prov", 1_000_000)
        .raw(&kobj(1, OBJ_TYPE_PROCESS, "proc", None))
        .raw(&kobj(2, OBJ_TYPE_THREAD, "main", Some(1)))
        .raw(&kobj(3, OBJ_TYPE_THREAD, "worker", Some(1)));
    for i in 1..=100u64 {
        t = t.push(&ev(
            EventKind::DurationComplete { end: 1000 * i + i },
            1000 * i,
            2,
            "work",
        ));
    }
    t.push(&ev(EventKind::DurationBegin, 0, 2, "outer"))
        .push(&ev(EventKind::DurationBegin, 5, 3, "outer"))
        .push(&ev(EventKind::DurationBegin, 10, 2, "inner"))
        .push(&ev(EventKind::DurationEnd, 8, 3, "outer"))
        .push(&ev(EventKind::DurationEnd, 15, 2, "inner"))
        .push(&ev(EventKind::DurationEnd, 20, 2, "outer"))
        .push(&ev(EventKind::Instant, 30, 3, "tick"))
        .push(&ProviderEvent {
            provider_id: 7,
            event: ProviderEvent::BUFFER_FILLED,
        })
}

fn stats_json(file: &std::path::Path) -> Value {
    let out = fxt(&["stats", "--json", p(file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn find<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {list}"))
}

#[test]
fn stats_json_durations_threads_and_drops() {
    let file = trace().file("stats.fxt");
    let s = stats_json(&file);
    assert_eq!(s["records_by_type"]["event"], 107);
    assert_eq!(s["records_by_type"]["kernel_object"], 3);
    assert_eq!(s["records_by_type"]["magic"], 1);
    assert_eq!(s["events_by_type"]["duration_complete"], 100);
    assert_eq!(s["buffer_filled"], true);
    assert_eq!(s["providers"][0]["name"], "prov");
    assert_eq!(s["providers"][0]["ticks_per_second"], 1_000_000);
    // Time span: ticks 0 to 100_100, in ns.
    assert_eq!(s["start_ns"], 0);
    assert_eq!(s["end_ns"], 100_100_000u64);
    assert_eq!(s["span_ns"], 100_100_000u64);

    let work = find(&s["durations"], "work");
    assert_eq!(work["category"], "cat");
    assert_eq!(work["count"], 100);
    assert_eq!(work["total_ns"], 5_050_000);
    assert_eq!(work["mean_ns"], 50_500.0);
    assert_eq!(work["p50_ns"], 50_000);
    assert_eq!(work["p99_ns"], 99_000);
    assert_eq!(work["max_ns"], 100_000);

    let outer = find(&s["durations"], "outer");
    assert_eq!(outer["count"], 2);
    assert_eq!(
        outer["total_ns"], 23_000,
        "20 µs on thread 2, 3 µs on thread 3"
    );
    assert_eq!(outer["max_ns"], 20_000);
    let inner = find(&s["durations"], "inner");
    assert_eq!(inner["count"], 1);
    assert_eq!(inner["total_ns"], 5_000);
    assert_eq!(s["unmatched_duration_ends"], 0);
    assert_eq!(s["unclosed_duration_begins"], 0);

    let threads = s["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(threads[0]["thread"], 2);
    assert_eq!(threads[0]["name"], "main");
    assert_eq!(threads[0]["events"], 104);
    assert_eq!(threads[1]["thread"], 3);
    assert_eq!(threads[1]["name"], "worker");
    assert_eq!(threads[1]["events"], 3);

    let tick = find(&s["events"], "tick");
    assert_eq!(tick["count"], 1);
}

#[test]
fn stats_table() {
    let file = trace().file("stats_table.fxt");
    let out = fxt(&["stats", p(&file)]);
    assert!(out.status.success());
    let text = stdout(&out);
    let has = |needle: &str| {
        assert!(
            text.lines().any(|l| l.contains(needle)),
            "{needle}:\n{text}"
        )
    };
    has("records       114");
    has("time span     100.10ms");
    has("provider      #7 \"prov\", 1000000 ticks/s");
    has("buffer filled yes");
    let work = text.lines().find(|l| l.ends_with("cat/work")).unwrap();
    let cols: Vec<_> = work.split_whitespace().collect();
    assert_eq!(
        cols,
        ["100", "5.05ms", "50.50us", "50.00us", "99.00us", "100.00us", "cat/work"]
    );
    let main = text.lines().find(|l| l.ends_with("main (proc)")).unwrap();
    assert_eq!(
        main.split_whitespace().collect::<Vec<_>>(),
        ["104", "1", "2", "main", "(proc)"]
    );
}

/// A reading variable that is not a count (`FXT_THREADS`,
/// `FXT_RANGE_BYTES`) is said on stderr, once, and ignored: the output is
/// the same as without it.
#[test]
fn a_bad_reading_variable_is_said_and_ignored() {
    let file = trace().file("stats_bad_env.fxt");
    let plain = fxt(&["stats", p(&file)]);
    for (name, value) in [
        ("FXT_THREADS", "abc"),
        ("FXT_THREADS", "0"),
        ("FXT_RANGE_BYTES", "-3"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fxt"))
            .args(["stats", p(&file)])
            .env(name, value)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}={value}");
        assert_eq!(out.stdout, plain.stdout, "{name}={value}");
        let said = format!("fxt: {name}={value} is not a whole number of at least 1; ignored\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), said);
    }
}

#[test]
fn stats_of_damaged_trace_warns_and_succeeds() {
    let mut bytes = trace().bytes();
    bytes.extend_from_slice(&[0u8; 8]); // a header of size 0
    let file = tmp("stats_damaged.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let out = fxt(&["stats", "--json", p(&file)]);
    assert!(out.status.success());
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["damaged_at"], bytes.len() as u64 - 8);
    assert!(stderr(&out).contains(&format!("offset {:#x}", bytes.len() - 8)));
}

/// A snapshot written by the engine says so, with its number; the final
/// file does not.
#[test]
fn stats_says_which_snapshot_a_file_is() {
    let dir = std::env::temp_dir();
    let id = std::process::id();
    let (snap, last) = (
        dir.join(format!("fxt-cli-snap-{id}.fxt")),
        dir.join(format!("fxt-cli-final-{id}.fxt")),
    );
    let session = fxt::start(fxt::Config::new().output(&last)).unwrap();
    fxt::trace_instant!("cli", "before");
    session.snapshot_to_vec().unwrap(); // snapshot 1, in memory
    session.snapshot_to_path(&snap).unwrap(); // snapshot 2
    fxt::trace_instant!("cli", "after");
    session.finish().unwrap();
    assert_eq!(stats_json(&snap)["snapshot"], 2);
    assert_eq!(stats_json(&last)["snapshot"], Value::Null);
    let out = fxt(&["stats", p(&snap)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("snapshot      2"), "{text}");
    let out = fxt(&["stats", p(&last)]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("snapshot      no"));
    let _ = std::fs::remove_file(&snap);
    let _ = std::fs::remove_file(&last);
}

/// An archive of an app (pid 1, threads 2 and 3) and a kernel scheduler
/// provider with exactly known switches (1 tick = 1 ns).
fn archive() -> Trace {
    let sw = |ns, outgoing, state, incoming| ContextSwitch {
        timestamp: ns,
        cpu: 0,
        outgoing_state: state,
        outgoing_thread: outgoing,
        incoming_thread: incoming,
        args: &[],
    };
    Trace::with_provider(1, "app", 1_000_000_000)
        .raw(&kobj(1, OBJ_TYPE_PROCESS, "proc", None))
        .raw(&kobj(2, OBJ_TYPE_THREAD, "main", Some(1)))
        .push(&ev(EventKind::Instant, 500, 2, "a"))
        .push(&ev(EventKind::Instant, 11_000, 3, "b"))
        .push(&ProviderInfo {
            provider_id: 2,
            name: "kernel scheduler",
        })
        .push(&Initialization {
            ticks_per_second: 1_000_000_000,
        })
        .push(&sw(1000, 0, ThreadState::Running, 2))
        .push(&sw(3000, 2, ThreadState::Blocked, 0))
        .push(&ThreadWakeup {
            timestamp: 7000,
            cpu: 0,
            waking_thread: 2,
            args: &[],
        })
        .push(&sw(8000, 0, ThreadState::Running, 2))
        .push(&sw(9000, 2, ThreadState::Running, 3))
        .push(&sw(9500, 3, ThreadState::Blocked, 2))
        .push(&sw(10000, 2, ThreadState::Dead, 0))
}

#[test]
fn stats_per_provider_and_scheduling() {
    let file = archive().file("archive.fxt");
    let s = stats_json(&file);
    let pp = s["per_provider"].as_array().unwrap();
    assert_eq!(pp.len(), 2);
    assert_eq!(pp[0]["name"], "app");
    assert_eq!(pp[0]["processes"], serde_json::json!([1]));
    assert_eq!(pp[0]["threads"], 2);
    assert_eq!(pp[0]["events"], 2);
    assert_eq!(pp[0]["start_ns"], 500);
    assert_eq!(pp[0]["end_ns"], 11_000);
    assert_eq!(pp[1]["name"], "kernel scheduler");
    assert_eq!(pp[1]["records"], 9, "info, init, 6 switches and a wakeup");

    let sched = s["scheduling"].as_array().unwrap();
    assert_eq!(sched.len(), 2);
    let main = &sched[0];
    assert_eq!(main["thread"], 2);
    assert_eq!(main["name"], "main");
    assert_eq!(main["process"], 1);
    // Running 1000-3000, 8000-9000, 9500-10000; blocked 3000-7000;
    // runnable 7000-8000 (woken) and 9000-9500 (preempted).
    assert_eq!(main["running_ns"], 3500);
    assert_eq!(main["blocked_ns"], 4000);
    assert_eq!(main["runnable_ns"], 1500);
    assert_eq!(main["context_switches"], 3);
    assert_eq!(main["preempted"], 1);
    assert_eq!(main["wakeups"], 1);
    assert_eq!(sched[1]["thread"], 3);
    assert_eq!(sched[1]["running_ns"], 500);

    let out = fxt(&["stats", p(&file)]);
    let text = stdout(&out);
    assert!(text.contains("kernel scheduler"), "{text}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("2 ")
            && l.contains("3.50us")
            && l.contains("4.00us")
            && l.contains("1.50us")
            && l.ends_with("main (proc)")),
        "{text}"
    );
}

#[test]
fn stats_on_several_threads_prints_what_one_thread_prints() {
    assert_same_on_any_threads("stats_threads.fxt", &["stats", "{}"]);
    assert_same_on_any_threads("stats_threads_json.fxt", &["stats", "--json", "{}"]);
    // Cut at many places (see `cut_trace`): strings renamed between
    // ranges, two providers, begins open across cuts, damage.
    assert_same_when_cut("stats_cut.fxt", &["stats", "{}"], None);
    assert_same_when_cut("stats_cut_json.fxt", &["stats", "--json", "{}"], None);
    assert_same_when_long_cut("stats_long_cut.fxt", &["stats", "{}"]);
}

/// Events read by their heads between records that change what they
/// mean: the provider's clock set anew (which leaves the string and
/// thread tables as they were), a thread index and a string index
/// redefined. Each event is counted with the clock, thread and name in
/// force at it, on one thread and cut into ranges.
#[test]
fn stats_reads_each_event_head_with_the_clock_and_tables_at_it() {
    let (c, a) = (StringRef::Index(1), StringRef::Index(2));
    let on_1 = ThreadRef::Index(1);
    let complete = |start, end| event(EventKind::DurationComplete { end }, start, on_1, c, a, &[]);
    let mut t = Trace::with_provider(1, "app", 1_000_000).strings(&[(1, "cat"), (2, "a")]);
    let thread = |thread| ThreadRecord {
        index: 1,
        process: 1,
        thread,
    };
    t = t
        .push(&thread(11))
        // 10 µs, ending at 10 µs.
        .push(&complete(0, 10))
        .push(&Initialization {
            ticks_per_second: 1_000_000_000,
        })
        // 10 ns.
        .push(&complete(100, 110))
        .push(&thread(12))
        .push(&event(EventKind::Instant, 120, on_1, c, a, &[]))
        .push(&StringRecord {
            index: 2,
            value: "b",
        })
        // 5 ns, named b.
        .push(&complete(200, 205));
    let file = t.file("stats_heads_between_changes.fxt");
    for out in [
        fxt(&["stats", "--json", p(&file)]),
        fxt_cut(3, 64, &["stats", "--json", p(&file)]),
    ] {
        assert!(out.status.success(), "{}", stderr(&out));
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        let a = find(&s["durations"], "a");
        assert_eq!((&a["count"], &a["total_ns"]), (&2.into(), &10_010.into()));
        let b = find(&s["durations"], "b");
        assert_eq!((&b["count"], &b["total_ns"]), (&1.into(), &5.into()));
        assert_eq!((&s["start_ns"], &s["end_ns"]), (&0.into(), &10_000.into()));
        let threads: Vec<_> = s["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["thread"].as_u64().unwrap(), t["events"].as_u64().unwrap()))
            .collect();
        assert_eq!(threads, [(11, 2), (12, 2)]);
    }
}

/// Begins and ends are matched per provider and koids: a thread index
/// that no thread record defines (koids unknown) and a thread whose
/// koids are inline zeros share one stack, and their events count as
/// one thread's, on one thread and cut into ranges.
#[test]
fn stats_matches_an_unknown_thread_with_the_thread_of_koids_zero() {
    let (c, outer, inner) = (
        StringRef::Index(1),
        StringRef::Index(2),
        StringRef::Index(3),
    );
    let unknown = ThreadRef::Index(5);
    let zeros = ThreadRef::Inline {
        process: 0,
        thread: 0,
    };
    let at = |kind, ts, thread, name| event(kind, ts, thread, c, name, &[]);
    let file = Trace::with_provider(1, "app", 1_000_000)
        .strings(&[(1, "cat"), (2, "outer"), (3, "inner")])
        .push(&at(EventKind::DurationBegin, 0, unknown, outer))
        .push(&at(EventKind::DurationBegin, 10, zeros, inner))
        .push(&at(EventKind::DurationEnd, 15, zeros, inner))
        .push(&at(EventKind::DurationEnd, 20, unknown, outer))
        .file("stats_unknown_thread.fxt");
    for out in [
        fxt(&["stats", "--json", p(&file)]),
        fxt_cut(3, 64, &["stats", "--json", p(&file)]),
    ] {
        assert!(out.status.success(), "{}", stderr(&out));
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        let durations = |name| {
            let d = find(&s["durations"], name);
            (d["count"].clone(), d["total_ns"].clone())
        };
        assert_eq!(durations("outer"), (1.into(), 20_000.into()));
        assert_eq!(durations("inner"), (1.into(), 5_000.into()));
        assert_eq!(s["unmatched_duration_ends"], 0);
        assert_eq!(s["unclosed_duration_begins"], 0);
        let threads = s["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 1, "{threads:?}");
        assert_eq!(
            (&threads[0]["thread"], &threads[0]["events"]),
            (&0.into(), &4.into())
        );
    }
}
