//! Golden words for every record type and argument type.
//!
//! Every expected `u64` below was worked out by hand from the bit tables of
//! the specification (`/work/shared/spec/trace-format.md` and its addendum),
//! not computed with the encoder. Each case checks both directions: the
//! encoder writes exactly these words, and the decoder turns these words
//! (after a small prelude defining strings and threads) into the expected
//! record.

use std::sync::Arc;

use fxt_format::decode::{self, DecodeError, Record, Text};
use fxt_format::encode::{self, Encode, EncodeError, ProcessRef, StringRef, ThreadRef};

// ---------------------------------------------------------------------------
// The prelude every decoding case starts with, by hand:
//
// magic       type 0, size 1, metadata type 4 @16, trace info 0 @20,
//             0x16547846 @24                        = 0x0016_5478_4604_0010
// provider    type 0, size 2 (0x20), metadata 1 @16 (0x1_0000), id 1 @20
// info "app"  (0x10_0000), name length 3 @52 (0x30 << 48)
//                                                    = 0x0030_0000_0011_0020
//             "app" = 61 70 70                       = 0x0000_0000_0070_7061
// init        type 1, size 2                         = 0x21, then 1e9 = 0x3b9a_ca00
// string 1    type 2, size 2, index 1 @16, length 3 @32
// "cat"                                              = 0x0000_0003_0001_0022
//             "cat" = 63 61 74                       = 0x0000_0000_0074_6163
// string 2    index 2, length 4                      = 0x0000_0004_0002_0022
// "name"      "name" = 6e 61 6d 65                   = 0x0000_0000_656d_616e
// thread 1    type 3, size 3 (0x30), index 1 @16     = 0x0000_0000_0001_0033
//             process 0x10, thread 0x11
// ---------------------------------------------------------------------------
const PRELUDE: &[u64] = &[
    0x0016_5478_4604_0010,
    0x0030_0000_0011_0020,
    0x0000_0000_0070_7061,
    0x0000_0000_0000_0021,
    0x0000_0000_3b9a_ca00,
    0x0000_0003_0001_0022,
    0x0000_0000_0074_6163,
    0x0000_0004_0002_0022,
    0x0000_0000_656d_616e,
    0x0000_0000_0001_0033,
    0x10,
    0x11,
];

fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Decodes `PRELUDE ++ words` and returns the records after the prelude.
fn decode_after_prelude(words: &[u64]) -> Vec<Record> {
    let mut all = PRELUDE.to_vec();
    all.extend_from_slice(words);
    let records = decode::decode_all(&bytes_of(&all)).expect("golden words decode");
    records[6..].to_vec()
}

/// The encoder writes `words`, and the decoder reads `words` back as `expected`.
#[track_caller]
fn golden(record: &dyn Encode, words: &[u64], expected: Record) {
    let encoded = encode::encode_to_vec(record).expect("encodes");
    assert_eq!(
        hex(&encoded),
        hex(words),
        "encoder output differs from the hand-computed words"
    );
    assert_eq!(record.word_len().unwrap(), words.len());
    assert_eq!(decode_after_prelude(words), [expected]);
}

fn hex(words: &[u64]) -> Vec<String> {
    words.iter().map(|w| format!("{w:#018x}")).collect()
}

fn t(s: &str) -> Text {
    Text::from(s)
}

const CAT: StringRef<'static> = StringRef::Index(1);
const NAME: StringRef<'static> = StringRef::Index(2);
const THREAD1: ThreadRef = ThreadRef::Index(1);
const KNOWN_THREAD1: decode::Thread = decode::Thread::Known {
    process: 0x10,
    thread: 0x11,
};

#[test]
fn prelude_decodes_to_its_records() {
    let records = decode::decode_all(&bytes_of(PRELUDE)).unwrap();
    assert_eq!(
        records,
        [
            Record::Magic,
            Record::ProviderInfo {
                provider_id: 1,
                name: "app".into()
            },
            Record::Initialization {
                ticks_per_second: 1_000_000_000
            },
            Record::String {
                index: 1,
                value: Arc::from("cat")
            },
            Record::String {
                index: 2,
                value: Arc::from("name")
            },
            Record::Thread {
                index: 1,
                process: 0x10,
                thread: 0x11
            },
        ]
    );
}

// ----------------------------------------------------------------- metadata

#[test]
fn magic_number() {
    assert_eq!(
        encode::encode_to_vec(&encode::MagicNumber).unwrap(),
        [0x0016_5478_4604_0010]
    );
    // The first eight bytes of a file (ADDENDUM §4).
    assert_eq!(
        bytes_of(&[0x0016_5478_4604_0010]),
        [0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00]
    );
    golden(
        &encode::MagicNumber,
        &[0x0016_5478_4604_0010],
        Record::Magic,
    );
}

#[test]
fn provider_info() {
    // id 1, name "app": see PRELUDE.
    let words = [0x0030_0000_0011_0020, 0x0000_0000_0070_7061];
    let record = encode::ProviderInfo {
        provider_id: 1,
        name: "app",
    };
    assert_eq!(encode::encode_to_vec(&record).unwrap(), words);
    // A provider id using all 32 bits and an 8-byte name (no padding):
    // size 2, metadata 1 @16, id 0xffff_ffff @20 (0x000f_ffff_fff0_0000),
    // length 8 @52 (0x0080_0000_0000_0000).
    let words = [0x008f_ffff_fff1_0020, 0x6867_6665_6463_6261];
    golden(
        &encode::ProviderInfo {
            provider_id: 0xffff_ffff,
            name: "abcdefgh",
        },
        &words,
        Record::ProviderInfo {
            provider_id: 0xffff_ffff,
            name: "abcdefgh".into(),
        },
    );
}

