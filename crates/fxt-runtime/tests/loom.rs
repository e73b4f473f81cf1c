//! Model check of the chunk protocol (src/ring/) with loom, through the
//! cursor and the hold exactly as the runtime's writers use them
//! (`crate::thread::Writer` and the event hot path in `crate::emit`):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p fxt-runtime --release --test loom
//! ```
//!
//! (`LOOM_MAX_PREEMPTIONS` defaults to 3 here.)
//!
//! Tiny rings (2 chunks of 4 words) and records of 2 words whose
//! second word is the complement of the first, so a torn or half-published
//! record is visible. Every interleaving (up to the preemption bound) must
//! satisfy: readers see only whole records; at the end every record is
//! either collected exactly once or counted as dropped.
#![cfg(loom)]

use std::collections::HashSet;

use fxt_runtime::ring::{Cursor, Hold, Record, Refill, Ring, CLOSED};
use fxt_runtime::Mode;
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

/// Stores a 2-word record (header word last, as every encoder) and
/// publishes it.
fn store(record: Record<'_>, tag: u64) {
    let slots = record.slots();
    slots[1].store(!tag, Ordering::Relaxed);
    slots[0].store(tag, Ordering::Relaxed);
    record.publish();
}

/// A writer as the runtime's: a cursor whose gate the hot path tries
/// first, and the slow path (`thread::with_writer` + `Writer::reserve`)
/// that closes the gate, writes through the same cursor, rolls chunks over
/// with the hold, and opens the gate again while it holds a chunk.
struct Writer {
    cursor: Cursor,
    hold: Hold,
    /// The session generation the gate opens for.
    token: u32,
    /// Records dropped: overwritten by this writer, or its own when it
    /// found no chunk.
    dropped: u64,
    /// Of which its own records (no chunk available).
    starved: u64,
}

impl Writer {
    fn new(token: u32) -> Writer {
        Writer {
            cursor: Cursor::new(),
            hold: Hold::new(),
            token,
            dropped: 0,
            starved: 0,
        }
    }

    fn write(&mut self, ring: &Ring, tag: u64) {
        // The hot path (`emit::try_fast`).
        if let Some(r) = self.cursor.reserve(self.token, 2) {
            return store(r, tag);
        }
        // The slow path.
        self.cursor.set_token(CLOSED);
        let record = match self.cursor.reserve(CLOSED, 2) {
            Some(r) => Some(r),
            // SAFETY: the ring outlives the hold (the test keeps it in an
            // `Arc` until the hold is released); always this cursor.
            None => match unsafe { self.hold.refill(ring, &self.cursor, 2) } {
                Refill::Ready { overwritten } => {
                    self.dropped += overwritten;
                    self.cursor.reserve(CLOSED, 2)
                }
                Refill::NoChunk | Refill::TooLarge => {
                    self.dropped += 1;
                    self.starved += 1;
                    None
                }
            },
        };
        if let Some(r) = record {
            store(r, tag);
        }
        if self.hold.has_lease() {
            self.cursor.set_token(self.token);
        }
    }

    /// Gives the chunk back (thread exit, session over).
    fn leave(&mut self, ring: &Ring) {
        self.hold.release(ring, &self.cursor);
        assert_eq!(self.cursor.token(), CLOSED, "release leaves the gate open");
        assert!(
            self.cursor.reserve(self.token, 1).is_none(),
            "a detached cursor reserved"
        );
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
        whole_records(&words, snap.records, &mut out);
    }
    out
}

/// Appends the tags of the `records` 2-word records in `words` to `out`;
/// panics on a torn one or a length that disagrees with the count.
fn whole_records(words: &[u64], records: u64, out: &mut Vec<u64>) {
    assert_eq!(words.len() as u64, records * 2, "length and count disagree");
    for rec in words.chunks(2) {
        assert_eq!(rec[1], !rec[0], "torn record {rec:x?}");
        out.push(rec[0]);
    }
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
                let mut w = Writer::new(1);
                for i in 0..per_writer {
                    w.write(&ring, (t << 8) | (i + 1));
                }
                w.leave(&ring);
                (w.dropped, w.starved)
            })
        })
        .collect()
}

#[test]
fn oneshot_publication_and_collection() {
    model(|| {
        // 2 chunks of 2 records: 2 writers x 3 records cannot all fit.
        let ring = Arc::new(Ring::new(Mode::Oneshot, 2, CHUNK_WORDS));
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
        let ring = Arc::new(Ring::new(Mode::Circular, 2, CHUNK_WORDS));
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
        let ring = Arc::new(Ring::new(Mode::Streaming, 2, CHUNK_WORDS));
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

/// One streamer pass as `collect::stream` makes it: the released chunks
/// it may write out, each read whole, then freed for reuse.
fn stream_pass(ring: &Ring, out: &mut Vec<u64>) {
    for snap in ring.snapshot_released() {
        let words: Vec<u64> = ring
            .chunk_data(&snap)
            .iter()
            .map(|w| w.load(Ordering::Relaxed))
            .collect();
        whole_records(&words, snap.records, out);
        ring.free(&snap);
    }
}

#[test]
fn drained_oneshot_reuses_freed_chunks_within_its_cap() {
    model(|| {
        // Two chunks: a oneshot ring hands out at most two leases in all,
        // whether a chunk is fresh or freed by the streamer and reused.
        let ring = Arc::new(Ring::drained(Mode::Oneshot, 2, CHUNK_WORDS));
        let writers = run_writers(&ring, 1, 5);
        let streamer = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut out = Vec::new();
                stream_pass(&ring, &mut out);
                out
            })
        };
        let (dropped, starved) = writers.into_iter().next().unwrap().join().unwrap();
        let mut all = streamer.join().unwrap();
        stream_pass(&ring, &mut all);
        all.extend(read_all(&ring, false));
        let set: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(set.len(), all.len(), "record written twice");
        // Two leases of two records each: the fifth is dropped, every
        // other one is written out exactly once, reused chunk or not.
        assert_eq!((dropped, starved), (1, 1));
        assert_eq!(all.len(), 4);
        assert!((1..=4).all(|i| set.contains(&i)), "lost a record: {all:?}");
    });
}

