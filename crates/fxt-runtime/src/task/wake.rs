//! Wakes: what a traced task shares with the wakers it hands out.
//!
//! A traced poll gives the future a waker of its own ([`TracedWaker`])
//! that wraps the executor's: waking it records the wake, then wakes the
//! executor's. The wrapper is made again only when the executor's waker
//! changes (`Waker::will_wake`), so a task polled with the same waker
//! allocates once.
//!
//! # A wake and the poll it causes
//!
//! The first wake after a poll started stores its timestamp in
//! [`TaskState::woken`], with the thread's current task and the waking
//! thread's koid; it writes nothing. The next poll takes them: its
//! scheduling delay (the wake to the poll's start), `woken_by` and
//! `waker_thread` are arguments of the poll's slice, from which readers
//! derive the arrow from the waking thread to the poll
//! (`fxt_format::derived::task`). Later wakes before that poll store
//! nothing: the task was already scheduled, and the delay counts from
//! the first.
//!
//! # Who woke it
//!
//! A traced poll (and, with `tokio::instrument` under `tokio_unstable`,
//! a Tokio task's poll) sets the thread's [current task](current) while it
//! runs: a wake made then is that task's, and the poll it causes carries
//! its id as `woken_by`. A wake from anywhere else (a plain thread, or
//! Tokio's I/O and timer drivers, which run while a worker is parked)
//! has none; its arrow begins on that thread, inside its `parked` slice
//! for a driver. A worker of a runtime instrumented with
//! `tokio::instrument` is marked while it is parked (between Tokio's park
//! and unpark hooks, when its I/O and timer drivers run on it): its
//! current task is then [`DRIVER`], and the poll a wake made there causes
//! says so (`woken_by_driver`).
//!
//! The tasks of Tokio's hooks have no waker of fxt's: with
//! `tokio::wake_layer`, the wakes Tokio reports to `tracing` are stored
//! in a [`WakeSlot`] kept in each task's span, as here.

use core::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

use crate::clock;
use crate::macro_support::Callsite;
use crate::thread::koid;

/// What a traced task shares with its wakers (which may outlive it).
pub(crate) struct TaskState {
    /// The task's id: its async events' id, in the `task` argument.
    pub(crate) id: u64,
    /// The call site of the task's name.
    pub(crate) callsite: &'static Callsite,
    /// The first wake since the last poll started.
    woken: WakeSlot,
}

/// The first wake of a task since its last poll started: what the next
/// poll takes (see the module docs). Shared by the wrapper's wakers and,
/// for the tasks of Tokio's hooks, by Tokio's own (`tokio::wakes`).
#[derive(Default)]
pub(crate) struct WakeSlot {
    /// Ticks of the first wake since the last poll started, 0 if none.
    at: AtomicU64,
    /// The task whose poll made that wake (0: none; [`DRIVER`]: a Tokio
    /// runtime's driver).
    by: AtomicU64,
    /// The koid of the thread that made that wake.
    on: AtomicU64,
}

/// The thread's current task while a Tokio worker is parked: a wake made
/// then is its runtime's I/O or timer driver's. No task has this id
/// (fxt's ids count up from 1; Tokio's tasks have bit 62 and not 63).
pub(crate) const DRIVER: u64 = u64::MAX;

thread_local! {
    /// The id of the task being polled on this thread (0: none;
    /// [`DRIVER`]: a parked Tokio worker).
    static CURRENT: Cell<u64> = const { Cell::new(0) };
}

/// Makes `task` the thread's current task (see the module docs) and
/// returns the one it replaces, for [`set_current`] after the poll.
#[inline]
pub(crate) fn set_current(task: u64) -> u64 {
    CURRENT.replace(task)
}

/// The thread's current task (see the module docs).
#[cfg(feature = "tokio-wakes")]
#[inline]
pub(crate) fn current() -> u64 {
    CURRENT.get()
}

impl TaskState {
    pub(crate) fn new(id: u64, callsite: &'static Callsite) -> TaskState {
        TaskState {
            id,
            callsite,
            woken: WakeSlot::default(),
        }
    }