#[test]
fn provider_section() {
    // size 1 (0x10), metadata 2 @16 (0x2_0000), id 2 @20 (0x20_0000).
    golden(
        &encode::ProviderSection { provider_id: 2 },
        &[0x0000_0000_0022_0010],
        Record::ProviderSection { provider_id: 2 },
    );
}

#[test]
fn provider_event() {
    // size 1, metadata 3 @16 (0x3_0000), id 1 @20, event 0 @52.
    golden(
        &encode::ProviderEvent {
            provider_id: 1,
            event: 0,
        },
        &[0x0000_0000_0013_0010],
        Record::ProviderEvent {
            provider_id: 1,
            event: 0,
        },
    );
}

#[test]
fn initialization() {
    golden(
        &encode::Initialization {
            ticks_per_second: 1_000_000_000,
        },
        &[0x21, 0x3b9a_ca00],
        Record::Initialization {
            ticks_per_second: 1_000_000_000,
        },
    );
}

// ------------------------------------------------------------------- tables

#[test]
fn string_record() {
    golden(
        &encode::StringRecord {
            index: 1,
            value: "cat",
        },
        &[0x0000_0003_0001_0022, 0x0000_0000_0074_6163],
        Record::String {
            index: 1,
            value: Arc::from("cat"),
        },
    );
    // Highest index 0x7fff @16 and an 8-byte string (no padding word).
    golden(
        &encode::StringRecord {
            index: 0x7fff,
            value: "abcdefgh",
        },
        &[0x0000_0008_7fff_0022, 0x6867_6665_6463_6261],
        Record::String {
            index: 0x7fff,
            value: Arc::from("abcdefgh"),
        },
    );
}

#[test]
fn string_record_cut_at_32000_bytes_on_a_char_boundary() {
    // "a" + 16000 × "é" (c3 a9) is 32001 bytes; the cut at 32000 would split
    // an "é", so 31999 bytes (0x7cff) remain: 4000 stream words, size 4001
    // (0xfa1).
    let long = format!("a{}", "é".repeat(16000));
    let header = 0x0000_7cff_0001_fa12u64;
    let record = encode::StringRecord {
        index: 1,
        value: &long,
    };
    let words = encode::encode_to_vec(&record).unwrap();
    assert_eq!(words.len(), 4001);
    assert_eq!(words[0], header);
    // Bytes 0..8: 61 c3 a9 c3 a9 c3 a9 c3.
    assert_eq!(words[1], 0xc3a9_c3a9_c3a9_c361);
    // Bytes 31992..32000: a9 c3 a9 c3 a9 c3 a9, then one byte of padding.
    assert_eq!(words[4000], 0x00a9_c3a9_c3a9_c3a9);
    let decoded = decode_after_prelude(&words);
    assert_eq!(
        decoded,
        [Record::String {
            index: 1,
            value: Arc::from(&long[..31999]),
        }]
    );

    // The same cut for an inline event name: ref 0x8000 | 31999 = 0xfcff,
    // size 2 + 4000 = 4002 (0xfa2).
    let event = encode::Event {
        kind: encode::EventKind::Instant,
        timestamp: 5,
        thread: THREAD1,
        category: CAT,
        name: StringRef::Inline(&long),
        args: &[],
    };
    let words = encode::encode_to_vec(&event).unwrap();
    assert_eq!(words.len(), 4002);
    assert_eq!(words[0], 0xfcff_0001_0100_fa24);
    assert_eq!(words[1], 5);
    assert_eq!(words[2], 0xc3a9_c3a9_c3a9_c361);
    let decoded = decode_after_prelude(&words);
    let Record::Event(e) = &decoded[0] else {
        panic!("{decoded:?}")
    };
    assert_eq!(e.name, &long[..31999]);
}

#[test]
fn thread_record() {
    // size 3, index 0xff @16.
    golden(
        &encode::ThreadRecord {
            index: 0xff,
            process: 0x10,
            thread: 0x11,
        },
        &[0x0000_0000_00ff_0033, 0x10, 0x11],
        Record::Thread {
            index: 0xff,
            process: 0x10,
            thread: 0x11,
        },
    );
}

// ------------------------------------------------------------------- events

/// An event with indexed thread 1, category 1 and name 2 has header
/// `0x0002_0001_0100_0004 | size << 4 | event_type << 16 | args << 20`.
fn indexed_event(kind: encode::EventKind) -> encode::Event<'static> {
    encode::Event {
        kind,
        timestamp: 0x1234,
        thread: THREAD1,
        category: CAT,
        name: NAME,
        args: &[],
    }
}

fn decoded_event(kind: decode::EventKind, args: Vec<decode::Arg>) -> Record {
    Record::Event(decode::Event {
        kind,
        timestamp: 0x1234,
        thread: KNOWN_THREAD1,
        category: t("cat"),
        name: t("name"),
        args,
    })
}

