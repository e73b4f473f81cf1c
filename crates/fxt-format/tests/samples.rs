//! The sample, modules and symbols blob records (issue 31): golden words
//! worked out by hand from the layout in `src/samples` (the project's
//! SAMPLES-FORMAT.md), round trips through the trace decoder, and typed
//! errors (never a panic) on damaged payloads.

use fxt_format::decode::{join_split_blobs, Record, SliceReader};
use fxt_format::encode::{encode_into_vec, encode_to_vec, Encode, EncodeError, ThreadRef};
use fxt_format::samples::*;
use proptest::prelude::*;

fn bytes_of(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The one blob a record's words decode to, through the trace decoder.
fn decoded_blob(words: &[u64]) -> SampleBlob {
    let bytes = bytes_of(words);
    let records: Vec<Record> = join_split_blobs(&bytes)
        .map(|r| r.item.expect("decodes"))
        .collect();
    let blobs: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => SampleBlob::from_blob(b),
            _ => None,
        })
        .collect();
    assert_eq!(blobs.len(), 1, "{records:?}");
    blobs.into_iter().next().unwrap().expect("payload decodes")
}

// sample: 9 words; header type 5 | size 9 << 4 (0x95) | name 0x800a << 16
// | payload 48 bytes << 32 | blob type 1 << 48.
// "fxt.sample" = 66 78 74 2e 73 61 6d 70 | 6c 65.
// shape word: 2 frames | walk 2 << 16 | truncated << 24.
const SAMPLE_WORDS: [u64; 9] = [
    0x0001_0030_800a_0095,
    0x706d_6173_2e74_7866,
    0x0000_0000_0000_656c,
    0x1000,
    7,
    8,
    0x0102_0002,
    0x1111,
    0x2222,
];

#[test]
fn sample_golden_words() {
    let sample = Sample {
        timestamp: 0x1000,
        pid: 7,
        tid: 8,
        walk: Walk::FramePointers,
        truncated: true,
        frames: &[0x1111, 0x2222],
    };
    assert_eq!(encode_to_vec(&sample).unwrap(), SAMPLE_WORDS);
    assert_eq!(Sample::word_len_for(2), 9);
    assert_eq!(
        decoded_blob(&SAMPLE_WORDS),
        SampleBlob::Sample(SampleRecord {
            timestamp: 0x1000,
            pid: 7,
            tid: 8,
            walk: Walk::FramePointers,
            truncated: true,
            frames: vec![0x1111, 0x2222],
            raw_stack: None,
        })
    );
}

#[test]
fn sample_limits() {
    let frames = [0u64; MAX_FRAMES + 1];
    let sample = |n| Sample {
        timestamp: 0,
        pid: 1,
        tid: 2,
        walk: Walk::UnwindTables,
        truncated: false,
        frames: &frames[..n],
    };
    assert_eq!(
        sample(MAX_FRAMES + 1).word_len(),
        Err(EncodeError::FieldOverflow("sample frame count"))
    );
    let mut out = [0u64; Sample::word_len_for(MAX_FRAMES)];
    assert_eq!(sample(MAX_FRAMES).encode(&mut out), Ok(out.len()));
    assert_eq!(
        sample(1).encode(&mut out[..Sample::word_len_for(1) - 1]),
        Err(EncodeError::BufferTooSmall {
            needed: 8,
            available: 7
        })
    );
}

// modules payload: pid 7, 1 entry [0x5000, 0x6000) at offset 0x1000,
// build id ab cd ef (3), path "/bin/x" (6): lengths 3 | 6 << 16.
// Blob: 1 + 2 (name "fxt.modules", 11 bytes) + 8 words, payload 64 bytes.
const MODULES_WORDS: [u64; 11] = [
    0x0001_0040_800b_00b5,
    0x7564_6f6d_2e74_7866, // "fxt.modu"
    0x0000_0000_0073_656c, // "les"
    7,
    1,
    0x5000,
    0x6000,
    0x1000,
    0x0006_0003,
    0x00ef_cdab,
    0x0000_782f_6e69_622f, // "/bin/x"
];

#[test]
fn modules_golden_words() {
    let modules = [Module {
        start: 0x5000,
        end: 0x6000,
        offset: 0x1000,
        build_id: &[0xab, 0xcd, 0xef],
        path: "/bin/x",
    }];
    let list = Modules {
        pid: 7,
        modules: &modules,
    };
    let mut words = Vec::new();
    let n = list
        .encode_records(
            0,
            ThreadRef::Inline {
                process: 7,
                thread: 0,
            },
            &mut words,
        )
        .unwrap();
    assert_eq!(n, 11);
    assert_eq!(words, MODULES_WORDS);
    assert_eq!(list.payload_len(), 64);
    let SampleBlob::Modules(back) = decoded_blob(&MODULES_WORDS) else {
        panic!("not modules");
    };
    assert_eq!(back.pid, 7);
    assert_eq!(back.modules.len(), 1);
    assert_eq!(back.modules[0].as_module(), modules[0]);
    assert!(back.modules[0].contains(0x5fff) && !back.modules[0].contains(0x6000));
}

