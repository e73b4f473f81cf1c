//! The thread: each thread's writer (its session, its hold on a
//! chunk, its identity in the trace) and the thread-local [`Local`] the
//! event hot path writes through.
//!
//! Two thread locals:
//!
//! * [`Local`] (`const`, no destructor): the thread's [`Cursor`] into its
//!   leased chunk, with the bits the hot path needs besides (thread ref,
//!   clock). Accessing it is one TLS address, with no registration or
//!   "destroyed" state, and it stays usable while (and after) the thread's
//!   other locals are destroyed. The hot path uses it alone when the
//!   cursor's gate is open for the event's session.
//! * [`Writer`] (a `RefCell`, reached with `try_with` and
//!   `try_borrow_mut`, so an event emitted while thread-locals are being
//!   destroyed, or re-entrantly, is dropped instead of panicking): the slow
//!   path's state. A thread registers once per session, on its first
//!   event: a thread record (index 1..=255, beyond that inline thread refs)
//!   and a kernel object record naming it go into the durable region, and
//!   it keeps an `Arc` of the session, which it drops on its first event in
//!   a later session or when it exits (or abandons, when an allocation
//!   hook moves it to a later session: [`join_from_hook`]).
//!
//! # The gate
//!
//! The cursor's gate is open (token = session generation) only while this
//! thread's writer is registered in that session, holds a lease, and may
//! use the hot path (a normal session: not crash-safe, whose records need
//! the filler protocol; an indexed thread ref). It is opened only by
//! [`with_writer`] on its way out, and closed by every path that changes
//! or gives up the writer's lease or session: [`with_writer`] on its way in
//! (the slow path writes through the same cursor with the gate closed),
//! [`Hold::release`] (refill, detach, [`detach_current`] at finish, `Drop`
//! at thread exit), and the fork child handler ([`forget_after_fork`]).

pub(crate) mod capture;
mod identity;
mod join;

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) use join::{
    in_slow_path, join_current, join_from_hook, refill_from_hook, refill_from_signal,
};

use crate::callsite::{self, Site};
use crate::ring::{Cursor, Hold, Record, Refill, CLOSED};
use crate::sample;
use crate::state::{self, retired, Shared, ThreadCounters};

pub(crate) use identity::{koid, os_tid};

/// A thread's writer state (the slow path's; see the module docs).
pub(crate) struct Writer {
    /// Generation of `shared`; 0 = not registered.
    pub(crate) generation: u32,
    pub(crate) shared: Option<Arc<Shared>>,
    /// `thread ref << 24`, ready to OR into an event header (0 = inline).
    pub(crate) thread_bits: u64,
    pub(crate) inline_thread: bool,
    /// The session is crash-safe: records are stored with the filler
    /// protocol (`crate::memory::filler`).
    pub(crate) crash_safe: bool,
    pub(crate) use_tsc: bool,
    pub(crate) pid: u64,
    /// OS thread id, 0 until first needed.
    pub(crate) tid: u64,
    /// The lease the thread's cursor writes into.
    hold: Hold,
    counters: Option<Arc<ThreadCounters>>,
    /// Name set with [`set_thread_name`].
    name: Option<String>,
    /// The thread's CPU samples are armed for this session (its gate opens
    /// for them even when the hot path may not write; see `crate::sample`).
    sampled: bool,
    /// The session samples allocations: the thread's gate opens for them
    /// as for CPU samples, and its stack's bounds are known ([`capture`])
    /// (`crate::alloc`).
    alloc_sampled: bool,
    /// The session of this generation leased the thread a chunk from an
    /// allocation hook before its first event ([`join_from_hook`]): its
    /// gate opens for allocation records only; 0: none.
    alloc_only: u32,
}

impl Writer {
    const fn new() -> Writer {
        Writer {
            generation: 0,
            shared: None,
            thread_bits: 0,
            inline_thread: true,
            crash_safe: false,
            use_tsc: false,
            pid: 0,
            tid: 0,
            hold: Hold::new(),
            counters: None,
            name: None,
            sampled: false,
            alloc_sampled: false,
            alloc_only: 0,
        }
    }

