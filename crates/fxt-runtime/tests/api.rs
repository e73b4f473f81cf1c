//! Every emit function of `__macro_support`, decoded back; categories,
//! sessions, thread names, and the file layout.
mod common;

use common::*;
use fxt_format::decode::{ArgValue as D, EventKind, Record, Thread};
use fxt_runtime::__macro_support::{self as ms, ArgValue, Callsite, KeyCache, StringRef};
use fxt_runtime::{start, ArgScratch, Config, IntoArgValue, Koid, StartError};

fn events_of(records: &[Record]) -> Vec<&fxt_format::decode::Event> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

#[test]
fn every_event_kind_decodes() {
    let _g = serial();
    static K: [KeyCache; 3] = [KeyCache::NEW, KeyCache::NEW, KeyCache::NEW];
    static S: Callsite = Callsite::new("cat", "all", &["a", "b", "c"], &K);
    let session = start(Config::new().buffer_size(1 << 20)).unwrap();
    let site = S.site().expect("enabled");
    let args = [ArgValue::I32(-5), ArgValue::F64(1.5), ArgValue::Bool(true)];
    ms::instant(site, &args);
    ms::counter(site, 7, &[ArgValue::U64(3)]);
    ms::duration_begin(site, &[]);
    ms::duration_end(site, &[]);
    let start_ts = ms::now();
    ms::duration_complete(site, start_ts, &[]);
    let id = ms::next_async_id();
    ms::async_begin(site, id, &[]);
    ms::async_instant(site, id, &[]);
    ms::async_end(site, id, &[]);
    ms::flow_begin(site, id + 1, &[]);
    ms::flow_step(site, id + 1, &[]);
    ms::flow_end(site, id + 1, &[]);
    {
        let _guard = ms::DurationGuard::new(S.site());
    }
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    check_preamble(&records);
    assert_eq!(stats.records_dropped, 0);
    assert_eq!(stats.emitted_records_written, 12);
    let evs = events_of(&records);
    let kinds: Vec<EventKind> = evs.iter().map(|e| e.kind).collect();
    assert_eq!(kinds[0], EventKind::Instant);
    assert_eq!(kinds[1], EventKind::Counter { id: 7 });
    assert_eq!(kinds[2], EventKind::DurationBegin);
    assert_eq!(kinds[3], EventKind::DurationEnd);
    assert!(matches!(kinds[4], EventKind::DurationComplete { end } if end >= start_ts));
    assert_eq!(evs[4].timestamp, start_ts);
    assert_eq!(kinds[5], EventKind::AsyncBegin { id });
    assert_eq!(kinds[6], EventKind::AsyncInstant { id });
    assert_eq!(kinds[7], EventKind::AsyncEnd { id });
    assert_eq!(kinds[8], EventKind::FlowBegin { id: id + 1 });
    assert_eq!(kinds[9], EventKind::FlowStep { id: id + 1 });
    assert_eq!(kinds[10], EventKind::FlowEnd { id: id + 1 });
    assert!(matches!(kinds[11], EventKind::DurationComplete { .. }));
    for e in &evs {
        assert_eq!(e.category, "cat");
        assert_eq!(e.name, "all");
        assert!(matches!(e.thread, Thread::Known { .. }));
    }
    let a = &evs[0].args;
    assert_eq!(a.len(), 3);
    assert_eq!((a[0].name.as_str(), &a[0].value), (Some("a"), &D::I32(-5)));
    assert_eq!((a[1].name.as_str(), &a[1].value), (Some("b"), &D::F64(1.5)));
    assert_eq!(
        (a[2].name.as_str(), &a[2].value),
        (Some("c"), &D::Bool(true))
    );
    // Timestamps are non-decreasing on one thread.
    for w in evs.windows(2) {
        assert!(
            w[0].timestamp <= w[1].timestamp
                || matches!(w[1].kind, EventKind::DurationComplete { .. })
        );
    }
}

