//! What every lock adds to `parking_lot`'s: the bookkeeping of its
//! contended acquisitions and the records they write.
//!
//! # Cost
//!
//! Locking tries `parking_lot`'s fast path first; only when that fails
//! does the waiter come here ([`Tracked::wait`]). Unlocking adds one
//! relaxed load and a branch ([`Tracked::unlock`]: "is anyone waiting, or
//! a record of this lock left to write?"). Nothing else runs, and nothing
//! is recorded, while a lock is uncontended.
//!
//! # An episode of contention
//!
//! A waiter whose first try failed checks the category `lock` (one call
//! site, [`GATE`]); off, it just waits. On, it counts itself in
//! `state`'s waiters for the time it waits and, if it is the first, notes
//! when the episode began (`since`, with the session's `generation`). The
//! holder that releases the lock while someone waits records, on its own
//! thread, the slice from `since` to its release (the part of its hold
//! during which someone waited) and a flow begin with a fresh id, which it
//! leaves in `handoff` for the thread that acquires next; it then moves
//! `since` to its release (whoever holds next is waited on from there). A
//! waiter that acquires takes `handoff` and records its wait slice, from
//! its first try to the acquisition, with the flow's end inside it, so a
//! viewer draws the arrow from the release to the acquisition.
//!
//! Every record is checked against the generation of the session it began
//! in: a wait or an episode that began before a session (or in an earlier
//! one) records nothing in it. A thread that took the lock without waiting
//! (its first try won) leaves `handoff` for a waiter: the waiter's arrow
//! then starts at the latest release that saw it waiting.
//!
//! # Records are written outside the critical section
//!
//! Inside, only clock reads and atomics run; the records are written once
//! the thread no longer holds the lock, so a hold (and the waits behind
//! it) does not grow by the cost of writing them, and writing a record
//! may allocate or take locks (registering a thread, a call site) even
//! when the lock is the one a global allocator takes. A release captures
//! its `held` slice and flow begin before the raw unlock and writes them
//! after it. A waiter captures its wait slice and flow end when it
//! acquires and keeps them in a few thread-local slots until it releases
//! that lock (a `bump` or a condition variable's wait, which take the lock
//! back at once, leave theirs there too); a thread-local count says the
//! thread has such records, so that its unlocks take the slow path. A
//! thread with every slot taken (several contended locks held at once)
//! writes at once, inside. A kept wait is written only if its session is
//! still on at the unlock, and is lost if the thread never unlocks (a
//! forgotten guard, a thread that exits holding the lock). While a thread
//! writes records (or checks the category), the locks it takes are not
//! tracked ([`BUSY`]), so writing never waits on itself.
//!
//! Inside a critical section, an exclusive owner's bookkeeping of a
//! contended handoff is one clock read and one locked instruction when it
//! acquires (leaving the waiters' count) and one clock read and plain
//! loads and stores when it releases: every locked instruction there
//! lengthens the hold that the next waiter waits on.
//!
//! # Fork
//!
//! In the child of a process with a session, the category is off for
//! good. Between a raw acquisition and its raw unlock the bookkeeping
//! takes no lock (only atomics and thread locals), so a forked child
//! cannot inherit one of its locks held.

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

use fxt_format::encode::header::event_type as ty;
use fxt_format::encode::{ArgValue, StringRef};

use super::name::{self, Name, CATEGORY};
use crate::emit;
use crate::macro_support::{self as ms, Callsite, KeyCache};

static GATE_KEYS: [KeyCache; 0] = [];
/// The category switch of every lock: one call site whose category is
/// [`CATEGORY`].
static GATE: Callsite = Callsite::new(CATEGORY, "lock", &[], &GATE_KEYS);

/// How many records a thread keeps for after its unlocks.
const SLOTS: usize = 4;

thread_local! {
    /// When this thread's latest lock slice ends (as recorded), so that
    /// its next `held` slice starts no earlier: a thread's slices nest.
    static LAST_END: Cell<u64> = const { Cell::new(0) };
    /// Set while this thread checks the category or writes lock records:
    /// the locks it takes meanwhile (the writing's own, or an allocator's)
    /// are taken untracked, so the bookkeeping never re-enters itself.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    /// The flow id of this thread's latest release to waiters: a waiter
    /// that finds it in `handoff` took the lock back before anyone else
    /// waited through a release, and gets no arrow (not one to itself).
    static OWN_FLOW: Cell<u64> = const { Cell::new(0) };
    /// Records captured while this thread held a lock, written after its
    /// unlock (`const`, without a destructor: no allocation to set up).
    static SLOT: [Cell<Capture>; SLOTS] = const { [const { Cell::new(Capture::EMPTY) }; SLOTS] };
    /// How many of [`SLOT`] are taken: a thread that keeps records takes
    /// the slow path of its unlocks. Thread-local, not a count in the
    /// lock: a waiter's acquisition then adds no atomic operation inside
    /// its critical section.
    static KEPT: Cell<u32> = const { Cell::new(0) };
}

