//! Robustness: whatever the bytes, the decoder never panics, always ends,
//! and a damaged trace still yields everything before the damage.

use std::io::{self, Read};

use fxt_format::decode::{
    self, ArgValue as DecodedValue, ArgValueView, Context, DecodeError, EventHead, Head, HeadAt,
    Record, RecordRanges, SliceReader, StreamReader, Thread, View,
};
use fxt_format::encode::{self as e, encode_into_vec, Arg, ArgValue, StringRef, ThreadRef};
use proptest::prelude::*;

/// A valid trace holding every record type, with indexed and inline refs.
fn sample_trace() -> Vec<u8> {
    let mut w = Vec::new();
    let inline = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let args = [
        Arg::new(StringRef::Index(2), ArgValue::I32(-1)),
        Arg::new(
            StringRef::Inline("s"),
            ArgValue::Str(StringRef::Inline("v")),
        ),
        Arg::new(StringRef::Index(2), ArgValue::F64(0.5)),
        Arg::new(StringRef::Index(2), ArgValue::Blob(&[1, 2, 3])),
    ];
    let records: Vec<Box<dyn e::Encode>> = vec![
        Box::new(e::MagicNumber),
        Box::new(e::ProviderInfo {
            provider_id: 1,
            name: "p",
        }),
        Box::new(e::Initialization {
            ticks_per_second: 1000,
        }),
        Box::new(e::StringRecord {
            index: 1,
            value: "cat",
        }),
        Box::new(e::StringRecord {
            index: 2,
            value: "name",
        }),
        Box::new(e::ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        }),
        Box::new(e::Event {
            kind: e::EventKind::Instant,
            timestamp: 1,
            thread: ThreadRef::Index(1),
            category: StringRef::Index(1),
            name: StringRef::Index(2),
            args: &[],
        }),
        Box::new(e::Event {
            kind: e::EventKind::DurationComplete { end: 9 },
            timestamp: 2,
            thread: inline,
            category: StringRef::Inline("c"),
            name: StringRef::Inline("n"),
            args: &args,
        }),
        Box::new(e::Blob {
            name: StringRef::Index(2),
            blob_type: e::BlobType::Data,
            payload: &[9; 13],
        }),
        Box::new(e::UserspaceObject {
            pointer: 5,
            process: e::ProcessRef::Index(1),
            name: StringRef::Inline("o"),
            args: &args[..1],
        }),
        Box::new(e::KernelObject {
            koid: 7,
            object_type: 2,
            name: StringRef::Index(2),
            args: &args[..2],
        }),
        Box::new(e::ContextSwitch {
            timestamp: 3,
            cpu: 1,
            outgoing_state: e::ThreadState::Blocked,
            outgoing_thread: 2,
            incoming_thread: 3,
            args: &args[..1],
        }),
        Box::new(e::ThreadWakeup {
            timestamp: 4,
            cpu: 1,
            waking_thread: 2,
            args: &[],
        }),
        Box::new(e::LegacyContextSwitch {
            timestamp: 5,
            cpu: 1,
            outgoing_state: e::ThreadState::Dead,
            outgoing_thread: inline,
            incoming_thread: ThreadRef::Index(1),
            outgoing_priority: 1,
            incoming_priority: 2,
        }),
        Box::new(e::Log {
            timestamp: 6,
            thread: inline,
            message: "hello",
        }),
        Box::new(e::LargeBlobWithMetadata {
            category: StringRef::Index(1),
            name: StringRef::Inline("big"),
            timestamp: 7,
            thread: ThreadRef::Index(1),
            args: &args,
            payload: &[4; 21],
        }),
        Box::new(e::LargeBlobNoMetadata {
            category: StringRef::Index(1),
            name: StringRef::Index(2),
            payload: &[5; 8],
        }),
        Box::new(e::ProviderEvent {
            provider_id: 1,
            event: 0,
        }),
    ];
    for r in &records {
        encode_into_vec(r.as_ref(), &mut w).unwrap();
    }
    // A string record for the reserved index 0, and a thread record for 0.
    w.extend([0x0000_0001_0000_0022, 0x78, 0x0000_0000_0000_0033, 1, 2]);
    e::words_to_bytes(&w)
}

