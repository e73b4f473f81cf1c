//! What every lock adds to `parking_lot`'s: the bookkeeping of its
//! contended acquisitions and the one record each writes.
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
//! `state`'s waiters for the time it waits and, if it is the first,
//! begins an episode (clears the stamp below, notes the session's
//! `generation`). The holder that releases the lock while someone waits
//! writes nothing: it stamps the lock with its release (`released`, and
//! its thread's koid in `holder`). A waiter that acquires takes the stamp
//! and writes one record: its wait slice, from its first try to the
//! acquisition, with the holder's koid and how many nanoseconds before
//! the acquisition it released (arguments `holder`, `handoff_ns`). The
//! holder's `held` slice (the part of its hold during which someone
//! waited: from the earliest wait still in progress, or the previous
//! release, to the release) and the arrow from the release to the
//! acquisition are drawn from those records by readers
//! (`fxt_symbols::derived`): `fxt open`, `fxt symbolize` and the archives
//! append them, and with feature `symbolize` the session itself. The argument is a duration, not a timestamp, so that a
//! tool that moves the trace's timestamps to another clock (archives)
//! leaves it right.
//!
//! Every record is checked against the generation of the session it began
//! in: a wait or an episode that began before a session (or in an earlier
//! one) records nothing in it. A thread that took the lock without waiting
//! (its first try won) leaves the stamp for a waiter: the waiter's holder
//! is then the latest release that saw it waiting. A waiter that finds its
//! own thread's stamp (it took the lock back before anyone else waited
//! through a release) names no holder.
//!
//! # The record is written outside the critical section
//!
//! Inside, only clock reads and atomics run; the record is written once
//! the thread no longer holds the lock, so a hold (and the waits behind
//! it) does not grow by the cost of writing it, and writing a record may
//! allocate or take locks (registering a thread, a call site) even when
//! the lock is the one a global allocator takes. A waiter captures its
//! wait when it acquires and keeps it in a few thread-local slots until
//! it releases that lock (a `bump` or a condition variable's wait, which
//! take the lock back at once, leave it there too); a thread-local mask
//! says the thread has such records, so that its unlocks take the slow
//! path. A thread with every slot taken (several contended locks held at
//! once) writes at once, inside. A kept wait is written only if its
//! session is still on at the unlock, and is lost if the thread never
//! unlocks (a forgotten guard, a thread that exits holding the lock).
//! While a thread writes records (or checks the category), the locks it
//! takes are not tracked ([`BUSY`]), so writing never waits on itself.
//!
//! Inside a critical section, an exclusive owner's bookkeeping of a
//! contended hand-off is one clock read, two plain loads and a store
//! clearing the stamp and one locked instruction when it acquires
//! (leaving the waiters' count), and one clock read, a load and two plain
//! stores when it releases: every locked instruction there lengthens the
//! hold that the next waiter waits on.
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

use fxt_format::encode::{ArgValue, StringRef};

use super::name::{self, Name, CATEGORY};
use crate::emit;
use crate::macro_support::{self as ms, Callsite, KeyCache};
use crate::thread::koid;

static GATE_KEYS: [KeyCache; 0] = [];
/// The category switch of every lock: one call site whose category is
/// [`CATEGORY`].
static GATE: Callsite = Callsite::new(CATEGORY, "lock", &[], &GATE_KEYS);

/// How many waits a thread keeps for after its unlocks.
const SLOTS: usize = 4;

