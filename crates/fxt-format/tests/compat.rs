//! The viewer compatibility checks on encoder-built traces that do and do
//! not trip them; expected offsets and counts are worked out from the
//! record sizes by hand.

use fxt_format::compat::{
    check_perfetto, framing_issues, FramingIssue, RefKind, SliceDropKind, UndefinedRef, WalkEnd,
};
use fxt_format::decode::{Text, Thread};
use fxt_format::encode::{
    encode_into_vec, words_to_bytes, Encode, Event, EventKind, Initialization,
    LargeBlobWithMetadata, MagicNumber, ProviderInfo, SplitBlob, StringRecord, StringRef,
    ThreadRecord, ThreadRef,
};

/// Builds a trace record by record, remembering each record's byte offset.
struct Trace {
    words: Vec<u64>,
}

impl Trace {
    /// Magic, initialization at `ticks_per_second`, strings 1 "cat", 2 "a",
    /// 3 "b", thread 1 = (1, 2): 1 + 2 + 3×2 + 3 = 12 words.
    fn new(ticks_per_second: u64) -> Self {
        let mut t = Trace { words: Vec::new() };
        t.push(&MagicNumber);
        t.push(&Initialization { ticks_per_second });
        for (index, value) in [(1, "cat"), (2, "a"), (3, "b")] {
            t.push(&StringRecord { index, value });
        }
        t.push(&ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        });
        assert_eq!(t.words.len(), 12);
        t
    }

    /// Appends a record; returns its byte offset.
    fn push(&mut self, record: &dyn Encode) -> u64 {
        let offset = self.words.len() as u64 * 8;
        encode_into_vec(record, &mut self.words).unwrap();
        offset
    }

    fn event(&mut self, kind: EventKind, timestamp: u64, name: u16) -> u64 {
        self.push(&Event {
            kind,
            timestamp,
            thread: ThreadRef::Index(1),
            category: StringRef::Index(1),
            name: StringRef::Index(name),
            args: &[],
        })
    }

    fn complete(&mut self, begin: u64, end: u64, name: u16) -> u64 {
        self.event(EventKind::DurationComplete { end }, begin, name)
    }

    fn bytes(&self) -> Vec<u8> {
        words_to_bytes(&self.words)
    }
}

const A: u16 = 2;
const B: u16 = 3;
const THREAD: Thread = Thread::Known {
    process: 1,
    thread: 2,
};

#[test]
fn nested_complete_events_one_tick_apart_at_3_ghz_inner_first_are_dropped() {
    // Outer: ticks 3..30 = 1..10 ns. Inner: ticks 4..27 = 1..9 ns (1.33 ns
    // rounds down to 1). The inner one ends first, so it is written first;
    // sorted by begin (both 1 ns, file order kept) it opens first, and the
    // outer one then begins inside it and ends after it.
    let mut t = Trace::new(3_000_000_000);
    let inner = t.complete(4, 27, B);
    let outer = t.complete(3, 30, A);
    let report = check_perfetto(&t.bytes());
    assert!(report.framing.is_empty() && report.refs.is_empty());
    assert_eq!(report.slices.len(), 1, "{report}");
    let drop = &report.slices[0];
    assert_eq!(drop.offset, outer);
    assert_eq!(drop.name, Text::from("a"));
    assert_eq!(drop.thread, THREAD);
    assert_eq!((drop.begin_ns, drop.end_ns), (1, Some(10)));
    assert_eq!(
        drop.kind,
        SliceDropKind::OverlappingComplete {
            crosses: inner,
            crosses_ns: (1, 9)
        }
    );
    assert!(drop.is_dropped());
    assert!(report
        .to_string()
        .contains("slice_drop_overlapping_complete_event"));
}