/// Decodes with both readers, checks they agree, and returns the result.
fn decode_both(bytes: &[u8]) -> Vec<Result<Record, DecodeError>> {
    let from_slice: Vec<_> = SliceReader::new(bytes).collect();
    let from_stream: Vec<_> = StreamReader::new(bytes).collect();
    assert_eq!(from_slice, from_stream);
    let mut offsets = Vec::new();
    let mut reader = SliceReader::new(bytes);
    while reader.next().is_some() {
        offsets.push(reader.record_offset());
    }
    // Cut lazily into ranges (for reading on several cores), each read
    // up to its end, the readers yield the same items one after the
    // other, with the same offsets.
    for range_bytes in [1, 24, 100, 1000, 1 << 20] {
        let mut items = Vec::new();
        let mut at = Vec::new();
        for mut range in RecordRanges::new(bytes, range_bytes) {
            while range.reader.position() < range.end {
                let Some(item) = range.reader.next() else {
                    break;
                };
                items.push(item);
                at.push(range.reader.record_offset());
            }
        }
        assert_eq!(items, from_slice, "ranges of {range_bytes} bytes");
        assert_eq!(at, offsets, "ranges of {range_bytes} bytes");
    }
    // Walked as views, both readers meet the same records and errors, at
    // the same offsets.
    let (records, at) = slice_views(bytes);
    assert_eq!(records, from_slice);
    assert_eq!(at, offsets);
    assert_eq!(stream_views(bytes), from_slice);
    // Walked by heads, the same records, errors and offsets again, each
    // head saying what its view says.
    let (records, at, _) = slice_heads(bytes);
    assert_eq!(records, from_slice);
    assert_eq!(at, offsets);
    // Every item but a fatal error consumed at least one word.
    assert!(from_slice.len() <= bytes.len() / 8 + 1);
    from_slice
}

/// What a view stands for, as iterating yields it; checks that its
/// unresolved strings resolve to the decoded event's.
fn whole(item: Result<View<'_>, DecodeError>, ctx: &Context<'_>) -> Result<Record, DecodeError> {
    match item? {
        View::Event(view) => {
            let event = ctx.event(&view).expect("a view decodes whole");
            assert_eq!(ctx.text(view.category), event.category);
            assert_eq!(ctx.text(view.name), event.name);
            assert_eq!(
                ctx.undefined_index(view.category),
                event.category.undefined_index()
            );
            assert_eq!(ctx.undefined_index(view.name), event.name.undefined_index());
            assert_eq!(ctx.record_bytes(), view.bytes());
            assert_eq!(ctx.record_offset(), view.offset());
            assert_eq!((view.kind, view.timestamp), (event.kind, event.timestamp));
            assert_eq!(view.thread, event.thread);
            assert_eq!(usize::from(view.arg_count), event.args.len());
            assert_eq!(view.arg_refs().count(), event.args.len());
            for ((name, value), arg) in view.arg_refs().zip(&event.args) {
                assert_eq!(ctx.text(name), arg.name);
                match (&arg.value, value) {
                    (DecodedValue::Str(text), Some(value)) => assert_eq!(ctx.text(value), *text),
                    (DecodedValue::Str(_), None) => {
                        panic!("a string argument without its value ref")
                    }
                    (_, value) => assert_eq!(value, None),
                }
            }
            // Read as views, the arguments are the decoded ones.
            assert_eq!(view.args().count(), event.args.len());
            for (a, arg) in view.args().zip(&event.args) {
                assert_eq!(ctx.text(a.name), arg.name);
                assert_eq!(ctx.str(a.name), arg.name.as_str());
                match (a.value, &arg.value) {
                    (
                        ArgValueView::Unknown { arg_type, .. },
                        DecodedValue::Unknown { arg_type: t, .. },
                    ) => {
                        assert_eq!(arg_type, *t)
                    }
                    (value, decoded) => assert_eq!(owned_value(ctx, value), *decoded),
                }
            }
            for s in [view.category, view.name] {
                assert_eq!(ctx.str(s), ctx.text(s).as_str());
            }
            Ok(Record::Event(event))
        }
        View::Record(record) => Ok(record),
    }
}

