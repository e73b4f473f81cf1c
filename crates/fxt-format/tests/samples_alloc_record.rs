//! The `fxt.alloc` blob record (issue 45): golden words worked out by hand
//! from the layout table in `src/samples/alloc.rs`, round trips through the
//! trace decoder, retiming, and typed errors (never a panic) on damaged
//! payloads.

use fxt_format::decode::{decode_all, Record};
use fxt_format::encode::{encode_to_vec, Encode, EncodeError};
use fxt_format::samples::*;
use proptest::prelude::*;

fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

// 12 words: header type 5 | size 12 << 4 (0xc5) | name 0x8009 << 16 |
// payload 72 bytes (0x48) << 32 | blob type 1 << 48.
// "fxt.alloc" = 66 78 74 2e 61 6c 6c 6f | 63.
// shape word: 2 frames | walk 1 << 16 | kind 1 << 32 | untracked << 40.
const ALLOC_WORDS: [u64; 12] = [
    0x0001_0048_8009_00c5,
    0x6f6c_6c61_2e74_7866,
    0x0000_0000_0000_0063,
    0x1000,
    7,
    8,
    0xdead_0000,
    24,
    4096,
    0x0000_0101_0001_0002,
    0x1111,
    0x2222,
];

fn golden() -> Alloc<'static> {
    Alloc {
        timestamp: 0x1000,
        pid: 7,
        tid: 8,
        address: 0xdead_0000,
        size: 24,
        mean: 4096,
        kind: AllocKind::Alloc,
        untracked: true,
        walk: Walk::UnwindTables,
        truncated: false,
        frames: &[0x1111, 0x2222],
        raw_stack: None,
    }
}

fn blob_of(words: &[u64]) -> Result<AllocRecord, SamplesError> {
    let records = decode_all(&bytes_of(words)).expect("decodes");
    let [Record::Blob(blob)] = records.as_slice() else {
        panic!("not one blob: {records:?}")
    };
    AllocRecord::from_blob(blob).expect("an fxt.alloc blob")
}

#[test]
fn alloc_golden_words_and_round_trip() {
    let a = golden();
    assert_eq!(encode_to_vec(&a).unwrap(), ALLOC_WORDS);
    assert_eq!(Alloc::word_len_for(2), 12);
    let back = blob_of(&ALLOC_WORDS).unwrap();
    assert_eq!(back.timestamp, 0x1000);
    assert_eq!((back.pid, back.tid), (7, 8));
    assert_eq!(
        (back.address, back.size, back.mean),
        (0xdead_0000, 24, 4096)
    );
    assert_eq!(back.kind, AllocKind::Alloc);
    assert!(back.untracked && !back.truncated);
    assert_eq!(back.walk, Walk::UnwindTables);
    assert_eq!(back.frames, [0x1111, 0x2222]);
    // A sample is not an alloc record, nor the reverse.
    let records = decode_all(&bytes_of(&ALLOC_WORDS)).unwrap();
    let Record::Blob(blob) = &records[0] else {
        panic!()
    };
    assert!(SampleBlob::from_blob(blob).is_none());
}

#[test]
fn a_free_has_no_frames() {
    let free = Alloc {
        kind: AllocKind::Free,
        untracked: false,
        walk: Walk::PcOnly,
        frames: &[],
        ..golden()
    };
    let words = encode_to_vec(&free).unwrap();
    assert_eq!(words.len(), Alloc::word_len_for(0));
    let back = blob_of(&words).unwrap();
    assert_eq!(back.kind, AllocKind::Free);
    assert!(back.frames.is_empty());
}

#[test]
fn too_many_frames_is_refused_by_the_encoder() {
    let frames = vec![1u64; MAX_FRAMES + 1];
    let a = Alloc {
        frames: &frames,
        ..golden()
    };
    assert!(matches!(a.word_len(), Err(EncodeError::FieldOverflow(_))));
    let mut out = vec![0u64; 400];
    assert!(a.encode(&mut out).is_err());
}