// symbols payload: pid 7, 1 entry: address 0x1234, 2 frames:
// "inner" a.rs:10 -> 10 | 5 << 32 | 4 << 48, then "outer" with no file/line.
const SYMBOLS_PAYLOAD: [u64; 10] = [
    7,
    1,
    0x1234,
    2,
    0x0004_0005_0000_000a,
    0x0000_0072_656e_6e69, // "inner"
    0x0000_0000_7372_2e61, // "a.rs"
    0x0000_0005_0000_0000,
    0x0000_0072_6574_756f, // "outer"
    // (no file stream: P = 0)
    0,
];

#[test]
fn symbols_golden_payload() {
    let frames = [
        Frame {
            function: "inner",
            file: "a.rs",
            line: 10,
        },
        Frame {
            function: "outer",
            file: "",
            line: 0,
        },
    ];
    let symbols = [Symbol {
        address: 0x1234,
        frames: &frames,
    }];
    let table = Symbols {
        pid: 7,
        symbols: &symbols,
    };
    let payload = table.payload();
    // The trailing 0 word above is not part of the payload.
    assert_eq!(payload, bytes_of(&SYMBOLS_PAYLOAD[..9]));
    assert_eq!(table.payload_len(), payload.len());
    let back = SymbolsRecord::decode(&payload).unwrap();
    assert_eq!(back.pid, 7);
    let got: Vec<_> = back.symbols[0]
        .frames
        .iter()
        .map(|f| f.as_frame())
        .collect();
    assert_eq!(got, frames);
    // Trailing bytes are ignored (the layout grows by appending).
    assert_eq!(SymbolsRecord::decode(&bytes_of(&SYMBOLS_PAYLOAD)), Ok(back));
}

#[test]
fn large_symbol_tables_become_split_blob_groups() {
    let names: Vec<String> = (0..3000)
        .map(|i| format!("crate::module::function_{i}"))
        .collect();
    let frames: Vec<[Frame; 1]> = names
        .iter()
        .map(|n| {
            [Frame {
                function: n,
                file: "src/lib.rs",
                line: 1,
            }]
        })
        .collect();
    let symbols: Vec<Symbol> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| Symbol {
            address: 0x1000 + i as u64,
            frames: f,
        })
        .collect();
    let table = Symbols {
        pid: 3,
        symbols: &symbols,
    };
    assert!(table.payload_len() > 100_000);
    let mut words = Vec::new();
    table
        .encode_records(
            5,
            ThreadRef::Inline {
                process: 3,
                thread: 0,
            },
            &mut words,
        )
        .unwrap();
    let SampleBlob::Symbols(back) = decoded_blob(&words) else {
        panic!("not symbols");
    };
    assert_eq!(back.symbols.len(), 3000);
    assert_eq!(back.symbols[2999].frames[0].function, names[2999]);
    assert_eq!(back.symbols[2999].address, 0x1000 + 2999);
}

#[test]
fn damaged_payloads_give_typed_errors() {
    let payload = bytes_of(&SAMPLE_WORDS[3..]);
    assert_eq!(
        SampleRecord::decode(&payload[..payload.len() - 1]),
        Err(SamplesError::Truncated {
            field: "sample address",
            offset: 40,
            needed: 8,
            available: 7
        })
    );
    let mut bad = SAMPLE_WORDS[3..].to_vec();
    bad[3] |= 1 << 40;
    assert!(matches!(
        SampleRecord::decode(&bytes_of(&bad)),
        Err(SamplesError::ReservedBits { offset: 24, .. })
    ));
    bad[3] = 0x0005_0002;
    assert_eq!(
        SampleRecord::decode(&bytes_of(&bad)),
        Err(SamplesError::UnknownWalk(5))
    );
    bad[3] = 0x0001_0101;
    assert_eq!(
        SampleRecord::decode(&bytes_of(&bad)),
        Err(SamplesError::TooManyFrames { count: 257 })
    );
    // A count of 2^64 - 1 entries in a short payload: an error, at once.
    let huge = bytes_of(&[7, u64::MAX, 1, 2]);
    assert!(matches!(
        ModulesRecord::decode(&huge),
        Err(SamplesError::Truncated { .. })
    ));
    assert!(matches!(
        SymbolsRecord::decode(&bytes_of(&[7, 1, 0x10, u64::MAX])),
        Err(SamplesError::Truncated { .. })
    ));
    let mut bad_utf8 = bytes_of(&SYMBOLS_PAYLOAD[..9]);
    bad_utf8[5 * 8] = 0xff;
    assert_eq!(
        SymbolsRecord::decode(&bad_utf8),
        Err(SamplesError::InvalidUtf8 {
            field: "function name",
            offset: 40
        })
    );
}