#[test]
fn all_eleven_event_types_with_indexed_refs() {
    use encode::EventKind as K;
    let cases: [(K, &[u64]); 11] = [
        (K::Instant, &[0x0002_0001_0100_0024, 0x1234]),
        (K::Counter { id: 7 }, &[0x0002_0001_0101_0034, 0x1234, 7]),
        (K::DurationBegin, &[0x0002_0001_0102_0024, 0x1234]),
        (K::DurationEnd, &[0x0002_0001_0103_0024, 0x1234]),
        (
            K::DurationComplete { end: 0x2000 },
            &[0x0002_0001_0104_0034, 0x1234, 0x2000],
        ),
        (K::AsyncBegin { id: 8 }, &[0x0002_0001_0105_0034, 0x1234, 8]),
        (
            K::AsyncInstant { id: 8 },
            &[0x0002_0001_0106_0034, 0x1234, 8],
        ),
        (K::AsyncEnd { id: 8 }, &[0x0002_0001_0107_0034, 0x1234, 8]),
        (K::FlowBegin { id: 9 }, &[0x0002_0001_0108_0034, 0x1234, 9]),
        (K::FlowStep { id: 9 }, &[0x0002_0001_0109_0034, 0x1234, 9]),
        (K::FlowEnd { id: 9 }, &[0x0002_0001_010a_0034, 0x1234, 9]),
    ];
    for (kind, words) in cases {
        golden(&indexed_event(kind), words, decoded_event(kind, vec![]));
    }
}

#[test]
fn event_with_inline_thread_category_and_name() {
    // size 6 (0x60), thread ref 0, category 0x8003 @32, name 0x8004 @48;
    // then timestamp, process, thread, "cat", "name".
    let event = encode::Event {
        kind: encode::EventKind::Instant,
        timestamp: 0x1234,
        thread: ThreadRef::Inline {
            process: 0x20,
            thread: 0x21,
        },
        category: StringRef::Inline("cat"),
        name: StringRef::Inline("name"),
        args: &[],
    };
    golden(
        &event,
        &[
            0x8004_8003_0000_0064,
            0x1234,
            0x20,
            0x21,
            0x0000_0000_0074_6163,
            0x0000_0000_656d_616e,
        ],
        Record::Event(decode::Event {
            kind: encode::EventKind::Instant,
            timestamp: 0x1234,
            thread: decode::Thread::Known {
                process: 0x20,
                thread: 0x21,
            },
            category: t("cat"),
            name: t("name"),
            args: vec![],
        }),
    );
}

#[test]
fn event_with_empty_category() {
    // category ref 0: no stream.
    let event = encode::Event {
        category: StringRef::Empty,
        ..indexed_event(encode::EventKind::Instant)
    };
    golden(
        &event,
        &[0x0002_0000_0100_0024, 0x1234],
        Record::Event(decode::Event {
            category: t(""),
            ..event_of(decoded_event(decode::EventKind::Instant, vec![]))
        }),
    );
}

fn event_of(record: Record) -> decode::Event {
    match record {
        Record::Event(e) => e,
        other => panic!("not an event: {other:?}"),
    }
}

// ---------------------------------------------------------------- arguments

/// One argument on an instant event (indexed thread 1, category 1, name 2):
/// header `0x0002_0001_0110_0004 | (2 + arg words) << 4`.
#[track_caller]
fn golden_arg(value: encode::Arg<'_>, arg_words: &[u64], expected: decode::Arg) {
    let args = [value];
    let event = encode::Event {
        args: &args,
        ..indexed_event(encode::EventKind::Instant)
    };
    let size = 2 + arg_words.len() as u64;
    let mut words = vec![0x0002_0001_0110_0004 | size << 4, 0x1234];
    words.extend_from_slice(arg_words);
    golden(
        &event,
        &words,
        decoded_event(decode::EventKind::Instant, vec![expected]),
    );
}

fn arg(name: &str, value: decode::ArgValue) -> decode::Arg {
    decode::Arg {
        name: t(name),
        value,
    }
}

use decode::ArgValue as D;
use encode::ArgValue as E;

#[test]
fn argument_null() {
    // type 0, size 1 (0x10), name 2 @16.
    golden_arg(
        encode::Arg::new(NAME, E::Null),
        &[0x0000_0000_0002_0010],
        arg("name", D::Null),
    );
    // Inline name "k" (0x8001 @16), size 2, then the name stream.
    golden_arg(
        encode::Arg::new(StringRef::Inline("k"), E::Null),
        &[0x0000_0000_8001_0020, 0x6b],
        arg("k", D::Null),
    );
}

#[test]
fn argument_int32() {
    // type 1, value -5 = 0xffff_fffb @32.
    golden_arg(
        encode::Arg::new(NAME, E::I32(-5)),
        &[0xffff_fffb_0002_0011],
        arg("name", D::I32(-5)),
    );
}

#[test]
fn argument_uint32() {
    golden_arg(
        encode::Arg::new(NAME, E::U32(0xdead_beef)),
        &[0xdead_beef_0002_0012],
        arg("name", D::U32(0xdead_beef)),
    );
}

#[test]
fn argument_int64() {
    // type 3, size 2 (0x20), then the value word.
    golden_arg(
        encode::Arg::new(NAME, E::I64(-2)),
        &[0x0000_0000_0002_0023, 0xffff_ffff_ffff_fffe],
        arg("name", D::I64(-2)),
    );
}

#[test]
fn argument_uint64() {
    golden_arg(
        encode::Arg::new(NAME, E::U64(0x0123_4567_89ab_cdef)),
        &[0x0000_0000_0002_0024, 0x0123_4567_89ab_cdef],
        arg("name", D::U64(0x0123_4567_89ab_cdef)),
    );
}

