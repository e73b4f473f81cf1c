//! A Tokio runtime's own hooks: [`instrument`].
//!
//! * Stable Tokio: each worker's parked time, as a duration `parked` on
//!   the worker's thread (so idle time is visible between the polls). A
//!   traced task woken while a worker is parked was woken by the
//!   runtime's I/O or timer driver, which runs there: its poll says so
//!   (`woken_by_driver`).
//! * Built with `--cfg tokio_unstable`: every task the runtime spawns
//!   (plain `tokio::spawn` included, and the tasks of libraries), named by
//!   its spawn location: its life as an async slice with the task's id and
//!   each poll as a duration on the worker (which readers draw on the
//!   task's track too), as [`traced`](super::traced) records them.
//!
//!   Tokio also measures each poll's scheduling delay (the task's last
//!   wake to the poll's start: `track_task_schedule_latency`, which
//!   [`instrument`] turns on), recorded as the poll's `delay`. Tokio's
//!   hooks do not say who woke the task: with feature `tokio-wakes`,
//!   `wake_layer` reads the wakes Tokio reports to `tracing`, and the
//!   polls they cause then have `woken_by` and `waker_thread` (and their
//!   arrows), as a traced future's do.
//!
//! A task spawned before the session has its polls in the trace but no
//! life: its termination is not written either.
//!
//! The ids of these tasks are Tokio's task ids with bit 62 set, so they
//! never meet the ids of [`next_async_id`](crate::__macro_support::next_async_id).
//!
//! # `#[tokio::main]`
//!
//! Tokio's attribute takes no hooks, so a program instruments the runtime
//! the attribute would have built with [`block_on`] (or builds its own
//! from [`multi_thread`] or [`current_thread`]):
//!
//! ```
//! async fn run() -> u32 {
//!     // The body of the former `#[tokio::main] async fn main`.
//!     tokio::spawn(async { 7 }).await.unwrap()
//! }
//!
//! fn main() {
//!     assert_eq!(fxt_runtime::task::tokio::block_on(run()), 7);
//! }
//! ```

use core::cell::Cell;
use core::future::Future;

use ::tokio::runtime::Builder;

use super::name::CATEGORY;
use super::wake;
use crate::macro_support::{self as ms, Callsite, KeyCache};

#[cfg(feature = "tokio-wakes")]
mod wakes;
#[cfg(feature = "tokio-wakes")]
pub use wakes::{install_wake_layer, wake_layer, wake_subscriber};

/// Bit of the async ids of the tasks seen through Tokio's hooks.
#[cfg_attr(not(any(tokio_unstable, feature = "tokio-wakes")), allow(dead_code))]
const TOKIO_ID: u64 = 1 << 62;

/// The async id of the task Tokio numbers `tokio_id`.
#[cfg_attr(not(any(tokio_unstable, feature = "tokio-wakes")), allow(dead_code))]
fn task_id(tokio_id: u64) -> u64 {
    TOKIO_ID | (tokio_id & !TOKIO_ID)
}

/// Hands the wake that caused the poll running on this thread (its
/// ticks, task and thread: `wake::WakeSlot::take`) to that poll's record.
#[cfg(feature = "tokio-wakes")]
fn woken(at: u64, by: u64, thread: u64) {
    #[cfg(tokio_unstable)]
    unstable::woken(at, by, thread);
    #[cfg(not(tokio_unstable))]
    let _ = (at, by, thread);
}

static PARKED_KEYS: [KeyCache; 0] = [];
static PARKED: Callsite = Callsite::new(CATEGORY, "parked", &[], &PARKED_KEYS);

