//! `fxt check --perfetto` and `fxt convert --perfetto`: what Perfetto and
//! Tracy would misread or drop, and a copy they read whole.

mod cli_support;
use cli_support::*;

use fxt_format::decode::{self, join_split_blobs, EventKind as Kind, Record, SliceReader};

/// 100,000 bytes that are not all alike.
fn blob_bytes() -> Vec<u8> {
    (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// The engine's trace of the workload, then a 100,000-byte blob and an
/// instant after it.
fn trace_with_blob(large_records: bool) -> Vec<u8> {
    let blob = blob_bytes();
    engine_trace(fxt::Config::new().large_records(large_records), || {
        engine_workload();
        fxt::trace_blob!("app", "image", &blob);
        fxt::trace_instant!("app", "after the blob");
    })
}

/// Offset and record of every record the decoder reads.
fn records(bytes: &[u8]) -> Vec<(u64, Record)> {
    let mut reader = SliceReader::new(bytes);
    let mut out = Vec::new();
    while let Some(r) = reader.next() {
        out.push((reader.record_offset(), r.expect("well-formed")));
    }
    out
}

/// Durations (complete events and begin events) in a trace.
fn durations(bytes: &[u8]) -> usize {
    records(bytes)
        .iter()
        .filter(|(_, r)| {
            matches!(r, Record::Event(e) if matches!(e.kind, Kind::DurationComplete { .. } | Kind::DurationBegin))
        })
        .count()
}

#[test]
fn engine_traces_pass_and_a_large_blob_record_is_reported_at_its_offset() {
    for (what, bytes) in [
        (
            "workload",
            engine_trace(fxt::Config::new(), engine_workload),
        ),
        ("split blob", trace_with_blob(false)),
    ] {
        let file = tmp(&format!("perfetto_ok_{}.fxt", what.replace(' ', "_")));
        std::fs::write(&file, &bytes).unwrap();
        let out = fxt(&["check", "--perfetto", p(&file)]);
        assert_eq!(
            stdout(&out),
            format!(
                "{}: ok for Perfetto and Tracy, {} records\n",
                p(&file),
                records(&bytes).len()
            ),
            "{what}"
        );
        assert_eq!(out.status.code(), Some(0), "{what}");
    }

    let bytes = trace_with_blob(true);
    let all = records(&bytes);
    let (at, _) = all
        .iter()
        .find(|(_, r)| matches!(r, Record::LargeBlobWithMetadata(_)))
        .expect("a large blob record");
    let header = u64::from_le_bytes(bytes[*at as usize..][..8].try_into().unwrap());
    let words = (header >> 4) & 0xffff_ffff;
    let file = tmp("perfetto_large.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let out = fxt(&["check", "--perfetto", p(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let first = text.lines().next().unwrap();
    let expected = format!(
        "{}: offset {at:#x}: record of {words} words is {} words by header bits 4-15 (Perfetto, Tracy)",
        p(&file),
        words & 0xfff
    );
    assert!(first.starts_with(&expected), "{first}\nwanted {expected}");
    // Records after the blob are missed until the walks meet again (at the
    // end, or earlier: a drained file's fillers can bring them together).
    let after = all.iter().filter(|(o, _)| o > at).count();
    let missed: Option<usize> = first
        .split_once(" and miss ")
        .and_then(|(_, rest)| rest.split(' ').next()?.parse().ok());
    assert!(
        missed.is_some_and(|n| n > 0 && n <= after)
            || text.contains("Perfetto fails the whole import"),
        "{text}"
    );
    assert!(text.lines().last().unwrap().contains("problem"), "{text}");
}

/// A thread, strings, and complete events at 3 GHz (3 ticks per ns).
fn overlapping() -> (Trace, Vec<(u64, &'static str)>) {
    let t = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let complete = |begin: u64, end: u64, name: &'static str| {
        event(
            EventKind::DurationComplete { end },
            begin,
            t,
            StringRef::Inline("c"),
            StringRef::Inline(name),
            &[],
        )
    };
    let mut at = Vec::new();
    let mut trace = Trace::with_provider(1, "app", 3_000_000_000);
    // Nested, the inner written first (it ends first), beginning 1 tick
    // after the outer: both begin at 1000 ns.
    for (b, e, name) in [(3001, 6000, "inner"), (3000, 9000, "outer")] {
        at.push((trace.offset(), name));
        trace = trace.push(&complete(b, e, name));
    }
    // A partial overlap: begins inside `late`, ends after it.
    for (b, e, name) in [(30_000, 36_000, "late"), (33_000, 39_000, "crossing")] {
        at.push((trace.offset(), name));
        trace = trace.push(&complete(b, e, name));
    }
    // Ends before it begins.
    at.push((trace.offset(), "backwards"));
    trace = trace.push(&complete(60_000, 57_000, "backwards"));
    // A string index used before its definition, and one never defined.
    at.push((trace.offset(), "early ref"));
    trace = trace.push(&event(
        EventKind::Instant,
        90_000,
        t,
        StringRef::Inline("c"),
        StringRef::Index(5),
        &[],
    ));
    at.push((trace.offset(), "never defined"));
    trace = trace.push(&event(
        EventKind::Instant,
        93_000,
        t,
        StringRef::Inline("c"),
        StringRef::Index(6),
        &[],
    ));
    at.push((trace.offset(), "definition"));
    trace = trace.push(&StringRecord {
        index: 5,
        value: "defined late",
    });
    (trace, at)
}

#[test]
fn overlapping_complete_events_and_undefined_refs_are_reported_with_offsets() {
    let (trace, at) = overlapping();
    let off = |name: &str| at.iter().find(|a| a.1 == name).unwrap().0;
    let file = trace.file("perfetto_overlap.fxt");
    let out = fxt(&["check", "--perfetto", p(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let f = p(&file);
    let want = [
        format!(
            "{f}: offset {:#x}: slice \"outer\" on thread 1/2 at 1000 ns..3000 ns: dropped by Perfetto (slice_drop_overlapping_complete_event): it begins inside the slice at offset {:#x} (1000..2000 ns) and ends after it",
            off("outer"),
            off("inner")
        ),
        format!(
            "{f}: offset {:#x}: slice \"crossing\" on thread 1/2 at 11000 ns..13000 ns: dropped by Perfetto (slice_drop_overlapping_complete_event): it begins inside the slice at offset {:#x} (10000..12000 ns) and ends after it",
            off("crossing"),
            off("late")
        ),
        format!(
            "{f}: offset {:#x}: slice \"backwards\" on thread 1/2 at 20000 ns..19000 ns: dropped by Perfetto (fuchsia_timestamp_overflow): it ends before it begins",
            off("backwards")
        ),
        format!(
            "{f}: offset {:#x}: reference to string #5 before any definition (defined later, at offset {:#x})",
            off("early ref"),
            off("definition")
        ),
        format!(
            "{f}: offset {:#x}: reference to string #6 before any definition (never defined)",
            off("never defined")
        ),
        format!(
            "{f}: 5 problems for Perfetto and Tracy in 11 records: 0 misframed, 3 slices dropped, 2 undefined references"
        ),
    ];
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), want);
}

#[test]
fn convert_puts_outer_slices_first_and_leaves_out_what_perfetto_drops() {
    let (trace, _) = overlapping();
    let file = trace.file("convert_overlap.fxt");
    let converted = tmp("convert_overlap_out.fxt");
    let out = fxt(&["convert", "--perfetto", p(&file), "-o", p(&converted)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    for line in [
        "string and thread records copied in front of their first use: 1",
        "complete events put outermost first (same nanosecond): 2",
        "left out: slices Perfetto would drop (partial overlaps, negative durations, ends without a begin): 2",
        "left out: records referring to a string or thread never defined: 1",
        "ok for Perfetto and Tracy",
    ] {
        assert!(err.contains(line), "missing {line:?} in\n{err}");
    }
    assert!(fxt(&["check", "--perfetto", p(&converted)])
        .status
        .success());

    let bytes = std::fs::read(&converted).unwrap();
    let names: Vec<String> = records(&bytes)
        .into_iter()
        .filter_map(|(_, r)| match r {
            Record::Event(e) => Some(e.name.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["outer", "inner", "late", "defined late"]);
}

#[test]
fn convert_splits_a_100_000_byte_large_blob_and_its_bytes_come_back_whole() {
    let original = trace_with_blob(true);
    let file = tmp("convert_large.fxt");
    std::fs::write(&file, &original).unwrap();
    let converted = tmp("convert_large_out.fxt");
    let out = fxt(&["convert", "--perfetto", p(&file), "-o", p(&converted)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("large blob records written as split blob groups: 1"),
        "{}",
        stderr(&out)
    );
    let check = fxt(&["check", "--perfetto", p(&converted)]);
    assert_eq!(check.status.code(), Some(0), "{}", stdout(&check));
    assert_eq!(fxt(&["check", p(&converted)]).status.code(), Some(0));

    let bytes = std::fs::read(&converted).unwrap();
    // Nothing else lost: every duration is still there.
    assert_eq!(durations(&bytes), durations(&original));
    // The blob, joined by the decoder: whole.
    let blobs: Vec<_> = join_split_blobs(&bytes)
        .filter_map(|j| match j.item {
            Ok(Record::Blob(b)) if b.name == "image" => Some((b.payload, j.joined_parts)),
            _ => None,
        })
        .collect();
    assert_eq!(blobs.len(), 1);
    assert_eq!(blobs[0].0, blob_bytes());
    assert!(blobs[0].1 >= 4, "{} parts", blobs[0].1);
    // The instant written after the blob is read after it, as a record.
    let last_events: Vec<_> = decode::decode_all(&bytes)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e.name.to_string()),
            _ => None,
        })
        .collect();
    assert!(last_events.contains(&"after the blob".to_string()));
}