#[test]
fn argument_double() {
    // 1.5 = sign 0, exponent 0x3ff, mantissa 0x8_0000_0000_0000.
    golden_arg(
        encode::Arg::new(NAME, E::F64(1.5)),
        &[0x0000_0000_0002_0025, 0x3ff8_0000_0000_0000],
        arg("name", D::F64(1.5)),
    );
}

#[test]
fn argument_string_indexed_and_inline() {
    // type 6, size 1, value ref 1 @32.
    golden_arg(
        encode::Arg::new(NAME, E::Str(CAT)),
        &[0x0000_0001_0002_0016],
        arg("name", D::Str(t("cat"))),
    );
    // Inline name "k" (0x8001 @16), inline value "hello" (0x8005 @32),
    // size 3: header, "k", "hello" (68 65 6c 6c 6f).
    golden_arg(
        encode::Arg::new(StringRef::Inline("k"), E::Str(StringRef::Inline("hello"))),
        &[0x0000_8005_8001_0036, 0x6b, 0x0000_006f_6c6c_6568],
        arg("k", D::Str(t("hello"))),
    );
    // Empty value: ref 0.
    golden_arg(
        encode::Arg::new(NAME, E::Str(StringRef::Empty)),
        &[0x0000_0000_0002_0016],
        arg("name", D::Str(t(""))),
    );
}

#[test]
fn argument_pointer() {
    golden_arg(
        encode::Arg::new(NAME, E::Pointer(0xffff_8000_1234_5678)),
        &[0x0000_0000_0002_0027, 0xffff_8000_1234_5678],
        arg("name", D::Pointer(0xffff_8000_1234_5678)),
    );
}

#[test]
fn argument_koid() {
    golden_arg(
        encode::Arg::new(NAME, E::Koid(0x42)),
        &[0x0000_0000_0002_0028, 0x42],
        arg("name", D::Koid(0x42)),
    );
}

#[test]
fn argument_bool() {
    // type 9, value in bit 32.
    golden_arg(
        encode::Arg::new(NAME, E::Bool(true)),
        &[0x0000_0001_0002_0019],
        arg("name", D::Bool(true)),
    );
    golden_arg(
        encode::Arg::new(NAME, E::Bool(false)),
        &[0x0000_0000_0002_0019],
        arg("name", D::Bool(false)),
    );
}

#[test]
fn argument_blob() {
    // ADDENDUM §1: type 10, size 2, blob size 3 @32, payload padded.
    golden_arg(
        encode::Arg::new(NAME, E::Blob(&[1, 2, 3])),
        &[0x0000_0003_0002_002a, 0x0000_0000_0003_0201],
        arg("name", D::Blob(vec![1, 2, 3])),
    );
    // Eight bytes exactly: no padding.
    golden_arg(
        encode::Arg::new(NAME, E::Blob(&[1, 2, 3, 4, 5, 6, 7, 8])),
        &[0x0000_0008_0002_002a, 0x0807_0605_0403_0201],
        arg("name", D::Blob(vec![1, 2, 3, 4, 5, 6, 7, 8])),
    );
}

#[test]
fn fifteen_args_encode_sixteen_are_refused() {
    let fifteen = [encode::Arg::new(NAME, E::Null); 15];
    let event = encode::Event {
        args: &fifteen,
        ..indexed_event(encode::EventKind::Instant)
    };
    // size 17 (0x110), 15 args @20 (0xf0_0000).
    let mut words = vec![0x0002_0001_01f0_0114, 0x1234];
    words.extend([0x0000_0000_0002_0010; 15]);
    golden(
        &event,
        &words,
        decoded_event(decode::EventKind::Instant, vec![arg("name", D::Null); 15]),
    );

    let sixteen = [encode::Arg::new(NAME, E::Null); 16];
    let event = encode::Event {
        args: &sixteen,
        ..indexed_event(encode::EventKind::Instant)
    };
    assert_eq!(
        encode::encode_to_vec(&event),
        Err(EncodeError::TooManyArgs { count: 16 })
    );
    let mut out = [0u64; 64];
    assert_eq!(
        event.encode(&mut out),
        Err(EncodeError::TooManyArgs { count: 16 })
    );
}

// --------------------------------------------------------- other records

#[test]
fn blob_record() {
    // type 5, size 2, name 2 @16, payload size 5 @32, blob type 1 @48.
    let payload = [1u8, 2, 3, 4, 5];
    golden(
        &encode::Blob {
            name: NAME,
            blob_type: encode::BlobType::Data,
            payload: &payload,
        },
        &[0x0001_0005_0002_0025, 0x0000_0005_0403_0201],
        Record::Blob(decode::Blob {
            name: t("name"),
            blob_type: decode::BlobType::Data,
            payload: payload.to_vec(),
        }),
    );
    // Inline name "b" (0x8001), Perfetto type 3 (ADDENDUM §3), size 3.
    golden(
        &encode::Blob {
            name: StringRef::Inline("b"),
            blob_type: encode::BlobType::Perfetto,
            payload: &payload,
        },
        &[0x0003_0005_8001_0035, 0x62, 0x0000_0005_0403_0201],
        Record::Blob(decode::Blob {
            name: t("b"),
            blob_type: decode::BlobType::Perfetto,
            payload: payload.to_vec(),
        }),
    );
}