thread_local! {
    /// Set while this thread checks the category or writes lock records:
    /// the locks it takes meanwhile (the writing's own, or an allocator's)
    /// are taken untracked, so the bookkeeping never re-enters itself.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    /// Waits captured while this thread held a lock, written after its
    /// unlock (`const`, without a destructor: no allocation to set up).
    static SLOT: [Cell<Capture>; SLOTS] = const { [const { Cell::new(Capture::EMPTY) }; SLOTS] };
    /// Which of [`SLOT`] are taken, a bit each: a thread that keeps
    /// records takes the slow path of its unlocks. Thread-local, not a
    /// count in the lock: a waiter's acquisition then adds no atomic
    /// operation inside its critical section.
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

static NO_KEYS: [KeyCache; 0] = [];
/// The argument values, each the name of a call site so that the session
/// interns it: an indexed string keeps a lock's records on the emit fast
/// path (an inline one takes the general encoder).
static VALUES: [Callsite; 5] = [
    Callsite::new(CATEGORY, "exclusive", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "shared", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "upgradable", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "wait", &[], &NO_KEYS),
    Callsite::new(CATEGORY, "timed out", &[], &NO_KEYS),
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

/// The release a waiter took over: the lock's stamp.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Handoff {
    /// The releasing thread's koid.
    holder: u64,
    /// When it released (ticks).
    released: u64,
}

/// A wait whose times were taken inside the critical section, to write
/// outside it.
#[derive(Clone, Copy)]
struct Capture {
    acquired: bool,
    /// The lock's address and name: which unlock writes it (the address is
    /// never dereferenced).
    lock: usize,
    name: Name,
    mode: Mode,
    /// The session the wait began in.
    generation: u32,
    start: u64,
    /// The acquisition (or the time out). The slice ends a tick later.
    at: u64,
    /// The release that ended it, by another thread.
    handoff: Option<Handoff>,
}

impl Capture {
    const EMPTY: Capture = Capture {
        acquired: false,
        lock: 0,
        name: Name::Unnamed,
        mode: Mode::Exclusive,
        generation: 0,
        start: 0,
        at: 0,
        handoff: None,
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
    /// missed, and its wait then names no holder), never a proof.
    state: AtomicU32,
    /// The session of the current episode.
    generation: AtomicU32,
    /// The latest release that saw waiters (0: none) and its thread's
    /// koid: the stamp. Stored before the raw unlock and read after the
    /// raw lock: the raw lock's release and acquire order them, so
    /// Relaxed.
    released: AtomicU64,
    holder: AtomicU64,
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
            generation: AtomicU32::new(0),
            released: AtomicU64::new(0),
            holder: AtomicU64::new(0),
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
        // Looked up now, outside this lock: a release reads it inside (a
        // thread that releases before it ever waited looks it up there,
        // once).
        let me = koid();
        let start = ms::now();
        let first = self.state.fetch_add(1, Ordering::Relaxed) == 0;
        if first || self.generation.load(Ordering::Relaxed) != generation {
            // A new episode: no release stamped yet. Stores only where the
            // value changes: each takes the line from the holder.
            if self.released.load(Ordering::Relaxed) != 0 {
                self.released.store(0, Ordering::Relaxed);
            }
            if self.generation.load(Ordering::Relaxed) != generation {
                self.generation.store(generation, Ordering::Relaxed);
            }
        }
        let acquired = acquire();
        let at = ms::now();
        let handoff = match acquired {
            true => self.take_handoff(mode),
            false => None,
        };
        self.state.fetch_sub(1, Ordering::Relaxed);
        let wait = Capture {
            acquired,
            lock: self.key(),
            name: self.name,
            mode,
            generation,
            start,
            at,
            handoff: handoff.filter(|h| h.holder != me),
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
    pub(crate) fn unlock(&self, raw_unlock: impl FnOnce()) {
        if self.state.load(Ordering::Relaxed) | KEPT.get() == 0 {
            raw_unlock();
        } else {
            self.unlock_contended(raw_unlock);
        }
    }

    /// An unlock while someone waits or records of this lock are kept:
    /// stamps the release for the next owner, unlocks, then writes what
    /// this thread kept.
    #[cold]
    #[inline(never)]
    fn unlock_contended(&self, raw_unlock: impl FnOnce()) {
        if BUSY.get() {
            return raw_unlock();
        }
        self.release();
        raw_unlock();
        // Whether any of them is this lock's is looked up after the raw
        // unlock, by the writing.
        if KEPT.get() != 0 {
            self.write_kept();
        }
    }

    /// A release while someone may wait (an unlock, or a `bump` or a
    /// condition variable's wait, which release the lock and take it
    /// back): stamps it on the lock for the waiter that acquires next.
    /// Only a clock read, thread locals and atomics: it runs before the
    /// raw unlock.
    pub(crate) fn release(&self) {
        if self.state.load(Ordering::Relaxed) == 0 || BUSY.get() {
            return;
        }
        // Not `GATE.site()`: registering could allocate or lock.
        let Some(generation) = GATE.enabled_generation() else {
            return;
        };
        // Loaded first: a store would take the line from the waiters.
        if self.generation.load(Ordering::Relaxed) != generation {
            self.generation.store(generation, Ordering::Relaxed);
            self.released.store(0, Ordering::Relaxed);
            return;
        }
        // Shared owners release together: a waiter may read the koid of
        // one and the time of another, both releases that it waited on.
        self.holder.store(koid(), Ordering::Relaxed);
        self.released.store(ms::now(), Ordering::Relaxed);
    }

    /// The stamp a release left for the next owner, cleared. Called with
    /// the lock held: held exclusively, no other owner reads or writes the
    /// stamp meanwhile (only an episode's first waiter may clear it), so a
    /// load and a store where it is set do what a swap does without a
    /// locked instruction in the critical section; shared owners take it
    /// together and need the swap.
    fn take_handoff(&self, mode: Mode) -> Option<Handoff> {
        let released = match mode {
            Mode::Exclusive => {
                let released = self.released.load(Ordering::Relaxed);
                if released != 0 {
                    self.released.store(0, Ordering::Relaxed);
                }
                released
            }
            _ => self.released.swap(0, Ordering::Relaxed),
        };
        (released != 0).then(|| Handoff {
            holder: self.holder.load(Ordering::Relaxed),
            released,
        })
    }

    /// Keeps `c` in a free slot of this thread, for after its unlock of
    /// this lock; `false` when every slot is taken. A bit test and one
    /// slot's store: it runs inside the critical section.
    fn keep(&self, c: Capture) -> bool {
        let taken = KEPT.get();
        let free = (!taken).trailing_zeros() as usize;
        if free >= SLOTS {
            return false;
        }
        SLOT.with(|slots| slots[free].set(c));
        KEPT.set(taken | 1 << free);
        true
    }

    /// After the raw unlock: writes the waits this thread kept for this
    /// lock, oldest first.
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
            let taken = KEPT.get();
            let next = SLOT.with(|slots| {
                (0..SLOTS)
                    .filter(|&i| taken & 1 << i != 0)
                    .map(|i| (i, slots[i].get()))
                    .filter(|(_, c)| c.lock == key && c.name == name)
                    .min_by_key(|(_, c)| c.at)
            });
            let Some((i, c)) = next else { break };
            KEPT.set(taken & !(1 << i));
            self.write(&c);
        });
    }

    /// Writes a captured wait (with [`BUSY`] set): one duration complete
    /// event, with the release that ended it when another thread's did.
    fn write(&self, c: &Capture) {
        let Some(site) = self.callsite().site() else {
            return;
        };
        if site.generation() != c.generation {
            return;
        }
        let what = if c.acquired { WAIT } else { TIMED_OUT };
        let mode = value(c.mode.value(), c.generation);
        let state = value(what, c.generation);
        // A release before this wait began did not end it.
        match c.handoff.filter(|h| h.released >= c.start) {
            Some(h) => {
                let handoff = crate::clock::ticks_to_ns(c.at.saturating_sub(h.released));
                let args = [mode, state, ArgValue::U64(h.holder), ArgValue::U64(handoff)];
                emit::duration_complete_at(site, c.start, c.at + 1, &args);
            }
            None => emit::duration_complete_at(site, c.start, c.at + 1, &[mode, state]),
        }
    }
}