#[test]
fn damaged_payloads_are_typed_errors() {
    let payload = bytes_of(&ALLOC_WORDS[3..]);
    // Cut anywhere: truncated, never a panic.
    for cut in 0..payload.len() {
        assert!(
            matches!(
                AllocRecord::decode(&payload[..cut]),
                Err(SamplesError::Truncated { .. })
            ),
            "cut at {cut}"
        );
    }
    let with_shape = |shape: u64| {
        let mut p = payload.clone();
        p[48..56].copy_from_slice(&shape.to_le_bytes());
        AllocRecord::decode(&p)
    };
    assert!(matches!(
        with_shape(0x0000_0101_0001_0002 | 1 << 60),
        Err(SamplesError::ReservedBits { offset: 48, .. })
    ));
    assert_eq!(
        with_shape(0x0000_0003_0001_0002),
        Err(SamplesError::UnknownAllocKind(3))
    );
    assert_eq!(
        with_shape(0x0000_0001_0005_0002),
        Err(SamplesError::UnknownWalk(5))
    );
    assert_eq!(
        with_shape(0x0000_0001_0001_0000 | (MAX_FRAMES as u64 + 1)),
        Err(SamplesError::TooManyFrames {
            count: MAX_FRAMES + 1
        })
    );
    // A frame count beyond the payload: truncated, not a huge allocation.
    assert!(matches!(
        with_shape(0x0000_0001_0001_00ff),
        Err(SamplesError::Truncated { .. })
    ));
}

#[test]
fn retiming_moves_the_timestamp() {
    let mut bytes = bytes_of(&ALLOC_WORDS);
    fxt_format::retime::retime_record(&mut bytes, &mut |t| t + 5).expect("retimes");
    let mut words = ALLOC_WORDS;
    words[3] += 5;
    assert_eq!(bytes, bytes_of(&words), "only the timestamp moved");
}

proptest! {
    /// Any alloc record round-trips through the trace decoder.
    #[test]
    fn round_trip(
        ts in any::<u64>(), address in any::<u64>(), size in any::<u64>(), mean in any::<u64>(),
        free in any::<bool>(), untracked in any::<bool>(), truncated in any::<bool>(),
        frames in proptest::collection::vec(any::<u64>(), 0..40),
    ) {
        let a = Alloc {
            timestamp: ts, pid: 1, tid: 2, address, size, mean,
            kind: if free { AllocKind::Free } else { AllocKind::Alloc },
            untracked, walk: Walk::FramePointers, truncated, frames: &frames, raw_stack: None,
        };
        let back = blob_of(&encode_to_vec(&a).unwrap()).unwrap();
        prop_assert_eq!(back.timestamp, ts);
        prop_assert_eq!((back.address, back.size, back.mean), (address, size, mean));
        prop_assert_eq!(back.kind, a.kind);
        prop_assert_eq!((back.untracked, back.truncated), (untracked, truncated));
        prop_assert_eq!(back.frames, frames);
    }
}

#[test]
fn a_raw_stack_round_trips_and_mixing_is_refused() {
    let registers = [0x5555_1234, 0x7ffc_0000, 0x7ffc_0040];
    let stack = [1u64, 2, 3, 0x5555_9999];
    let raw = RawStack {
        arch: Arch::X86_64,
        registers: &registers,
        stack_address: 0x7ffc_0000,
        stack: &stack,
    };
    let a = Alloc {
        walk: Walk::RawStack,
        frames: &[],
        raw_stack: Some(raw),
        ..golden()
    };
    let words = encode_to_vec(&a).unwrap();
    assert_eq!(words.len(), Alloc::word_len_raw(Arch::X86_64, 4));
    let back = blob_of(&words).unwrap();
    let got = back.raw_stack.clone().expect("a raw stack");
    assert_eq!(got.registers, registers);
    assert_eq!(got.stack, stack);
    assert_eq!(got.stack_address, 0x7ffc_0000);
    let unwound = back.with_frames(vec![0x5555_1234, 0x5555_9999], false);
    assert_eq!(unwound.walk, Walk::UnwindTables);
    assert!(unwound.raw_stack.is_none());
    // Frames and a raw stack together, or a raw walk without one: refused.
    let mixed = Alloc { frames: &[1], ..a };
    assert!(mixed.word_len().is_err());
    let missing = Alloc {
        raw_stack: None,
        ..a
    };
    assert!(missing.word_len().is_err());
    // Decoding a raw walk that lists frames: a typed error.
    let mut payload = bytes_of(&words[3..]);
    payload[48] = 1;
    assert_eq!(
        AllocRecord::decode(&payload),
        Err(SamplesError::MixedSample)
    );
}

