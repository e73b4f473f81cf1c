//! Per-thread state (the writer: session, chunk lease, precomputed header
//! bits) and thread identity (OS pid/tid, names).
//!
//! The state is a `thread_local!` `RefCell`, reached with `try_with` and
//! `try_borrow_mut` so that an event emitted while thread-locals are being
//! destroyed (or re-entrantly) is dropped instead of panicking. A thread
//! registers once per session, on its first event: a thread record (index
//! 1..=255, beyond that inline thread refs) and a kernel object record
//! naming it go into the durable region, and it keeps an `Arc` of the
//! session, which it drops on its first event in a later session or when
//! it exits.
//!
//! # The fast cursor
//!
//! The common event (see `crate::emit`) does not touch the writer at all:
//! it writes through [`Fast`], a second, destructor-free thread local that
//! mirrors the writer's lease as raw pointers into the leased chunk (next
//! free word, end of the chunk, the chunk's `committed` word) plus the
//! cached `committed` value, the thread ref bits and the clock choice.
//!
//! Invariant: **while `Fast::gen` is a session generation (not 0 or
//! [`BUSY`]), this thread's writer holds both the `Arc` of that session
//! (so the ring's memory is alive) and the lease of the chunk the pointers
//! point into, and the cursor, not `Writer::lease`, holds the chunk's
//! position and record count.** It is established only by
//! [`Writer::export_fast`], at the end of [`with_writer`], and every path
//! that changes or gives up the writer's lease or session first sets `gen`
//! to 0: [`with_writer`] (taking the position back with
//! [`Writer::sync_from_fast`] before running its closure, which may
//! refill, register or detach), [`Writer::release_lease`] (refill, detach,
//! [`detach_current`] at finish, `Drop` at thread exit), and the fork
//! child handler ([`forget_after_fork`]). The cursor is exported only for
//! a normal session (not crash-safe: those records need the filler
//! protocol) and an indexed thread ref.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{compiler_fence, Ordering};
use std::sync::Arc;

use crate::buffer::{committed_step, Lease};
use crate::callsite::Site;
use crate::session::{self, Shared, ThreadCounters};
use crate::sync::AtomicU64;

/// The calling thread's OS thread id: `gettid` on Linux, elsewhere a
/// process-unique counter.
pub(crate) fn os_tid() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `gettid` has no preconditions and cannot fail.
        (unsafe { libc::gettid() }) as u64
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        use std::sync::atomic::AtomicU64;
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

const NO_LEASE: Lease = Lease {
    idx: 0,
    seq: 0,
    base: 0,
    pos: 0,
    end: 0,
    records: 0,
};

/// A thread's writer state.
pub(crate) struct Writer {
    /// Generation of `shared`; 0 = not registered.
    pub(crate) gen: u32,
    pub(crate) shared: Option<Arc<Shared>>,
    /// `thread ref << 24`, ready to OR into an event header (0 = inline).
    pub(crate) thread_bits: u64,
    pub(crate) inline_thread: bool,
    /// The session is crash-safe: records are written with the filler
    /// protocol (`crate::mapped`).
    pub(crate) crash_safe: bool,
    /// `inline_thread || crash_safe`: the event fast path's one check for
    /// "this writer needs a slower path".
    pub(crate) slow: bool,
    pub(crate) use_tsc: bool,
    pub(crate) pid: u64,
    /// OS thread id, 0 until first needed.
    pub(crate) tid: u64,
    /// The current chunk ([`NO_LEASE`] when none: nothing fits).
    pub(crate) lease: Lease,
    pub(crate) has_lease: bool,
    /// After failing to get a chunk: the ring epoch then (retry only once it changes).
    pub(crate) starved: Option<u64>,
    pub(crate) counters: Option<Arc<ThreadCounters>>,
    /// Name set with [`crate::set_thread_name`].
    pub(crate) name: Option<String>,
}

impl Writer {
    const fn new() -> Writer {
        Writer {
            gen: 0,
            shared: None,
            thread_bits: 0,
            inline_thread: true,
            crash_safe: false,
            slow: true,
            use_tsc: false,
            pid: 0,
            tid: 0,
            lease: NO_LEASE,
            has_lease: false,
            starved: None,
            counters: None,
            name: None,
        }
    }