#[test]
fn inline_values_logs_and_blobs() {
    let _g = serial();
    static K: [KeyCache; 6] = [
        KeyCache::NEW,
        KeyCache::NEW,
        KeyCache::NEW,
        KeyCache::NEW,
        KeyCache::NEW,
        KeyCache::NEW,
    ];
    static S: Callsite = Callsite::new("io", "mixed", &["s", "p", "k", "n", "blob", "idx"], &K);
    static L: Callsite = Callsite::new("io", "log", &[], &[]);
    static B: Callsite = Callsite::new("io", "payload", &[], &[]);
    let session = start(Config::new().buffer_size(1 << 20)).unwrap();
    let text = String::from("a dynamic string value");
    let ptr = 0x1234usize as *const u8;
    let site = S.site().unwrap();
    ms::instant(
        site,
        &[
            text.into_arg_value(&mut ArgScratch::new()),
            ptr.into_arg_value(&mut ArgScratch::new()),
            Koid(42).into_arg_value(&mut ArgScratch::new()),
            ().into_arg_value(&mut ArgScratch::new()),
            ArgValue::Blob(&[1, 2, 3]),
            ArgValue::Str(StringRef::Empty),
        ],
    );
    ms::log(L.site().unwrap(), "hello log");
    ms::blob(B.site().unwrap(), b"small payload");
    let big = vec![0xabu8; 40_000];
    ms::blob(B.site().unwrap(), &big);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0);
    assert_eq!(stats.emitted_records_written, 4);
    let records = decode(&bytes);
    let e = events_of(&records)
        .into_iter()
        .find(|e| e.name == "mixed")
        .unwrap();
    let vals: Vec<&D> = e.args.iter().map(|a| &a.value).collect();
    assert_eq!(vals[0], &D::Str("a dynamic string value".into()));
    assert_eq!(vals[1], &D::Pointer(0x1234));
    assert_eq!(vals[2], &D::Koid(42));
    assert_eq!(vals[3], &D::Null);
    assert_eq!(vals[4], &D::Blob(vec![1, 2, 3]));
    assert_eq!(vals[5], &D::Str("".into()));
    assert!(records
        .iter()
        .any(|r| matches!(r, Record::Log(l) if l.message == "hello log")));
    assert!(records.iter().any(
        |r| matches!(r, Record::Blob(b) if b.name == "payload" && b.payload == b"small payload")
    ));
    // Over 32 KiB: a split blob group (an instant "payload" in "io" with
    // the size and part count, then the parts), joined back whole.
    let joined: Vec<_> = fxt_format::decode::join_split_blobs(&bytes).collect();
    assert!(joined.iter().any(|j| j.joined_parts == 2
        && matches!(&j.item, Ok(Record::Blob(b)) if b.name == "payload" && b.payload == big)));
    assert!(events_of(&records)
        .iter()
        .any(|e| e.name == "payload" && e.category == "io"));
}

#[test]
fn fast_path_matches_the_reference_encoder() {
    use fxt_format::encode::{
        encode_to_vec, Arg, Event, EventKind as K, StringRef as R, ThreadRef,
    };
    let _g = serial();
    static KC: [KeyCache; 2] = [KeyCache::NEW, KeyCache::NEW];
    static S: Callsite = Callsite::new("enc", "check", &["x", "y"], &KC);
    let session = start(Config::new().buffer_size(1 << 20)).unwrap();
    ms::counter(S.site().unwrap(), 9, &[ArgValue::U64(1), ArgValue::I32(-2)]);
    let (bytes, _) = session.finish_to_vec().unwrap();
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let records = decode(&bytes);
    let e = events_of(&records)[0];
    // Rebuild the same event with fxt-format's encoder and the indices the
    // runtime chose, and find its exact words in the file.
    let idx = |s: &str| -> u16 {
        records
            .iter()
            .find_map(|r| match r {
                Record::String { index, value } if &**value == s => Some(*index),
                _ => None,
            })
            .unwrap()
    };
    let thread = records
        .iter()
        .find_map(|r| match r {
            Record::Thread { index, .. } => Some(*index),
            _ => None,
        })
        .unwrap();
    let args = [
        Arg::new(R::Index(idx("x")), fxt_format::encode::ArgValue::U64(1)),
        Arg::new(R::Index(idx("y")), fxt_format::encode::ArgValue::I32(-2)),
    ];
    let reference = encode_to_vec(&Event {
        kind: K::Counter { id: 9 },
        timestamp: e.timestamp,
        thread: ThreadRef::Index(thread),
        category: R::Index(idx("enc")),
        name: R::Index(idx("check")),
        args: &args,
    })
    .unwrap();
    assert!(
        words
            .windows(reference.len())
            .any(|w| w == reference.as_slice()),
        "runtime words differ from fxt_format::encode::Event"
    );
}