/// A record encoded head first, its stack words stored after the head
/// (as the allocation hook copies a stack straight into its chunk), is
/// word for word the record encoded whole; a head for a frame list, or
/// for more stack words than a raw stack holds, is refused.
#[test]
fn a_head_and_its_stack_words_are_the_whole_record() {
    let registers = [0x5555_0000_1234, 0x7ffc_0000_1000, 0x7ffc_0000_1040];
    let stack = [0xaa, 0xbb, 0xcc];
    let raw = RawStack {
        arch: Arch::X86_64,
        registers: &registers,
        stack_address: 0x7ffc_0000_1000,
        stack: &stack,
    };
    let whole_record = Alloc {
        walk: Walk::RawStack,
        truncated: true,
        frames: &[],
        raw_stack: Some(raw),
        ..golden()
    };
    let whole = encode_to_vec(&whole_record).unwrap();
    let head_only = Alloc {
        raw_stack: Some(RawStack { stack: &[], ..raw }),
        ..whole_record
    };
    let mut out = [0u64; 64];
    let (head, words) = head_only.encode_head(stack.len(), None, &mut out).unwrap();
    assert_eq!(words, whole.len());
    assert_eq!(head + stack.len(), words);
    out[head..words].copy_from_slice(&stack);
    assert_eq!(&out[..words], &whole[..]);
    assert_eq!(
        blob_of(&out[..words]).unwrap().raw_stack.unwrap().stack,
        stack
    );

    assert!(
        golden().encode_head(3, None, &mut out).is_err(),
        "a frame list"
    );
    assert!(
        head_only
            .encode_head(MAX_STACK_WORDS + 1, None, &mut [0; 4096])
            .is_err(),
        "more stack words than a raw stack holds"
    );
    assert!(
        head_only
            .encode_head(3, None, &mut out[..head - 1])
            .is_err(),
        "no room for the head"
    );
}

/// A stack in zero runs: the head's bit 16 set, its word count the
/// stack's, the runs after the registers; it decodes to the same words as
/// the stack written as it is. Runs that cover no word or too many are a
/// typed error.
#[test]
fn a_stack_in_zero_runs_decodes_to_the_same_words() {
    let registers = [0x5555_0000_1234, 0x7ffc_0000_1000, 0x7ffc_0000_1040];
    // 0, 0, 0, 0, 0xaa, 0xbb, 0, 0, 0, 0, 0, 0xcc, 0, 0
    let stack = [0, 0, 0, 0, 0xaa, 0xbb, 0, 0, 0, 0, 0, 0xcc, 0, 0];
    let runs = [
        Run {
            zeros: 4,
            literals: 2,
        },
        Run {
            zeros: 5,
            literals: 1,
        },
        Run {
            zeros: 2,
            literals: 0,
        },
    ];
    let mut tail = Vec::new();
    for (r, literals) in runs.iter().zip([&[0xaa, 0xbb][..], &[0xcc], &[]]) {
        tail.push(r.word());
        tail.extend_from_slice(literals);
    }
    assert_eq!(tail.len(), 6);
    let record = Alloc {
        walk: Walk::RawStack,
        truncated: false,
        frames: &[],
        raw_stack: Some(RawStack {
            arch: Arch::X86_64,
            registers: &registers,
            stack_address: 0x7ffc_0000_1000,
            stack: &[],
        }),
        ..golden()
    };
    let mut out = [0u64; 64];
    let (head, words) = record
        .encode_head(stack.len(), Some(tail.len()), &mut out)
        .unwrap();
    assert_eq!(head + tail.len(), words);
    // The raw stack's head word: arch 1, 3 registers, bit 16, 14 words.
    assert_eq!(out[head - 5], 1 | (3 << 8) | (1 << 16) | (14 << 32));
    out[head..words].copy_from_slice(&tail);
    let back = blob_of(&out[..words]).unwrap();
    assert_eq!(back.raw_stack.unwrap().stack, stack);

    let bad = |run: u64| {
        let mut words = out[..words].to_vec();
        words[head] = run;
        blob_of(&words)
    };
    assert!(matches!(bad(0), Err(SamplesError::BadRun { word: 0, .. })));
    assert!(matches!(
        bad(Run {
            zeros: 15,
            literals: 0
        }
        .word()),
        Err(SamplesError::BadRun { .. })
    ));
}
