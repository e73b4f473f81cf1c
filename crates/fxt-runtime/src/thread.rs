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

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::buffer::Lease;
use crate::callsite::Site;
use crate::session::{self, Shared, ThreadCounters};

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

impl Drop for Writer {
    fn drop(&mut self) {
        self.release_lease();
    }
}

thread_local! {
    static LOCAL: RefCell<Writer> = const { RefCell::new(Writer::new()) };
}

/// Runs `f` with the calling thread's writer. When the thread-local state is
/// gone (thread exiting) or already borrowed, the event is dropped (and
/// counted against the session when possible).
#[inline(always)]
pub(crate) fn with_writer(site: Site, f: impl FnOnce(&mut Writer)) {
    let r = LOCAL.try_with(|cell| match cell.try_borrow_mut() {
        Ok(mut w) => {
            f(&mut w);
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