/// An argument's value view as decoding gives it (of a known type): its
/// string resolved, its bytes copied.
fn owned_value(ctx: &Context<'_>, value: ArgValueView<'_>) -> DecodedValue {
    match value {
        ArgValueView::Null => DecodedValue::Null,
        ArgValueView::I32(v) => DecodedValue::I32(v),
        ArgValueView::U32(v) => DecodedValue::U32(v),
        ArgValueView::I64(v) => DecodedValue::I64(v),
        ArgValueView::U64(v) => DecodedValue::U64(v),
        ArgValueView::F64(v) => DecodedValue::F64(v),
        ArgValueView::Str(s) => {
            assert_eq!(ctx.str(s), ctx.text(s).as_str());
            DecodedValue::Str(ctx.text(s))
        }
        ArgValueView::Pointer(v) => DecodedValue::Pointer(v),
        ArgValueView::Koid(v) => DecodedValue::Koid(v),
        ArgValueView::Bool(v) => DecodedValue::Bool(v),
        ArgValueView::Blob(b) => DecodedValue::Blob(b.to_vec()),
        ArgValueView::Unknown { .. } => panic!("an argument of an unknown type"),
    }
}

/// [`SliceReader::next_view`] over `bytes`, each view made whole, and
/// the offsets the contexts give.
fn slice_views(bytes: &[u8]) -> (Vec<Result<Record, DecodeError>>, Vec<u64>) {
    let mut reader = SliceReader::new(bytes);
    let (mut out, mut at) = (Vec::new(), Vec::new());
    while let Some((item, ctx)) = reader.next_view() {
        at.push(ctx.record_offset());
        out.push(whole(item, &ctx));
    }
    (out, at)
}

/// What a head walk hands with an event head reads the same head and
/// context again.
fn read_again(head: &EventHead<'_>, place: HeadAt<'_, '_>, ctx: &Context<'_>) {
    let (again, again_ctx) = place.read().expect("reads again");
    assert_eq!(again.bytes(), head.bytes());
    assert_eq!(again.offset(), head.offset());
    assert_eq!(again.header(), head.header());
    assert_eq!(again.timestamp(), head.timestamp());
    assert_eq!(again.kind(), head.kind());
    assert_eq!(again_ctx.record_bytes(), ctx.record_bytes());
    assert_eq!(again_ctx.record_offset(), ctx.record_offset());
    assert_eq!(place.context().record_offset(), ctx.record_offset());
    assert_eq!(place.strings_epoch(), ctx.strings_epoch());
    assert_eq!(place.threads_epoch(), ctx.threads_epoch());
}

/// [`SliceReader::heads_until`] over `bytes`: each record made whole (a
/// head through its view, once checked against it), the offsets the
/// contexts give, and how many records came as heads.
fn slice_heads(bytes: &[u8]) -> (Vec<Result<Record, DecodeError>>, Vec<u64>, usize) {
    let mut reader = SliceReader::new(bytes);
    let (mut out, mut at, mut heads) = (Vec::new(), Vec::new(), 0);
    let walked = reader.heads_until(u64::MAX, |item, ctx| {
        at.push(ctx.record_offset());
        let item = match item {
            Ok(Head::Event(head, place)) => {
                heads += 1;
                read_again(&head, place, ctx);
                Ok(View::Event(head_as_view(&head, ctx)))
            }
            Ok(Head::Other(view)) => Ok(view.clone()),
            Err(e) => Err(e),
        };
        out.push(whole(item, ctx));
        Ok::<(), ()>(())
    });
    assert_eq!(walked, Ok(()));
    (out, at, heads)
}