#[test]
fn the_same_events_at_1_ghz_or_on_distinct_nanoseconds_are_kept() {
    // 1 GHz: outer begins at 3 ns, inner at 4 ns: outer opens first.
    let mut t = Trace::new(1_000_000_000);
    t.complete(4, 27, B);
    t.complete(3, 30, A);
    assert!(check_perfetto(&t.bytes()).is_clean());
    // 3 GHz, outer at tick 3 (1 ns), inner at tick 6 (2 ns).
    let mut t = Trace::new(3_000_000_000);
    t.complete(6, 27, B);
    t.complete(3, 30, A);
    assert!(check_perfetto(&t.bytes()).is_clean());
    // 3 GHz, equal nanoseconds, but the outer one first in the file.
    let mut t = Trace::new(3_000_000_000);
    t.complete(3, 30, A);
    t.complete(4, 27, B);
    assert!(check_perfetto(&t.bytes()).is_clean());
}

#[test]
fn partially_overlapping_complete_events_are_dropped_whatever_the_clock() {
    let mut t = Trace::new(1_000_000_000);
    let first = t.complete(10, 20, A);
    let second = t.complete(15, 25, B);
    // Touching at an end is fine: [20, 30) after [10, 20).
    t.complete(20, 30, A);
    let report = check_perfetto(&t.bytes());
    assert_eq!(report.slices.len(), 1, "{report}");
    assert_eq!(report.slices[0].offset, second);
    assert_eq!(
        report.slices[0].kind,
        SliceDropKind::OverlappingComplete {
            crosses: first,
            crosses_ns: (10, 20)
        }
    );
}

#[test]
fn begin_end_pairs_nest_and_an_end_without_begin_is_dropped() {
    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::DurationBegin, 10, A);
    t.event(EventKind::DurationBegin, 11, B);
    t.event(EventKind::Instant, 12, B);
    t.event(EventKind::DurationEnd, 13, B);
    t.event(EventKind::DurationEnd, 14, A);
    assert!(check_perfetto(&t.bytes()).is_clean());
    let stray = t.event(EventKind::DurationEnd, 15, A);
    let report = check_perfetto(&t.bytes());
    assert_eq!(report.slices.len(), 1, "{report}");
    assert_eq!(report.slices[0].offset, stray);
    assert_eq!(report.slices[0].kind, SliceDropKind::EndWithoutBegin);
}

#[test]
fn an_end_closes_the_innermost_begin_whatever_its_name() {
    // Perfetto's importer passes no name with an end.
    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::DurationBegin, 10, A);
    t.event(EventKind::DurationEnd, 11, B);
    assert!(check_perfetto(&t.bytes()).is_clean());
}

#[test]
fn an_end_on_another_thread_does_not_close_a_begin() {
    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::DurationBegin, 10, A);
    let other = t.push(&Event {
        kind: EventKind::DurationEnd,
        timestamp: 11,
        thread: ThreadRef::Inline {
            process: 1,
            thread: 99,
        },
        category: StringRef::Index(1),
        name: StringRef::Index(A),
        args: &[],
    });
    let report = check_perfetto(&t.bytes());
    assert_eq!(report.slices.len(), 1, "{report}");
    assert_eq!(report.slices[0].offset, other);
    assert_eq!(
        report.slices[0].thread,
        Thread::Known {
            process: 1,
            thread: 99
        }
    );
}

#[test]
fn a_complete_event_ending_before_it_begins_is_dropped() {
    let mut t = Trace::new(1_000_000_000);
    let bad = t.complete(20, 10, A);
    let report = check_perfetto(&t.bytes());
    assert_eq!(report.slices.len(), 1, "{report}");
    assert_eq!(report.slices[0].offset, bad);
    assert_eq!(report.slices[0].kind, SliceDropKind::NegativeDuration);
}

