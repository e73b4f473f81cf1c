//! Split blobs: exact words against the lead's representation (worked out by
//! hand from the specification's bit tables), joining back into one blob,
//! and groups that do not match passing through unchanged.

use std::sync::Arc;

use fxt_format::decode::{self, join_split_blobs, Joined, Record, SliceReader, Text};
use fxt_format::encode::{
    self, encode_into_vec, split_blob::part_capacity, words_to_bytes, Blob, BlobType, Encode,
    Event, EventKind, SplitBlob, StringRef, ThreadRef,
};
use proptest::prelude::*;

// The prelude (as in golden.rs): magic; string 1 "cat"; string 2 "name";
// thread 1 = (0x10, 0x11).
const PRELUDE: &[u64] = &[
    0x0016_5478_4604_0010,
    0x0000_0003_0001_0022,
    0x0000_0000_0074_6163,
    0x0000_0004_0002_0022,
    0x0000_0000_656d_616e,
    0x0000_0000_0001_0033,
    0x10,
    0x11,
];
const PRELUDE_RECORDS: usize = 4;

const CAT: StringRef<'static> = StringRef::Index(1);
const NAME: StringRef<'static> = StringRef::Index(2);
const THREAD1: ThreadRef = ThreadRef::Index(1);

// The event of a group, by hand: type 4, size 10 (0xa0), instant 0 @16,
// 2 args @20 (0x20_0000), thread 1 @24, category 1 @32, name 2 @48
//                                                   = 0x0002_0001_0120_00a4
// then the timestamp, then
// arg "fxt.blob.size": uint64 (4), size 4 (0x40), inline name of 13 bytes
//   (0x800d @16)                                    = 0x0000_0000_800d_0044
//   "fxt.blob" = 66 78 74 2e 62 6c 6f 62            = 0x626f_6c62_2e74_7866
//   ".size"    = 2e 73 69 7a 65                     = 0x0000_0065_7a69_732e
//   the value
// arg "fxt.blob.parts": uint64, size 4, 14 bytes    = 0x0000_0000_800e_0044
//   "fxt.blob"                                      = 0x626f_6c62_2e74_7866
//   ".parts"   = 2e 70 61 72 74 73                  = 0x0000_7374_7261_702e
//   the value
fn event_words(timestamp: u64, size: u64, parts: u64) -> Vec<u64> {
    vec![
        0x0002_0001_0120_00a4,
        timestamp,
        0x0000_0000_800d_0044,
        0x626f_6c62_2e74_7866,
        0x0000_0065_7a69_732e,
        size,
        0x0000_0000_800e_0044,
        0x626f_6c62_2e74_7866,
        0x0000_7374_7261_702e,
        parts,
    ]
}

fn hex(words: &[u64]) -> Vec<String> {
    words.iter().map(|w| format!("{w:#018x}")).collect()
}

fn with_prelude(words: &[u64]) -> Vec<u8> {
    let mut all = PRELUDE.to_vec();
    all.extend_from_slice(words);
    words_to_bytes(&all)
}

/// The payload packed into words by hand (little-endian, zero padded).
fn payload_words(payload: &[u8]) -> Vec<u64> {
    payload
        .chunks(8)
        .map(|c| {
            let mut w = 0u64;
            for (i, b) in c.iter().enumerate() {
                w |= u64::from(*b) << (8 * i);
            }
            w
        })
        .collect()
}

fn expected_event(timestamp: u64, size: u64, parts: u64) -> Record {
    Record::Event(decode::Event {
        kind: EventKind::Instant,
        timestamp,
        thread: decode::Thread::Known {
            process: 0x10,
            thread: 0x11,
        },
        category: Text::from("cat"),
        name: Text::from("name"),
        args: vec![
            decode::Arg {
                name: Text::from("fxt.blob.size"),
                value: decode::ArgValue::U64(size),
            },
            decode::Arg {
                name: Text::from("fxt.blob.parts"),
                value: decode::ArgValue::U64(parts),
            },
        ],
    })
}

fn joined_after_prelude(bytes: &[u8]) -> Vec<Joined> {
    join_split_blobs(bytes).skip(PRELUDE_RECORDS).collect()
}

