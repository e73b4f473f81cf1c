//! Model check of the chunk protocol (src/buffer.rs) with loom:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p fxt-runtime --release --test loom
//! ```
//!
//! (`LOOM_MAX_PREEMPTIONS` defaults to 3 here, ~5 s; 4 takes ~40 s.)
//!
//! Tiny rings (2 chunks of 4 words) and records of 2 words whose
//! second word is the complement of the first, so a torn or half-published
//! record is visible. Every interleaving (up to the preemption bound) must
//! satisfy: readers see only whole records; at the end every record is
//! either collected exactly once or counted as dropped.
#![cfg(loom)]

use std::collections::HashSet;

use fxt_runtime::buffer::{Lease, Ring, RingMode};
use loom::sync::atomic::Ordering;
use loom::sync::Arc;
use loom::thread;

const CHUNK_WORDS: usize = 4;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// A writer as the runtime's thread state does it: reserve in the current
/// chunk, else release it and acquire another. Returns records dropped.
struct Writer {
    lease: Option<Lease>,
    /// Records dropped: overwritten by this writer, or its own when it
    /// found no chunk.
    dropped: u64,
    /// Of which its own records (no chunk available).
    starved: u64,
}

impl Writer {
    fn write(&mut self, ring: &Ring, tag: u64) {
        loop {
            if let Some(l) = self.lease.as_mut() {
                if let Some(pos) = l.reserve(2) {
                    ring.words()[pos].store(tag, Ordering::Relaxed);
                    ring.words()[pos + 1].store(!tag, Ordering::Relaxed);
                    ring.publish(l, 2);
                    return;
                }
                ring.release(l);
                self.lease = None;
            }
            match ring.acquire() {
                Some((l, overwritten)) => {
                    self.dropped += overwritten;
                    self.lease = Some(l);
                }
                None => {
                    self.dropped += 1;
                    self.starved += 1;
                    return;
                }
            }
        }
    }
}

/// Reads every chunk holding data; returns the whole records found, and
/// panics on a torn one. `validate` = seqlock check (circular mode).
fn read_all(ring: &Ring, validate: bool) -> Vec<u64> {
    let mut out = Vec::new();
    for snap in ring.snapshot_all() {
        let words: Vec<u64> = ring
            .chunk_data(&snap)
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        if validate && !ring.validate(&snap) {
            continue;
        }
        assert_eq!(
            words.len() as u64,
            snap.records * 2,
            "length and count disagree"
        );
        for rec in words.chunks(2) {
            assert_eq!(rec[1], !rec[0], "torn record {rec:x?}");
            out.push(rec[0]);
        }
    }
    out
}

fn emitted(writers: u64, per_writer: u64) -> u64 {
    writers * per_writer
}

/// Spawns the writers; each returns (records dropped, of which starved).
fn run_writers(
    ring: &Arc<Ring>,
    writers: u64,
    per_writer: u64,
) -> Vec<thread::JoinHandle<(u64, u64)>> {
    (0..writers)
        .map(|t| {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut w = Writer {
                    lease: None,
                    dropped: 0,
                    starved: 0,
                };
                for i in 0..per_writer {
                    w.write(&ring, (t << 8) | (i + 1));
                }
                if let Some(l) = w.lease.take() {
                    ring.release(&l);
                }
                (w.dropped, w.starved)
            })
        })
        .collect()
}

#[test]
fn oneshot_publication_and_collection() {
    model(|| {
        // 2 chunks of 2 records: 2 writers x 3 records cannot all fit.
        let ring = Arc::new(Ring::new(RingMode::Oneshot, 2, CHUNK_WORDS));
        let handles = run_writers(&ring, 2, 3);
        // A collector running concurrently sees only whole records.
        let early = read_all(&ring, false);
        let results: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let dropped: u64 = results.iter().map(|r| r.0).sum();
        let all = read_all(&ring, false);
        let set: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(set.len(), all.len(), "duplicate record");
        assert!(
            early.iter().all(|r| set.contains(r)),
            "published record vanished"
        );
        assert_eq!(all.len() as u64 + dropped, emitted(2, 3));
    });
}

#[test]
fn circular_overwrites_count_and_never_tear() {
    model(|| {
        let ring = Arc::new(Ring::new(RingMode::Circular, 2, CHUNK_WORDS));
        let handles = run_writers(&ring, 2, 3);
        let early = read_all(&ring, true);
        let _ = early;
        let results: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let dropped: u64 = results.iter().map(|r| r.0).sum();
        let all = read_all(&ring, true);
        let set: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(set.len(), all.len(), "duplicate record");
        assert_eq!(all.len() as u64 + dropped, emitted(2, 3));
        // Each writer's kept records are its newest ones, in order, unless
        // it found no chunk at some point (every chunk owned by, or
        // stamped newer by, the other writer): then that record was
        // dropped and counted, and only the order is guaranteed.
        for t in 0..2u64 {
            let mine: Vec<u64> = all
                .iter()
                .filter(|r| *r >> 8 == t)
                .map(|r| r & 0xff)
                .collect();
            for w in mine.windows(2) {
                assert!(w[1] > w[0], "writer {t}: out of order {mine:?}");
            }
            if results[t as usize].1 == 0 {
                if let Some(&last) = mine.last() {
                    assert_eq!(
                        last,
                        3,
                        "writer {t} lost its newest record: kept {all:x?} results {results:?} chunks {:?}",
                        ring.snapshot_all()
                    );
                }
                for w in mine.windows(2) {
                    assert_eq!(w[1], w[0] + 1, "writer {t}: gap {mine:?}");
                }
            }
        }
    });
}

#[test]
fn streaming_frees_and_reuses_chunks() {
    model(|| {
        let ring = Arc::new(Ring::new(RingMode::Streaming, 2, CHUNK_WORDS));
        let handles = run_writers(&ring, 2, 3);
        // The streamer: one pass writing out and freeing released chunks.
        let mut streamed = Vec::new();
        for snap in ring.snapshot_released() {
            for rec in ring
                .chunk_data(&snap)
                .iter()
                .map(|w| w.load(Ordering::Relaxed))
                .collect::<Vec<_>>()
                .chunks(2)
            {
                assert_eq!(rec[1], !rec[0], "torn record");
                streamed.push(rec[0]);
            }
            ring.free(&snap);
        }
        let results: Vec<(u64, u64)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let dropped: u64 = results.iter().map(|r| r.0).sum();
        let mut all = streamed;
        all.extend(read_all(&ring, false));
        let set: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(set.len(), all.len(), "record written twice");
        assert_eq!(all.len() as u64 + dropped, emitted(2, 3));
    });
}
