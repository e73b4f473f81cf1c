//! The cursor: the one implementation of reserving and publishing records
//! in a leased chunk, and the hold that leases chunks for it.
//!
//! Every record a writer stores goes through a [`Cursor`]: the event hot
//! path reaches it directly (a thread-local, `crate::thread`), the slow
//! paths (first event, chunk rollover, crash-safe sessions, inline refs,
//! logs, blobs) through the thread's writer, which rolls chunks over with
//! [`Hold::refill`]. `tests/loom.rs` model-checks the two together, as the
//! writers use them.
//!
//! # The gate
//!
//! A cursor carries a `token`: the session generation whose events may
//! write through it without further checks (the hot path compares the
//! call site's generation with it), [`CLOSED`] when only the owner's slow
//! path may write (it passes [`CLOSED`] itself), or [`BUSY`] while a record
//! is being written. A record reserved from a cursor marks it [`BUSY`]
//! until it is published, so an event from a signal handler that
//! interrupts a write finds the gate shut and is dropped, never written
//! over the record in progress.
//!
//! # Invariant
//!
//! While a cursor is attached, its owner holds the lease of the chunk the
//! pointers point into and keeps the ring alive; it is the only thread
//! that stores into the chunk above its committed length or stores its
//! `committed` word. [`Hold::refill`] and [`Hold::release`] are the only
//! ways to attach and detach it.

use core::cell::Cell;
use core::sync::atomic::compiler_fence;

use super::{Lease, Ring};
use crate::memory::atomic::{AtomicU64, Ordering};

/// Token of a cursor that only its owner's slow path writes through.
pub const CLOSED: u32 = 0;
/// Token while a record is being written (never a session generation).
const BUSY: u32 = u32::MAX;

/// How much publishing one record of `words` words adds to a chunk's
/// `committed` word (`records << 32 | words`; chunks are smaller than
/// 2^32 words).
#[inline(always)]
const fn committed_step(words: usize) -> u64 {
    (1 << 32) + words as u64
}

/// A writer's position in its leased chunk. Used by one thread only (it is
/// neither `Send` nor `Sync`); `const`-constructible, without a
/// destructor, so it can live in a `const` thread-local.
#[derive(Debug)]
pub struct Cursor {
    /// See the module docs.
    token: Cell<u32>,
    /// Next free word of the leased chunk (null when detached).
    pos: Cell<*const AtomicU64>,
    /// One past the leased chunk's last word (null when detached).
    end: Cell<*const AtomicU64>,
    /// The leased chunk's `committed` word (null when detached). Only this
    /// cursor's owner stores it while the chunk is leased, so it is
    /// updated in place (a load and a store, one `add` on x86), with no
    /// copy of it kept here.
    committed: Cell<*const AtomicU64>,
}

impl Default for Cursor {
    fn default() -> Self {
        Cursor::new()
    }
}

impl Cursor {
    /// A detached, closed cursor.
    pub const fn new() -> Cursor {
        Cursor {
            token: Cell::new(CLOSED),
            pos: Cell::new(core::ptr::null()),
            end: Cell::new(core::ptr::null()),
            committed: Cell::new(core::ptr::null()),
        }
    }

    /// The gate's token (see the module docs).
    #[inline(always)]
    #[cfg_attr(not(any(test, loom)), allow(dead_code))]
    pub fn token(&self) -> u32 {
        self.token.get()
    }

    /// Opens the gate for `token` (a session generation), or closes it
    /// ([`CLOSED`]). Not while a record is in progress.
    #[inline]
    pub fn set_token(&self, token: u32) {
        debug_assert_ne!(token, BUSY);
        // The token is what a signal handler's event checks first: every
        // pointer it guards is set before it (program order on this
        // thread; a compiler fence because the handler runs on it).
        compiler_fence(Ordering::SeqCst);
        self.token.set(token);
    }

    /// Whether a record is being written through this cursor (a signal
    /// handler interrupted it).
    #[inline]
    pub fn busy(&self) -> bool {
        self.token.get() == BUSY
    }

