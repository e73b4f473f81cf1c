//! The ring: the shared buffer cut into chunks, each owned by one
//! writer at a time, and the [`Cursor`] through which its owner writes.
//!
//! # Chunk states
//!
//! ```text
//!              acquire (fetch_add seq; CAS in circular/streaming)
//!   FREE ─────────────────────────────────────────────► OWNED ──┐ Cursor::reserve /
//!    ▲                                                    │  ▲   │ Record::publish
//!    │ free (streamer wrote it out)              release │  └───┘ (Release store
//!    │                                                    ▼        of `committed`)
//!    └──────────────────────────────────────────────── RELEASED
//!                 circular: acquire again (overwritten, old records dropped)
//! ```
//!
//! # Algorithm
//!
//! The buffer is one slice of atomic words (`crate::memory::words::Words`)
//! cut into `chunks` chunks of `chunk_words` words. Relaxed atomic stores
//! compile to plain moves, and a record is never read while it is being
//! written because of the publication protocol below.
//!
//! * **Acquiring a chunk** (once per chunk, not per record): a writer takes
//!   a sequence number with one `fetch_add` on `next_seq`. In oneshot mode
//!   held in memory the sequence number *is* the chunk index (numbers past
//!   the end mean "full"); in circular mode the chunk is `seq % chunks` and
//!   the writer claims it with one CAS on the chunk's `state` word
//!   (skipping a chunk another writer owns). A *drained* ring (streaming,
//!   and oneshot written to its file while it runs) hands out a chunk the
//!   streamer wrote out and freed if there is one, else the next fresh
//!   chunk (a queue, `Recycler`): memory already faulted in and likely
//!   still in cache is reused, and a ring drained as fast as it fills
//!   touches only a few of its chunks. A drained oneshot ring grants at
//!   most its *lease cap* of chunks in all (its file limit in chunks, see
//!   [`Ring::with_lease_cap`]), counted when a chunk is granted (one
//!   relaxed `fetch_add`; a chunk taken past the cap is released empty).
//! * **Writing** (per record, [`Cursor`]): the writer bumps its cursor
//!   (thread-local, no shared write), stores the record's words with
//!   Relaxed stores, then **publishes** the record with one Release *store*
//!   (not an RMW) of the chunk's `committed` word, which holds the number
//!   of records and the number of words written so far. Records never
//!   straddle chunks: a record that does not fit makes the writer release
//!   its chunk and acquire the next one ([`Hold::refill`]).
//! * **Releasing** a chunk: a Release store of `state` (the owner is the
//!   only one who may change an owned chunk's state, so no RMW is needed).
//! * **Reading** (collector, streamer): an Acquire load of `committed` pairs
//!   with the writer's Release store of it, so every word below the
//!   committed length is visible; reserved-but-unpublished words are never
//!   read. A chunk that a writer may re-acquire while it is being read
//!   (circular mode) is read like a seqlock: the state is loaded before and
//!   after the copy, with an Acquire fence in between, and a changed state
//!   discards the copy.
//!
//! # The `state` word of a chunk
//!
//! `seq << 2 | S` where `seq` is the sequence number the chunk was last
//! acquired with and `S` is one of [`FREE`] (holds nothing to keep),
//! [`OWNED`] (a writer owns it), [`RELEASED`] (full or given up by its
//! writer; its data is kept until it is overwritten (circular) or written
//! out and freed (streaming)).
//!
//! The algorithm is generic over the number and size of chunks, so
//! `tests/loom.rs` model-checks it, with the cursor and the hold exactly as
//! the runtime's writers use them, with 2 to 3 chunks of a few words.
//!
//! # Crash-safe mode
//!
//! The words may be a shared mapping of the output file (see
//! `crate::mapped`). The protocol above is unchanged; in addition, a
//! writer that re-acquires a used chunk ([`Ring::acquire`], circular mode)
//! erases its old records into fillers before writing its own, so the file
//! never shows a record half overwritten.

mod cursor;
mod read;

pub use cursor::{Cursor, Hold, Record, Refill, CLOSED};
pub use read::ChunkSnapshot;

use crate::config::Mode;
use crate::memory::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use crate::memory::words::Words;
use crate::memory::CachePadded;