/// How a lock was (or was to be) taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Exclusive,
    Shared,
    Upgradable,
}

impl Mode {
    /// The mode's argument value: its index in [`VALUES`].
    fn value(self) -> usize {
        match self {
            Mode::Exclusive => 0,
            Mode::Shared => 1,
            Mode::Upgradable => 2,
        }
    }
}

/// The other argument values' indices in [`VALUES`].
const WAIT: usize = 3;
const TIMED_OUT: usize = 4;
const HELD: usize = 5;

static NO_KEYS: [KeyCache; 0] = [];
/// The argument values, each the name of a call site so that the session
/// interns it: an indexed string keeps a lock's records on the emit fast
/// path (an inline one takes the general encoder).
static VALUES: [Callsite; 6] = [
    Callsite::new(CATEGORY, "exclusive", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "shared", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "upgradable", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "wait", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "timed out", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "held", &[], &NO_KEYS),
];

/// The argument value `VALUES[which]` in the session of `generation`: its
/// string's index there, else inline.
fn value(which: usize, generation: u32) -> ArgValue<'static> {
    let value = &VALUES[which];
    let indexed = value
        .site()
        .filter(|s| s.generation() == generation && !s.has_inline());
    ArgValue::Str(match indexed {
        Some(s) => StringRef::Index(s.name_ref()),
        None => StringRef::Inline(value.name()),
    })
}

/// How many flow ids a thread takes from the process's counter at once.
const FLOW_IDS: u64 = 1024;

thread_local! {
    /// This thread's next flow id and the end of its block of ids.
    static FLOW_BLOCK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A process-unique flow id from this thread's block: a shared counter
/// taken at every release would be one more line the threads fight over.
fn flow_id() -> u64 {
    let (next, end) = FLOW_BLOCK.get();
    let (next, end) = match next < end {
        true => (next, end),
        false => {
            let first = emit::next_async_ids(FLOW_IDS);
            (first, first + FLOW_IDS)
        }
    };
    FLOW_BLOCK.set((next + 1, end));
    next
}

/// What a captured record is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A free slot.
    Empty,
    /// A wait slice (state `wait`, or `timed out`) with the flow's end.
    Wait { acquired: bool },
    /// A `held` slice with the flow's begin.
    Held,
}

/// A lock record whose times were taken inside the critical section, to
/// write outside it.
#[derive(Clone, Copy)]
struct Capture {
    kind: Kind,
    /// The lock's address and name: which unlock writes it (the address is
    /// never dereferenced).
    lock: usize,
    name: Name,
    mode: Mode,
    /// The session the record began in.
    generation: u32,
    start: u64,
    /// The acquisition (a wait) or the release (a hold): the flow's time.
    /// The slice ends a tick later, so that the flow lies inside it.
    at: u64,
    /// The flow id (0: none).
    flow: u64,
}

impl Capture {
    const EMPTY: Capture = Capture {
        kind: Kind::Empty,
        lock: 0,
        name: Name::Unnamed,
        mode: Mode::Exclusive,
        generation: 0,
        start: 0,
        at: 0,
        flow: 0,
    };
}

/// Runs `f` with [`BUSY`] set.
fn busy<R>(f: impl FnOnce() -> R) -> R {
    BUSY.set(true);
    let r = f();
    BUSY.set(false);
    r
}

/// The bookkeeping of one lock.
pub(crate) struct Tracked {
    name: Name,
    /// Threads waiting, counted while the category was on. Read, Relaxed,
    /// by every unlock: a hint (a waiter counted just after the load is
    /// missed, and its wait then has no arrow), never a proof.
    state: AtomicU32,
    /// When the part of the current hold during which someone waits began
    /// (0: unknown).
    since: AtomicU64,
    /// The flow id of the latest release that saw waiters (0: none).
    /// Stored before the raw unlock and taken after the raw lock: the raw
    /// lock's release and acquire order it, so Relaxed.
    handoff: AtomicU64,
    /// The session `since` was noted in.
    generation: AtomicU32,
    site: OnceLock<&'static Callsite>,
}

impl core::fmt::Debug for Tracked {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tracked")
            .field("name", &self.name)
            .field("waiters", &self.state.load(Ordering::Relaxed))
            .finish()
    }
}