    /// Room for one record of `words` words (at least 1), if the gate is
    /// open for `token` and the rest of the chunk holds it. The caller
    /// stores the record into [`Record::slots`] (header last, see
    /// `crate::memory::filler::Store`) and calls [`Record::publish`].
    /// `None`: nothing was reserved.
    #[inline(always)]
    pub fn reserve(&self, token: u32, words: usize) -> Option<Record<'_>> {
        if self.token.get() != token {
            return None;
        }
        // Shut the gate while the record is written (see the module docs)
        // *before* reading the position: a signal handler that ran between
        // the check above and this store has finished its own record (or
        // moved the cursor to another chunk, or detached it), so what is
        // read below is current. The compiler fence keeps the loads after
        // the store.
        self.token.set(BUSY);
        compiler_fence(Ordering::SeqCst);
        let pos = self.pos.get();
        let end = self.end.get();
        debug_assert!(pos <= end && words >= 1);
        // Does the record end within the chunk? (Detached, both are null
        // and nothing fits. No overflow: `pos` is at most the end of a
        // chunk of our own allocation, far below the top of the address
        // space, and `words` is a record's size.)
        if pos as usize + words * core::mem::size_of::<AtomicU64>() > end as usize {
            // Reopen as it was (a cursor a handler detached meanwhile has
            // no room, so its open gate only leads to the slow path).
            compiler_fence(Ordering::SeqCst);
            self.token.set(token);
            return None;
        }
        // SAFETY: the cursor is attached (the record fits, so the pointers
        // are not null; they were read while this thread's gate was BUSY,
        // so no handler moves them until `publish`), so by the module's
        // invariant this thread holds the lease of the chunk `pos` points
        // into and the ring is alive until the cursor is detached, which
        // cannot happen while the returned record borrows `self` (detaching
        // takes the hold, whose owner is busy writing this record). No
        // other thread writes these words (above the chunk's committed
        // length). The `words` words from `pos` end at or before the
        // chunk's end (checked above).
        // The words are atomics, only accessed through shared references.
        let slots = unsafe { core::slice::from_raw_parts(pos, words) };
        Some(Record {
            cursor: self,
            slots,
            token,
        })
    }

    /// Points the cursor at the start of a freshly acquired chunk, gate
    /// closed.
    ///
    /// # Safety
    ///
    /// The caller owns the lease of `chunk` (whose `committed` word holds
    /// 0) and keeps the memory of both alive until [`Cursor::detach`].
    unsafe fn attach(&self, chunk: &[AtomicU64], committed: &AtomicU64) {
        debug_assert!(!self.busy());
        debug_assert!(chunk.len() < u32::MAX as usize);
        self.token.set(CLOSED);
        let range = chunk.as_ptr_range();
        self.pos.set(range.start);
        self.end.set(range.end);
        self.committed.set(committed);
    }

    /// Closes the gate and forgets the chunk: nothing can be reserved
    /// until the next attach.
    fn detach(&self) {
        self.token.set(CLOSED);
        compiler_fence(Ordering::SeqCst);
        self.pos.set(core::ptr::null());
        self.end.set(core::ptr::null());
        self.committed.set(core::ptr::null());
    }

    /// In a forked child: forgets the chunk without touching it (its
    /// bookkeeping belongs to the parent).
    pub fn forget(&self) {
        self.detach();
    }
}

/// A record reserved by [`Cursor::reserve`], to fill and publish.
#[derive(Debug)]
pub struct Record<'a> {
    cursor: &'a Cursor,
    slots: &'a [AtomicU64],
    /// The token to reopen the gate with.
    token: u32,
}

impl<'a> Record<'a> {
    /// The record's words (exactly the size reserved).
    #[inline(always)]
    pub fn slots(&self) -> &'a [AtomicU64] {
        self.slots
    }

    /// Publishes the record (the caller has stored all its words).
    #[inline(always)]
    pub fn publish(self) {
        let c = self.cursor;
        let words = self.slots.len();
        // SAFETY: the record ends at or before the chunk's end (checked in
        // `reserve`): the result is inside or one past the chunk's words.
        c.pos.set(unsafe { c.pos.get().add(words) });
        // SAFETY: `committed` points to the leased chunk's `committed`
        // word, alive and stored only by this thread for the reasons given
        // in `reserve`.
        let committed = unsafe { &*c.committed.get() };
        // Relaxed load: this thread is the word's only writer while it
        // holds the lease. Release store: pairs with the readers' Acquire
        // load of `committed` (`Ring::snapshot`), so the record's Relaxed
        // stores happen-before any read that sees this length.
        let v = committed.load(Ordering::Relaxed) + committed_step(words);
        committed.store(v, Ordering::Release);
        compiler_fence(Ordering::SeqCst);
        // Reopen. Nothing changes the token while it is BUSY: the slow
        // path and `crate::thread::detach_current` refuse to run on a busy
        // cursor, and the fork child handler leaves a busy cursor alone.
        c.token.set(self.token);
    }
}

