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
//! [`TaskState::woken`] and records, on the waking thread, a flow begin
//! whose id is [`flow_id`] of the task and that timestamp. The next poll
//! takes the timestamp: its flow end (same id, so a viewer draws the
//! arrow from the waker's slice to the poll) and its scheduling delay
//! (the wake to the poll's start). Later wakes before that poll record
//! nothing: the task was already scheduled, and the delay counts from the
//! first.
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

use core::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

use fxt_format::encode::header::event_type as ty;

use crate::macro_support::Callsite;
use crate::{clock, emit};

/// What a traced task shares with its wakers (which may outlive it).
pub(crate) struct TaskState {
    /// The task's id: its async events' id, in the `task` argument.
    pub(crate) id: u64,
    /// The call site of the task's name.
    pub(crate) callsite: &'static Callsite,
    /// Ticks of the first wake since the last poll started, 0 if none.
    woken: AtomicU64,
    /// The task whose poll made that wake (0: none; [`DRIVER`]: a Tokio
    /// runtime's driver).
    woken_by: AtomicU64,
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

impl TaskState {
    pub(crate) fn new(id: u64, callsite: &'static Callsite) -> TaskState {
        TaskState {
            id,
            callsite,
            woken: AtomicU64::new(0),
            woken_by: AtomicU64::new(0),
        }
    }

    /// Records a wake (with the category on): the first since the last
    /// poll leaves its timestamp for the next poll and begins its flow.
    fn record_wake(&self) {
        let Some(site) = self.callsite.site() else {
            return;
        };
        // Relaxed: only a wake that may be the first stores its waker (and
        // reads the clock); a racing wake's may stand instead, a waker of
        // that poll all the same.
        if self.woken.load(Ordering::Relaxed) != 0 {
            return;
        }
        // Never 0, which means "not woken".
        let now = clock::now().max(1);
        self.woken_by.store(CURRENT.get(), Ordering::Relaxed);
        // Release: publishes `woken_by` to the poll's Acquire in
        // `take_wake`. The executor's own wake orders this wake before the
        // poll it causes.
        if self
            .woken
            .compare_exchange(0, now, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            emit::event_at(site, ty::FLOW_BEGIN, now, Some(flow_id(self.id, now)), &[]);
        }
    }

    /// Takes the timestamp of the wake that caused this poll (0 if none)
    /// and the task that made it (0 if none, [`DRIVER`] for a runtime's
    /// driver).
    pub(crate) fn take_wake(&self) -> (u64, u64) {
        // Relaxed: a first look (most polls of a busy task find a wake,
        // but a swap on a line nobody wrote costs more than a load).
        if self.woken.load(Ordering::Relaxed) == 0 {
            return (0, 0);
        }
        // Acquire: pairs with the Release of `record_wake`'s exchange, so
        // the waker stored before it is read here.
        let woken = self.woken.swap(0, Ordering::Acquire);
        (woken, self.woken_by.swap(0, Ordering::Relaxed))
    }
}

/// The flow id of a wake of task `task` at `ticks`: a bijective mix of the
/// two, so the wakes of one task (distinct timestamps) never share an id
/// and two tasks' ids meet only by chance (one in 2^64).
pub(crate) fn flow_id(task: u64, ticks: u64) -> u64 {
    // splitmix64's finalizer: a bijection of u64.
    let mut z = ticks ^ task.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
pub(crate) fn wrap<'a>(
    slot: &'a mut Option<Wrapped>,
    task: &Arc<TaskState>,
    cx: &Waker,
) -> &'a Waker {
    if slot.as_ref().is_some_and(|w| !w.shared.inner.will_wake(cx)) {
        *slot = None;
    }
    &slot
        .get_or_insert_with(|| {
            let shared = Arc::new(TracedWaker {
                task: task.clone(),
                inner: cx.clone(),
            });
            Wrapped {
                waker: Waker::from(shared.clone()),
                shared,
            }
        })
        .waker
}
