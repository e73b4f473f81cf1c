//! `fxt recover`: a clean trace from a damaged one.

mod cli_support;
use cli_support::*;
use fxt_format::decode::{self, Record};

#[test]
fn recover_keeps_every_record_before_the_damage() {
    let good = golden();
    let mut bytes = good.bytes();
    // What a killed writer leaves: a reserved but unwritten (zero) region.
    bytes.extend_from_slice(&[0u8; 64]);
    let damaged = tmp("recover_in.fxt");
    std::fs::write(&damaged, &bytes).unwrap();
    let clean = tmp("recover_out.fxt");
    let out = fxt(&["recover", p(&damaged), "-o", p(&clean)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("offset {:#x}", good.offset())),
        "{err}"
    );
    assert!(err.contains("recovered 10 records"), "{err}");
    let recovered = std::fs::read(&clean).unwrap();
    assert_eq!(recovered, good.bytes(), "copied byte for byte");
    decode::decode_all(&recovered).expect("clean");
    assert!(fxt(&["check", p(&clean)]).status.success());
}

#[test]
fn recover_drops_malformed_records_and_adds_magic() {
    // No magic; a string record whose stream is not UTF-8; then an event.
    let t = Trace::new()
        .push(&StringRecord {
            index: 1,
            value: "ok",
        })
        .raw(&[0x0000_0001_0002_0022 | (2 << 32), 0xffff])
        .push(&event(
            EventKind::Instant,
            5,
            ThreadRef::Inline {
                process: 1,
                thread: 2,
            },
            StringRef::Index(1),
            StringRef::Index(1),
            &[],
        ));
    let damaged = t.file("recover_utf8.fxt");
    let clean = tmp("recover_utf8_out.fxt");
    let out = fxt_stdin(
        &["recover", "--force", "-", "-o", p(&clean)],
        &std::fs::read(&damaged).unwrap(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The record is at 0x10; its string stream, at 0x18, is what is wrong.
    assert!(stderr(&out).contains("offset 0x18"), "{}", stderr(&out));
    let records = decode::decode_all(&std::fs::read(&clean).unwrap()).expect("clean");
    assert_eq!(records.len(), 3);
    assert_eq!(records[0], Record::Magic);
    match &records[2] {
        Record::Event(e) => assert_eq!(e.name, "ok"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn recover_force_of_garbage_writes_a_trace_of_nothing() {
    let damaged = tmp("recover_garbage.fxt");
    std::fs::write(&damaged, [0xffu8; 5]).unwrap();
    let clean = tmp("recover_garbage_out.fxt");
    let out = fxt(&["recover", p(&damaged), "-o", p(&clean)]);
    assert_eq!(out.status.code(), Some(2), "not a trace");
    assert!(!clean.exists());
    let out = fxt(&["recover", "--force", p(&damaged), "-o", p(&clean)]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("offset 0x0"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&clean).unwrap(),
        Trace::new().push(&MagicNumber).bytes()
    );
    assert!(fxt(&["check", p(&clean)]).status.success());
}

#[test]
fn recover_drops_or_repairs_everything_check_refuses_and_counts_it_per_reason() {
    let t1 = ThreadRef::Index(1);
    let ev = |kind, ts, thread, category: u16, name: u16| {
        event(
            kind,
            ts,
            thread,
            StringRef::Index(category),
            StringRef::Index(name),
            &[],
        )
    };
    let mut t = Trace::with_provider(1, "app", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "c",
        })
        .push(&StringRecord {
            index: 2,
            value: "a",
        })
        .push(&StringRecord {
            index: 3,
            value: "b",
        })
        .push(&ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        });
    // Kept, with a reserved bit of its argument header cleared.
    let args = [Arg::new(StringRef::Index(2), ArgValue::Bool(true))];
    let clean = encode_to_vec(&event(
        EventKind::Instant,
        1,
        t1,
        StringRef::Index(1),
        StringRef::Index(2),
        &args,
    ))
    .unwrap();
    let mut dirty = clean.clone();
    dirty[2] |= 1 << 40;
    t = t.raw(&dirty);
    // Left out: undefined string, undefined thread.
    t = t.push(&ev(EventKind::Instant, 2, t1, 9, 2));
    t = t.push(&ev(EventKind::Instant, 3, ThreadRef::Index(4), 1, 2));
    // Left out: a complete event ending before it begins.
    t = t.push(&ev(EventKind::DurationComplete { end: 4 }, 5, t1, 1, 2));
    // Left out: an end with no begin.
    t = t.push(&ev(EventKind::DurationEnd, 6, t1, 1, 2));
    // Left out in pairs: an end naming another begin, an end before its begin.
    t = t.push(&ev(EventKind::DurationBegin, 10, t1, 1, 2));
    t = t.push(&ev(EventKind::DurationEnd, 11, t1, 1, 3));
    t = t.push(&ev(EventKind::DurationBegin, 20, t1, 1, 2));
    t = t.push(&ev(EventKind::DurationEnd, 15, t1, 1, 2));
    // Kept: a matched pair, with a nested pair inside.
    t = t.push(&ev(EventKind::DurationBegin, 30, t1, 1, 2));
    t = t.push(&ev(EventKind::DurationBegin, 31, t1, 1, 3));
    t = t.push(&ev(EventKind::DurationEnd, 32, t1, 1, 3));
    t = t.push(&ev(EventKind::DurationEnd, 33, t1, 1, 2));
    // Left out: a begin never ended; a string record that is not UTF-8.
    t = t.push(&ev(EventKind::DurationBegin, 40, t1, 1, 3));
    let malformed_at = t.offset();
    t = t.raw(&[0x0000_0001_0004_0022 | (2 << 32), 0xffff]);
    // Kept.
    t = t.push(&ev(EventKind::DurationComplete { end: 60 }, 50, t1, 1, 3));

    let damaged = t.file("recover_reasons.fxt");
    assert_eq!(fxt(&["check", p(&damaged)]).status.code(), Some(1));
    let clean_file = tmp("recover_reasons_out.fxt");
    let out = fxt(&["recover", p(&damaged), "-o", p(&clean_file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let name = p(&damaged);
    let written = std::fs::metadata(&clean_file).unwrap().len();
    assert_eq!(
        stderr(&out).lines().collect::<Vec<_>>(),
        [
            // The string's stream, one word into the record, is not UTF-8.
            format!("fxt: warning: {name}: string at offset {:#x} is not valid UTF-8; record skipped", malformed_at + 8),
            format!("fxt: recovered 13 records ({written} bytes) of {name}; no damage to the framing; 10 records left out"),
            "fxt:   left out 1: malformed".into(),
            "fxt:   left out 2: referring to an undefined string or thread".into(),
            "fxt:   left out 1: complete durations ending before they begin".into(),
            "fxt:   left out 1: duration ends without a begin".into(),
            "fxt:   left out 4: duration ends naming another begin or ending before it, with those begins".into(),
            "fxt:   left out 1: duration begins never ended".into(),
            "fxt:   reserved bits cleared in 1 record".into(),
        ]
    );
    let check = fxt(&["check", p(&clean_file)]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));

    let bytes = std::fs::read(&clean_file).unwrap();
    let records = decode::decode_all(&bytes).expect("clean");
    let events: Vec<(String, u64)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some((e.name.to_string(), e.timestamp)),
            _ => None,
        })
        .collect();
    assert_eq!(
        events,
        [
            ("a".into(), 1),
            ("a".into(), 30),
            ("b".into(), 31),
            ("b".into(), 32),
            ("a".into(), 33),
            ("b".into(), 50)
        ]
    );
    // The repaired instant is the clean encoding.
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert!(
        words.windows(clean.len()).any(|w| w == clean.as_slice()),
        "the instant with its reserved bit cleared"
    );
    assert!(!words.windows(dirty.len()).any(|w| w == dirty.as_slice()));
}

#[test]
fn recover_of_an_engine_trace_cut_after_a_begin_passes_check() {
    let bytes = engine_trace(fxt::Config::new(), engine_workload);
    // Cut 3 bytes into the record after the first begin of "flush".
    let mut reader = decode::SliceReader::new(&bytes);
    let mut cut = None;
    let mut before = 0u64;
    while let Some(r) = reader.next() {
        before += 1;
        if let Ok(Record::Event(e)) = r {
            if e.kind == EventKind::DurationBegin {
                cut = Some(reader.position() as usize + 3);
                break;
            }
        }
    }
    let cut = cut.expect("a duration begin");
    let damaged = tmp("recover_engine_cut.fxt");
    std::fs::write(&damaged, &bytes[..cut]).unwrap();
    let clean = tmp("recover_engine_cut_out.fxt");
    let out = fxt(&["recover", p(&damaged), "-o", p(&clean)]);
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("fxt: recovered {} records", before - 1)),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "damage at offset {:#x} (3 bytes after it not read)",
            cut - 3
        )),
        "{err}"
    );
    assert!(
        err.contains("left out 1: duration begins never ended"),
        "{err}"
    );
    let check = fxt(&["check", p(&clean)]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
}