    /// Counts `n` dropped records.
    #[inline]
    pub(crate) fn drop_records(&self, n: u64) {
        match (&self.counters, &self.shared) {
            (Some(c), _) => c.add_dropped(n),
            // Not registered yet ([`join_from_hook`]): the session's.
            (None, Some(s)) => {
                s.orphan_dropped.fetch_add(n, Ordering::Relaxed);
            }
            (None, None) => {}
        }
    }

    /// Gives back the current chunk, if any (closing the gate).
    fn release_lease(&mut self) {
        let cursor = &local().cursor;
        match &self.shared {
            Some(s) => self.hold.release(&s.buffers.ring, cursor),
            None => self.hold.forget(cursor),
        }
    }

    /// Leaves the current session.
    fn detach(&mut self) {
        if self.sampled {
            sample::disarm_thread();
            self.sampled = false;
        }
        self.release_lease();
        self.alloc_sampled = false;
        self.alloc_only = 0;
        self.hold = Hold::new();
        self.shared = None;
        self.counters = None;
        self.generation = 0;
    }

    /// For an allocation hook: leaves the session this writer holds, which
    /// is over, as [`Writer::detach`] does but without freeing anything
    /// or taking a lock: the chunk is given back (atomics), the reference
    /// to the session abandoned ([`retired`]: the next start or finish
    /// gives it back), and the CPU sampler left armed for that session
    /// (its disarming takes the sampler's lock and frees the alternate
    /// signal stack; its source was closed when the session stopped, and
    /// the thread's next registration, or its exit, disarms it).
    fn leave_from_hook(&mut self) {
        if let Some(old) = self.shared.take() {
            self.hold.release(&old.buffers.ring, &local().cursor);
            // Not the last reference: the session's thread list holds
            // one as long as it lives, and `old` keeps it alive.
            self.counters = None;
            retired::abandon(old);
        }
        self.hold = Hold::new();
        self.alloc_sampled = false;
        self.alloc_only = 0;
        self.generation = 0;
    }

    /// Makes this writer write to the live session if it is the one of
    /// `generation`. Returns whether it does.
    #[cold]
    #[inline(never)]
    fn register(&mut self, generation: u32) -> bool {
        let live = state::current().filter(|s| s.generation == generation);
        let Some(s) = live else {
            // The event's session is over.
            state::control::LATE.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        self.detach();
        if self.tid == 0 {
            self.tid = os_tid();
        }
        self.pid = s.settings.pid;
        let name = match &self.name {
            Some(n) => n.clone(),
            None => std::thread::current()
                .name()
                .map(str::to_string)
                .unwrap_or_else(|| format!("thread-{}", self.tid)),
        };
        let index = s
            .buffers
            .durable
            .add_thread(s.settings.pid, self.tid, &name);
        self.counters = Some(s.add_thread());
        self.thread_bits = index.map_or(0, |i| (i as u64) << 24);
        self.inline_thread = index.is_none();
        self.crash_safe = s.settings.crash_safe;
        self.use_tsc = s.clock.use_tsc;
        self.generation = s.generation;
        let hz = s.settings.sample_hz;
        if hz > 0 && !state::forked() {
            let kind = sample::arm_thread(
                &local().cursor,
                self.tid,
                self.generation,
                hz,
                refill_from_signal,
            );
            self.sampled = kind.is_some();
            if let Some(kind) = kind {
                s.sampled_threads[source_index(kind)].fetch_add(1, Ordering::Relaxed);
            }
        }
        if s.settings.alloc_sample_bytes > 0 && !state::forked() {
            capture::prepare();
            self.alloc_sampled = true;
        }
        self.shared = Some(s);
        true
    }

    /// Checks that this writer belongs to the site's session, registering
    /// it on its first event. `false`: drop the event (it belongs to a
    /// session that is over).
    #[inline(always)]
    pub(crate) fn ready(&mut self, site: Site) -> bool {
        self.generation == site.generation() || self.register(site.generation())
    }

    /// Room for a record of `words` words: the rest of the current chunk,
    /// else a new chunk. `None` (and the record counted as dropped) when no
    /// chunk is available or the record can never fit one.
    #[inline]
    pub(crate) fn reserve(&mut self, words: usize) -> Option<Record<'static>> {
        let cursor = &local().cursor;
        if let Some(r) = cursor.reserve(CLOSED, words) {
            return Some(r);
        }
        self.refill(cursor, words)?;
        cursor.reserve(CLOSED, words)
    }

