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

/// A session in miniature: its generation and its ring.
struct Sess {
    gen: u64,
    ring: Ring,
}

/// The control state in miniature: the call site's cache word (the
/// generation it is enabled in, 0 = off) and the live session (behind the
/// control lock, as `session::current`).
struct Control {
    word: loom::sync::atomic::AtomicU64,
    current: loom::sync::Mutex<Option<Arc<Sess>>>,
}

/// A writer as `thread::Writer` does it: check the call site's word, keep
/// writing to its registered session while the word's generation is that
/// session's, otherwise register under the lock (only with the live session
/// of that generation), leaving (and releasing its chunk in) the old one.
struct SessWriter {
    sess: Option<Arc<Sess>>,
    w: Writer,
}

impl SessWriter {
    fn event(&mut self, ctl: &Control, tag: u64) {
        // The call site's check: one load of its word.
        let word = ctl.word.load(Ordering::Acquire);
        if word == 0 {
            return;
        }
        if self.sess.as_ref().map(|s| s.gen) != Some(word) {
            let live = ctl.current.lock().unwrap().clone();
            match live {
                Some(s) if s.gen == word => {
                    self.leave();
                    self.sess = Some(s);
                }
                // The site's session is over: drop the event.
                _ => return,
            }
        }
        let s = self.sess.clone().unwrap();
        self.w.write(&s.ring, (s.gen << 16) | tag);
    }

    fn leave(&mut self) {
        if let (Some(s), Some(l)) = (self.sess.as_ref(), self.w.lease.take()) {
            s.ring.release(&l);
        }
    }
}

/// Session stop and restart while a writer is in flight: a writer that
/// loaded the enabled word before the stop may still publish into the old
/// session (the grace period is not modelled), but only whole records,
/// only of its generation, and never into the new session's ring;
/// records a collector saw stay; nothing is duplicated.
#[test]
fn stop_and_restart_with_a_writer_in_flight() {
    model(|| {
        let s1 = Arc::new(Sess {
            gen: 1,
            ring: Ring::new(RingMode::Oneshot, 2, CHUNK_WORDS),
        });
        let ctl = Arc::new(Control {
            word: loom::sync::atomic::AtomicU64::new(1),
            current: loom::sync::Mutex::new(Some(s1.clone())),
        });
        let writer = {
            let ctl = ctl.clone();
            thread::spawn(move || {
                let mut sw = SessWriter {
                    sess: None,
                    w: Writer {
                        lease: None,
                        dropped: 0,
                        starved: 0,
                    },
                };
                for i in 1..=2 {
                    sw.event(&ctl, i);
                }
                sw.leave();
            })
        };
        // Stop session 1 (as `session::stop`: unpublish, then turn the
        // call site off), collect it, start session 2.
        *ctl.current.lock().unwrap() = None;
        ctl.word.store(0, Ordering::Release);
        let early = read_all(&s1.ring, false);
        let s2 = Arc::new(Sess {
            gen: 2,
            ring: Ring::new(RingMode::Oneshot, 2, CHUNK_WORDS),
        });
        *ctl.current.lock().unwrap() = Some(s2.clone());
        ctl.word.store(2, Ordering::Release);

        writer.join().unwrap();
        let late1 = read_all(&s1.ring, false);
        let all2 = read_all(&s2.ring, false);
        assert!(
            late1.iter().all(|r| r >> 16 == 1),
            "foreign record in session 1: {late1:x?}"
        );
        assert!(
            all2.iter().all(|r| r >> 16 == 2),
            "foreign record in session 2: {all2:x?}"
        );
        assert!(
            early.iter().all(|r| late1.contains(r)),
            "a collected record vanished"
        );
        let mut tags: Vec<u64> = late1.iter().chain(&all2).map(|r| r & 0xffff).collect();
        let n = tags.len();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), n, "an event written twice");
    });
}