    /// Counts `n` dropped records.
    #[inline]
    pub(crate) fn drop_records(&self, n: u64) {
        if let Some(c) = &self.counters {
            c.add_dropped(n);
        }
    }

    /// Gives back the current chunk, if any.
    fn release_lease(&mut self) {
        // The cursor points into the chunk given back (and, from `detach`
        // and `Drop`, into a session about to be let go): off first.
        invalidate_fast();
        if self.has_lease {
            if let Some(s) = &self.shared {
                s.ring.release(&self.lease);
            }
            self.has_lease = false;
            self.lease = NO_LEASE;
        }
    }

    /// Leaves the current session.
    pub(crate) fn detach(&mut self) {
        self.release_lease();
        self.shared = None;
        self.counters = None;
        self.gen = 0;
        self.starved = None;
    }

    /// In a forked child: forgets the session without touching it (no
    /// release of the chunk, whose bookkeeping belongs to the parent; the
    /// `Arc` is kept, not dropped, so no destructor runs here).
    fn forget_after_fork(&mut self) {
        invalidate_fast();
        self.gen = 0;
        self.has_lease = false;
        self.lease = NO_LEASE;
        self.starved = None;
    }

    /// Makes this writer write to the live session if it is the one of
    /// generation `gen`. Returns whether it does.
    #[cold]
    #[inline(never)]
    pub(crate) fn register(&mut self, gen: u32) -> bool {
        let Some(s) = session::current() else {
            return false;
        };
        if s.gen != gen {
            return false;
        }
        self.detach();
        if self.tid == 0 {
            self.tid = os_tid();
        }
        self.pid = s.pid;
        let name = match &self.name {
            Some(n) => n.clone(),
            None => std::thread::current()
                .name()
                .map(str::to_string)
                .unwrap_or_else(|| format!("thread-{}", self.tid)),
        };
        let index = s.durable.add_thread(s.pid, self.tid, &name);
        let counters = Arc::new(ThreadCounters::default());
        s.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(counters.clone());
        self.counters = Some(counters);
        self.thread_bits = index.map_or(0, |i| (i as u64) << 24);
        self.inline_thread = index.is_none();
        self.crash_safe = s.crash_safe;
        self.slow = self.inline_thread || self.crash_safe;
        self.use_tsc = s.clock.use_tsc;
        self.gen = s.gen;
        self.shared = Some(s);
        true
    }

    /// Gets room for a record of `words` words when the current chunk has
    /// none: releases it and acquires another. `None` (and the record
    /// counted as dropped) when no chunk is available or the record can
    /// never fit a chunk.
    #[cold]
    #[inline(never)]
    pub(crate) fn refill(&mut self, words: usize) -> Option<usize> {
        let shared = self.shared.clone()?;
        let ring = &shared.ring;
        if words > ring.chunk_words() {
            self.drop_records(1);
            return None;
        }
        self.release_lease();
        let epoch = ring.epoch();
        if self.starved == Some(epoch) {
            self.drop_records(1);
            return None;
        }
        match ring.acquire() {
            Some((lease, overwritten)) => {
                self.starved = None;
                if overwritten > 0 {
                    self.drop_records(overwritten);
                }
                self.lease = lease;
                self.has_lease = true;
                Some(lease.pos)
            }
            None => {
                self.starved = Some(epoch);
                self.drop_records(1);
                None
            }
        }
    }

    /// Where a record of `words` words goes: the current chunk if it fits,
    /// else a new one.
    #[inline(always)]
    pub(crate) fn reserve(&mut self, words: usize) -> Option<usize> {
        match self.lease.reserve(words) {
            Some(p) => Some(p),
            None => self.refill(words),
        }
    }

    /// Checks that this writer belongs to the site's session, registering
    /// it on its first event. `false`: drop the event (it belongs to a
    /// session that is over).
    #[inline(always)]
    pub(crate) fn ready(&mut self, site: Site) -> bool {
        self.gen == site.gen() || self.register(site.gen())
    }
}

impl Writer {
    /// The (process, thread) koids a record carries inline when this thread
    /// has no index in the thread table; `None` when it has one.
    #[inline]
    pub(crate) fn inline_koids(&self) -> Option<(u64, u64)> {
        self.inline_thread.then_some((self.pid, self.tid))
    }
}

