//! `fxt merge`: several providers' traces into one archive where each keeps
//! its own string and thread tables.

mod cli_support;
use cli_support::*;
use fxt_format::decode::{self, Record, Thread};

/// A provider's trace using string indices 1 and 2 and thread index 1 for
/// its own strings and thread.
fn provider_trace(name: &str, category: &str, event: &str, koids: (u64, u64)) -> Trace {
    Trace::with_provider(1, name, 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: category,
        })
        .push(&StringRecord {
            index: 2,
            value: event,
        })
        .push(&ThreadRecord {
            index: 1,
            process: koids.0,
            thread: koids.1,
        })
        .push(&cli_support::event(
            EventKind::Instant,
            10,
            ThreadRef::Index(1),
            StringRef::Index(1),
            StringRef::Index(2),
            &[],
        ))
}

#[test]
fn merged_providers_keep_their_own_tables() {
    let a = provider_trace("proc-a", "alpha-cat", "alpha", (100, 101)).file("merge_a.fxt");
    let b = provider_trace("proc-b", "beta-cat", "beta", (200, 201)).file("merge_b.fxt");
    let archive = tmp("merged.fxt");
    let out = fxt(&["merge", p(&a), p(&b), "-o", p(&archive)]);
    assert!(out.status.success(), "{}", stderr(&out));

    let bytes = std::fs::read(&archive).unwrap();
    let records = decode::decode_all(&bytes).expect("the archive decodes");
    assert_eq!(records[0], Record::Magic);
    assert_eq!(records.iter().filter(|r| **r == Record::Magic).count(), 1);
    let providers: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::ProviderInfo { provider_id, name } => Some((*provider_id, name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(providers, [(1, "proc-a"), (2, "proc-b")]);
    assert!(records.contains(&Record::ProviderSection { provider_id: 2 }));
    let events: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].category, "alpha-cat");
    assert_eq!(events[0].name, "alpha");
    assert_eq!(
        events[0].thread,
        Thread::Known {
            process: 100,
            thread: 101
        }
    );
    assert_eq!(events[1].category, "beta-cat");
    assert_eq!(events[1].name, "beta");
    assert_eq!(
        events[1].thread,
        Thread::Known {
            process: 200,
            thread: 201
        }
    );

    // The archive is clean by the strict checker's standards too.
    let out = fxt(&["check", p(&archive)]);
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn input_without_provider_info_gets_one_named_after_the_file() {
    let bare = Trace::new()
        .push(&MagicNumber)
        .push(&StringRecord {
            index: 1,
            value: "bare",
        })
        .file("bare-trace.fxt");
    let a = provider_trace("proc-a", "alpha-cat", "alpha", (1, 2)).file("merge_a2.fxt");
    let archive = tmp("merged2.fxt");
    let out = fxt(&["merge", p(&a), p(&bare), "-o", p(&archive)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let records = decode::decode_all(&std::fs::read(&archive).unwrap()).unwrap();
    let providers: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::ProviderInfo { provider_id, name } => Some((*provider_id, name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(providers, [(1, "proc-a"), (2, "bare-trace")]);
}

#[test]
fn damaged_input_contributes_records_up_to_the_damage() {
    let mut bytes = provider_trace("proc-a", "c", "n", (1, 2)).bytes();
    bytes.extend_from_slice(&[0x24, 0, 0]); // a partial header
    let a = tmp("merge_damaged.fxt");
    std::fs::write(&a, &bytes).unwrap();
    let archive = tmp("merged3.fxt");
    let out = fxt(&["merge", p(&a), "-o", p(&archive)]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("merge_damaged.fxt"),
        "{}",
        stderr(&out)
    );
    let records = decode::decode_all(&std::fs::read(&archive).unwrap()).unwrap();
    assert_eq!(
        records
            .iter()
            .filter(|r| matches!(r, Record::Event(_)))
            .count(),
        1
    );
}