/// What [`Hold::refill`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refill {
    /// The cursor is attached to a fresh chunk; acquiring it overwrote
    /// this many older records (circular mode).
    Ready {
        /// Records of the chunk's previous contents, now gone.
        overwritten: u64,
    },
    /// No chunk is available (oneshot buffer full; circular/streaming:
    /// every chunk owned or not yet written out). The cursor is detached.
    NoChunk,
    /// The record can never fit a chunk. Nothing changed.
    TooLarge,
}

/// A writer's hold on a ring: the lease its cursor writes into, if any.
#[derive(Debug, Default)]
pub struct Hold {
    lease: Option<Lease>,
    /// After failing to get a chunk: the ring epoch then (retry only once
    /// it changes, so a full buffer costs no shared RMW per record).
    starved: Option<u64>,
}

impl Hold {
    /// A hold on nothing.
    pub const fn new() -> Hold {
        Hold {
            lease: None,
            starved: None,
        }
    }

    /// Whether a chunk is held.
    pub fn has_lease(&self) -> bool {
        self.lease.is_some()
    }

    /// Gets room for a record of `words` words when the cursor's chunk has
    /// none: releases the chunk and acquires another, attaching `cursor`
    /// to it.
    ///
    /// # Safety
    ///
    /// `ring` stays alive until this hold's lease is released
    /// ([`Hold::release`]) or forgotten ([`Hold::forget`]), and `cursor`
    /// is the one this hold's previous refills attached.
    pub unsafe fn refill(&mut self, ring: &Ring, cursor: &Cursor, words: usize) -> Refill {
        // SAFETY: the caller's guarantees.
        unsafe { self.refill_in(ring, cursor, words, false) }
    }

    /// [`Hold::refill`] from a signal handler that interrupted the
    /// thread: only a chunk [`Ring::acquire_in_handler`] gives. Its
    /// failure does not mark the hold starved (the thread itself may get
    /// a chunk that the handler may not).
    ///
    /// # Safety
    ///
    /// As for [`Hold::refill`].
    pub unsafe fn refill_in_handler(
        &mut self,
        ring: &Ring,
        cursor: &Cursor,
        words: usize,
    ) -> Refill {
        // SAFETY: the caller's guarantees.
        unsafe { self.refill_in(ring, cursor, words, true) }
    }

    unsafe fn refill_in(
        &mut self,
        ring: &Ring,
        cursor: &Cursor,
        words: usize,
        handler: bool,
    ) -> Refill {
        if words > ring.chunk_words() {
            return Refill::TooLarge;
        }
        self.release(ring, cursor);
        let epoch = ring.epoch();
        if self.starved == Some(epoch) {
            return Refill::NoChunk;
        }
        let acquired = if handler {
            ring.acquire_in_handler()
        } else {
            ring.acquire()
        };
        match acquired {
            Some((lease, overwritten)) => {
                self.starved = None;
                let (chunk, committed) = ring.chunk(&lease);
                // SAFETY: `acquire` gave us the lease (its `committed` word
                // was reset to 0), and the caller keeps `ring` alive until
                // the lease is released, which detaches the cursor first.
                unsafe { cursor.attach(chunk, committed) };
                self.lease = Some(lease);
                Refill::Ready { overwritten }
            }
            None => {
                if !handler {
                    self.starved = Some(epoch);
                }
                Refill::NoChunk
            }
        }
    }

    /// Detaches `cursor` and gives the chunk back to `ring` (full, thread
    /// exiting, session over). The cursor holds the chunk's last published
    /// state; the release store makes it final.
    pub fn release(&mut self, ring: &Ring, cursor: &Cursor) {
        cursor.detach();
        if let Some(lease) = self.lease.take() {
            ring.release(&lease);
        }
    }

    /// Detaches `cursor` and forgets the lease without touching the ring
    /// (a forked child: the ring's bookkeeping belongs to the parent).
    pub fn forget(&mut self, cursor: &Cursor) {
        cursor.forget();
        self.lease = None;
        self.starved = None;
    }
}