impl Writer {
    /// Takes the chunk position and record count back from the fast
    /// cursor and turns the cursor off, so that the writer's lease is
    /// current and the closure of [`with_writer`] may change it. `false`
    /// (nothing changed): a fast write is in progress on this thread (this
    /// is a re-entrant call, from a signal handler); the event must be
    /// dropped.
    #[inline]
    fn sync_from_fast(&mut self) -> bool {
        FAST.with(|f| {
            let gen = f.gen.get();
            if gen == BUSY {
                return false;
            }
            if gen != 0 {
                // Exported by `export_fast` from this writer, which has not
                // changed its lease or session since (every such change
                // turns the cursor off first).
                debug_assert!(self.has_lease && self.gen == gen);
                // Off before reading the position, so that a signal
                // handler's event cannot slip in after the read.
                f.gen.set(0);
                compiler_fence(Ordering::SeqCst);
                let c = f.commit.get();
                self.lease.records = c >> 32;
                self.lease.pos = self.lease.base + (c & 0xffff_ffff) as usize;
                debug_assert!(self.lease.pos <= self.lease.end);
                debug_assert_eq!(self.lease.committed(), c);
            }
            true
        })
    }

    /// Turns the fast cursor on for the current lease, when the fast path
    /// may write it: a live lease of a registered, normal (not crash-safe)
    /// session, an indexed thread ref, not in a forked child. Called with
    /// the cursor off (after [`Writer::sync_from_fast`]).
    #[inline]
    fn export_fast(&self) {
        if self.gen == 0 || !self.has_lease || self.slow || session::forked() {
            return;
        }
        let Some(s) = &self.shared else {
            return;
        };
        let l = &self.lease;
        // The committed word holds the word count in 32 bits.
        if l.end - l.base > u32::MAX as usize {
            return;
        }
        let (pos, end, committed) = s.ring.raw_cursor(l);
        FAST.with(|f| {
            debug_assert_eq!(f.gen.get(), 0);
            f.pos.set(pos);
            f.end.set(end);
            f.committed.set(committed);
            f.commit.set(l.committed());
            f.thread_bits.set(self.thread_bits);
            f.use_tsc.set(self.use_tsc);
            // Last: the cursor is on once everything above is set.
            compiler_fence(Ordering::SeqCst);
            f.gen.set(self.gen);
        });
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Turns the fast cursor off before the session `Arc` goes: an event
        // emitted later (another thread local's destructor) takes the slow
        // path, finds no writer and is dropped.
        self.release_lease();
    }
}

thread_local! {
    static LOCAL: RefCell<Writer> = const { RefCell::new(Writer::new()) };
}

/// `Fast::gen` while a fast write is in progress: never a session
/// generation (those are at most `callsite::GEN_MASK`), and not 0.
const BUSY: u32 = u32::MAX;

/// The event fast path's cursor into the calling thread's chunk (see the
/// module docs for its invariant). Off when `gen` is 0.
pub(crate) struct Fast {
    /// Generation of the writer's session while on; 0 = off; [`BUSY`]
    /// while a fast write is in progress.
    gen: Cell<u32>,
    /// Next free word of the leased chunk.
    pos: Cell<*const AtomicU64>,
    /// One past the leased chunk's last word.
    end: Cell<*const AtomicU64>,
    /// The leased chunk's `committed` word.
    committed: Cell<*const AtomicU64>,
    /// The value last stored in `*committed` (records << 32 | words).
    commit: Cell<u64>,
    /// `thread ref << 24` (see [`Writer::thread_bits`]).
    thread_bits: Cell<u64>,
    use_tsc: Cell<bool>,
}

thread_local! {
    /// `const` and without a destructor: accessing it is one TLS address,
    /// with no registration or "destroyed" state, and it stays usable
    /// while (and after) the thread's other locals are destroyed.
    static FAST: Fast = const {
        Fast {
            gen: Cell::new(0),
            pos: Cell::new(core::ptr::null()),
            end: Cell::new(core::ptr::null()),
            committed: Cell::new(core::ptr::null()),
            commit: Cell::new(0),
            thread_bits: Cell::new(0),
            use_tsc: Cell::new(false),
        }
    };
}