#[test]
fn userspace_object_record() {
    // type 6, size 2, process ref 1 @16, name 2 @24, 0 args @40.
    golden(
        &encode::UserspaceObject {
            pointer: 0x1000,
            process: ProcessRef::Index(1),
            name: NAME,
            args: &[],
        },
        &[0x0000_0000_0201_0026, 0x1000],
        Record::UserspaceObject(decode::UserspaceObject {
            pointer: 0x1000,
            process: decode::Process::Known(0x10),
            name: t("name"),
            args: vec![],
        }),
    );
    // Inline process (one koid word), inline name "obj" (0x8003 @24),
    // one u32 argument (1 @40); size 5.
    let args = [encode::Arg::new(NAME, E::U32(7))];
    golden(
        &encode::UserspaceObject {
            pointer: 0x1000,
            process: ProcessRef::Inline(0x30),
            name: StringRef::Inline("obj"),
            args: &args,
        },
        &[
            0x0000_0180_0300_0056,
            0x1000,
            0x30,
            0x0000_0000_006a_626f,
            0x0000_0007_0002_0012,
        ],
        Record::UserspaceObject(decode::UserspaceObject {
            pointer: 0x1000,
            process: decode::Process::Known(0x30),
            name: t("obj"),
            args: vec![arg("name", D::U32(7))],
        }),
    );
}

#[test]
fn kernel_object_record() {
    // type 7, size 2, object type 1 (process) @16, name 2 @24.
    golden(
        &encode::KernelObject {
            koid: 0x10,
            object_type: encode::OBJ_TYPE_PROCESS,
            name: NAME,
            args: &[],
        },
        &[0x0000_0000_0201_0027, 0x10],
        Record::KernelObject(decode::KernelObject {
            koid: 0x10,
            object_type: 1,
            name: t("name"),
            args: vec![],
        }),
    );
    // A thread (type 2) named inline "t" (0x8001 @24) with the conventional
    // koid argument "process" (inline name 0x8007, size 3); size 6.
    // "process" = 70 72 6f 63 65 73 73.
    let args = [encode::Arg::new(
        StringRef::Inline("process"),
        E::Koid(0x10),
    )];
    golden(
        &encode::KernelObject {
            koid: 0x11,
            object_type: encode::OBJ_TYPE_THREAD,
            name: StringRef::Inline("t"),
            args: &args,
        },
        &[
            0x0000_0180_0102_0067,
            0x11,
            0x74,
            0x0000_0000_8007_0038,
            0x0073_7365_636f_7270,
            0x10,
        ],
        Record::KernelObject(decode::KernelObject {
            koid: 0x11,
            object_type: 2,
            name: t("t"),
            args: vec![arg("process", D::Koid(0x10))],
        }),
    );
}

#[test]
fn context_switch_record() {
    // type 8, size 4, 0 args @16, cpu 3 @20 (0x30_0000), state blocked 3
    // @36 (0x30_0000_0000), scheduling type 1 @60.
    golden(
        &encode::ContextSwitch {
            timestamp: 100,
            cpu: 3,
            outgoing_state: encode::ThreadState::Blocked,
            outgoing_thread: 0x11,
            incoming_thread: 0x12,
            args: &[],
        },
        &[0x1000_0030_0030_0048, 100, 0x11, 0x12],
        Record::ContextSwitch(decode::ContextSwitch {
            timestamp: 100,
            cpu: 3,
            outgoing_state: decode::ThreadState::Blocked,
            outgoing_thread: 0x11,
            incoming_thread: 0x12,
            args: vec![],
        }),
    );
    // One i32 argument: size 5, 1 arg @16; highest cpu 0xffff.
    let args = [encode::Arg::new(NAME, E::I32(-1))];
    golden(
        &encode::ContextSwitch {
            timestamp: 100,
            cpu: 0xffff,
            outgoing_state: encode::ThreadState::Dead,
            outgoing_thread: 0x11,
            incoming_thread: 0x12,
            args: &args,
        },
        &[
            0x1000_005f_fff1_0058,
            100,
            0x11,
            0x12,
            0xffff_ffff_0002_0011,
        ],
        Record::ContextSwitch(decode::ContextSwitch {
            timestamp: 100,
            cpu: 0xffff,
            outgoing_state: decode::ThreadState::Dead,
            outgoing_thread: 0x11,
            incoming_thread: 0x12,
            args: vec![arg("name", D::I32(-1))],
        }),
    );
}

#[test]
fn thread_wakeup_record() {
    // type 8, size 3, cpu 0x1234 @20 (0x1_2340_0000), scheduling type 2 @60.
    golden(
        &encode::ThreadWakeup {
            timestamp: 100,
            cpu: 0x1234,
            waking_thread: 0x11,
            args: &[],
        },
        &[0x2000_0001_2340_0038, 100, 0x11],
        Record::ThreadWakeup(decode::ThreadWakeup {
            timestamp: 100,
            cpu: 0x1234,
            waking_thread: 0x11,
            args: vec![],
        }),
    );
}