#[test]
fn categories_filter_and_change_at_run_time() {
    let _g = serial();
    static A: Callsite = Callsite::new("alpha", "a", &[], &[]);
    static B: Callsite = Callsite::new("beta", "b", &[], &[]);
    let fire = || {
        if let Some(s) = A.site() {
            ms::instant(s, &[]);
        }
        if let Some(s) = B.site() {
            ms::instant(s, &[]);
        }
    };
    fire(); // no session: both disabled
    assert!(A.site().is_none());
    let session = start(Config::new().buffer_size(1 << 20).categories(&["alpha"])).unwrap();
    assert!(fxt_runtime::is_enabled());
    fire(); // a
    fxt_runtime::enable_category("beta");
    fire(); // a b
    fxt_runtime::disable_category("alpha");
    fire(); // b
    let (bytes, _) = session.finish_to_vec().unwrap();
    assert!(!fxt_runtime::is_enabled());
    assert!(A.site().is_none() && B.site().is_none());
    let names: Vec<String> = events_of(&decode(&bytes))
        .iter()
        .map(|e| e.name.to_string())
        .collect();
    assert_eq!(names, ["a", "a", "b", "b"]);
}

#[test]
fn sessions_restart_and_only_one_is_live() {
    let _g = serial();
    for round in 0..20u64 {
        let session = start(Config::new().buffer_size(256 << 10)).unwrap();
        assert!(matches!(
            start(Config::new()),
            Err(StartError::AlreadyRunning)
        ));
        emit(round, round);
        std::thread::spawn(move || emit(round, round + 1))
            .join()
            .unwrap();
        let (bytes, stats) = session.finish_to_vec().unwrap();
        assert_eq!(stats.records_dropped, 0);
        let evs = stress_events(&decode(&bytes));
        // One event per thread (file order across threads is not time
        // order: an exiting thread's chunk is written out first).
        let mut got: Vec<_> = evs.iter().map(|e| (e.0, e.1)).collect();
        got.sort_unstable();
        assert_eq!(got, [(round, round), (round, round + 1)]);
    }
}

#[test]
fn thread_and_process_names() {
    let _g = serial();
    let session = start(Config::new().buffer_size(1 << 20)).unwrap();
    std::thread::Builder::new()
        .name("worker-x".into())
        .spawn(|| {
            emit(0, 0);
            fxt_runtime::set_thread_name("renamed");
            emit(0, 1);
        })
        .unwrap()
        .join()
        .unwrap();
    let (bytes, _) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    let pid = std::process::id() as u64;
    let objects: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::KernelObject(k) => Some(k),
            _ => None,
        })
        .collect();
    assert!(objects.iter().any(|k| k.object_type == 1 && k.koid == pid));
    let tid = stress_events(&records)[0].2;
    let names: Vec<String> = objects
        .iter()
        .filter(|k| k.object_type == 2 && k.koid == tid)
        .map(|k| {
            assert_eq!(k.args[0].name, "process");
            assert_eq!(k.args[0].value, D::Koid(pid));
            k.name.to_string()
        })
        .collect();
    assert_eq!(names, ["worker-x", "renamed"]);
    // The thread record carries the real pid.
    assert!(records.iter().any(
        |r| matches!(r, Record::Thread { process, thread, .. } if *process == pid && *thread == tid)
    ));
}