/// State: the chunk holds nothing that must be kept; it may be acquired.
pub const FREE: u64 = 0;
/// State: a writer owns the chunk.
pub const OWNED: u64 = 1;
/// State: the writer let go of the chunk; its data is kept.
pub const RELEASED: u64 = 2;

#[inline]
const fn state(seq: u64, s: u64) -> u64 {
    (seq << 2) | s
}

/// Per-chunk bookkeeping, on its own cache lines (see [`Metas`]).
#[derive(Debug)]
#[repr(C)]
struct ChunkMeta {
    /// `seq << 2 | FREE/OWNED/RELEASED`; see the module docs. Written by the
    /// owner (plain stores), by a claiming writer (CAS) and by the streamer.
    state: AtomicU64,
    /// `records << 32 | words`: what the current owner has published in
    /// this chunk. Written only by the owner, with Release stores.
    committed: AtomicU64,
}

/// The chunks' records, each on its own pair of cache lines (its owner
/// stores `committed` once per record).
///
/// They live in zeroed words from the allocator (large blocks are mapped
/// lazily, so a 4 GiB buffer's 65536 records cost nothing at `start`), one
/// record every [`META_STRIDE`] words. (A `Box<[CachePadded<_>]>` would be
/// zeroed by hand: the allocator only hands out zeroed pages for the
/// alignment of a word.)
#[cfg(not(loom))]
#[derive(Debug)]
struct Metas {
    words: Words,
    n: usize,
}

/// Words from one chunk record to the next: 128 bytes, two cache lines
/// (which also defeats the adjacent-line prefetcher).
#[cfg(not(loom))]
const META_STRIDE: usize = 128 / 8;

#[cfg(not(loom))]
impl Metas {
    /// `n` records, every chunk FREE with nothing committed.
    fn new(n: usize) -> Metas {
        const _: () = assert!(state(0, FREE) == 0);
        Metas {
            words: Words::zeroed(n * META_STRIDE),
            n,
        }
    }

    fn len(&self) -> usize {
        self.n
    }
}

#[cfg(not(loom))]
impl core::ops::Index<usize> for Metas {
    type Output = ChunkMeta;

    #[inline]
    fn index(&self, i: usize) -> &ChunkMeta {
        assert!(i < self.n);
        let w = self.words.slice(i * META_STRIDE..i * META_STRIDE + 2);
        // SAFETY: `ChunkMeta` is `repr(C)` with two `AtomicU64` fields, the
        // layout of the two words `w` points to (aligned for `AtomicU64`);
        // zero is each field's initial value (state(0, FREE) == 0 and
        // committed 0, asserted in `new`); the reference borrows `self`,
        // which owns the words.
        unsafe { &*(w.as_ptr() as *const ChunkMeta) }
    }
}

/// The chunks' records under loom (its atomics are constructed one by one).
#[cfg(loom)]
#[derive(Debug)]
struct Metas(Box<[CachePadded<ChunkMeta>]>);

#[cfg(loom)]
impl Metas {
    fn new(n: usize) -> Metas {
        Metas(
            (0..n)
                .map(|_| {
                    CachePadded::new(ChunkMeta {
                        state: AtomicU64::new(state(0, FREE)),
                        committed: AtomicU64::new(0),
                    })
                })
                .collect(),
        )
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(loom)]
impl core::ops::Index<usize> for Metas {
    type Output = ChunkMeta;

    fn index(&self, i: usize) -> &ChunkMeta {
        &self.0[i]
    }
}

/// A writer's claim on one chunk: which chunk, and the sequence number it
/// was acquired with. Only its owner holds it (in its [`Hold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// Index of the chunk.
    pub idx: usize,
    /// Sequence number it was acquired with.
    pub seq: u64,
}

/// Who acquires a chunk: a thread in its own code, or a signal handler
/// that interrupted it (see [`Ring::acquire_in_handler`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Thread,
    Handler,
}