#[test]
fn legacy_context_switch_record() {
    // type 8, size 4, cpu 2 @16, state suspended 2 @24, outgoing ref 1 @28,
    // incoming ref 0 (inline) @36, priorities 10 @44 and 20 @52,
    // scheduling type 0 @60; then timestamp and the incoming koids.
    golden(
        &encode::LegacyContextSwitch {
            timestamp: 100,
            cpu: 2,
            outgoing_state: encode::ThreadState::Suspended,
            outgoing_thread: THREAD1,
            incoming_thread: ThreadRef::Inline {
                process: 0x20,
                thread: 0x21,
            },
            outgoing_priority: 10,
            incoming_priority: 20,
        },
        &[0x0140_a000_1202_0048, 100, 0x20, 0x21],
        Record::LegacyContextSwitch(decode::LegacyContextSwitch {
            timestamp: 100,
            cpu: 2,
            outgoing_state: decode::ThreadState::Suspended,
            outgoing_thread: KNOWN_THREAD1,
            incoming_thread: decode::Thread::Known {
                process: 0x20,
                thread: 0x21,
            },
            outgoing_priority: 10,
            incoming_priority: 20,
        }),
    );
    // Both threads inline (refs 0): outgoing koids come first; size 6.
    golden(
        &encode::LegacyContextSwitch {
            timestamp: 100,
            cpu: 2,
            outgoing_state: encode::ThreadState::Suspended,
            outgoing_thread: ThreadRef::Inline {
                process: 0x20,
                thread: 0x21,
            },
            incoming_thread: ThreadRef::Inline {
                process: 0x30,
                thread: 0x31,
            },
            outgoing_priority: 10,
            incoming_priority: 20,
        },
        &[0x0140_a000_0202_0068, 100, 0x20, 0x21, 0x30, 0x31],
        Record::LegacyContextSwitch(decode::LegacyContextSwitch {
            timestamp: 100,
            cpu: 2,
            outgoing_state: decode::ThreadState::Suspended,
            outgoing_thread: decode::Thread::Known {
                process: 0x20,
                thread: 0x21,
            },
            incoming_thread: decode::Thread::Known {
                process: 0x30,
                thread: 0x31,
            },
            outgoing_priority: 10,
            incoming_priority: 20,
        }),
    );
}

#[test]
fn log_record() {
    // type 9, size 3, length 2 @16, thread 1 @32; "hi" = 68 69.
    golden(
        &encode::Log {
            timestamp: 100,
            thread: THREAD1,
            message: "hi",
        },
        &[0x0000_0001_0002_0039, 100, 0x6968],
        Record::Log(decode::Log {
            timestamp: 100,
            thread: KNOWN_THREAD1,
            message: "hi".into(),
        }),
    );
    // Inline thread: size 5, thread ref 0.
    golden(
        &encode::Log {
            timestamp: 100,
            thread: ThreadRef::Inline {
                process: 0x20,
                thread: 0x21,
            },
            message: "hi",
        },
        &[0x0000_0000_0002_0059, 100, 0x20, 0x21, 0x6968],
        Record::Log(decode::Log {
            timestamp: 100,
            thread: decode::Thread::Known {
                process: 0x20,
                thread: 0x21,
            },
            message: "hi".into(),
        }),
    );
}

#[test]
fn large_blob_with_metadata() {
    // type 15, size 6 @4 (0x60), large type 0 @36, format 0 @40.
    // Format header: category 1 @0, name 2 @16, 1 arg @32, thread 1 @36.
    // Then timestamp, the bool argument, blob size 3, payload aa bb cc.
    let args = [encode::Arg::new(NAME, E::Bool(true))];
    let payload = [0xaa, 0xbb, 0xcc];
    golden(
        &encode::LargeBlobWithMetadata {
            category: CAT,
            name: NAME,
            timestamp: 100,
            thread: THREAD1,
            args: &args,
            payload: &payload,
        },
        &[
            0x0000_0000_0000_006f,
            0x0000_0011_0002_0001,
            100,
            0x0000_0001_0002_0019,
            3,
            0x0000_0000_00cc_bbaa,
        ],
        Record::LargeBlobWithMetadata(decode::LargeBlobWithMetadata {
            category: t("cat"),
            name: t("name"),
            timestamp: 100,
            thread: KNOWN_THREAD1,
            args: vec![arg("name", D::Bool(true))],
            payload: payload.to_vec(),
        }),
    );
    // Inline category "c", inline thread, no args: size 8.
    golden(
        &encode::LargeBlobWithMetadata {
            category: StringRef::Inline("c"),
            name: NAME,
            timestamp: 100,
            thread: ThreadRef::Inline {
                process: 0x20,
                thread: 0x21,
            },
            args: &[],
            payload: &payload,
        },
        &[
            0x0000_0000_0000_008f,
            0x0000_0000_0002_8001,
            0x63,
            100,
            0x20,
            0x21,
            3,
            0x0000_0000_00cc_bbaa,
        ],
        Record::LargeBlobWithMetadata(decode::LargeBlobWithMetadata {
            category: t("c"),
            name: t("name"),
            timestamp: 100,
            thread: decode::Thread::Known {
                process: 0x20,
                thread: 0x21,
            },
            args: vec![],
            payload: payload.to_vec(),
        }),
    );
}

#[test]
fn large_blob_no_metadata() {
    // type 15, size 6, format 1 @40 (0x100_0000_0000). Format header:
    // category 1, inline name "lb" (0x8002 @16). Then "lb", size 9 and
    // payload 00 01 .. 08 over two words.
    let payload: Vec<u8> = (0..9).collect();
    golden(
        &encode::LargeBlobNoMetadata {
            category: CAT,
            name: StringRef::Inline("lb"),
            payload: &payload,
        },
        &[
            0x0000_0100_0000_006f,
            0x0000_0000_8002_0001,
            0x626c,
            9,
            0x0706_0504_0302_0100,
            0x08,
        ],
        Record::LargeBlobNoMetadata(decode::LargeBlobNoMetadata {
            category: t("cat"),
            name: t("lb"),
            payload: payload.clone(),
        }),
    );
}