impl Tracked {
    pub(crate) const fn new(name: Name) -> Tracked {
        Tracked {
            name,
            state: AtomicU32::new(0),
            since: AtomicU64::new(0),
            handoff: AtomicU64::new(0),
            generation: AtomicU32::new(0),
            site: OnceLock::new(),
        }
    }

    pub(crate) fn name(&self) -> Name {
        self.name
    }

    /// The lock's call site (looked up once per lock). Called only while
    /// [`BUSY`]: building it allocates and takes the registry's lock.
    fn callsite(&self) -> &'static Callsite {
        self.site.get_or_init(|| name::callsite(self.name))
    }

    fn key(&self) -> usize {
        self as *const Tracked as usize
    }

    /// A contended acquisition: `acquire` blocks (or times out: `false`).
    /// Call it only after the first try failed.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait(&self, mode: Mode, acquire: impl FnOnce() -> bool) -> bool {
        if BUSY.get() {
            return acquire();
        }
        // Registering the gate in a new session may allocate.
        let Some(gate) = busy(|| GATE.site()) else {
            return acquire();
        };
        let generation = gate.generation();
        let start = ms::now();
        let first = self.state.fetch_add(1, Ordering::Relaxed) == 0;
        if first || self.generation.load(Ordering::Relaxed) != generation {
            // A new episode: waited on from now, no release handed over
            // yet. Stores only where the value changes: each takes the
            // line from the holder.
            if self.handoff.load(Ordering::Relaxed) != 0 {
                self.handoff.store(0, Ordering::Relaxed);
            }
            self.since.store(start, Ordering::Relaxed);
            if self.generation.load(Ordering::Relaxed) != generation {
                self.generation.store(generation, Ordering::Relaxed);
            }
        }
        let acquired = acquire();
        let at = ms::now();
        let flow = match acquired {
            true => self.take_handoff(mode),
            false => 0,
        };
        let flow = if flow == OWN_FLOW.get() { 0 } else { flow };
        self.state.fetch_sub(1, Ordering::Relaxed);
        LAST_END.set(at + 1);
        let wait = Capture {
            kind: Kind::Wait { acquired },
            lock: self.key(),
            name: self.name,
            mode,
            generation,
            start,
            at,
            flow,
        };
        // A wait that timed out holds nothing: written now.
        if !acquired || !self.keep(wait) {
            busy(|| self.write(&wait));
        }
        acquired
    }

    /// An unlock: `raw_unlock` with the bookkeeping around it (the one
    /// check an uncontended unlock pays).
    #[inline(always)]
    pub(crate) fn unlock(&self, mode: Mode, raw_unlock: impl FnOnce()) {
        if self.state.load(Ordering::Relaxed) | KEPT.get() == 0 {
            raw_unlock();
        } else {
            self.unlock_contended(mode, raw_unlock);
        }
    }

    /// An unlock while someone waits or records of this lock are kept:
    /// captures the hold's waited-on part and the flow to the next owner,
    /// unlocks, then writes what this thread kept and the hold.
    #[cold]
    #[inline(never)]
    fn unlock_contended(&self, mode: Mode, raw_unlock: impl FnOnce()) {
        if BUSY.get() {
            return raw_unlock();
        }
        let kept = KEPT.get() > 0 && self.has_kept();
        let held = match self.state.load(Ordering::Relaxed) {
            0 => None,
            _ => self.capture_held(mode),
        };
        raw_unlock();
        // Oldest first: this thread's wait came before its hold.
        if kept {
            self.write_kept();
        }
        if let Some(held) = held {
            busy(|| self.write(&held));
        }
    }

    /// Before a `bump` or a condition variable's wait, which release the
    /// lock and take it back: captures the hold's waited-on part and the
    /// flow as an unlock does, kept for this thread's next unlock.
    pub(crate) fn release(&self, mode: Mode) {
        if self.state.load(Ordering::Relaxed) == 0 || BUSY.get() {
            return;
        }
        if let Some(held) = self.capture_held(mode) {
            if !self.keep(held) {
                busy(|| self.write(&held));
            }
        }
    }

    /// The `held` slice of a release that waiters saw; `None` when the
    /// category is off or the episode began in another session. Only clock
    /// reads and atomics: it runs before the raw unlock.
    fn capture_held(&self, mode: Mode) -> Option<Capture> {
        // Not `GATE.site()`: registering could allocate or lock.
        let generation = GATE.enabled_generation()?;
        let now = ms::now();
        // Whoever holds next is waited on from this release. An exclusive
        // owner loads and stores (the only other writer is an episode's
        // first waiter, whose store this may overwrite harmlessly: it is
        // waited on from this release too); shared owners release together
        // and swap.
        let since = match mode {
            Mode::Exclusive => {
                let since = self.since.load(Ordering::Relaxed);
                self.since.store(now + 1, Ordering::Relaxed);
                since
            }
            _ => self.since.swap(now + 1, Ordering::Relaxed),
        };
        // Loaded first: a store would take the line from the waiters.
        if self.generation.load(Ordering::Relaxed) != generation {
            self.generation.store(generation, Ordering::Relaxed);
            self.handoff.store(0, Ordering::Relaxed);
            return None;
        }
        let flow = flow_id();
        self.handoff.store(flow, Ordering::Relaxed);
        OWN_FLOW.set(flow);
        // Not before this thread's previous lock slice ended (slices of a
        // thread nest).
        let since = if since == 0 { now } else { since };
        let start = since.max(LAST_END.get()).min(now);
        LAST_END.set(now + 1);
        Some(Capture {
            kind: Kind::Held,
            lock: self.key(),
            name: self.name,
            mode,
            generation,
            start,
            at: now,
            flow,
        })
    }

    /// The flow id a release left for the next owner, cleared. Called
    /// with the lock held: held exclusively, no other owner reads or
    /// writes `handoff` meanwhile (only an episode's first waiter may store
    /// 0, as a swap would leave it), so a load and a store where it is set
    /// do what a swap does without a locked instruction in the critical
    /// section; shared owners take it together and need the swap.
    fn take_handoff(&self, mode: Mode) -> u64 {
        if mode != Mode::Exclusive {
            return self.handoff.swap(0, Ordering::Relaxed);
        }
        let flow = self.handoff.load(Ordering::Relaxed);
        if flow != 0 {
            self.handoff.store(0, Ordering::Relaxed);
        }
        flow
    }

    /// Keeps `c` in a free slot of this thread, for after its unlock of
    /// this lock; `false` when every slot is taken.
    fn keep(&self, c: Capture) -> bool {
        let kept = SLOT.with(
            |slots| match slots.iter().find(|s| s.get().kind == Kind::Empty) {
                Some(s) => {
                    s.set(c);
                    true
                }
                None => false,
            },
        );
        if kept {
            KEPT.set(KEPT.get() + 1);
        }
        kept
    }

    /// Whether this thread keeps records of this lock.
    fn has_kept(&self) -> bool {
        let (key, name) = (self.key(), self.name);
        SLOT.with(|slots| {
            slots.iter().any(|s| {
                let c = s.get();
                c.kind != Kind::Empty && c.lock == key && c.name == name
            })
        })
    }

    /// After the raw unlock: writes the records this thread kept for this
    /// lock, oldest first (a wait before the hold that followed it).
    #[cold]
    #[inline(never)]
    fn write_kept(&self) {
        if BUSY.get() {
            return;
        }
        let (key, name) = (self.key(), self.name);
        busy(|| loop {
            // Taken out of its slot before writing: the writing may lock
            // this lock again (untracked) and must find nothing to write.
            let next = SLOT.with(|slots| {
                slots
                    .iter()
                    .filter(|s| {
                        let c = s.get();
                        c.kind != Kind::Empty && c.lock == key && c.name == name
                    })
                    .min_by_key(|s| s.get().at)
                    .map(|s| s.replace(Capture::EMPTY))
            });
            let Some(c) = next else { break };
            KEPT.set(KEPT.get() - 1);
            self.write(&c);
        });
    }

    /// Writes a captured record (with [`BUSY`] set).
    fn write(&self, c: &Capture) {
        let Some(site) = self.callsite().site() else {
            return;
        };
        if site.generation() != c.generation {
            return;
        }
        match c.kind {
            Kind::Empty => {}
            Kind::Wait { acquired } => {
                if c.flow != 0 {
                    emit::event_at(site, ty::FLOW_END, c.at, Some(c.flow), &[]);
                }
                let what = if acquired { WAIT } else { TIMED_OUT };
                let args = [
                    value(c.mode.value(), c.generation),
                    value(what, c.generation),
                ];
                emit::duration_complete_at(site, c.start, c.at + 1, &args);
            }
            Kind::Held => {
                emit::event_at(site, ty::FLOW_BEGIN, c.at, Some(c.flow), &[]);
                let args = [
                    value(c.mode.value(), c.generation),
                    value(HELD, c.generation),
                ];
                emit::duration_complete_at(site, c.start, c.at + 1, &args);
            }
        }
    }
}