#[test]
fn a_begin_open_past_the_end_of_its_complete_parent_is_cut() {
    let mut t = Trace::new(1_000_000_000);
    let parent = t.complete(5, 20, A);
    let begin = t.event(EventKind::DurationBegin, 10, B);
    t.event(EventKind::Instant, 25, A);
    let report = check_perfetto(&t.bytes());
    assert_eq!(report.slices.len(), 1, "{report}");
    assert_eq!(report.slices[0].offset, begin);
    assert_eq!(
        report.slices[0].kind,
        SliceDropKind::Truncated { cut_at: parent }
    );
    assert!(!report.slices[0].is_dropped());
}

#[test]
fn refs_used_before_their_definition_are_reported() {
    let mut t = Trace::new(1_000_000_000);
    // String 7 is used, then defined; thread 5 is never defined.
    let early = t.event(EventKind::Instant, 1, 7);
    let definition = t.push(&StringRecord {
        index: 7,
        value: "late",
    });
    t.event(EventKind::Instant, 2, 7);
    let no_thread = t.push(&Event {
        kind: EventKind::Instant,
        timestamp: 3,
        thread: ThreadRef::Index(5),
        category: StringRef::Index(1),
        name: StringRef::Index(A),
        args: &[],
    });
    // A definition by another provider does not count.
    t.push(&ProviderInfo {
        provider_id: 9,
        name: "other",
    });
    t.push(&ThreadRecord {
        index: 5,
        process: 1,
        thread: 2,
    });
    let report = check_perfetto(&t.bytes());
    assert_eq!(
        report.refs,
        [
            UndefinedRef {
                offset: early,
                kind: RefKind::String,
                index: 7,
                defined_later_at: Some(definition)
            },
            UndefinedRef {
                offset: no_thread,
                kind: RefKind::Thread,
                index: 5,
                defined_later_at: None
            },
        ]
    );
    assert!(report.framing.is_empty());
}

/// A trace with a large blob of `payload` between two instants; returns
/// the bytes, the blob's offset and its size in words.
fn with_large_blob(payload: &[u8]) -> (Vec<u8>, u64, u64, Trace) {
    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::Instant, 1, A);
    let blob = LargeBlobWithMetadata {
        category: StringRef::Index(1),
        name: StringRef::Index(A),
        timestamp: 2,
        thread: ThreadRef::Index(1),
        args: &[],
        payload,
    };
    let words = blob.word_len().unwrap() as u64;
    let at = t.push(&blob);
    t.event(EventKind::Instant, 3, A);
    t.event(EventKind::Instant, 4, A);
    (t.bytes(), at, words, t)
}

#[test]
fn a_large_blob_over_4095_words_is_misframed_and_a_zero_word_stops_the_viewer() {
    // 100,000 zero bytes: header, format word, timestamp, size word, then
    // 12,500 payload words: 12,504 words. Bits 4..15 hold 12,504 mod 4096 =
    // 216: the viewer lands on payload word 212, which is 0.
    let (bytes, at, words, _) = with_large_blob(&[0u8; 100_000]);
    assert_eq!(words, 12_504);
    let issues = framing_issues(&bytes);
    assert_eq!(
        issues,
        [
            FramingIssue::Misframed {
                offset: at,
                decoder_words: 12_504,
                viewer_words: 216,
                viewer_records: 0,
                missed_records: 2,
                rejoin: None
            },
            FramingIssue::ViewerStops {
                offset: at + 216 * 8,
                reason: WalkEnd::ZeroSize,
                lost_records: 2
            },
        ]
    );
    let report = check_perfetto(&bytes);
    assert_eq!(report.framing, issues);
    assert!(report.to_string().contains("Unexpected record of size 0"));
}

#[test]
fn a_viewer_walking_through_a_payload_is_reported_until_it_rejoins() {
    // Every payload word reads as a 1-word record (0x10: type 0, size 1):
    // the viewer walks payload words 212..12500 one by one (12,288 of
    // them) and lands on the next instant, as the decoder does.
    let payload: Vec<u8> = [0x10u8, 0, 0, 0, 0, 0, 0, 0].repeat(12_500);
    let (bytes, at, words, _) = with_large_blob(&payload);
    let issues = framing_issues(&bytes);
    assert_eq!(
        issues,
        [FramingIssue::Misframed {
            offset: at,
            decoder_words: words,
            viewer_words: 216,
            viewer_records: 12_504 - 216,
            missed_records: 0,
            rejoin: Some(at + words * 8)
        }]
    );
}

