//! What every lock adds to `parking_lot`'s: the bookkeeping of its
//! contended acquisitions and the records they write.
//!
//! # Cost
//!
//! Locking tries `parking_lot`'s fast path first; only when that fails
//! does the waiter come here ([`Tracked::wait`]). Unlocking adds one
//! relaxed load and a branch ([`Tracked::release`]: "is anyone waiting?").
//! Nothing else runs, and nothing is recorded, while a lock is uncontended.
//!
//! # An episode of contention
//!
//! A waiter whose first try failed checks the category `lock` (one call
//! site, [`GATE`]); off, it just waits. On, it counts itself in
//! `waiters` for the time it waits and, if it is the first, notes when
//! the episode began (`since`, with the session's generation). The holder
//! that releases the lock while `waiters` is not zero records, on its own
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
//! # Fork
//!
//! In the child of a process with a session, the category is off for
//! good: nothing here takes `episode`'s lock, which a thread of the parent
//! may have held. Elsewhere `episode` is only ever locked for a few
//! stores, with a timeout (a forked child that inherited it locked loses
//! those records, never waits forever).

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering};
use core::time::Duration;
use std::sync::OnceLock;

use fxt_format::encode::{ArgValue, StringRef};

use super::name::{self, Name, CATEGORY};
use crate::macro_support::{self as ms, Callsite, KeyCache};

static GATE_KEYS: [KeyCache; 0] = [];
/// The category switch of every lock: one call site whose category is
/// [`CATEGORY`].
static GATE: Callsite = Callsite::new(CATEGORY, "lock", &[], &GATE_KEYS);

/// How long the bookkeeping waits for `episode` before it gives up (and
/// records nothing for this wait or release).
const EPISODE_TIMEOUT: Duration = Duration::from_millis(10);

thread_local! {
    /// When this thread's latest lock slice ended (a clock value taken
    /// after it was written).
    static LAST_END: Cell<u64> = const { Cell::new(0) };
}

/// How a lock was (or was to be) taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Exclusive,
    Shared,
    Upgradable,
}

impl Mode {
    fn arg(self) -> ArgValue<'static> {
        ArgValue::Str(StringRef::Inline(match self {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
            Mode::Upgradable => "upgradable",
        }))
    }
}

fn state(text: &'static str) -> ArgValue<'static> {
    ArgValue::Str(StringRef::Inline(text))
}

/// The current episode of contention (see the module docs).
#[derive(Debug)]
struct Episode {
    /// When the part of the current hold during which someone waits began
    /// (0: unknown; the releaser then starts at its own previous lock
    /// slice's end).
    since: u64,
    /// The session `since` was noted in.
    generation: u32,
    /// The flow id of the latest release that saw waiters (0: none).
    handoff: u64,
}

/// The bookkeeping of one lock.
pub(crate) struct Tracked {
    name: Name,
    /// Threads waiting, counted while the category was on. Read, Relaxed,
    /// by every unlock: it is a hint (a waiter counted just after the load
    /// is missed, and its wait then has no arrow), never a proof.
    waiters: AtomicU32,
    episode: parking_lot::Mutex<Episode>,
    site: OnceLock<&'static Callsite>,
}

impl core::fmt::Debug for Tracked {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tracked")
            .field("name", &self.name)
            .field("waiters", &self.waiters.load(Ordering::Relaxed))
            .finish()
    }
}

impl Tracked {
    pub(crate) const fn new(name: Name) -> Tracked {
        Tracked {
            name,
            waiters: AtomicU32::new(0),
            episode: parking_lot::const_mutex(Episode {
                since: 0,
                generation: 0,
                handoff: 0,
            }),
            site: OnceLock::new(),
        }
    }

    pub(crate) fn name(&self) -> Name {
        self.name
    }

    /// The lock's call site (looked up once per lock).
    fn callsite(&self) -> &'static Callsite {
        self.site.get_or_init(|| name::callsite(self.name))
    }

    /// A contended acquisition: `acquire` blocks (or times out: `false`).
    /// Call it only after the first try failed.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait(&self, mode: Mode, acquire: impl FnOnce() -> bool) -> bool {
        let Some(gate) = GATE.site() else {
            return acquire();
        };
        let generation = gate.generation();
        let start = ms::now();
        let first = self.waiters.fetch_add(1, Ordering::Relaxed) == 0;
        if let Some(mut e) = self.episode.try_lock_for(EPISODE_TIMEOUT) {
            if first || e.generation != generation {
                *e = Episode {
                    since: start,
                    generation,
                    handoff: 0,
                };
            }
        }
        let acquired = acquire();
        let last = self.waiters.fetch_sub(1, Ordering::Relaxed) == 1;
        let mut handoff = 0;
        if let Some(mut e) = self.episode.try_lock_for(EPISODE_TIMEOUT) {
            if acquired && e.generation == generation {
                handoff = core::mem::take(&mut e.handoff);
            }
            if last {
                e.since = 0;
                e.handoff = 0;
            }
        }
        self.record_wait(mode, start, generation, handoff, acquired);
        acquired
    }

    fn record_wait(&self, mode: Mode, start: u64, generation: u32, handoff: u64, acquired: bool) {
        let Some(site) = self.callsite().site() else {
            return;
        };
        if site.generation() != generation {
            return;
        }
        if handoff != 0 {
            ms::flow_end(site, handoff, &[]);
        }
        let what = if acquired { "wait" } else { "timed out" };
        ms::duration_complete(site, start, &[mode.arg(), state(what)]);
        LAST_END.set(ms::now());
    }

    /// To call before every unlock: records the hold's waited-on part and
    /// the flow to the next owner when someone waits (the one check an
    /// uncontended unlock pays).
    #[inline(always)]
    pub(crate) fn release(&self, mode: Mode) {
        if self.waiters.load(Ordering::Relaxed) != 0 {
            self.release_to_waiters(mode);
        }
    }

    #[cold]
    #[inline(never)]
    fn release_to_waiters(&self, mode: Mode) {
        let Some(gate) = GATE.site() else {
            return;
        };
        let generation = gate.generation();
        let now = ms::now();
        let Some(mut e) = self.episode.try_lock_for(EPISODE_TIMEOUT) else {
            return;
        };
        // Whoever holds next is waited on from this release.
        let since = core::mem::replace(&mut e.since, now);
        let same = e.generation == generation;
        e.generation = generation;
        if !same {
            e.handoff = 0;
            return;
        }
        let id = ms::next_async_id();
        e.handoff = id;
        drop(e);
        let Some(site) = self.callsite().site() else {
            return;
        };
        if site.generation() != generation {
            return;
        }
        // Not before this thread's previous lock slice ended (slices of a
        // thread nest), and enclosing the flow's begin (stamped after `now`).
        let since = if since == 0 { now } else { since };
        let start = since.max(LAST_END.get()).min(now);
        ms::flow_begin(site, id, &[]);
        ms::duration_complete(site, start, &[mode.arg(), state("held")]);
        LAST_END.set(ms::now());
    }
}