#[test]
fn one_part_group_golden() {
    let payload = [1u8, 2, 3, 4, 5];
    let blob = SplitBlob::new(CAT, NAME, 1000, THREAD1, &payload);
    let mut words = event_words(1000, 5, 1);
    // blob: type 5, size 2, name 2 @16, payload size 5 @32, data (1) @48.
    words.extend([0x0001_0005_0002_0025, 0x0000_0005_0403_0201]);
    assert_eq!(hex(&encode::encode_to_vec(&blob).unwrap()), hex(&words));
    assert_eq!(blob.word_len().unwrap(), 12);
    assert_eq!(blob.event_word_len().unwrap(), 10);

    let bytes = with_prelude(&words);
    // A reader that knows nothing of split blobs: an instant, a blob.
    let plain = decode::decode_all(&bytes).unwrap();
    assert_eq!(plain[PRELUDE_RECORDS], expected_event(1000, 5, 1));
    assert!(matches!(&plain[PRELUDE_RECORDS + 1], Record::Blob(b) if b.payload == payload));
    // Joined: the event unchanged and one blob, marked as joined from 1 part.
    let joined = joined_after_prelude(&bytes);
    let event_offset = PRELUDE.len() as u64 * 8;
    assert_eq!(
        joined,
        [
            Joined {
                offset: event_offset,
                item: Ok(expected_event(1000, 5, 1)),
                joined_parts: 0
            },
            Joined {
                offset: event_offset + 80,
                item: Ok(Record::Blob(decode::Blob {
                    name: Text::from("name"),
                    blob_type: BlobType::Data,
                    payload: payload.to_vec(),
                })),
                joined_parts: 1
            },
        ]
    );
}

#[test]
fn empty_payload_is_one_empty_part() {
    let blob = SplitBlob::new(CAT, NAME, 7, THREAD1, &[]);
    let mut words = event_words(7, 0, 1);
    // blob: size 1, name 2, payload size 0, data.
    words.push(0x0001_0000_0002_0015);
    assert_eq!(hex(&encode::encode_to_vec(&blob).unwrap()), hex(&words));
    let joined = joined_after_prelude(&with_prelude(&words));
    assert_eq!(joined.len(), 2);
    assert_eq!(joined[1].joined_parts, 1);
    assert!(matches!(&joined[1].item, Ok(Record::Blob(b)) if b.payload.is_empty()));
}

#[test]
fn two_part_group_golden() {
    // 32752 bytes fill a part named by index (4094 payload words), 3 more
    // bytes go to the second part.
    let payload: Vec<u8> = (0..32_755u32).map(|i| (i * 7 + 3) as u8).collect();
    let blob = SplitBlob::new(CAT, NAME, 0x1234, THREAD1, &payload);
    let mut words = event_words(0x1234, 32_755, 2);
    // part 1: type 5, size 4095 (0xfff0), name 2 @16, 32752 = 0x7ff0 @32, data @48.
    words.push(0x0001_7ff0_0002_fff5);
    words.extend(payload_words(&payload[..32_752]));
    // part 2: size 2, 3 bytes.
    words.push(0x0001_0003_0002_0025);
    words.extend(payload_words(&payload[32_752..]));
    let encoded = encode::encode_to_vec(&blob).unwrap();
    assert_eq!(encoded.len(), 10 + 4095 + 2);
    assert_eq!(hex(&encoded), hex(&words));

    let joined = joined_after_prelude(&with_prelude(&words));
    assert_eq!(joined.len(), 2);
    assert_eq!(joined[0].item, Ok(expected_event(0x1234, 32_755, 2)));
    assert_eq!(joined[1].joined_parts, 2);
    assert!(matches!(&joined[1].item, Ok(Record::Blob(b)) if b.payload == payload));
}

#[test]
fn inline_name_parts_are_full_records_too() {
    // An inline name of 5 bytes takes one word of each part: 4093 payload words.
    let name = StringRef::Inline("frame");
    assert_eq!(part_capacity(name), 4093 * 8);
    let payload = vec![0x5au8; 4093 * 8 * 2 + 1];
    let blob = SplitBlob::new(StringRef::Empty, name, 1, THREAD1, &payload);
    let words = encode::encode_to_vec(&blob).unwrap();
    let bytes = with_prelude(&words);
    let records = decode::decode_all(&bytes).unwrap();
    let sizes: Vec<usize> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => Some(b.payload.len()),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, [4093 * 8, 4093 * 8, 1]);
    // Every record's size, read from bits 4..15 of its header, walks the
    // file exactly: full parts are 4095 words.
    let mut at = PRELUDE.len();
    let mut walked = 0;
    while at < PRELUDE.len() + words.len() {
        let size = ((words[at - PRELUDE.len()] >> 4) & 0xfff) as usize;
        assert!(size > 0);
        at += size;
        walked += 1;
    }
    assert_eq!(at, PRELUDE.len() + words.len());
    assert_eq!(walked, 4);
    let joined = joined_after_prelude(&bytes);
    assert!(
        matches!(&joined[1].item, Ok(Record::Blob(b)) if b.payload == payload && b.name == "frame")
    );
    assert_eq!(joined[1].joined_parts, 3);
}