#[test]
fn large_records_under_4096_words_and_split_blobs_walk_the_same() {
    let (bytes, _, words, _) = with_large_blob(&[1u8; 1000]);
    assert!(words < 4096);
    assert!(framing_issues(&bytes).is_empty());

    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::Instant, 1, A);
    let payload = vec![0u8; 1 << 20];
    t.push(&SplitBlob::new(
        StringRef::Index(1),
        StringRef::Index(A),
        2,
        ThreadRef::Index(1),
        &payload,
    ));
    t.event(EventKind::Instant, 3, A);
    assert!(check_perfetto(&t.bytes()).is_clean());
}

#[test]
fn a_size_zero_header_is_fatal_for_perfetto_even_where_the_decoder_stops_too() {
    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::Instant, 1, A);
    let at = t.words.len() as u64 * 8;
    t.words.push(0x4); // an event header of size 0
    t.event(EventKind::Instant, 2, A);
    let issues = framing_issues(&t.bytes());
    assert_eq!(
        issues,
        [FramingIssue::ViewerStops {
            offset: at,
            reason: WalkEnd::ZeroSize,
            lost_records: 0
        }]
    );
}

#[test]
fn a_large_record_of_4096_words_stops_the_viewer_at_its_header() {
    // 4096 words: bits 4..15 are 0. Header, format word, timestamp, size
    // word and 4092 payload words.
    let (bytes, at, words, _) = with_large_blob(&[7u8; 4092 * 8]);
    assert_eq!(words, 4096);
    assert_eq!(
        framing_issues(&bytes),
        [FramingIssue::ViewerStops {
            offset: at,
            reason: WalkEnd::ZeroSize,
            lost_records: 3
        }]
    );
}

#[test]
fn a_cut_trace_walks_the_same_both_ways() {
    let (bytes, _, _, _) = with_large_blob(&[1u8; 1000]);
    for cut in [bytes.len() - 3, bytes.len() - 8, 100, 5] {
        assert!(framing_issues(&bytes[..cut]).is_empty(), "cut at {cut}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any bytes: the checks finish without panicking, and every finding
    /// names an offset inside the input.
    #[test]
    fn any_bytes_are_checked_without_panic(
        words in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..64),
        trace_prefix in proptest::prelude::any::<bool>(),
    ) {
        let mut all = if trace_prefix { Trace::new(3_000_000_000).words } else { Vec::new() };
        all.extend(words);
        let bytes = words_to_bytes(&all);
        let report = check_perfetto(&bytes);
        for issue in &report.framing {
            proptest::prop_assert!(issue.offset() <= bytes.len() as u64);
        }
        for drop in &report.slices {
            proptest::prop_assert!(drop.offset < bytes.len() as u64);
        }
        for r in &report.refs {
            proptest::prop_assert!(r.offset < bytes.len() as u64);
        }
        let _ = report.to_string();
    }
}

// ------------------------------------------------------------- convert

use fxt_format::compat::convert_for_viewers;
use fxt_format::decode::{decode_all, join_split_blobs, Record};

fn events_of(bytes: &[u8]) -> Vec<fxt_format::decode::Event> {
    decode_all(bytes)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

#[test]
fn convert_puts_the_outer_of_two_same_nanosecond_slices_first() {
    let mut t = Trace::new(3_000_000_000);
    t.complete(4, 27, B);
    t.complete(3, 30, A);
    t.event(EventKind::Instant, 40, A);
    let converted = convert_for_viewers(&t.bytes());
    let report = check_perfetto(&converted.bytes);
    assert!(report.is_clean(), "{report}");
    assert_eq!(converted.summary.slices_reordered, 2);
    assert_eq!(converted.summary.dropped_slices, 0);
    let events = events_of(&converted.bytes);
    let names: Vec<_> = events.iter().map(|e| e.name.to_string()).collect();
    assert_eq!(names, ["a", "b", "a"]);
    assert_eq!(events[0].timestamp, 3);
    assert_eq!(events[0].kind, EventKind::DurationComplete { end: 30 });
    assert_eq!(events[0].thread, THREAD);
    assert_eq!(events[0].category, Text::from("cat"));
}

#[test]
fn convert_splits_large_blobs_and_keeps_what_follows() {
    let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 7) as u8).collect();
    let (bytes, _, _, _) = with_large_blob(&payload);
    assert!(!check_perfetto(&bytes).is_clean());
    let converted = convert_for_viewers(&bytes);
    assert!(check_perfetto(&converted.bytes).is_clean());
    assert_eq!(converted.summary.large_blobs_split, 1);
    let joined: Vec<_> = join_split_blobs(&converted.bytes).collect();
    let blob = joined
        .iter()
        .find(|j| j.joined_parts > 0)
        .expect("a joined blob");
    assert!(matches!(&blob.item, Ok(Record::Blob(b)) if b.payload == payload && b.name == "a"));
    // The three instants around it are all there.
    let instants = events_of(&converted.bytes)
        .iter()
        .filter(|e| e.kind == EventKind::Instant && e.args.is_empty())
        .count();
    assert_eq!(instants, 3);
}

