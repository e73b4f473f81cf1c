//! Blobs: a payload that fits one blob record goes in the ring; a larger
//! one is kept outside the ring (even far larger than a chunk), within a
//! budget of a quarter of the buffer; beyond it, it is dropped and
//! counted. Also in crash-safe mode. By default a large payload is a split
//! blob group, which a reader sizing every record by header bits 4–15
//! (Perfetto, Tracy) walks record for record as our decoder does, and
//! which the joiner puts back together; with `large_records(true)` it is
//! one large blob record.

mod common;

use fxt_format::compat::framing::{decoder_walk, framing_issues, viewer_walk};
use fxt_format::decode::{join_split_blobs, Record, Thread};
use fxt_runtime::__macro_support::{blob, Callsite, KeyCache};
use fxt_runtime::Config;

static KEYS: [KeyCache; 0] = [];
static BLOB: Callsite = Callsite::new("data", "payload", &[], &KEYS);

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + n) as u8).collect()
}

#[test]
fn large_blobs_outside_the_ring() {
    let _s = common::serial();
    for (crash_safe, large_records) in [(false, true), (true, true), (false, false), (true, false)]
    {
        let path = common::temp_path(&format!("large-blob-{crash_safe}-{large_records}.fxt"));
        // 4 MiB buffer: 64 KiB chunks, a 1 MiB budget for large records.
        let session = fxt_runtime::start(
            Config::new()
                .buffer_size(4 << 20)
                .output(&path)
                .crash_safe(crash_safe)
                .large_records(large_records)
                // The budget of a trace kept in memory (a drained session
                // frees it as blobs are written out).
                .drain(false),
        )
        .unwrap();
        let sizes = [100usize, 32_000, 40_000, 300_000, 600_000, 900_000];
        for &n in &sizes {
            if let Some(site) = BLOB.site() {
                blob(site, &payload(n));
            }
        }
        common::emit(0, 0);
        let stats = session.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let records = common::decode(&bytes);
        // Viewers sizing by bits 4-15 walk split groups as the decoder
        // does; large records are where they go wrong.
        assert_eq!(
            framing_issues(&bytes).is_empty(),
            !large_records,
            "{:?}",
            framing_issues(&bytes)
        );
        if !large_records {
            assert_eq!(viewer_walk(&bytes), decoder_walk(&bytes));
        }
        let mut small = Vec::new();
        let mut large = Vec::new();
        let joined: Vec<_> = join_split_blobs(&bytes).collect();
        for j in &joined {
            let r = j.item.as_ref().unwrap();
            match r {
                Record::Blob(b) if j.joined_parts > 0 => large.push(b.payload.clone()),
                Record::Blob(b) => small.push(b.payload.clone()),
                Record::LargeBlobWithMetadata(b) => {
                    assert_eq!(b.category, "data");
                    assert_eq!(b.name, "payload");
                    assert!(matches!(b.thread, Thread::Known { .. }), "{:?}", b.thread);
                    large.push(b.payload.clone());
                }
                _ => {}
            }
        }
        assert_eq!(small, vec![payload(100), payload(32_000)]);
        // 40 KB + 300 KB + 600 KB fit the 1 MiB budget; 900 KB does not.
        assert_eq!(
            large,
            vec![payload(40_000), payload(300_000), payload(600_000)]
        );
        assert_eq!(stats.records_dropped, 1, "{stats:?}");
        assert_eq!(stats.emitted_records_written, 6, "{stats:?}");
        assert_eq!(common::stress_events(&records).len(), 1);
        std::fs::remove_file(&path).unwrap();
    }
}