#[test]
fn parts_may_name_the_blob_with_another_ref_encoding() {
    // The event names the blob by index 2 ("name"); the part inline.
    let payload = [9u8; 3];
    let mut words = event_words(5, 3, 1);
    encode_into_vec(
        &Blob {
            name: StringRef::Inline("name"),
            blob_type: BlobType::Data,
            payload: &payload,
        },
        &mut words,
    )
    .unwrap();
    let joined = joined_after_prelude(&with_prelude(&words));
    assert_eq!(joined.len(), 2);
    assert_eq!(joined[1].joined_parts, 1);
}

/// Decodes `words` (after the prelude) with and without joining and
/// asserts that joining changed nothing.
#[track_caller]
fn assert_passes_through(words: &[u64]) {
    let bytes = with_prelude(words);
    let mut reader = SliceReader::new(&bytes);
    let mut plain = Vec::new();
    while let Some(item) = reader.next() {
        plain.push(Joined {
            offset: reader.record_offset(),
            item,
            joined_parts: 0,
        });
    }
    let joined: Vec<Joined> = join_split_blobs(&bytes).collect();
    assert_eq!(joined, plain);
}

fn blob_words(name: StringRef<'_>, blob_type: BlobType, payload: &[u8]) -> Vec<u64> {
    encode::encode_to_vec(&Blob {
        name,
        blob_type,
        payload,
    })
    .unwrap()
}

#[test]
fn groups_that_do_not_match_pass_through_unchanged() {
    let other_event = encode::encode_to_vec(&Event {
        kind: EventKind::Instant,
        timestamp: 9,
        thread: THREAD1,
        category: CAT,
        name: NAME,
        args: &[],
    })
    .unwrap();
    let part = |payload: &[u8]| blob_words(NAME, BlobType::Data, payload);
    let cases: Vec<(&str, Vec<u64>)> = vec![
        (
            "a part missing at the end",
            [event_words(1, 6, 2), part(&[1, 2, 3])].concat(),
        ),
        (
            "a part missing, then another record",
            [event_words(1, 6, 2), part(&[1, 2, 3]), other_event.clone()].concat(),
        ),
        (
            "a part with another name",
            [
                event_words(1, 3, 1),
                blob_words(CAT, BlobType::Data, &[1, 2, 3]),
            ]
            .concat(),
        ),
        (
            "a part of another type",
            [
                event_words(1, 3, 1),
                blob_words(NAME, BlobType::Perfetto, &[1, 2, 3]),
            ]
            .concat(),
        ),
        (
            "sizes adding up to less",
            [event_words(1, 4, 1), part(&[1, 2, 3])].concat(),
        ),
        (
            "sizes adding up to more",
            [event_words(1, 2, 1), part(&[1, 2, 3])].concat(),
        ),
        ("zero parts", [event_words(1, 0, 0), part(&[])].concat()),
        (
            "a record between event and part",
            [event_words(1, 3, 1), other_event.clone(), part(&[1, 2, 3])].concat(),
        ),
        (
            "parts claimed by the billion",
            [event_words(1, 3, 1 << 40), part(&[1, 2, 3])].concat(),
        ),
    ];
    for (what, words) in cases {
        eprintln!("case: {what}");
        assert_passes_through(&words);
    }
}

#[test]
fn a_group_cut_by_a_malformed_record_passes_through_with_the_error() {
    // A blob record whose header claims 1 word but whose payload size says
    // 3 bytes is malformed (its size is intact): the reader reports it and
    // goes on; the group is broken.
    let words = [
        event_words(1, 3, 1),
        vec![0x0001_0003_0002_0015],
        blob_words(NAME, BlobType::Data, &[1, 2, 3]),
    ]
    .concat();
    assert_passes_through(&words);
    let joined = joined_after_prelude(&with_prelude(&words));
    assert!(joined[1].item.is_err());
}