/// The view of a head, checked field by field against what the head's
/// own accessors say.
fn head_as_view<'a>(head: &EventHead<'a>, ctx: &Context<'_>) -> decode::EventView<'a> {
    let view = head.view(ctx);
    assert_eq!(ctx.record_bytes(), head.bytes());
    assert_eq!(ctx.record_offset(), head.offset());
    assert_eq!(head.kind(), view.kind);
    assert_eq!(u64::from(head.event_type()), view.kind.event_type());
    assert_eq!(head.timestamp(), view.timestamp);
    assert_eq!(head.category(), view.category);
    assert_eq!(head.name(), view.name);
    assert_eq!(head.arg_count(), view.arg_count);
    assert_eq!(head.id(), view.kind.id());
    let end = match view.kind {
        decode::EventKind::DurationComplete { end } => Some(end),
        _ => None,
    };
    assert_eq!(head.end_ts(), end);
    match (head.thread_ref(), view.thread) {
        (decode::ThreadRef::Inline { process, thread }, t) => {
            assert_eq!(head.thread_index(), 0);
            assert_eq!(t, Thread::Known { process, thread });
        }
        (decode::ThreadRef::Indexed(index), _) => {
            assert_eq!(head.thread_index(), index);
            assert_eq!(ctx.thread(index), view.thread);
        }
    }
    assert!(head.args().eq(view.args()));
    let words = |w: decode::ArgWords<'_>| w.header;
    assert!(head.arg_words().map(words).eq(view.arg_words().map(words)));
    for w in view.arg_words() {
        assert_eq!(str_or_f64_bits(w.str_or_f64()), str_or_f64_of_view(&w));
        let parts = w
            .int()
            .map(|(name, value)| (name, decode::IntParts::from(value)));
        assert_eq!(w.int_parts(), parts);
    }
    view
}

/// [`decode::ArgWords::str_or_f64`] with a double as its bits (NaN equal
/// to itself).
fn str_or_f64_bits(arg: Option<(u16, decode::StrOrF64)>) -> Option<(u16, Result<u16, u64>)> {
    arg.map(|(name, value)| match value {
        decode::StrOrF64::Str(index) => (name, Ok(index)),
        decode::StrOrF64::F64(x) => (name, Err(x.to_bits())),
    })
}

/// What [`decode::ArgWords::str_or_f64`] must say of an argument, from
/// its view: a name by index, and a string by index (not the empty one)
/// or a double.
fn str_or_f64_of_view(w: &decode::ArgWords<'_>) -> Option<(u16, Result<u16, u64>)> {
    use decode::{ArgValueView, StrRef};
    let arg = w.view()?;
    let StrRef::Indexed(name) = arg.name else {
        return None;
    };
    match arg.value {
        ArgValueView::Str(StrRef::Indexed(index)) => Some((name, Ok(index))),
        ArgValueView::F64(x) => Some((name, Err(x.to_bits()))),
        _ => None,
    }
}

/// [`StreamReader::next_view`] over `bytes`, each view made whole.
fn stream_views(bytes: &[u8]) -> Vec<Result<Record, DecodeError>> {
    let mut reader = StreamReader::new(bytes);
    let mut out = Vec::new();
    while let Some((item, ctx)) = reader.next_view() {
        out.push(whole(item, &ctx));
    }
    out
}

#[test]
fn sample_trace_is_valid() {
    let bytes = sample_trace();
    let records = decode::decode_all(&bytes).unwrap();
    assert_eq!(records.len(), 20);
    assert!(!records.iter().any(|r| matches!(r, Record::Unknown(_))));
}

#[test]
fn truncation_at_every_offset_yields_the_prefix() {
    let bytes = sample_trace();
    let full = decode::decode_all(&bytes).unwrap();
    // Record boundaries, from the reader itself.
    let mut boundaries = vec![0u64];
    let mut reader = SliceReader::new(&bytes);
    while reader.next().is_some() {
        boundaries.push(reader.position());
    }
    for cut in 0..=bytes.len() {
        let (records, error) = decode::decode_all_lossy(&bytes[..cut]);
        let complete = boundaries.iter().filter(|&&b| b <= cut as u64).count() - 1;
        assert_eq!(records, full[..complete], "cut at {cut}");
        if boundaries.contains(&(cut as u64)) {
            assert_eq!(error, None, "cut at {cut}");
        } else {
            let error = error.unwrap_or_else(|| panic!("cut at {cut} not reported"));
            assert!(error.is_fatal());
            assert_eq!(error.offset(), boundaries[complete], "cut at {cut}");
            assert!(matches!(error, DecodeError::Truncated { .. }));
        }
        let (streamed, stream_error) = decode::read_all_lossy(&bytes[..cut]);
        assert_eq!(streamed, records);
        assert_eq!(stream_error.is_some(), !boundaries.contains(&(cut as u64)));
    }
}