fn walk() -> impl Strategy<Value = Walk> {
    prop_oneof![
        Just(Walk::UnwindTables),
        Just(Walk::FramePointers),
        Just(Walk::PcOnly)
    ]
}

proptest! {
    #[test]
    fn samples_round_trip(
        timestamp: u64, pid: u64, tid: u64, walk in walk(), truncated: bool,
        frames in prop::collection::vec(any::<u64>(), 0..=MAX_FRAMES),
    ) {
        let sample = Sample { timestamp, pid, tid, walk, truncated, frames: &frames };
        let words = encode_to_vec(&sample).unwrap();
        prop_assert_eq!(words.len(), Sample::word_len_for(frames.len()));
        prop_assert_eq!(
            decoded_blob(&words),
            SampleBlob::Sample(SampleRecord { timestamp, pid, tid, walk, truncated, frames: frames.clone(), raw_stack: None })
        );
    }

    #[test]
    fn modules_and_symbols_round_trip(
        pid: u64,
        entries in prop::collection::vec(
            (any::<u64>(), any::<u64>(), prop::collection::vec(any::<u8>(), 0..40), ".{0,40}",
             prop::collection::vec((".{0,30}", ".{0,30}", any::<u32>()), 0..4)),
            0..20),
    ) {
        let modules: Vec<Module> = entries.iter().map(|(a, b, id, path, _)| Module {
            start: *a, end: *b, offset: a ^ b, build_id: id, path,
        }).collect();
        let frames: Vec<Vec<Frame>> = entries.iter().map(|e| e.4.iter().map(|(f, p, l)| Frame {
            function: f, file: p, line: *l,
        }).collect()).collect();
        let symbols: Vec<Symbol> = entries.iter().zip(&frames).map(|(e, f)| Symbol {
            address: e.0, frames: f,
        }).collect();
        let mut words = Vec::new();
        let thread = ThreadRef::Inline { process: pid, thread: 0 };
        Modules { pid, modules: &modules }.encode_records(1, thread, &mut words).unwrap();
        let SampleBlob::Modules(m) = decoded_blob(&words) else { panic!() };
        prop_assert_eq!(m.modules.iter().map(|e| e.as_module()).collect::<Vec<_>>(), modules);
        words.clear();
        Symbols { pid, symbols: &symbols }.encode_records(1, thread, &mut words).unwrap();
        let SampleBlob::Symbols(s) = decoded_blob(&words) else { panic!() };
        prop_assert_eq!(s.pid, pid);
        for (got, want) in s.symbols.iter().zip(&symbols) {
            prop_assert_eq!(got.address, want.address);
            prop_assert_eq!(got.frames.iter().map(|f| f.as_frame()).collect::<Vec<_>>(), want.frames);
        }
    }

    /// Any bytes: a value or a typed error, never a panic.
    #[test]
    fn any_payload_decodes_or_errs(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = SampleRecord::decode(&bytes);
        let _ = ModulesRecord::decode(&bytes);
        let _ = SymbolsRecord::decode(&bytes);
    }

    /// Every strict prefix of a valid payload is a `Truncated` error.
    #[test]
    fn cut_payloads_are_truncated(cut in 0usize..72) {
        let payload = bytes_of(&SYMBOLS_PAYLOAD[..9]);
        let cut_symbols = SymbolsRecord::decode(&payload[..cut]);
        let truncated = matches!(cut_symbols, Err(SamplesError::Truncated { .. }));
        prop_assert!(truncated, "{:?}", cut_symbols);
        let modules = bytes_of(&MODULES_WORDS[3..]);
        let cut_modules = ModulesRecord::decode(&modules[..cut.min(63)]);
        let truncated = matches!(cut_modules, Err(SamplesError::Truncated { .. }));
        prop_assert!(truncated, "{:?}", cut_modules);
    }
}

#[test]
fn other_blobs_are_not_samples() {
    let mut words = Vec::new();
    for (name, blob_type) in [
        ("fxt.sample", fxt_format::encode::BlobType::Perfetto),
        ("other", fxt_format::encode::BlobType::Data),
    ] {
        words.clear();
        encode_into_vec(
            &fxt_format::encode::Blob {
                name: fxt_format::encode::StringRef::Inline(name),
                blob_type,
                payload: &[0; 64],
            },
            &mut words,
        )
        .unwrap();
        let bytes = bytes_of(&words);
        let Some(Ok(Record::Blob(blob))) = SliceReader::new(&bytes).next() else {
            panic!("a blob");
        };
        assert!(SampleBlob::from_blob(&blob).is_none());
    }
}