#[test]
fn drained_oneshot_grants_leases_up_to_its_cap_above_its_chunks() {
    model(|| {
        // Two chunks, three leases (a file limit larger than the buffer):
        // a chunk the streamer freed is granted again up to the cap; a
        // writer that finds both chunks waiting to be written out drops
        // its record (as in streaming) without using up a lease.
        let ring = Arc::new(Ring::drained(Mode::Oneshot, 2, CHUNK_WORDS).with_lease_cap(3));
        let writers = run_writers(&ring, 1, 7);
        let streamer = {
            let ring = ring.clone();
            thread::spawn(move || {
                let mut out = Vec::new();
                stream_pass(&ring, &mut out);
                out
            })
        };
        let (dropped, _) = writers.into_iter().next().unwrap().join().unwrap();
        let mut all = streamer.join().unwrap();
        stream_pass(&ring, &mut all);
        all.extend(read_all(&ring, false));
        let set: HashSet<u64> = all.iter().copied().collect();
        assert_eq!(set.len(), all.len(), "record written twice");
        assert_eq!(all.len() as u64 + dropped, 7);
        // At most three leases of two records. The cap refused a fourth
        // exactly when the first six records filled the three leases (a
        // record dropped earlier for want of a free chunk leaves room for
        // the seventh in the third lease, and no fourth is asked for).
        assert!(all.len() <= 6);
        let first_six = all.len() == 6 && !set.contains(&7);
        assert_eq!(ring.limit_reached(), first_six, "{all:?}");
    });
}

#[test]
fn drained_oneshot_gives_back_a_chunk_taken_past_its_cap() {
    model(|| {
        // Three chunks, one lease: two writers race for it. Both may take
        // a chunk before either counts its grant; the one counted second
        // gives its chunk back empty and drops its record.
        let ring = Arc::new(Ring::drained(Mode::Oneshot, 3, CHUNK_WORDS).with_lease_cap(1));
        let results: Vec<(u64, u64)> = run_writers(&ring, 2, 1)
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect();
        let dropped: u64 = results.iter().map(|r| r.0).sum();
        let mut all = Vec::new();
        stream_pass(&ring, &mut all);
        all.extend(read_all(&ring, false));
        assert_eq!((all.len(), dropped), (1, 1), "{all:?}");
        assert!(ring.limit_reached());
    });
}

/// A session in miniature: its generation and its ring.
struct Sess {
    generation: u32,
    ring: Ring,
}

/// The control state in miniature: the call site's cache word (the
/// generation it is enabled in, 0 = off) and the live session (behind the
/// control lock, as `state::current`).
struct Control {
    word: loom::sync::atomic::AtomicU64,
    current: loom::sync::Mutex<Option<Arc<Sess>>>,
}

/// A writer as `thread::Writer` does it: check the call site's word, try
/// the cursor's gate with the word's generation (open only for the
/// session the writer is registered in), otherwise register under the
/// lock (only with the live session of that generation), leaving — and
/// releasing its chunk in, which closes the gate — the old one.
struct SessWriter {
    sess: Option<Arc<Sess>>,
    w: Writer,
}

impl SessWriter {
    fn event(&mut self, ctl: &Control, tag: u64) {
        // The call site's check: one load of its word.
        let word = ctl.word.load(Ordering::Acquire) as u32;
        if word == 0 {
            return;
        }
        // The hot path: the gate is open only for the registered session.
        if let Some(r) = self.w.cursor.reserve(word, 2) {
            let generation = self.sess.as_ref().unwrap().generation;
            assert_eq!(generation, word, "the gate opened for another session");
            return store(r, ((generation as u64) << 16) | tag);
        }
        if self.sess.as_ref().map(|s| s.generation) != Some(word) {
            let live = ctl.current.lock().unwrap().clone();
            match live {
                Some(s) if s.generation == word => {
                    self.leave();
                    self.w.token = word;
                    self.sess = Some(s);
                }
                // The site's session is over: drop the event.
                _ => return,
            }
        }
        let s = self.sess.clone().unwrap();
        self.w.write(&s.ring, ((s.generation as u64) << 16) | tag);
    }

    fn leave(&mut self) {
        if let Some(s) = self.sess.take() {
            self.w.leave(&s.ring);
        }
    }
}

/// Session stop and restart while a writer is in flight: a writer that
/// loaded the enabled word before the stop may still publish into the old
/// session (the grace period is not modelled), but only whole records,
/// only of its generation, and never into the new session's ring (the
/// gate is closed when it leaves the old one); records a collector saw
/// stay; nothing is duplicated.
#[test]
fn stop_and_restart_with_a_writer_in_flight() {
    model(|| {
        let s1 = Arc::new(Sess {
            generation: 1,
            ring: Ring::new(Mode::Oneshot, 2, CHUNK_WORDS),
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
                    w: Writer::new(CLOSED),
                };
                for i in 1..=3 {
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
            generation: 2,
            ring: Ring::new(Mode::Oneshot, 2, CHUNK_WORDS),
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
