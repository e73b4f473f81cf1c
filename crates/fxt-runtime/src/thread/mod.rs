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

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;
use std::sync::Arc;

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
        match unsafe { self.hold.refill(&shared.buffers.ring, cursor, words) } {
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

/// For a signal handler (a CPU sample) whose record found the gate open but
/// no room in the chunk: attaches the cursor to a fresh chunk, if the
/// interrupted code is not using the writer (then `false`, as when no chunk
/// is available; the caller counts its record as dropped). Lock-free and
/// allocation-free: the ring's release and its handler acquire are atomics
/// only (a chunk a crash-safe file does not cover yet is refused, never
/// grown into), and the writer's thread local is initialized (the thread
/// registered).
pub(crate) fn refill_from_signal(words: usize) -> bool {
    refill_outside_writer(words, true)
}

/// For an allocation hook whose record found the gate open but no room in
/// the chunk: as [`refill_from_signal`], but in a normal context, so the
/// chunk may be one a crash-safe file does not cover yet (the file grows:
/// the ring's grow lock and a `pwrite`, which no holder of on this thread
/// can be interrupted by the hook: this thread takes them only with its
/// writer borrowed, and the writer is refused then) and it is faulted in
/// with one call. The hook's own allocations meanwhile pass through
/// unsampled (its re-entrancy guard).
pub(crate) fn refill_from_hook(words: usize) -> bool {
    refill_outside_writer(words, false)
}

fn refill_outside_writer(words: usize, handler: bool) -> bool {
    let local = local();
    WRITER
        .try_with(|cell| {
            let Ok(mut w) = cell.try_borrow_mut() else {
                return false;
            };
            let Some(shared) = w.shared.clone() else {
                return false;
            };
            local.cursor.set_token(CLOSED);
            // SAFETY: as in `Writer::refill`. The handler's variant: a
            // crash-safe file is never grown here (the sample is dropped
            // and counted instead).
            let refill = unsafe {
                if handler {
                    w.hold
                        .refill_in_handler(&shared.buffers.ring, &local.cursor, words)
                } else {
                    w.hold.refill(&shared.buffers.ring, &local.cursor, words)
                }
            };
            let ready = match refill {
                Refill::Ready { overwritten } => {
                    if overwritten > 0 {
                        w.drop_records(overwritten);
                    }
                    true
                }
                Refill::NoChunk | Refill::TooLarge => false,
            };
            w.open_gate(local);
            ready
        })
        .unwrap_or(false)
}

/// Registers the calling thread in the live session of `generation` and
/// leases it a chunk, as its first record would: the thread that starts a
/// sampling session is sampled from the start (other threads from their
/// first record).
pub(crate) fn join_current(generation: u32) {
    let local = local();
    if local.cursor.busy() {
        return;
    }
    let _ = WRITER.try_with(|cell| {
        let Ok(mut w) = cell.try_borrow_mut() else {
            return;
        };
        local.cursor.set_token(CLOSED);
        if (w.generation == generation || w.register(generation)) && !w.hold.has_lease() {
            if let Some(shared) = w.shared.clone() {
                // SAFETY: as in `Writer::refill`: the writer holds `shared`
                // until it releases the hold; the cursor is this thread's.
                let _ = unsafe { w.hold.refill(&shared.buffers.ring, &local.cursor, 1) };
            }
        }
        w.open_gate(local);
    });
}

/// Whether fxt's slow path runs on this thread now (its writer is
/// borrowed): an allocation made now is fxt's own (registering the
/// thread, starting or finishing a session), as its helper threads' are.
/// `false` once the writer is gone (thread exit).
pub(crate) fn in_slow_path() -> bool {
    WRITER
        .try_with(|cell| cell.try_borrow_mut().is_err())
        .unwrap_or(false)
}

/// For an allocation hook on a thread that has not recorded in the live
/// session of `generation` yet (no event so far): leases the thread a
/// chunk of the session so that its sampled allocations are written, and
/// opens its gate for them; the thread registers fully (thread record,
/// name, counters) on its first event, as any thread. Whether the gate is
/// open now.
///
/// A thread whose writer still holds an earlier session (it recorded in
/// it, or joined it from its hook, and has had no event since) leaves it
/// first ([`Writer::leave_from_hook`]).
///
/// Safe where the hook runs: it takes no lock it could wait for (the
/// control state is only tried, the writer only borrowed if free: a
/// thread interrupted in either, or in the ring's grow lock, which it
/// takes only with its writer borrowed, is refused) and allocates or
/// frees nothing (an earlier session's reference is abandoned, not
/// dropped).
pub(crate) fn join_from_hook(generation: u32) -> bool {
    let local = local();
    if local.cursor.busy() || state::forked() {
        return false;
    }
    WRITER
        .try_with(|cell| {
            let Ok(mut w) = cell.try_borrow_mut() else {
                return false;
            };
            // In the session already: its gate is shut for another reason
            // (no chunk to be had, a crash-safe session's inline thread).
            if w.generation == generation || w.alloc_only == generation {
                return false;
            }
            let Some(s) = state::try_current(generation) else {
                return false;
            };
            // The session the writer holds is not the live one (`s`): it
            // is over, and was listed as stopped before `s` started.
            w.leave_from_hook();
            if w.tid == 0 {
                w.tid = os_tid();
            }
            w.pid = s.settings.pid;
            w.crash_safe = s.settings.crash_safe;
            w.use_tsc = s.clock.use_tsc;
            w.inline_thread = true;
            w.thread_bits = 0;
            let ring = &s.buffers.ring;
            // SAFETY: as in `Writer::refill`: the writer holds `s` (below)
            // until it releases the hold; the cursor is this thread's.
            let refill = unsafe { w.hold.refill(ring, &local.cursor, 1) };
            w.shared = Some(s);
            if let Refill::Ready { overwritten } = refill {
                if overwritten > 0 {
                    w.drop_records(overwritten);
                }
            }
            // The generation stays 0: the thread's first event registers
            // it (and lets this lease go first).
            w.alloc_only = generation;
            w.open_gate(local);
            w.hold.has_lease()
        })
        .unwrap_or(false)
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
pub(crate) mod tests;