/// Turns the calling thread's fast cursor off.
#[inline]
fn invalidate_fast() {
    FAST.with(|f| f.gen.set(0));
}

/// Room for one record of `words` words (at least 1) at the calling
/// thread's fast cursor, if it is on for session generation `gen` and the
/// record fits in the rest of the chunk. The caller stores the record into
/// [`FastRecord::slots`] (exactly `words` words) and calls
/// [`FastRecord::publish`], which publishes it like
/// [`crate::buffer::Ring::publish`]. `None`: nothing was reserved; take the
/// slow path ([`with_writer`]), which handles everything else (chunk
/// rollover, registration, crash-safe sessions).
///
/// Between this call and `publish` the caller must only store into the
/// slots (not emit events). The cursor is marked [`BUSY`] meanwhile, so a
/// re-entrant event (a signal handler) is dropped rather than written over
/// this one.
#[inline(always)]
pub(crate) fn fast_reserve(gen: u32, words: usize) -> Option<FastRecord> {
    // Not `FAST.with(|f| ...)` around the caller's encoding: out of line
    // (`LocalKey::with` is not always inlined) it would no longer be
    // specialized for the call site's arguments.
    let f: *const Fast = FAST.with(|f| f as *const Fast);
    // SAFETY: `FAST` is a `const`-initialized thread local without a
    // destructor, so its storage is valid, and never moved, for the whole
    // life of this thread; the reference only lives in the `FastRecord`,
    // which is neither `Send` nor `Sync` (raw pointer field), so it is
    // used on this thread only. `Fast` is only accessed through shared
    // references (its fields are `Cell`s).
    let f: &'static Fast = unsafe { &*f };
    // `gen` is a session generation (never 0 or BUSY): this checks the
    // cursor is on, for the session the event belongs to.
    if f.gen.get() != gen {
        return None;
    }
    let pos = f.pos.get();
    let end = f.end.get();
    debug_assert!(!pos.is_null() && pos <= end && words >= 1);
    // Free words left in the chunk (no pointer arithmetic yet).
    let room = (end as usize - pos as usize) / core::mem::size_of::<AtomicU64>();
    if words > room {
        return None;
    }
    // Mark the cursor in use, so that a re-entrant (signal handler) event
    // neither writes the same words nor lets `with_writer` change the
    // lease under us. The compiler fence keeps the marker before the
    // stores (a signal handler runs on this thread).
    f.gen.set(BUSY);
    compiler_fence(Ordering::SeqCst);
    Some(FastRecord { f, pos, words, gen })
}

/// A record reserved by [`fast_reserve`], to fill and publish.
pub(crate) struct FastRecord {
    f: &'static Fast,
    /// First word of the record, `words` words before the chunk's end at
    /// most.
    pos: *const AtomicU64,
    words: usize,
    gen: u32,
}

impl FastRecord {
    /// The record's words.
    #[inline(always)]
    pub(crate) fn slots(&self) -> &[AtomicU64] {
        // SAFETY: `fast_reserve` found the cursor on for `gen`, so by the
        // module's invariant this thread's writer holds the lease of the
        // chunk `pos` lies in and the `Arc` of the session owning the ring:
        // the memory is alive and no other thread writes these words (our
        // chunk, above its committed length). `words <= room` words from
        // `pos` lie inside the chunk. The writer cannot change its lease or
        // drop its session while the cursor is BUSY (`with_writer` refuses;
        // `release_lease` without `with_writer` (finish, fork) keeps the
        // `Arc`; `Drop` runs at thread exit, never during an event). The
        // words are atomics, only accessed through shared references.
        unsafe { core::slice::from_raw_parts(self.pos, self.words) }
    }

    /// The thread ref bits for the event header.
    #[inline(always)]
    pub(crate) fn thread_bits(&self) -> u64 {
        self.f.thread_bits.get()
    }

    /// Whether the session reads the TSC.
    #[inline(always)]
    pub(crate) fn use_tsc(&self) -> bool {
        self.f.use_tsc.get()
    }