#[test]
fn large_blob_over_32_kib_uses_the_32_bit_size() {
    // 40000 bytes: 5000 payload words, size 5003 (0x138b) over the 12-bit
    // limit: header 0x138b << 4 | 0xf | format 1 << 40.
    let payload = vec![0x5a; 40000];
    let record = encode::LargeBlobNoMetadata {
        category: CAT,
        name: NAME,
        payload: &payload,
    };
    let words = encode::encode_to_vec(&record).unwrap();
    assert_eq!(words.len(), 5003);
    assert_eq!(words[0], 0x0000_0100_0001_38bf);
    assert_eq!(words[1], 0x0000_0000_0002_0001);
    assert_eq!(words[2], 40000);
    assert_eq!(words[3], 0x5a5a_5a5a_5a5a_5a5a);
    assert_eq!(
        decode_after_prelude(&words),
        [Record::LargeBlobNoMetadata(decode::LargeBlobNoMetadata {
            category: t("cat"),
            name: t("name"),
            payload,
        })]
    );
}

// ------------------------------------------------- decoder-only behaviour

#[test]
fn undefined_refs_are_kept_with_their_index() {
    // Instant, thread ref 5, category 1, name 9: header
    // 0x0009_0001_0500_0024. Neither 5 nor 9 is defined.
    let records = decode_after_prelude(&[0x0009_0001_0500_0024, 1]);
    assert_eq!(
        records,
        [Record::Event(decode::Event {
            kind: decode::EventKind::Instant,
            timestamp: 1,
            thread: decode::Thread::Undefined(5),
            category: t("cat"),
            name: Text::undefined(9),
            args: vec![],
        })]
    );
    let Record::Event(e) = &records[0] else {
        unreachable!()
    };
    assert!(e.name.is_undefined());
    assert_eq!(e.name.to_string(), "<undefined string #9>");
}

#[test]
fn index_zero_registrations_are_ignored() {
    // String record for index 0 ("x"): header 0x0000_0001_0000_0022.
    // Thread record for index 0: 0x0000_0000_0000_0033.
    // Then an instant whose thread ref 0 is inline and category ref 0 empty:
    // 0x0002_0000_0000_0044, ts, koids.
    let records = decode_after_prelude(&[
        0x0000_0001_0000_0022,
        0x78,
        0x0000_0000_0000_0033,
        0x50,
        0x51,
        0x0002_0000_0000_0044,
        1,
        0x60,
        0x61,
    ]);
    assert_eq!(
        records[0],
        Record::String {
            index: 0,
            value: Arc::from("x")
        }
    );
    let Record::Event(e) = &records[2] else {
        panic!()
    };
    assert_eq!(e.category, "");
    assert_eq!(
        e.thread,
        decode::Thread::Known {
            process: 0x60,
            thread: 0x61
        }
    );
}

#[test]
fn providers_keep_separate_tables_and_clocks() {
    // After the prelude (provider 1: string 1 = "cat", 1e9 ticks/s):
    // provider info 2 "p2" (size 2, id 2 @20, length 2 @52):
    //   0x0020_0000_0021_0020, "p2" = 0x3270
    // init 1000 ticks/s; string 1 = "dog" (64 6f 67).
    // instant with category 1, name 1, inline thread, size 4:
    //   0x0001_0001_0000_0044.
    // provider section 1: 0x0000_0000_0012_0010, then the same instant.
    let instant = [0x0001_0001_0000_0044u64, 7, 1, 2];
    let mut words = vec![
        0x0020_0000_0021_0020,
        0x3270,
        0x21,
        1000,
        0x0000_0003_0001_0022,
        0x0067_6f64,
    ];
    words.extend(instant);
    words.push(0x0000_0000_0012_0010);
    words.extend(instant);
    let mut all = PRELUDE.to_vec();
    all.extend(&words);
    let bytes = bytes_of(&all);
    let mut reader = decode::SliceReader::new(&bytes);
    let mut seen = vec![];
    while let Some(r) = reader.next() {
        if let Record::Event(e) = r.unwrap() {
            seen.push((
                e.category.to_string(),
                reader.provider_id(),
                reader.provider_name().map(str::to_owned),
                reader.ticks_per_second(),
            ));
        }
    }
    assert_eq!(
        seen,
        [
            ("dog".into(), Some(2), Some("p2".into()), Some(1000)),
            (
                "cat".into(),
                Some(1),
                Some("app".into()),
                Some(1_000_000_000)
            ),
        ]
    );
}