#[test]
fn convert_moves_late_definitions_forward_and_drops_what_is_never_defined() {
    let mut t = Trace::new(1_000_000_000);
    t.event(EventKind::Instant, 1, 7);
    t.push(&StringRecord {
        index: 7,
        value: "late",
    });
    t.push(&Event {
        kind: EventKind::Instant,
        timestamp: 3,
        thread: ThreadRef::Index(5),
        category: StringRef::Index(1),
        name: StringRef::Index(A),
        args: &[],
    });
    let converted = convert_for_viewers(&t.bytes());
    assert!(check_perfetto(&converted.bytes).is_clean());
    assert_eq!(converted.summary.definitions_moved, 1);
    assert_eq!(converted.summary.dropped_undefined_refs, 1);
    let events = events_of(&converted.bytes);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].name, Text::from("late"));
}

#[test]
fn convert_drops_slices_perfetto_drops() {
    let mut t = Trace::new(1_000_000_000);
    t.complete(10, 20, A);
    t.complete(15, 25, B);
    t.complete(40, 30, A);
    t.event(EventKind::DurationEnd, 50, A);
    let converted = convert_for_viewers(&t.bytes());
    assert!(check_perfetto(&converted.bytes).is_clean());
    assert_eq!(converted.summary.dropped_slices, 3);
    assert_eq!(events_of(&converted.bytes).len(), 1);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Whatever the input, what convert writes passes the checks.
    #[test]
    fn converted_output_always_passes_the_checks(
        words in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..48),
        events in proptest::collection::vec((0u8..4, 0u64..40, 0u64..40, 2u16..9), 0..24),
    ) {
        let mut t = Trace::new(3_000_000_000);
        for (kind, ts, dur, name) in events {
            let kind = match kind {
                0 => EventKind::Instant,
                1 => EventKind::DurationBegin,
                2 => EventKind::DurationEnd,
                _ => EventKind::DurationComplete { end: ts + dur },
            };
            t.event(kind, ts, name);
        }
        t.words.extend(words);
        let converted = convert_for_viewers(&t.bytes());
        let report = check_perfetto(&converted.bytes);
        proptest::prop_assert!(report.is_clean(), "{}", report);
        proptest::prop_assert!(decode_all(&converted.bytes).is_ok());
    }
}