    #[cold]
    #[inline(never)]
    fn refill(&mut self, cursor: &Cursor, words: usize) -> Option<()> {
        let Some(shared) = &self.shared else {
            return None;
        };
        // SAFETY: this writer holds `shared` (and so the ring) until it
        // releases the hold: `detach` and `Drop` release it before letting
        // the `Arc` go; `cursor` is this thread's, the one every refill of
        // this hold attached.
        let refilled = unsafe { self.hold.refill(&shared.buffers.ring, cursor, words) };
        // A streamer in a long wait is woken by the first chunk a burst
        // takes, so that it writes the burst out from its first chunks
        // with the whole ring ahead of the writers (one load while it is
        // not waiting long).
        let ring = &shared.buffers.ring;
        shared.helpers.stream_wake.wake_if(|| ring.is_drained());
        match refilled {
            Refill::Ready { overwritten } => {
                if overwritten > 0 {
                    self.drop_records(overwritten);
                }
                Some(())
            }
            Refill::NoChunk | Refill::TooLarge => {
                self.drop_records(1);
                None
            }
        }
    }

    /// The (process, thread) koids a record carries inline when this thread
    /// has no index in the thread table; `None` when it has one.
    #[inline]
    pub(crate) fn inline_koids(&self) -> Option<(u64, u64)> {
        self.inline_thread.then_some((self.pid, self.tid))
    }

    /// Opens the gate for the hot path when it may write through the
    /// cursor (see the module docs). Called with the gate closed.
    #[inline]
    fn open_gate(&self, local: &Local) {
        if !self.hold.has_lease() || state::forked() {
            return;
        }
        if self.generation == 0 {
            if self.alloc_only != 0 {
                local
                    .cursor
                    .set_token(sample::sample_token(self.alloc_only));
            }
            return;
        }
        if self.inline_thread || self.crash_safe {
            if self.sampled || self.alloc_sampled {
                local
                    .cursor
                    .set_token(sample::sample_token(self.generation));
            }
            return;
        }
        let token = callsite::gate_token(self.generation);
        local.header_xor.set(self.thread_bits ^ token as u64);
        local.use_tsc.set(self.use_tsc);
        local.cursor.set_token(token);
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closes the gate before the session `Arc` goes: an event emitted
        // later (another thread local's destructor) takes the slow path,
        // finds no writer and is dropped.
        if self.sampled {
            sample::disarm_thread();
        }
        self.release_lease();
    }
}

/// What the event hot path reads: the thread's cursor, its thread ref
/// bits and clock choice (valid while the cursor's gate is open).
#[derive(Debug)]
pub(crate) struct Local {
    pub(crate) cursor: Cursor,
    /// `thread ref << 24` (see [`Writer::thread_bits`]) XOR the gate's
    /// token (see [`Local::header_base`]).
    header_xor: Cell<u64>,
    use_tsc: Cell<bool>,
    /// The last duration start taken on this thread ([`Local::duration_start`]).
    last_start: Cell<u64>,
}