#[test]
fn unknown_records_subtypes_and_args_are_skipped_by_size() {
    let words = [
        // Record type 10, size 2.
        0x0000_0000_0000_002a,
        0xdead,
        // Metadata type 5, size 1.
        0x0000_0000_0005_0010,
        // Trace info type 1 (metadata 4 @16, info type 1 @20).
        0x0000_0000_0014_0010,
        // Event type 11, size 2.
        0x0002_0001_010b_0024,
        1,
        // Scheduling type 3, size 2.
        0x3000_0000_0000_0028,
        1,
        // Large record type 1 (@36), size 2.
        0x0000_0010_0000_002f,
        1,
        // Large blob format 2 (@40), size 2.
        0x0000_0200_0000_002f,
        1,
        // Instant with one argument of unknown type 11, size 2, name 2,
        // then an extra word the record does not need: size 5.
        0x0002_0001_0110_0054,
        0x1234,
        0x0000_0000_0002_002b,
        0xffff,
        0xeeee,
        // Still in sync.
        0x0016_5478_4604_0010,
    ];
    let records = decode_after_prelude(&words);
    let unknown: Vec<(u8, u32, u64)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Unknown(u) => Some((u.record_type, u.size_words, u.offset)),
            _ => None,
        })
        .collect();
    let base = PRELUDE.len() as u64 * 8;
    assert_eq!(
        unknown,
        [
            (10, 2, base),
            (0, 1, base + 16),
            (0, 1, base + 24),
            (4, 2, base + 32),
            (8, 2, base + 48),
            (15, 2, base + 64),
            (15, 2, base + 80),
        ]
    );
    assert_eq!(
        records[7],
        decoded_event(
            decode::EventKind::Instant,
            vec![arg(
                "name",
                D::Unknown {
                    arg_type: 11,
                    skipped: decode::SkippedArg {
                        header: 0x0000_0000_0002_002b,
                        size_words: 2
                    }
                }
            )]
        )
    );
    assert_eq!(records[8], Record::Magic);
}

#[test]
fn older_record_type_8_is_the_legacy_context_switch() {
    // ADDENDUM §2: the old "context switch record" has zeros in bits 60..63.
    // cpu 1, state 3 (blocked), outgoing ref 1, incoming ref 1, priorities 0.
    let records = decode_after_prelude(&[0x0000_0010_1301_0028, 9]);
    assert_eq!(
        records,
        [Record::LegacyContextSwitch(decode::LegacyContextSwitch {
            timestamp: 9,
            cpu: 1,
            outgoing_state: decode::ThreadState::Blocked,
            outgoing_thread: KNOWN_THREAD1,
            incoming_thread: KNOWN_THREAD1,
            outgoing_priority: 0,
            incoming_priority: 0,
        })]
    );
}

#[test]
fn malformed_records_are_reported_with_offsets() {
    let base = PRELUDE.len() as u64 * 8;
    let bytes = |words: &[u64]| {
        let mut all = PRELUDE.to_vec();
        all.extend_from_slice(words);
        bytes_of(&all)
    };
    // A size-0 header is fatal.
    let (records, error) = decode::decode_all_lossy(&bytes(&[0x4, 1, 2]));
    assert_eq!(records.len(), 6);
    assert_eq!(
        error,
        Some(DecodeError::ZeroSizeRecord {
            offset: base,
            header: 4
        })
    );
    // A size past the end is fatal (truncated).
    let (records, error) = decode::decode_all_lossy(&bytes(&[0x0002_0001_0100_0034, 1]));
    assert_eq!(records.len(), 6);
    assert_eq!(
        error,
        Some(DecodeError::Truncated {
            offset: base,
            needed_bytes: 24,
            available_bytes: 16
        })
    );
    // An inline name longer than the record: the record is skipped and the
    // reader goes on.
    let input = bytes(&[0x8010_0001_0100_0024, 1, 0x0016_5478_4604_0010]);
    let results: Vec<_> = decode::SliceReader::new(&input).skip(6).collect();
    assert_eq!(
        results,
        [
            Err(DecodeError::RecordTooShort {
                offset: base,
                record_type: 4,
                size_bytes: 16,
                needed_bytes: 32
            }),
            Ok(Record::Magic)
        ]
    );
    assert!(!results[0].as_ref().unwrap_err().is_fatal());
    // A wrong magic number.
    let (_, error) = decode::decode_all_lossy(&bytes(&[0x0016_5478_4704_0010]));
    assert_eq!(
        error,
        Some(DecodeError::BadMagic {
            offset: base,
            header: 0x0016_5478_4704_0010
        })
    );
    // An argument of size 0, and one overrunning its record.
    let (_, error) =
        decode::decode_all_lossy(&bytes(&[0x0002_0001_0110_0034, 1, 0x0000_0000_0002_0000]));
    assert_eq!(
        error,
        Some(DecodeError::ZeroSizeArgument { offset: base + 16 })
    );
    let (_, error) =
        decode::decode_all_lossy(&bytes(&[0x0002_0001_0110_0034, 1, 0x0000_0000_0002_0020]));
    assert_eq!(
        error,
        Some(DecodeError::ArgumentOverrunsRecord {
            offset: base + 16,
            size_bytes: 16,
            available_bytes: 8
        })
    );
    // Invalid UTF-8 in a string record ("\xff").
    let (_, error) = decode::decode_all_lossy(&bytes(&[0x0000_0001_0003_0022, 0xff]));
    assert_eq!(error, Some(DecodeError::InvalidUtf8 { offset: base + 8 }));
    // Every error's Display names its offset.
    assert!(error
        .unwrap()
        .to_string()
        .contains(&format!("{:#x}", base + 8)));
}

#[test]
fn stream_reader_matches_slice_reader() {
    let mut words = PRELUDE.to_vec();
    words.extend([0x0002_0001_0100_0024, 0x1234]);
    let bytes = bytes_of(&words);
    let from_slice = decode::decode_all_lossy(&bytes);
    let from_stream = decode::read_all_lossy(&bytes[..]);
    assert_eq!(from_slice, from_stream);
    assert_eq!(from_slice.0.len(), 7);
    assert_eq!(from_slice.1, None);
}