thread_local! {
    /// When this worker parked, and the session generation it was
    /// recorded in (0: not recording).
    static PARKED_AT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

/// Installs fxt's hooks on a runtime's builder (see the module docs).
/// Nothing is recorded while no session records category
/// [`CATEGORY`]; a hook then costs one relaxed load and a branch.
///
/// Built with `--cfg tokio_unstable`, it also turns on Tokio's own
/// measurement of each poll's scheduling delay (its
/// `track_task_schedule_latency`), which the polls' `delay` comes from:
/// Tokio then reads the clock when it schedules a task and when it polls
/// one, session or not. [`instrument_without_delay`] leaves it off.
///
/// ```
/// let mut builder = tokio::runtime::Builder::new_multi_thread();
/// fxt_runtime::task::tokio::instrument(&mut builder);
/// let runtime = builder.build().unwrap();
/// # drop(runtime);
/// ```
pub fn instrument(builder: &mut Builder) -> &mut Builder {
    #[cfg(tokio_unstable)]
    builder.track_task_schedule_latency();
    instrument_without_delay(builder)
}

/// [`instrument`] without Tokio's scheduling-delay measurement: with no
/// session (or the category off) the runtime then costs what it costs
/// with empty hooks, but the polls of the tasks Tokio's hooks see have no
/// `delay`, unless `wake_layer` (feature `tokio-wakes`) saw the wake that
/// caused them (it measures the delay itself, only while recording).
/// Without `--cfg tokio_unstable` it is [`instrument`].
///
/// ```
/// let mut builder = tokio::runtime::Builder::new_multi_thread();
/// fxt_runtime::task::tokio::instrument_without_delay(&mut builder);
/// let runtime = builder.build().unwrap();
/// # drop(runtime);
/// ```
pub fn instrument_without_delay(builder: &mut Builder) -> &mut Builder {
    builder.on_thread_park(park).on_thread_unpark(unpark);
    #[cfg(tokio_unstable)]
    unstable::install(builder);
    builder
}

/// A multi-thread runtime's builder as `#[tokio::main]` makes it (every
/// driver the program's Tokio features have, enabled), instrumented.
pub fn multi_thread() -> Builder {
    let mut builder = Builder::new_multi_thread();
    builder.enable_all();
    instrument(&mut builder);
    builder
}

/// A current-thread runtime's builder as
/// `#[tokio::main(flavor = "current_thread")]` makes it, instrumented.
pub fn current_thread() -> Builder {
    let mut builder = Builder::new_current_thread();
    builder.enable_all();
    instrument(&mut builder);
    builder
}

/// Runs `future` to completion on an instrumented multi-thread runtime,
/// as `#[tokio::main]` runs its function's body (see the module docs).
///
/// # Panics
///
/// If the runtime cannot be built (as `#[tokio::main]` does).
pub fn block_on<F: Future>(future: F) -> F::Output {
    multi_thread()
        .build()
        .expect("building the Tokio runtime")
        .block_on(future)
}

/// A worker parks: its I/O and timer drivers run on it until it unparks,
/// so a wake made meanwhile is theirs (`wake::DRIVER`).
fn park() {
    if let Some(site) = PARKED.site() {
        PARKED_AT.set((ms::duration_start(), site.generation()));
        wake::set_current(wake::DRIVER);
    }
}

fn unpark() {
    // Read before the category: a park recorded in a session that has
    // since ended must still give the thread back its current task.
    // Written only then: a park not recorded costs a read.
    let (start, generation) = PARKED_AT.get();
    if start == 0 {
        return;
    }
    PARKED_AT.set((0, 0));
    wake::set_current(0);
    // A park of an earlier session (or before this one) is not this
    // trace's.
    if let Some(site) = PARKED.site().filter(|s| s.generation() == generation) {
        ms::duration_complete(site, start, &[]);
    }
}

#[cfg(tokio_unstable)]
mod unstable {
    //! The task hooks of `--cfg tokio_unstable`.

    use core::cell::Cell;

    use ::tokio::runtime::{Builder, TaskMeta};
    use fxt_format::encode::ArgValue;

    use super::super::name::{self, Name};
    use super::super::{wake, Woke};
    use super::task_id;
    use crate::clock;
    use crate::macro_support::{self as ms, Callsite, Site};

    thread_local! {
        /// The call site of the last spawn location this thread looked up
        /// (a lookup takes the registry's lock).
        static LAST: Cell<Option<(&'static core::panic::Location<'static>, &'static Callsite)>> =
            const { Cell::new(None) };
        /// When the poll running on this thread started (0: not recorded),
        /// its scheduling delay in ns if Tokio measured one, and the
        /// thread's current task before it.
        static POLL_START: Cell<(u64, Option<u64>, u64)> = const { Cell::new((0, None, 0)) };
        /// The wake that caused the poll running on this thread, as
        /// `wake_layer` found it: its ticks (0: none), task and thread.
        static WOKEN: Cell<(u64, u64, u64)> = const { Cell::new((0, 0, 0)) };
    }

    /// See `super::woken`.
    #[cfg(feature = "tokio-wakes")]
    pub(super) fn woken(at: u64, by: u64, thread: u64) {
        WOKEN.set((at, by, thread));
    }

    pub(super) fn install(builder: &mut Builder) {
        builder
            .on_task_spawn(|meta| {
                if let Some((site, id)) = task(meta) {
                    lives::begun(site.generation(), id);
                    super::super::life_begin(site, id, meta.spawned_at());
                }
            })
            .on_before_task_poll(|meta| {
                if let Some((_, id)) = task(meta) {
                    let delay = meta
                        .schedule_latency()
                        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
                    let outer = wake::set_current(id);
                    WOKEN.set((0, 0, 0));
                    POLL_START.set((ms::duration_start(), delay, outer));
                }
            })
            // Tokio calls this after the task's poll returned, and after a
            // task that completed in it was terminated and its `JoinHandle`
            // woken: a session may end in between, so every record of the
            // poll is written here (none at its start), and such a poll is
            // not in that trace at all rather than half in it.
            .on_after_task_poll(|meta| {
                // A poll not recorded costs a read (the before-poll hook
                // clears `WOKEN` for the next recorded one).
                let (start, delay, outer) = POLL_START.get();
                if start == 0 {
                    return;
                }
                POLL_START.set((0, None, 0));
                let (woken, by, thread) = WOKEN.replace((0, 0, 0));
                wake::set_current(outer);
                if let Some((site, id)) = task(meta) {
                    // Tokio's hooks do not say who woke the task: only
                    // `wake_layer` does (its wake's delay counts from its
                    // own clock read, as a traced future's).
                    let woke = if woken != 0 {
                        Some(Woke {
                            delay: clock::ticks_to_ns(start.saturating_sub(woken)),
                            by,
                            thread,
                        })
                    } else {
                        delay.map(|delay| Woke {
                            delay,
                            by: 0,
                            thread: 0,
                        })
                    };
                    super::super::poll_records(site, id, start, woke);
                }
            })
            .on_task_terminate(|meta| {
                if let Some((site, id)) = task(meta) {
                    // Only a life this session's trace has the begin of.
                    if lives::ended(site.generation(), id) {
                        ms::async_end(site, id, &[ArgValue::U64(id)]);
                    }
                }
            });
    }

    mod lives {
        //! The tasks whose life began in the current session: a task
        //! spawned before it (a runtime built earlier, a session started
        //! while tasks run) must not end a life its trace never began.
        //! Touched at spawn and termination only, while recording; holds
        //! the live tasks of one session.

        use std::collections::HashSet;
        use std::sync::Mutex;

        /// The session generation and the ids of its live tasks.
        static LIVES: Mutex<(u32, Option<HashSet<u64>>)> = Mutex::new((0, None));

        fn with<T>(generation: u32, f: impl FnOnce(&mut HashSet<u64>) -> T) -> T {
            // A panic elsewhere cannot leave the set half-updated (one
            // insert or remove), so a poisoned lock is still a good set.
            let mut lives = LIVES.lock().unwrap_or_else(|e| e.into_inner());
            if lives.0 != generation {
                *lives = (generation, None);
            }
            f(lives.1.get_or_insert_with(HashSet::new))
        }

        pub(super) fn begun(generation: u32, id: u64) {
            with(generation, |set| set.insert(id));
        }

        /// Whether the life of `id` began in this session (and forgets it).
        pub(super) fn ended(generation: u32, id: u64) -> bool {
            with(generation, |set| set.remove(&id))
        }
    }

    /// The task's call site (if the category records) and async id.
    fn task(meta: &TaskMeta<'_>) -> Option<(Site, u64)> {
        super::super::GATE.site()?;
        let at = meta.spawned_at();
        let callsite = match LAST.get() {
            Some((l, c)) if core::ptr::eq(l, at) => c,
            _ => {
                let c = name::callsite(Name::At(at));
                LAST.set(Some((at, c)));
                c
            }
        };
        Some((callsite.site()?, task_id(id_of(meta))))
    }

    /// Tokio's task id as a number. Tokio shows it only through `Display`
    /// and `Hash`: its hash writes the number whole (`write_u64`), which
    /// this hasher keeps, rather than formatting it (twice a poll).
    fn id_of(meta: &TaskMeta<'_>) -> u64 {
        use core::hash::{Hash, Hasher};
        /// Keeps the last number written (bytes, if a `Hash` writes
        /// those instead, as a little-endian number).
        struct Number(u64);
        impl Hasher for Number {
            fn finish(&self) -> u64 {
                self.0
            }
            fn write(&mut self, bytes: &[u8]) {
                self.0 = bytes
                    .iter()
                    .rev()
                    .fold(0, |n, &b| n.wrapping_shl(8) | u64::from(b));
            }
            fn write_u64(&mut self, n: u64) {
                self.0 = n;
            }
        }
        let mut number = Number(0);
        meta.id().hash(&mut number);
        number.0
    }
}