impl Local {
    /// A duration's start time on this thread: `now`, or `step` ticks after
    /// the previous start taken here when that is later, so that nested
    /// durations (whose starts are taken outer first) begin on distinct
    /// nanoseconds even for a reader that truncates ticks to nanoseconds
    /// and keeps equal timestamps in file order — where the inner complete
    /// record, written first, would otherwise look like a partial overlap
    /// and its parent be dropped (Perfetto). A start is moved by less than
    /// `step` (one nanosecond), and only when two starts are that close.
    #[inline(always)]
    pub(crate) fn duration_start(&self, now: u64, step: u64) -> u64 {
        /// Further behind the last start than this, `now` comes from
        /// another clock or session: taken as it is.
        const FAR: i64 = 1 << 20;
        let last = self.last_start.get();
        // How far `now` is past the last start (negative: behind it, which
        // earlier bumps can cause by a few steps).
        let ahead = now.wrapping_sub(last) as i64;
        let start = if ahead >= step as i64 || ahead < -FAR {
            now
        } else {
            last.wrapping_add(step)
        };
        self.last_start.set(start);
        start
    }

    /// The upper half and thread ref bits of the header of an event of
    /// `site`, once the gate let the site's token through: the site's word
    /// with its lower half (equal to the gate's token) swapped for the
    /// thread ref bits, in one XOR.
    #[inline(always)]
    pub(crate) fn header_base(&self, site: Site) -> u64 {
        site.word ^ self.header_xor.get()
    }

    /// Whether the session reads the TSC.
    #[inline(always)]
    pub(crate) fn use_tsc(&self) -> bool {
        self.use_tsc.get()
    }
}

thread_local! {
    static WRITER: RefCell<Writer> = const { RefCell::new(Writer::new()) };

    /// `const` and without a destructor (see the module docs).
    static LOCAL: Local = const {
        Local {
            cursor: Cursor::new(),
            header_xor: Cell::new(0),
            use_tsc: Cell::new(false),
            last_start: Cell::new(0),
        }
    };
}

/// The calling thread's [`Local`].
#[inline(always)]
pub(crate) fn local() -> &'static Local {
    // Not `LOCAL.with(|l| ...)` around the caller's encoding: out of line
    // (`LocalKey::with` is not always inlined) it would no longer be
    // specialized for the call site's arguments.
    let l: *const Local = LOCAL.with(|l| l as *const Local);
    // SAFETY: `LOCAL` is a `const`-initialized thread local without a
    // destructor, so its storage is valid, and never moved, for the whole
    // life of this thread. `Local` is neither `Send` nor `Sync` (its
    // `Cell`s and the cursor's raw pointers), so the reference cannot
    // leave this thread; it is only used through shared references.
    unsafe { &*l }
}

/// Runs `f` with the calling thread's writer, the cursor's gate
/// closed (so `f` writes through [`Writer::reserve`]). When a record is in
/// progress on this thread (a signal handler interrupted it), the
/// thread-local state is gone (thread exiting) or already borrowed, the
/// event is dropped (and counted against the session when possible).
#[inline(always)]
pub(crate) fn with_writer(site: Site, f: impl FnOnce(&mut Writer)) {
    let local = local();
    let done = !local.cursor.busy()
        && WRITER
            .try_with(|cell| match cell.try_borrow_mut() {
                Ok(mut w) => {
                    local.cursor.set_token(CLOSED);
                    f(&mut w);
                    w.open_gate(local);
                    true
                }
                Err(_) => false,
            })
            .unwrap_or(false);
    if !done {
        orphan_drop(site);
    }
}