#[test]
fn a_broken_group_is_followed_by_a_group_that_joins() {
    let good = SplitBlob::new(CAT, NAME, 2, THREAD1, &[4, 5]);
    let words = [
        event_words(1, 3, 2),
        blob_words(NAME, BlobType::Data, &[1]),
        encode::encode_to_vec(&good).unwrap(),
    ]
    .concat();
    let joined = joined_after_prelude(&with_prelude(&words));
    let parts: Vec<u64> = joined.iter().map(|j| j.joined_parts).collect();
    // broken event, its part, the good event, the good blob joined.
    assert_eq!(parts, [0, 0, 0, 1]);
    assert!(matches!(&joined[3].item, Ok(Record::Blob(b)) if b.payload == [4, 5]));
}

#[test]
fn the_stream_reader_joins_too() {
    let payload: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
    let words = encode::encode_to_vec(&SplitBlob::new(CAT, NAME, 3, THREAD1, &payload)).unwrap();
    let bytes = with_prelude(&words);
    let streamed: Vec<Joined> =
        decode::JoinSplitBlobs::new(decode::StreamReader::new(&bytes[..])).collect();
    assert_eq!(streamed, join_split_blobs(&bytes).collect::<Vec<_>>());
    assert_eq!(streamed.len(), PRELUDE_RECORDS + 2);
    assert_eq!(streamed[PRELUDE_RECORDS + 1].joined_parts, 3);
}

#[test]
fn an_oversized_event_is_a_typed_error() {
    let long = "x".repeat(20_000);
    let blob = SplitBlob::new(
        StringRef::Inline(&long),
        StringRef::Inline(&long),
        0,
        THREAD1,
        &[1],
    );
    assert!(matches!(
        blob.word_len(),
        Err(encode::EncodeError::RecordTooLarge { .. })
    ));
    let mut out = [0u64; 16];
    assert!(blob.encode(&mut out).is_err());
}

#[derive(Debug, Clone)]
enum Name {
    Index,
    Inline(String),
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any payload, named either way, with records before and after:
    /// every record is sized by its header's bits 4..15, the plain decoder
    /// sees an instant and `parts` blobs, and joining gives the payload back.
    #[test]
    fn split_blobs_round_trip(
        len in prop_oneof![0usize..100, 32_700usize..32_800, 0usize..140_000],
        seed in any::<u8>(),
        name in prop_oneof![Just(Name::Index), "[a-z]{1,40}".prop_map(Name::Inline)],
        inline_thread in any::<bool>(),
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
        let name_ref = match &name {
            Name::Index => NAME,
            Name::Inline(s) => StringRef::Inline(s),
        };
        let thread = if inline_thread {
            ThreadRef::Inline { process: 0x10, thread: 0x11 }
        } else {
            THREAD1
        };
        let blob = SplitBlob::new(CAT, name_ref, 42, thread, &payload);
        let mut words = Vec::new();
        encode_into_vec(&blob, &mut words).unwrap();
        prop_assert_eq!(words.len(), blob.word_len().unwrap());
        encode_into_vec(&SplitBlob::new(CAT, NAME, 43, THREAD1, &[1, 2]), &mut words).unwrap();
        let bytes = with_prelude(&words);

        let mut at = 0;
        let mut walked = 0;
        while at < words.len() {
            let size = ((words[at] >> 4) & 0xfff) as usize;
            prop_assert!(size > 0);
            at += size;
            walked += 1;
        }
        prop_assert_eq!(at, words.len());
        prop_assert_eq!(walked, 1 + blob.part_count() + 2);

        let plain = decode::decode_all(&bytes).unwrap();
        prop_assert_eq!(plain.len(), PRELUDE_RECORDS + walked);
        let joined = joined_after_prelude(&bytes);
        prop_assert_eq!(joined.len(), 4);
        prop_assert_eq!(joined[1].joined_parts, blob.part_count() as u64);
        let name_text = match &name {
            Name::Index => Text::from("name"),
            Name::Inline(s) => Text::from(Arc::<str>::from(s.as_str())),
        };
        let expected = Record::Blob(decode::Blob {
            name: name_text,
            blob_type: BlobType::Data,
            payload: payload.clone(),
        });
        prop_assert_eq!(joined[1].item.as_ref().unwrap(), &expected);
        prop_assert!(matches!(&joined[3].item, Ok(Record::Blob(b)) if b.payload == [1, 2]));
    }
}