/// The buffer of chunks; see the module docs.
#[derive(Debug)]
pub struct Ring {
    words: Words,
    chunk_words: usize,
    meta: Metas,
    /// Next sequence number to hand out. Only `fetch_add`ed: Relaxed in
    /// oneshot mode (the number only has to be unique), AcqRel in the
    /// others (see `acquire`).
    next_seq: CachePadded<AtomicU64>,
    /// Bumped whenever a chunk may have become available (released, or
    /// freed by the streamer), so a writer that found no chunk only retries
    /// after something changed (a Relaxed hint; correctness does not depend on it).
    epoch: CachePadded<AtomicU64>,
    mode: Mode,
    /// The words are a crash-safe file mapping: erase reused chunks.
    crash_safe: bool,
    /// Words below this index were populated by the prefaulter (see
    /// [`Ring::populated`]).
    populated: CachePadded<AtomicU64>,
    /// Drained (streaming, and oneshot written to its file as it runs):
    /// chunks written out are handed out again before fresh ones (see
    /// [`Recycler`]).
    recycler: Option<Recycler>,
    /// Chunks a drained oneshot ring grants in all ([`Ring::with_lease_cap`];
    /// `u64::MAX`: no cap, streaming).
    lease_cap: u64,
    /// Chunks granted so far, counted against `lease_cap` (only
    /// `fetch_add`ed, Relaxed: a count; the chunk itself is handed over by
    /// the orderings of `acquire_drained`).
    granted: CachePadded<AtomicU64>,
    /// A writer was refused a chunk because the ring reached its limit
    /// (oneshot: every chunk used, or the lease cap). Relaxed: read once
    /// writers stopped.
    limited: AtomicBool,
}

/// The chunks a drained ring hands out: those written out and freed
/// first (their pages are faulted in and likely in cache), then fresh
/// ones in index order, so that a ring drained as fast as it is filled
/// keeps reusing a few chunks and never touches the rest of its memory.
///
/// Freed chunks go through a queue with one producer (the thread that
/// writes chunks out, [`Ring::free`]) and many consumers (writers, in
/// [`Ring::acquire`]): `slots[k % n]` holds the `k`-th chunk freed,
/// `freed` counts the chunks pushed, `reused` those taken. A chunk is in
/// the queue at most once (it is pushed when written out and taken before
/// it can be written out again), so at most `n` entries are pending and
/// the producer never overwrites one not yet taken.
#[derive(Debug)]
struct Recycler {
    slots: Words,
    /// Chunks pushed. Written by the producer only (Release store).
    freed: CachePadded<AtomicU64>,
    /// Chunks taken: claimed with a CAS by writers.
    reused: CachePadded<AtomicU64>,
    /// Next fresh chunk index (past `n`: none left). Only `fetch_add`ed.
    fresh: CachePadded<AtomicU64>,
}