#[test]
fn zero_size_and_past_the_end_sizes_stop_cleanly() {
    let mut bytes = sample_trace();
    let valid = decode::decode_all(&bytes).unwrap().len();
    for header in [
        0x0000_0000_0000_0004u64, // event of size 0
        0x0000_0000_0000_000f,    // large record of size 0
        0x0000_0000_0000_fff4,    // event of 4095 words
        0x0000_000f_ffff_ffff,    // large record of 2^32 - 1 words
    ] {
        let mut damaged = bytes.clone();
        damaged.extend(header.to_le_bytes());
        damaged.extend([0; 16]);
        let results = decode_both(&damaged);
        assert_eq!(results.len(), valid + 1);
        let error = results.last().unwrap().clone().unwrap_err();
        assert!(error.is_fatal());
        assert_eq!(error.offset(), bytes.len() as u64);
    }
    // A trailing partial word.
    bytes.extend([0x10, 0]);
    let results = decode_both(&bytes);
    assert!(matches!(
        results.last(),
        Some(Err(DecodeError::Truncated {
            needed_bytes: 8,
            available_bytes: 2,
            ..
        }))
    ));
}

/// A stream that claims nothing about its length and ends after `len`
/// bytes of zeros, after a large record header of 2^32 - 1 words.
struct HugeRecordStream {
    header: [u8; 8],
    sent: usize,
    len: usize,
}

impl Read for HugeRecordStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() && self.sent < self.len {
            buf[n] = self.header.get(self.sent).copied().unwrap_or(0);
            n += 1;
            self.sent += 1;
        }
        Ok(n)
    }
}

#[test]
fn huge_large_record_from_a_stream_is_read_incrementally() {
    // Size 2^32 - 1 words (32 GiB) claimed; 3 MiB present. Pre-allocating
    // from the size field would abort or crawl; reading incrementally ends
    // with a truncation error quickly.
    let len = 3 << 20;
    let stream = HugeRecordStream {
        header: 0x0000_000f_ffff_ffffu64.to_le_bytes(),
        sent: 0,
        len,
    };
    let results: Vec<_> = StreamReader::new(stream).collect();
    assert_eq!(
        results,
        [Err(DecodeError::Truncated {
            offset: 0,
            needed_bytes: 0xffff_ffff * 8,
            available_bytes: len as u64,
        })]
    );
}

/// A reader that fails after some bytes.
struct Failing<'a>(&'a [u8]);

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.0.is_empty() {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "gone"));
        }
        let n = buf.len().min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