    /// Publishes the record (the caller has stored all its words).
    #[inline(always)]
    pub(crate) fn publish(self) {
        let f = self.f;
        // SAFETY: `words <= room` (checked in `fast_reserve`): the result
        // is at most the chunk's end, inside or one past the ring's words.
        f.pos.set(unsafe { self.pos.add(self.words) });
        let c = f.commit.get() + committed_step(self.words);
        f.commit.set(c);
        // SAFETY: `committed` points to the leased chunk's `committed`
        // word in the ring, alive for the reasons given in `slots`; only
        // the lease's owner, this thread, stores it.
        let committed = unsafe { &*f.committed.get() };
        // Release pairs with the readers' Acquire load, exactly as in
        // `Ring::publish`, with the same value (`Lease::committed` after
        // the record: the chunk is under 2^32 words, see `export_fast`).
        committed.store(c, Ordering::Release);
        compiler_fence(Ordering::SeqCst);
        // Back on, unless something turned it off meanwhile.
        if f.gen.get() == BUSY {
            f.gen.set(self.gen);
        }
    }
}

/// Runs `f` with the calling thread's writer. When the thread-local state is
/// gone (thread exiting) or already borrowed, the event is dropped (and
/// counted against the session when possible).
#[inline(always)]
pub(crate) fn with_writer(site: Site, f: impl FnOnce(&mut Writer)) {
    let r = LOCAL.try_with(|cell| match cell.try_borrow_mut() {
        Ok(mut w) => {
            if !w.sync_from_fast() {
                return false;
            }
            f(&mut w);
            w.export_fast();
            true
        }
        Err(_) => false,
    });
    if !matches!(r, Ok(true)) {
        orphan_drop(site);
    }
}