#[test]
fn dropping_the_session_writes_the_output() {
    let _g = serial();
    let path = temp_path("dropped-session.fxt");
    let session = start(Config::new().buffer_size(256 << 10).output(&path)).unwrap();
    emit(1, 2);
    drop(session);
    let records = decode(&std::fs::read(&path).unwrap());
    assert_eq!(stress_events(&records).len(), 1);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn config_from_env_and_sizes() {
    assert_eq!(fxt_runtime::parse_size("3M"), Some(3 << 20));
    assert_eq!(fxt_runtime::parse_size("12kib"), Some(12 << 10));
    assert_eq!(fxt_runtime::parse_size("x"), None);
    let _g = serial();
    std::env::set_var("FXT_BUFFER", "2M");
    std::env::set_var("FXT_MODE", "circular");
    std::env::set_var("FXT_OUTPUT", "/tmp/x.fxt");
    std::env::set_var("FXT_CATEGORIES", "a, b");
    let c = Config::from_env();
    for v in ["FXT_BUFFER", "FXT_MODE", "FXT_OUTPUT", "FXT_CATEGORIES"] {
        std::env::remove_var(v);
    }
    assert_eq!(c.get_mode(), fxt_runtime::Mode::Circular);
    assert_eq!(c.output_path(), std::path::Path::new("/tmp/x.fxt"));
    let dbg = format!("{c:?}");
    assert!(
        dbg.contains("2097152") && dbg.contains("\"a\"") && dbg.contains("\"b\""),
        "{dbg}"
    );
}

/// A future pending until its third poll; the first wakes it.
struct ThirdPoll(u32);

impl std::future::Future for ThirdPoll {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        self.0 += 1;
        match self.0 {
            1 => {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
            3 => std::task::Poll::Ready(()),
            _ => std::task::Poll::Pending,
        }
    }
}

#[test]
fn a_polls_records_match_the_reference_encoder() {
    use fxt_format::encode::{
        encode_to_vec, Arg, Event, EventKind as K, StringRef as R, ThreadRef,
    };
    use std::future::Future;
    let _g = serial();
    let session = start(Config::new().buffer_size(1 << 20)).unwrap();
    let mut task = std::pin::pin!(fxt_runtime::task::traced("encoded", ThirdPoll(0)));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    while task.as_mut().poll(&mut cx).is_pending() {}
    let (bytes, _) = session.finish_to_vec().unwrap();
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let records = decode(&bytes);
    let idx = |s: &str| -> u16 {
        records
            .iter()
            .find_map(|r| match r {
                Record::String { index, value } if &**value == s => Some(*index),
                _ => None,
            })
            .unwrap()
    };
    let thread = records
        .iter()
        .find_map(|r| match r {
            Record::Thread { index, .. } => Some(*index),
            _ => None,
        })
        .unwrap();
    let polls: Vec<_> = events_of(&records)
        .into_iter()
        .filter(|e| e.name == "encoded")
        .filter_map(|e| match e.kind {
            EventKind::DurationComplete { end } => Some((e.timestamp, end, e)),
            _ => None,
        })
        .collect();
    assert_eq!(polls.len(), 3, "{records:?}");
    // Nothing but the poll on its thread: the task's track and the wake's
    // arrow are derived by readers.
    let flows = events_of(&records)
        .into_iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::FlowBegin { .. } | EventKind::FlowEnd { .. }
            )
        })
        .count();
    assert_eq!(flows, 0, "{records:?}");
    let task_id = events_of(&records)
        .into_iter()
        .find(|e| e.name == "encoded" && matches!(e.kind, EventKind::DurationComplete { .. }))
        .and_then(|e| e.args.iter().find(|a| a.name == "task"))
        .map(|a| match a.value {
            D::U64(v) => v,
            ref other => panic!("task id {other:?}"),
        })
        .unwrap();
    let asyncs = events_of(&records)
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::AsyncBegin { id } if id == task_id))
        .count();
    assert_eq!(asyncs, 1, "only the task's life: {records:?}");
    // Each poll: one record, the slice on the thread with the task's id.
    for (n, (start, end, e)) in polls.into_iter().enumerate() {
        let args: Vec<Arg> = e
            .args
            .iter()
            .map(|a| match a.value {
                D::U64(v) => Arg::new(
                    R::Index(idx(a.name.as_str().unwrap())),
                    fxt_format::encode::ArgValue::U64(v),
                ),
                ref other => panic!("{other:?}"),
            })
            .collect();
        // The second poll, woken by its own first poll: `delay`,
        // `waker_thread` and `woken_by` too.
        let expected = if n == 1 { 4 } else { 1 };
        assert_eq!(
            args.len(),
            expected,
            "task, delay, waker_thread, woken_by: {e:?}"
        );
        let event = Event {
            kind: K::DurationComplete { end },
            timestamp: start,
            thread: ThreadRef::Index(thread),
            category: R::Index(idx("task")),
            name: R::Index(idx("encoded")),
            args: &args,
        };
        let reference = encode_to_vec(&event).unwrap();
        assert!(
            words
                .windows(reference.len())
                .any(|w| w == reference.as_slice()),
            "a poll's record differs from fxt_format::encode::Event's"
        );
    }
}
