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
        &["recover", "-", "-o", p(&clean)],
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
fn recover_of_garbage_writes_an_empty_trace() {
    let damaged = tmp("recover_garbage.fxt");
    std::fs::write(&damaged, [0xffu8; 5]).unwrap();
    let clean = tmp("recover_garbage_out.fxt");
    let out = fxt(&["recover", p(&damaged), "-o", p(&clean)]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("offset 0x0"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&clean).unwrap(), Vec::<u8>::new());
}