#[cold]
#[inline(never)]
fn orphan_drop(site: Site) {
    // `current` takes a lock: not in a forked child (it returns `None`).
    if let Some(s) = session::current() {
        if s.gen == site.gen() {
            s.orphan_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The `fork` child handler's part (see `session`): the forking thread,
/// the only one in the child, forgets its session and chunk, so an event
/// it emits from a site obtained before the fork takes the registration
/// path, which refuses in a forked child. No lock is taken.
pub(crate) fn forget_after_fork() {
    // Unconditionally (even with the writer gone or borrowed): the cursor
    // must not point into the parent's buffer.
    invalidate_fast();
    let _ = LOCAL.try_with(|cell| {
        if let Ok(mut w) = cell.try_borrow_mut() {
            w.forget_after_fork();
        }
    });
}

/// Releases the calling thread's chunk of `shared` (used by the thread that
/// finishes a session).
pub(crate) fn detach_current(shared: &Arc<Shared>) {
    let _ = LOCAL.try_with(|cell| {
        if let Ok(mut w) = cell.try_borrow_mut() {
            if w.shared.as_ref().is_some_and(|s| Arc::ptr_eq(s, shared)) {
                w.release_lease();
            }
        }
    });
}

/// Names the calling thread in the trace: writes a kernel object record
/// now if the thread already recorded in the live session, and uses the
/// name for its registrations in later sessions.
pub fn set_thread_name(name: &str) {
    let _ = LOCAL.try_with(|cell| {
        if let Ok(mut w) = cell.try_borrow_mut() {
            w.name = Some(name.to_string());
            if session::forked() {
                return;
            }
            if let Some(s) = &w.shared {
                if session::current().is_some_and(|c| Arc::ptr_eq(&c, s)) {
                    s.durable.name_thread(w.pid, w.tid, name);
                }
            }
        }
    });
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! The fast cursor's lifetime: it is off whenever the writer lets go of
    //! its lease or session, in particular when the writer is destroyed at
    //! thread exit, before another thread local's destructor emits.

    use super::*;
    use crate::callsite::{Callsite, KeyCache};
    use crate::emit;
    use fxt_format::encode::header::event_type as ty;
    use fxt_format::encode::ArgValue;
    use std::sync::{Mutex, Weak};

    static KEYS: [KeyCache; 1] = [KeyCache::NEW];
    static SITE: Callsite = Callsite::new("fast-test", "late", &["v"], &KEYS);

    fn fast_gen() -> u32 {
        FAST.with(|f| f.gen.get())
    }

    /// What the late destructor saw.
    #[derive(Debug, Default, Clone, PartialEq)]
    struct Seen {
        ran: bool,
        writer_gone: bool,
        fast_off: bool,
        session_freed: bool,
    }

    static SEEN: Mutex<Option<Seen>> = Mutex::new(None);
    static WEAK: Mutex<Option<Weak<Shared>>> = Mutex::new(None);

    struct Late(Cell<Option<Site>>);

    impl Drop for Late {
        fn drop(&mut self) {
            let Some(site) = self.0.get() else { return };
            let seen = Seen {
                ran: true,
                writer_gone: LOCAL.try_with(|_| ()).is_err(),
                fast_off: fast_gen() == 0,
                session_freed: WEAK
                    .lock()
                    .unwrap()
                    .as_ref()
                    .is_some_and(|w| w.upgrade().is_none()),
            };
            *SEEN.lock().unwrap() = Some(seen);
            // Held sites (like a duration guard's): without the cursor
            // turned off, these would write into the freed ring.
            emit::event(site, ty::INSTANT, None, &[ArgValue::U64(1)]);
            emit::duration_complete(site, 0, &[ArgValue::U64(2)]);
        }
    }

    thread_local! {
        static LATE: Late = const { Late(Cell::new(None)) };
    }

    /// Runs a thread that registers `LATE` first (so it is destroyed after
    /// the writer), emits `n` events (through the fast path when `fast`),
    /// then waits for `between` to run on the main thread before exiting.
    fn run_thread(n: u64, fast: bool, between: impl FnOnce()) {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tx2, rx2) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            let site = SITE.site().expect("enabled");
            LATE.with(|l| l.0.set(Some(site)));
            for i in 0..n {
                emit::event(site, ty::INSTANT, None, &[ArgValue::U64(i)]);
            }
            let want = if fast { site.gen() } else { 0 };
            assert_eq!(fast_gen(), want, "the fast cursor is on iff {fast}");
            tx.send(()).unwrap();
            rx2.recv().unwrap();
        });
        rx.recv().unwrap();
        between();
        tx2.send(()).unwrap();
        h.join().unwrap();
    }

    #[test]
    fn fast_cursor_off_after_writer_destroyed() {
        let dir = std::env::temp_dir();
        // 1: the session is finished and dropped before the thread exits:
        // its memory is freed when the writer lets go of its `Arc`.
        let path = dir.join(format!("fxt-fast-{}-a.fxt", std::process::id()));
        // Small chunks: the events roll over several of them.
        let session =
            crate::start(crate::Config::new().output(&path).chunk_size(32 << 10)).unwrap();
        *WEAK.lock().unwrap() = session::current().map(|s| Arc::downgrade(&s));
        let mut stats = None;
        run_thread(5000, true, || stats = Some(session.finish().unwrap()));
        let stats = stats.unwrap();
        assert_eq!(stats.emitted_records_written, 5000, "{stats:?}");
        assert_eq!(stats.records_dropped, 0, "{stats:?}");
        let seen = SEEN.lock().unwrap().take().unwrap();
        assert_eq!(
            seen,
            Seen {
                ran: true,
                writer_gone: true,
                fast_off: true,
                session_freed: true
            }
        );
        let _ = std::fs::remove_file(&path);

        // 2: the session is live when the thread exits: the late events
        // are dropped and counted.
        let path = dir.join(format!("fxt-fast-{}-b.fxt", std::process::id()));
        let session = crate::start(crate::Config::new().output(&path)).unwrap();
        *WEAK.lock().unwrap() = None;
        run_thread(1000, true, || {});
        let stats = session.finish().unwrap();
        let seen = SEEN.lock().unwrap().take().unwrap();
        assert!(seen.ran && seen.writer_gone && seen.fast_off, "{seen:?}");
        assert_eq!(stats.emitted_records_written, 1000, "{stats:?}");
        assert_eq!(stats.records_dropped, 2, "{stats:?}");
        let _ = std::fs::remove_file(&path);

        // 3: a crash-safe session never turns the cursor on (its records
        // need the filler protocol).
        let path = dir.join(format!("fxt-fast-{}-c.fxt", std::process::id()));
        let session = crate::start(crate::Config::new().output(&path).crash_safe(true)).unwrap();
        run_thread(1000, false, || {});
        let stats = session.finish().unwrap();
        SEEN.lock().unwrap().take();
        assert_eq!(stats.emitted_records_written, 1000, "{stats:?}");
        assert_eq!(stats.records_dropped, 2, "{stats:?}");
        let _ = std::fs::remove_file(&path);
    }
}