#[test]
fn io_errors_are_fatal_and_keep_the_prefix() {
    let bytes = sample_trace();
    let (records, error) = decode::read_all_lossy(Failing(&bytes[..100]));
    assert!(!records.is_empty());
    let error = error.unwrap();
    assert!(error.is_fatal());
    assert!(matches!(
        error,
        DecodeError::Io {
            kind: io::ErrorKind::BrokenPipe,
            ..
        }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bit_flips_never_panic(flips in prop::collection::vec(any::<prop::sample::Index>(), 1..8)) {
        let mut bytes = sample_trace();
        let bits = bytes.len() * 8;
        for flip in &flips {
            let bit = flip.index(bits);
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        let results = decode_both(&bytes);
        // Only the last item may be fatal.
        for r in &results[..results.len().saturating_sub(1)] {
            if let Err(e) = r {
                prop_assert!(!e.is_fatal());
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        decode_both(&bytes);
    }

    #[test]
    fn random_words_with_plausible_headers_never_panic(
        words in prop::collection::vec(
            prop_oneof![
                any::<u64>(),
                // Small sizes and known record types make deeper parsing likely.
                (any::<u64>(), 0u64..16, 1u64..6).prop_map(|(w, t, s)| (w & !0xffff) | (s << 4) | t),
            ],
            0..64,
        )
    ) {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        decode_both(&bytes);
    }
}

/// Events of every type, with an indexed and an inline thread, and
/// arguments of every type a head reads (names by index, strings by
/// index): each comes as a head, which says what its view says; an event
/// with an inline text or a blob argument comes as its view.
#[test]
fn heads_say_what_views_say_for_every_event_type() {
    let mut w = Vec::new();
    let table: [Box<dyn e::Encode>; 4] = [
        Box::new(e::MagicNumber),
        Box::new(e::StringRecord {
            index: 1,
            value: "cat",
        }),
        Box::new(e::StringRecord {
            index: 2,
            value: "name",
        }),
        Box::new(e::ThreadRecord {
            index: 3,
            process: 4,
            thread: 5,
        }),
    ];
    for r in &table {
        encode_into_vec(r.as_ref(), &mut w).unwrap();
    }
    let arg = |value| Arg::new(StringRef::Index(2), value);
    let args = [
        arg(ArgValue::Null),
        arg(ArgValue::I32(-1)),
        arg(ArgValue::U32(2)),
        arg(ArgValue::I64(-3)),
        arg(ArgValue::U64(4)),
        arg(ArgValue::F64(0.5)),
        arg(ArgValue::Str(StringRef::Index(1))),
        arg(ArgValue::Pointer(6)),
        arg(ArgValue::Koid(7)),
        arg(ArgValue::Bool(true)),
    ];
    let kinds = [
        e::EventKind::Instant,
        e::EventKind::Counter { id: 11 },
        e::EventKind::DurationBegin,
        e::EventKind::DurationEnd,
        e::EventKind::DurationComplete { end: 12 },
        e::EventKind::AsyncBegin { id: 13 },
        e::EventKind::AsyncInstant { id: 14 },
        e::EventKind::AsyncEnd { id: 15 },
        e::EventKind::FlowBegin { id: 16 },
        e::EventKind::FlowStep { id: 17 },
        e::EventKind::FlowEnd { id: 18 },
    ];
    let threads = [
        ThreadRef::Index(3),
        ThreadRef::Index(9),
        ThreadRef::Inline {
            process: 1,
            thread: 2,
        },
    ];
    let mut events = 0;
    for (i, kind) in kinds.into_iter().enumerate() {
        for (j, thread) in threads.into_iter().enumerate() {
            let event = e::Event {
                kind,
                timestamp: 100 + i as u64,
                thread,
                category: StringRef::Index(1),
                // Empty, and an undefined index too.
                name: [StringRef::Empty, StringRef::Index(2), StringRef::Index(30)][j],
                args: &args[..(i + j) % (args.len() + 1)],
            };
            encode_into_vec(&event, &mut w).unwrap();
            events += 1;
        }
    }
    let blob = [arg(ArgValue::Blob(&[1, 2]))];
    let views_only: [Box<dyn e::Encode>; 2] = [
        Box::new(e::Event {
            kind: e::EventKind::Instant,
            timestamp: 1,
            thread: ThreadRef::Index(3),
            category: StringRef::Inline("c"),
            name: StringRef::Index(2),
            args: &[],
        }),
        Box::new(e::Event {
            kind: e::EventKind::Instant,
            timestamp: 1,
            thread: ThreadRef::Index(3),
            category: StringRef::Index(1),
            name: StringRef::Index(2),
            args: &blob,
        }),
    ];
    for r in &views_only {
        encode_into_vec(r.as_ref(), &mut w).unwrap();
    }
    let bytes = e::words_to_bytes(&w);
    let records = decode::decode_all(&bytes).unwrap();
    assert_eq!(records.len(), table.len() + events + views_only.len());
    let (walked, _, heads) = slice_heads(&bytes);
    assert_eq!(heads, events);
    assert_eq!(walked, records.into_iter().map(Ok).collect::<Vec<_>>());
}