#[cold]
#[inline(never)]
fn orphan_drop(site: Site) {
    // `current` takes a lock: not in a forked child (it returns `None`).
    match state::current() {
        Some(s) if s.generation == site.generation() => {
            s.orphan_dropped.fetch_add(1, Ordering::Relaxed);
        }
        _ if !state::forked() => {
            state::control::LATE.fetch_add(1, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// The `fork` child handler's part (see `crate::session`): the forking
/// thread, the only one in the child, forgets its session and chunk, so an
/// event it emits from a site obtained before the fork takes the
/// registration path, which refuses in a forked child. No lock is taken.
pub(crate) fn forget_after_fork() {
    let cursor = &local().cursor;
    if cursor.busy() {
        // `fork` from a signal handler that interrupted a record: the
        // record completes when the handler returns, through the cursor's
        // pointers into the child's private copy of the buffer, and then
        // reopens the gate (`Record::publish`). Leave the cursor as it is;
        // with the generation reset below, the slow path refuses once the
        // chunk is full.
    } else {
        // Even with the writer gone or borrowed: the cursor must not point
        // into the parent's buffer.
        cursor.forget();
    }
    let _ = WRITER.try_with(|cell| {
        if let Ok(mut w) = cell.try_borrow_mut() {
            if !cursor.busy() {
                w.hold.forget(cursor);
            }
            w.generation = 0;
            w.alloc_only = 0;
        }
    });
}

/// Releases the calling thread's chunk of `shared` (used by the thread that
/// finishes a session).
pub(crate) fn detach_current(shared: &Arc<Shared>) {
    if local().cursor.busy() {
        // Finishing from a signal handler that interrupted a record: keep
        // the lease (the collector reads what was published).
        return;
    }
    let _ = WRITER.try_with(|cell| {
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
    let _ = WRITER.try_with(|cell| {
        if let Ok(mut w) = cell.try_borrow_mut() {
            w.name = Some(name.to_string());
            if state::forked() {
                return;
            }
            if let Some(s) = &w.shared {
                if state::current().is_some_and(|c| Arc::ptr_eq(&c, s)) {
                    s.buffers.durable.name_thread(w.pid, w.tid, name);
                }
            }
        }
    });
}

/// The index of a sampling source in `Shared::sampled_threads`.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn source_index(kind: sample::SourceKind) -> usize {
    usize::from(kind == sample::SourceKind::CpuTimer)
}

/// No source arms a thread here (the sampler is off).
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn source_index(_: ()) -> usize {
    0
}

#[cfg(test)]
pub(crate) mod tests {
    //! The gate's lifetime: it is closed whenever the writer lets go of its
    //! lease or session, in particular when the writer is destroyed at
    //! thread exit, before another thread local's destructor emits.

    use super::*;
    use crate::callsite::{Callsite, KeyCache};
    use crate::emit;
    use fxt_format::encode::header::event_type as ty;
    use fxt_format::encode::ArgValue;
    use std::sync::{Mutex, Weak};

    static KEYS: [KeyCache; 1] = [KeyCache::NEW];
    static SITE: Callsite = Callsite::new("fast-test", "late", &["v"], &KEYS);

    fn gate() -> u32 {
        local().cursor.token()
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
                writer_gone: WRITER.try_with(|_| ()).is_err(),
                fast_off: gate() == CLOSED,
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
            let want = if fast { site.token() } else { CLOSED };
            assert_eq!(gate(), want, "the gate is open iff {fast}");
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
        let _g = sessions();
        let dir = std::env::temp_dir();
        // 1: the session is finished and dropped before the thread exits:
        // its memory is freed when the writer lets go of its `Arc`.
        let path = dir.join(format!("fxt-fast-{}-a.fxt", std::process::id()));
        // Small chunks: the events roll over several of them.
        let session =
            crate::start(crate::Config::new().output(&path).chunk_size(32 << 10)).unwrap();
        *WEAK.lock().unwrap() = state::current().map(|s| Arc::downgrade(&s));
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

    /// One session at a time among the crate's tests that start one (they
    /// run in parallel).
    pub(crate) fn sessions() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Nested durations begin on distinct nanoseconds for a reader that
    /// truncates ticks to nanoseconds, however close the clock readings.
    #[test]
    fn duration_starts_land_on_distinct_nanoseconds() {
        let tps: u128 = 2_600_000_000;
        let ns = |t: u64| t as u128 * 1_000_000_000 / tps;
        let step = 3; // ceil(2.6 ticks per ns)
        let l = local();
        let starts = [
            l.duration_start(1_000_000, step),
            l.duration_start(1_000_000, step),
            l.duration_start(1_000_001, step),
            l.duration_start(1_000_002, step),
        ];
        for w in starts.windows(2) {
            assert!(ns(w[1]) > ns(w[0]), "{starts:?}");
        }
        // Starts a step apart or more are untouched.
        assert_eq!(l.duration_start(2_000_000, step), 2_000_000);
        assert_eq!(l.duration_start(2_000_003, step), 2_000_003);
        // A reading far behind (another clock or session) is taken as is.
        assert_eq!(l.duration_start(10, step), 10);
    }

    /// What the thread of [`a_hook_leaves_an_earlier_session_unfreed`]
    /// is told to do.
    enum Step {
        /// Emit an event (registering in the live session).
        Event,
        /// Join the session of this generation as an allocation hook does.
        Hook(u32),
    }

    /// A thread whose writer holds a session that is over joins the live
    /// one from an allocation hook: its gate opens for allocation records,
    /// and the session it held is not freed there (the hook may not free)
    /// but by the next finish, while the thread goes on in the live one
    /// (and leaves it in turn, joined from its hook, for the next).
    #[test]
    fn a_hook_leaves_an_earlier_session_unfreed() {
        let _g = sessions();
        let dir = std::env::temp_dir();
        let path = |n: u32| dir.join(format!("fxt-rejoin-{}-{n}.fxt", std::process::id()));
        let start = |n: u32| {
            let config = crate::Config::new().output(path(n));
            let session = crate::start(config.alloc_sample_bytes(1 << 30)).unwrap();
            let live = state::current().unwrap();
            (session, live.generation, Arc::downgrade(&live))
        };
        let (steps, step_rx) = std::sync::mpsc::channel::<Step>();
        let (done_tx, done) = std::sync::mpsc::channel::<(bool, u32)>();
        let thread = std::thread::spawn(move || {
            for step in step_rx {
                let joined = match step {
                    Step::Event => {
                        let site = SITE.site().expect("enabled");
                        emit::event(site, ty::INSTANT, None, &[ArgValue::U64(0)]);
                        true
                    }
                    Step::Hook(generation) => join_from_hook(generation),
                };
                done_tx.send((joined, gate())).unwrap();
            }
        });
        let step = |s: Step| {
            steps.send(s).unwrap();
            done.recv().unwrap()
        };

        let (session, _, first) = start(1);
        step(Step::Event);
        session.finish().unwrap();
        assert!(
            first.upgrade().is_some(),
            "the thread holds the first session"
        );

        let (session, generation, second) = start(2);
        let (joined, token) = step(Step::Hook(generation));
        assert!(joined, "the hook joins the live session");
        assert_eq!(token, sample::sample_token(generation));
        assert!(first.upgrade().is_some(), "not freed by the hook");
        assert_eq!(step(Step::Hook(generation)), (false, token), "joined once");
        session.finish().unwrap();
        assert!(first.upgrade().is_none(), "freed by the next finish");
        assert!(second.upgrade().is_some(), "the thread holds the second");

        let (session, generation, _) = start(3);
        let (joined, token) = step(Step::Hook(generation));
        assert!(joined && token == sample::sample_token(generation));
        session.finish().unwrap();
        assert!(second.upgrade().is_none(), "freed by the next finish");

        drop(steps);
        thread.join().unwrap();
        for n in 1..=3 {
            let _ = std::fs::remove_file(path(n));
        }
    }

    /// The step is at least the calibrated ticks per nanosecond.
    #[test]
    fn start_step_bounds_the_calibrated_rate() {
        let _g = sessions();
        let path = std::env::temp_dir().join(format!("fxt-step-{}.fxt", std::process::id()));
        let session = crate::start(crate::Config::new().output(&path)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        let step = crate::clock::start_step();
        let stats = session.finish().unwrap();
        let _ = std::fs::remove_file(&path);
        let per_ns = stats.ticks_per_second as f64 / 1e9;
        assert!(
            step as f64 >= per_ns && (step as f64) < per_ns + 1.5,
            "step {step} for {per_ns} ticks per ns"
        );
    }
}