    /// Records a wake (with the category on): see [`WakeSlot::record`].
    fn record_wake(&self) {
        if self.callsite.site().is_some() {
            self.woken.record();
        }
    }

    /// Takes the wake that caused this poll: see [`WakeSlot::take`].
    #[inline]
    pub(crate) fn take_wake(&self) -> (u64, u64, u64) {
        self.woken.take()
    }
}

impl WakeSlot {
    /// Records a wake made on this thread (the caller checked that the
    /// category records): the first since the last poll leaves its
    /// timestamp, its task and its thread for the next poll. Nothing is
    /// written to the trace.
    pub(crate) fn record(&self) {
        // Relaxed: only a wake that may be the first stores its waker (and
        // reads the clock); a racing wake's may stand instead, a waker of
        // that poll all the same.
        if self.at.load(Ordering::Relaxed) != 0 {
            return;
        }
        // Never 0, which means "not woken".
        let now = clock::now().max(1);
        self.by.store(CURRENT.get(), Ordering::Relaxed);
        self.on.store(koid(), Ordering::Relaxed);
        // Release: publishes `by` and `on` to the poll's Acquire in
        // `take`. The executor's own wake orders this wake before the
        // poll it causes.
        let _ = self
            .at
            .compare_exchange(0, now, Ordering::Release, Ordering::Relaxed);
    }

    /// Takes the wake that caused this poll: its timestamp (0 if none),
    /// the task that made it (0 if none, [`DRIVER`] for a runtime's
    /// driver) and the koid of its thread.
    #[inline]
    pub(crate) fn take(&self) -> (u64, u64, u64) {
        // Relaxed: a first look (most polls of a busy task find a wake,
        // but a swap on a line nobody wrote costs more than a load).
        if self.at.load(Ordering::Relaxed) == 0 {
            return (0, 0, 0);
        }
        // Acquire: pairs with the Release of `record`'s exchange, so the
        // waker and thread stored before it are read here. The waker and
        // thread need no reset: a wake stores both before its timestamp.
        let at = self.at.swap(0, Ordering::Acquire);
        let by = self.by.load(Ordering::Relaxed);
        (at, by, self.on.load(Ordering::Relaxed))
    }
}

/// The waker a traced poll hands its future: records the wake, then
/// forwards it to the executor's waker.
pub(crate) struct TracedWaker {
    task: Arc<TaskState>,
    inner: Waker,
}

impl Wake for TracedWaker {
    fn wake(self: Arc<Self>) {
        self.task.record_wake();
        // The last reference gives its waker away (as `Waker::wake` would);
        // otherwise wake through the shared one.
        match Arc::try_unwrap(self) {
            Ok(this) => this.inner.wake(),
            Err(this) => this.inner.wake_by_ref(),
        }
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.task.record_wake();
        self.inner.wake_by_ref();
    }
}

/// A task's wrapper of the executor's waker, kept across polls.
pub(crate) struct Wrapped {
    /// What the wrapper holds (to compare its executor's waker with the
    /// next poll's).
    shared: Arc<TracedWaker>,
    /// The wrapper.
    waker: Waker,
}

/// The waker to poll with: `slot`'s wrapper, made again (one allocation)
/// only when the executor's waker is not the one it wraps.
#[inline]
pub(crate) fn wrap<'a>(
    slot: &'a mut Option<Wrapped>,
    task: &Arc<TaskState>,
    cx: &Waker,
) -> &'a Waker {
    if slot.as_ref().is_some_and(|w| !w.shared.inner.will_wake(cx)) {
        *slot = None;
    }
    &slot.get_or_insert_with(|| wrapper(task, cx)).waker
}

/// A new wrapper of `cx` (out of line: the first recorded poll's, or the
/// first after the executor's waker changed).
#[cold]
#[inline(never)]
fn wrapper(task: &Arc<TaskState>, cx: &Waker) -> Wrapped {
    let shared = Arc::new(TracedWaker {
        task: task.clone(),
        inner: cx.clone(),
    });
    Wrapped {
        waker: Waker::from(shared.clone()),
        shared,
    }
}