impl Recycler {
    fn new(n: usize) -> Recycler {
        Recycler {
            slots: Words::zeroed(n),
            freed: CachePadded::new(AtomicU64::new(0)),
            reused: CachePadded::new(AtomicU64::new(0)),
            fresh: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// A freed chunk's index, if one is pending.
    fn take(&self) -> Option<usize> {
        let slots = self.slots.slice(0..self.slots.len());
        let n = slots.len() as u64;
        let mut k = self.reused.load(Ordering::Relaxed);
        loop {
            // Acquire pairs with the Release store in `push`: the slot's
            // value, and everything the producer did with the chunk before
            // freeing it (its reads of the old records), happen-before our
            // reading the slot and the writer's stores into the chunk.
            if k >= self.freed.load(Ordering::Acquire) {
                return None;
            }
            let idx = slots[(k % n) as usize].load(Ordering::Relaxed);
            // The slot cannot be overwritten before entry `k` is taken (see
            // the type's docs), and if another writer took `k` first this
            // CAS fails: the value read belongs to whoever wins it.
            match self
                .reused
                .compare_exchange(k, k + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(idx as usize),
                Err(actual) => k = actual,
            }
        }
    }

    /// Queues the chunk `idx`, written out (single producer).
    fn push(&self, idx: usize) {
        let slots = self.slots.slice(0..self.slots.len());
        let k = self.freed.load(Ordering::Relaxed);
        slots[(k % slots.len() as u64) as usize].store(idx as u64, Ordering::Relaxed);
        // Release pairs with the Acquire load in `take`.
        self.freed.store(k + 1, Ordering::Release);
    }
}

impl Ring {
    /// A ring of `chunks` chunks of `chunk_words` words each, in memory.
    /// Streaming rings are drained ([`Ring::drained`]).
    pub fn new(mode: Mode, chunks: usize, chunk_words: usize) -> Ring {
        let total = chunks
            .checked_mul(chunk_words)
            .expect("buffer size overflows usize");
        Ring::with_words(mode, chunks, chunk_words, Words::zeroed(total), false)
    }

    /// A oneshot or streaming ring whose chunks are written out while
    /// writers run ([`Ring::free`]) and handed out again before fresh
    /// ones. A drained oneshot ring hands out at most `chunks` chunks in
    /// all unless given another cap ([`Ring::with_lease_cap`]).
    pub fn drained(mode: Mode, chunks: usize, chunk_words: usize) -> Ring {
        assert!(mode != Mode::Circular, "a circular ring keeps its data");
        let mut ring = Ring::new(mode, chunks, chunk_words);
        ring.recycler.get_or_insert_with(|| Recycler::new(chunks));
        if mode == Mode::Oneshot {
            ring.lease_cap = chunks as u64;
        }
        ring
    }

    /// A drained oneshot ring that grants `cap` chunks in all, whatever
    /// its number of chunks: the trace stops at `cap` chunks of records
    /// (its file limit), while the memory it touches stays its chunks.
    /// With more leases than chunks, a writer may find every chunk
    /// waiting to be written out: it then drops its record and counts it,
    /// as in streaming mode, and tries again once a chunk is freed.
    pub fn with_lease_cap(mut self, cap: u64) -> Ring {
        assert!(
            self.is_drained() && self.mode == Mode::Oneshot,
            "only a drained oneshot ring has a lease cap"
        );
        self.lease_cap = cap;
        self
    }

    /// Whether a writer was refused a chunk because the ring reached its
    /// limit (oneshot: every chunk used, or the lease cap): records were
    /// dropped at the limit.
    pub fn limit_reached(&self) -> bool {
        self.limited.load(Ordering::Relaxed)
    }

    /// Records that a writer was refused a chunk at the limit (a load
    /// first: a full ring refuses every later record, and the line stays
    /// shared).
    #[cold]
    fn refuse_at_limit(&self) -> Option<(Lease, u64)> {
        if !self.limited.load(Ordering::Relaxed) {
            self.limited.store(true, Ordering::Relaxed);
        }
        None
    }

    /// A ring over `words` (exactly `chunks * chunk_words` of them);
    /// `crash_safe`: they are a crash-safe file mapping, prefilled with
    /// fillers (see the module docs).
    pub(crate) fn with_words(
        mode: Mode,
        chunks: usize,
        chunk_words: usize,
        words: Words,
        crash_safe: bool,
    ) -> Ring {
        assert!(
            chunks > 0 && chunk_words > 0,
            "a ring needs at least one non-empty chunk"
        );
        assert_eq!(Some(words.len()), chunks.checked_mul(chunk_words));
        Ring {
            words,
            chunk_words,
            meta: Metas::new(chunks),
            next_seq: CachePadded::new(AtomicU64::new(0)),
            epoch: CachePadded::new(AtomicU64::new(0)),
            mode,
            crash_safe,
            populated: CachePadded::new(AtomicU64::new(0)),
            recycler: (mode == Mode::Streaming).then(|| Recycler::new(chunks)),
            lease_cap: u64::MAX,
            granted: CachePadded::new(AtomicU64::new(0)),
            limited: AtomicBool::new(false),
        }
    }

    /// Whether chunks are written out while the session runs and reused.
    #[inline]
    pub fn is_drained(&self) -> bool {
        self.recycler.is_some()
    }

    /// The words of the whole ring.
    #[inline(always)]
    pub(crate) fn words(&self) -> &Words {
        &self.words
    }

    /// Words per chunk.
    #[inline]
    pub fn chunk_words(&self) -> usize {
        self.chunk_words
    }

    /// The buffering mode.
    #[inline]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The word index below which writers have leased chunks at least
    /// once: fresh chunks are handed out in index order, so memory above
    /// it is untouched (see `crate::memory::prefault`).
    #[inline]
    pub(crate) fn leased_frontier(&self) -> usize {
        let leased = match &self.recycler {
            Some(r) => r.fresh.load(Ordering::Relaxed),
            None => self.next_seq.load(Ordering::Relaxed),
        };
        (leased.min(self.meta.len() as u64) as usize) * self.chunk_words
    }

    /// The current availability epoch (see [`Ring::acquire`]).
    #[inline]
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Acquires a chunk for the calling writer.
    ///
    /// Returns the lease and the number of records of older data it
    /// overwrote (circular mode; the caller counts them as dropped), or
    /// `None` when no chunk is available: oneshot buffer full, or (circular,
    /// streaming) every chunk tried was owned or not yet written out. After
    /// `None`, retry only once [`Ring::epoch`] has changed.
    pub fn acquire(&self) -> Option<(Lease, u64)> {
        self.acquire_in(Context::Thread)
    }

    /// [`Ring::acquire`] for a signal handler (a CPU sample): a chunk the
    /// buffer's memory already covers, or none. It never grows a
    /// crash-safe file (a lock, a `pwrite`, maybe a first allocation: not
    /// in a handler that may have interrupted any of them), nor populates
    /// the chunk or moves helpers (system calls and a lock the interrupted
    /// code may hold); a `None` is the caller's dropped record.
    pub fn acquire_in_handler(&self) -> Option<(Lease, u64)> {
        self.acquire_in(Context::Handler)
    }

    fn acquire_in(&self, cx: Context) -> Option<(Lease, u64)> {
        // A streaming ring is always drained (`with_words`).
        match &self.recycler {
            Some(recycler) => self.acquire_drained(recycler, cx),
            None if self.mode == Mode::Circular => self.acquire_circular(cx),
            None => self.acquire_oneshot(cx),
        }
    }

    /// [`Ring::acquire`] for a oneshot ring kept in memory (or in its
    /// crash-safe file): the next chunk in index order, until none is left.
    fn acquire_oneshot(&self, cx: Context) -> Option<(Lease, u64)> {
        let n = self.meta.len() as u64;
        // A plain load first, so a full buffer costs no RMW (and no
        // contention) per dropped record.
        let next = self.next_seq.load(Ordering::Relaxed);
        if next >= n {
            return self.refuse_at_limit();
        }
        if cx == Context::Handler && !self.covered(next as usize) {
            // The next chunk would need the file to grow: leave it to a
            // thread (taking it here would waste it).
            return None;
        }
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        if seq >= n {
            return self.refuse_at_limit();
        }
        let idx = seq as usize;
        // Unique by the fetch_add: nobody else touches this chunk's state or
        // committed word until we release it. The state is informative (the
        // collector reads it after writers stopped).
        self.meta[idx]
            .state
            .store(state(seq, OWNED), Ordering::Relaxed);
        let lease = Lease { idx, seq };
        if !self.ready(&lease, cx) {
            return None;
        }
        self.populate(&lease, cx);
        Some((lease, 0))
    }

    /// [`Ring::acquire`] for a circular ring: the oldest chunk not owned,
    /// its records overwritten (their count returned). Tries each chunk at
    /// most once.
    fn acquire_circular(&self, cx: Context) -> Option<(Lease, u64)> {
        let n = self.meta.len() as u64;
        for _ in 0..n {
            // AcqRel: sequence numbers are taken in a chain of RMWs, so
            // everything a writer did before taking its number (releasing
            // its chunk, claiming one) is visible to a writer that takes a
            // later number. Without it a writer could see a stale "owned"
            // state, skip the oldest chunk and overwrite a newer one.
            let seq = self.next_seq.fetch_add(1, Ordering::AcqRel);
            let idx = (seq % n) as usize;
            let Some(prev) = self.claim(idx, seq) else {
                continue;
            };
            let meta = &self.meta[idx];
            let overwritten = if prev & 3 == RELEASED {
                meta.committed.load(Ordering::Relaxed) >> 32
            } else {
                0
            };
            // Seqlock write side: the state change above must be visible to
            // a reader that sees any of the stores that follow (the reader's
            // Acquire fence in `validate` pairs with this fence).
            fence(Ordering::Release);
            meta.committed.store(0, Ordering::Relaxed);
            let lease = Lease { idx, seq };
            if !self.ready(&lease, cx) {
                return None;
            }
            self.populate(&lease, cx);
            if self.crash_safe && prev != state(0, FREE) {
                // Used before: erase the old records (we own the chunk, and
                // the Acquire CAS made them visible).
                crate::memory::filler::clear_chunk(self.chunk(&lease).0);
            }
            return Some((lease, overwritten));
        }
        None
    }

    /// Claims chunk `idx` of a circular ring for sequence number `seq`:
    /// returns its state before, or `None` when it is owned or holds newer
    /// data (a writer that was slow to get here must not put older data, a
    /// smaller seq, over newer data).
    #[inline]
    fn claim(&self, idx: usize, seq: u64) -> Option<u64> {
        let meta = &self.meta[idx];
        let mut cur = meta.state.load(Ordering::Relaxed);
        loop {
            if cur & 3 == OWNED || cur >> 2 > seq {
                return None;
            }
            // Acquire pairs with the Release store of the previous owner's
            // `release` (its words and committed length happen-before our
            // overwriting them and reading the record count) and with the
            // streamer's Release store in `free` (its reads of the old data
            // happen-before our writes).
            match meta.state.compare_exchange(
                cur,
                state(seq, OWNED),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(cur),
                // Decide again on the value that beat us.
                Err(actual) => cur = actual,
            }
        }
    }

    /// [`Ring::acquire`] for a drained ring: a sequence number (the order
    /// chunks are written out in), then a freed chunk, else a fresh one;
    /// a oneshot ring counts it against its lease cap.
    fn acquire_drained(&self, recycler: &Recycler, cx: Context) -> Option<(Lease, u64)> {
        let n = self.meta.len() as u64;
        let capped = self.lease_cap != u64::MAX;
        // A plain load first, so a ring at its cap costs no RMW per
        // dropped record.
        if capped && self.granted.load(Ordering::Relaxed) >= self.lease_cap {
            return self.refuse_at_limit();
        }
        // AcqRel: sequence numbers are taken in a chain of RMWs, so a
        // writer's earlier release is visible to whoever takes a later
        // number (the streamer's ordering argument, `snapshot_released`).
        let seq = self.next_seq.fetch_add(1, Ordering::AcqRel);
        let (idx, fresh) = match recycler.take() {
            Some(idx) => (idx, false),
            None => {
                // No chunk written out to reuse: the streamer is behind
                // (a slow disk, or a streamer starved on a real-time
                // writer's CPU, which this moves it off).
                if cx == Context::Thread {
                    crate::helpers::keep_off_current_cpu();
                }
                let fresh = recycler.fresh.fetch_add(1, Ordering::Relaxed);
                if fresh >= n {
                    // Every chunk holds data not written out yet (the
                    // number taken is skipped: order is all it gives).
                    return None;
                }
                (fresh as usize, true)
            }
        };
        // The chunk is ours alone (taken from the queue, or a fresh index):
        // a plain store. Seqlock write side as in `acquire_circular`: a reader that
        // sees our later stores sees the new state.
        let meta = &self.meta[idx];
        meta.state.store(state(seq, OWNED), Ordering::Relaxed);
        fence(Ordering::Release);
        meta.committed.store(0, Ordering::Relaxed);
        let lease = Lease { idx, seq };
        // Counted once a chunk is in hand, so a writer that found none
        // (above) uses up no lease. Relaxed: the count is all that is
        // shared; the RMW makes each grant's number unique.
        if capped && self.granted.fetch_add(1, Ordering::Relaxed) >= self.lease_cap {
            // Past the cap (another writer took the last lease meanwhile):
            // give the chunk back empty; the streamer frees it.
            self.release(&lease);
            return self.refuse_at_limit();
        }
        if fresh {
            // A reused chunk is faulted in already: no system call.
            self.populate(&lease, cx);
        }
        Some((lease, 0))
    }

    /// Faults the chunk of a lease just taken in with one call, unless the
    /// prefaulter already did: a writer that overtakes the prefaulter
    /// (or runs without one) pays one `MADV_POPULATE_WRITE` per chunk
    /// instead of a trap per page on its hot path, which makes a fresh
    /// session's events cheaper (`bench-table --sections fresh`). A
    /// real-time writer that overtakes it first moves it (and the other
    /// helpers) off its CPU, where it would not run before the writer
    /// stops (`crate::helpers`).
    #[inline]
    fn populate(&self, lease: &Lease, cx: Context) {
        if cx == Context::Handler {
            // Faulted in by the stores instead.
            return;
        }
        let end = (lease.idx + 1) * self.chunk_words;
        // Relaxed: a hint; populating twice is harmless.
        if end as u64 > self.populated.load(Ordering::Relaxed) {
            crate::helpers::keep_off_current_cpu();
            #[cfg(not(loom))]
            crate::memory::prefault::populate(self.chunk(lease).0);
        }
    }

    /// The word index below which the prefaulter has populated the ring
    /// (it stores its progress here).
    pub(crate) fn populated(&self) -> &AtomicU64 {
        &self.populated
    }

    /// Makes the chunk of a lease just taken usable (a crash-safe file
    /// grows over it, see `crate::memory::file_map`). When it cannot be
    /// (the file cannot grow: disk full), the chunk is given back empty and
    /// `false` returned: the writer drops its record and counts it.
    /// In a handler, a chunk not covered yet is given back empty instead
    /// (another writer took the covered one first).
    #[cold]
    fn ready(&self, lease: &Lease, cx: Context) -> bool {
        let base = lease.idx * self.chunk_words;
        let range = base..base + self.chunk_words;
        let ok = match cx {
            Context::Thread => self.words.ready(range).is_ok(),
            Context::Handler => self.words.is_ready(range),
        };
        if ok {
            return true;
        }
        self.release(lease);
        false
    }

    /// Whether chunk `idx`'s memory is usable without growing the file.
    fn covered(&self, idx: usize) -> bool {
        let base = idx.min(self.meta.len()) * self.chunk_words;
        self.words.is_ready(base..base + self.chunk_words)
    }

    /// The words of the chunk of `lease` and its `committed` word, for the
    /// owner's [`Cursor`].
    #[inline]
    pub(crate) fn chunk(&self, lease: &Lease) -> (&[AtomicU64], &AtomicU64) {
        let base = lease.idx * self.chunk_words;
        (
            self.words.slice(base..base + self.chunk_words),
            &self.meta[lease.idx].committed,
        )
    }

    /// Gives up the chunk of `lease` (full, thread exiting, session over).
    pub fn release(&self, lease: &Lease) {
        // Release pairs with the Acquire CAS of the next owner (circular),
        // and with the Acquire load in `snapshot` (streamer, collector):
        // all our stores to the chunk happen-before their reads or writes.
        self.meta[lease.idx]
            .state
            .store(state(lease.seq, RELEASED), Ordering::Release);
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Ring;
    use crate::config::Mode;
    use crate::helpers::wake::IdleWake;
    use std::sync::Arc;
    use std::time::Duration;

    /// What a writer's refill does after taking a chunk
    /// (`crate::thread`'s `Writer::refill`).
    fn refill_wakes(ring: &Ring, wake: &IdleWake) -> bool {
        wake.wake_if(|| ring.is_drained())
    }

    #[test]
    fn a_refill_wakes_a_streamer_waiting_long_once() {
        let ring = Ring::new(Mode::Streaming, 4, 8);
        let wake = Arc::new(IdleWake::new());
        let w = wake.clone();
        let streamer = std::thread::spawn(move || w.park_long(Duration::from_secs(3600)));
        while !wake.is_waiting() {
            std::thread::yield_now();
        }
        // The first chunk taken wakes it; the burst's next ones find it
        // awake.
        ring.acquire().unwrap();
        assert!(refill_wakes(&ring, &wake));
        assert!(!wake.is_waiting());
        ring.acquire().unwrap();
        assert!(!refill_wakes(&ring, &wake));
        // It returns from its hour-long wait (a lost wake hangs here).
        streamer.join().unwrap();
    }

    #[test]
    fn a_ring_not_drained_never_asks_for_a_streamer() {
        for mode in [Mode::Oneshot, Mode::Circular] {
            let ring = Ring::new(mode, 2, 8);
            while ring.acquire().is_some() && mode == Mode::Oneshot {}
            ring.acquire();
            assert!(!ring.is_drained(), "{mode:?}");
        }
    }
}
