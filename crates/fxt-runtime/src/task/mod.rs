//! Async tasks on the timeline: each poll of a traced future, who woke
//! it, how long it waited to run, and the polls that held their thread
//! too long.
//!
//! [`traced`] (or [`TracedExt::traced`]) wraps any future, on any
//! executor. While category `task` records, each poll of the wrapper
//! writes one record: a duration on the thread that ran it, named by the
//! task, so it nests with everything else that thread recorded. Its
//! arguments are `task` (the task's id), `delay` (ns from the wake that
//! caused the poll to the poll's start, when a wake of the wrapper's
//! waker caused it), `waker_thread` (the koid of the thread that made
//! that wake), `woken_by` (the id of the task whose poll made it) or
//! `woken_by_driver` (`true`: a Tokio runtime's I/O or timer driver made
//! it, on a worker parked under the hooks of `tokio::instrument`) and
//! `long` (`true` when the poll took at least [`long_poll_threshold`]).
//! A task's life is an async slice with the task's id on its own track,
//! from its first poll (its spawn, as far as the wrapper can tell) to its
//! completion or its drop (the end then has `dropped`).
//!
//! Readers derive the rest from the polls (`fxt_format::derived::task`,
//! appended by `fxt open`, `fxt symbolize` and archives): each poll as an
//! async slice on the task's track, inside its life, and the flow from
//! the waking thread (inside whatever slice was open there) to the poll,
//! so a viewer draws an arrow from the waker to the poll.
//!
//! The wrapper hands the future a waker of its own that records the wake
//! and forwards it (see `wake`); it is made again only when the
//! executor's waker changes.
//!
//! With the cargo feature `tokio`, `tokio::instrument` also records a
//! Tokio runtime's own view: its workers' parked time and, built with
//! `--cfg tokio_unstable`, every task it spawns.
//!
//! # Cost
//!
//! With no session or the category off, a poll is one relaxed load and a
//! branch, then the inner future's poll with the executor's context:
//! nothing is allocated and the executor's waker is not wrapped. A wake
//! through a wrapper made earlier costs the same load before forwarding.
//! Recording, a poll writes one record and a wake none (it stores its
//! time, its task and its thread in the task's state); the first recorded poll of a task allocates its shared state and
//! its waker wrapper.

mod name;
mod record;
#[cfg(feature = "tokio")]
pub mod tokio;
mod wake;

use core::future::Future;
use core::panic::Location;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fxt_format::encode::{ArgValue, StringRef};

use crate::clock;
use crate::macro_support::{self as ms, Callsite, KeyCache, Site};
use name::Name;
pub use name::CATEGORY;
pub(crate) use record::poll_records;
use wake::{TaskState, Wrapped};

static GATE_KEYS: [KeyCache; 0] = [];
/// The category switch of every task: one call site of [`CATEGORY`],
/// asked before a task has found its own name's call site.
static GATE: Callsite = Callsite::new(CATEGORY, "task", &[], &GATE_KEYS);

/// Long polls: nanoseconds (see [`set_long_poll_threshold`]).
static LONG_POLL_NS: AtomicU64 = AtomicU64::new(10_000_000);

/// Polls at least this long are flagged `long`.
pub fn long_poll_threshold() -> Duration {
    // Relaxed: a lone setting, read on its own.
    Duration::from_nanos(LONG_POLL_NS.load(Ordering::Relaxed))
}

/// Sets the duration from which a poll is flagged `long` (default 10 ms),
/// for every task, from the next poll on.
pub fn set_long_poll_threshold(threshold: Duration) {
    let ns = u64::try_from(threshold.as_nanos()).unwrap_or(u64::MAX);
    // Relaxed: see `long_poll_threshold`.
    LONG_POLL_NS.store(ns, Ordering::Relaxed);
}

/// Wraps `future` as a task named `name` (see the module docs).
///
/// ```
/// # let session = fxt_runtime::start(fxt_runtime::Config::new()).unwrap();
/// let task = fxt_runtime::task::traced("load", async { 42 });
/// # let _ = task;
/// # session.finish_to_vec().unwrap();
/// ```
#[track_caller]
pub fn traced<F: Future>(name: &'static str, future: F) -> Traced<F> {
    Traced::new(Name::Given(name), future)
}

/// Wraps `future` as a task named by where this is called (`file:line`).
#[track_caller]
pub fn traced_here<F: Future>(future: F) -> Traced<F> {
    Traced::new(Name::At(Location::caller()), future)
}

/// `future.traced("name")`, `future.traced_here()`: [`traced`] and
/// [`traced_here`] as methods of every future.
pub trait TracedExt: Future + Sized {
    /// See [`traced`].
    #[track_caller]
    fn traced(self, name: &'static str) -> Traced<Self> {
        traced(name, self)
    }

    /// See [`traced_here`].
    #[track_caller]
    fn traced_here(self) -> Traced<Self> {
        Traced::new(Name::At(Location::caller()), self)
    }
}

impl<F: Future> TracedExt for F {}

/// A future traced as a task: see the [module docs](self).
#[must_use = "futures do nothing unless polled"]
pub struct Traced<F> {
    inner: F,
    run: Run,
}

/// What a task keeps between polls (none of it pinned).
struct Run {
    name: Name,
    /// Where the task was made (wrapped).
    location: &'static Location<'static>,
    /// The call site of the task's name, once the category was seen on.
    callsite: Option<&'static Callsite>,
    /// Made at the first recorded poll.
    task: Option<Arc<TaskState>>,
    waker: Option<Wrapped>,
    /// The session generation whose trace has the task's begin (0: none).
    life: u32,
    done: bool,
}

impl<F> Traced<F> {
    #[track_caller]
    fn new(name: Name, inner: F) -> Traced<F> {
        Traced {
            inner,
            run: Run {
                name,
                location: Location::caller(),
                callsite: None,
                task: None,
                waker: None,
                life: 0,
                done: false,
            },
        }
    }

    /// The pinned inner future and the unpinned rest.
    fn project(self: Pin<&mut Self>) -> (Pin<&mut F>, &mut Run) {
        // SAFETY: `inner` is pinned structurally and nothing else is:
        // nothing moves `inner` out of a `Traced` (no method does, and
        // `Drop` touches only `run`), `Traced` is `Unpin` only when `F` is
        // (the auto trait), and `run` is never handed out pinned, so
        // giving `&mut` access to it cannot unpin anything.
        unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.inner), &mut this.run)
        }
    }
}

impl Run {
    /// The task's call site enabled, if its category records: one relaxed
    /// load and a branch when it does not.
    #[inline(always)]
    fn site(&mut self) -> Option<Site> {
        // The category's switch first: a static that every thread reads
        // and none writes while it stays off, so with the session or the
        // category off a poll touches nothing of the task but its inner
        // future (the task's own state may sit on another cache line,
        // last written by another worker).
        GATE.site()?;
        let callsite = match self.callsite {
            Some(callsite) => callsite,
            None => *self.callsite.insert(name::callsite(self.name)),
        };
        callsite.site()
    }
}

impl<F: Future> Future for Traced<F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let (inner, run) = self.project();
        match run.site() {
            None => inner.poll(cx),
            Some(site) => traced_poll(inner, run, site, cx),
        }
    }
}

/// A poll with the category on.
#[inline(never)]
fn traced_poll<F: Future>(
    inner: Pin<&mut F>,
    run: &mut Run,
    site: Site,
    cx: &mut Context<'_>,
) -> Poll<F::Output> {
    let task = run
        .task
        .get_or_insert_with(|| Arc::new(TaskState::new(ms::next_async_id(), site.callsite)));
    let id = task.id;
    if run.life != site.generation() {
        run.life = site.generation();
        life_begin(site, id, run.location);
    }
    let waker = wake::wrap(&mut run.waker, task, cx.waker());
    let start = ms::duration_start();
    let (woken, woken_by, woken_on) = task.take_wake();
    // A wake stamped after the start (another thread's clock read racing
    // with this one) caused this poll all the same, with no delay.
    let woke = (woken != 0).then(|| Woke {
        delay: clock::ticks_to_ns(start.saturating_sub(woken)),
        by: woken_by,
        thread: woken_on,
    });
    // A guard, so that a poll that panics is recorded too (its drop,
    // out of line, on the unwind only); after a poll that returned, the
    // record is written here, inline, with what is still in registers.
    let end = PollEnd {
        site,
        id,
        start,
        woke,
        outer: wake::set_current(id),
    };
    let result = inner.poll(&mut Context::from_waker(waker));
    core::mem::ManuallyDrop::new(end).finish();
    if result.is_ready() {
        run.done = true;
        ms::async_end(site, id, &[ArgValue::U64(id)]);
    }
    result
}

/// The begin of a task's life on its track: its id and where it was made.
pub(crate) fn life_begin(site: Site, id: u64, at: &Location<'_>) {
    let mut text = [0u8; 256];
    let location = location_text(at, &mut text);
    let null = ArgValue::Null;
    let location = ArgValue::Str(StringRef::Inline(location));
    let args = [
        ArgValue::U64(id),
        null,
        null,
        null,
        null,
        null,
        null,
        location,
    ];
    ms::async_begin(site, id, &args);
}

/// `file:line` of `at` in `buf` (a path too long for it is cut at a
/// character's boundary).
fn location_text<'a>(at: &Location<'_>, buf: &'a mut [u8; 256]) -> &'a str {
    use std::io::Write;
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(cursor, "{}:{}", at.file(), at.line());
    let len = cursor.position() as usize;
    match core::str::from_utf8(&buf[..len]) {
        Ok(s) => s,
        Err(e) => core::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// The wake that caused a poll: the scheduling delay in ns and the id of
/// the task that woke it (0: none; `wake::DRIVER`: a Tokio runtime's I/O
/// or timer driver).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Woke {
    pub(crate) delay: u64,
    pub(crate) by: u64,
    /// The koid of the thread that made the wake (0: the wake was not
    /// recorded, only its delay measured).
    pub(crate) thread: u64,
}

/// Writes a poll's record when dropped (after the poll, or while a panic
/// unwinds out of it), and gives the thread back its current task. The
/// record is written then: a session that ends while the poll runs does
/// not have it.
struct PollEnd {
    site: Site,
    id: u64,
    start: u64,
    woke: Option<Woke>,
    /// The thread's current task before this poll.
    outer: u64,
}

impl PollEnd {
    /// Gives the thread back its current task and writes the record.
    #[inline(always)]
    fn finish(&self) {
        wake::set_current(self.outer);
        poll_records(self.site, self.id, self.start, self.woke);
    }
}

impl Drop for PollEnd {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<F> Drop for Traced<F> {
    fn drop(&mut self) {
        let run = &mut self.run;
        if run.done || run.life == 0 {
            return;
        }
        let (Some(task), Some(site)) = (&run.task, run.callsite.and_then(Callsite::site)) else {
            return;
        };
        // Only in the session whose trace has the begin.
        if site.generation() == run.life {
            let null = ArgValue::Null;
            let args = [
                ArgValue::U64(task.id),
                null,
                null,
                null,
                null,
                null,
                ArgValue::Bool(true),
            ];
            ms::async_end(site, task.id, &args);
        }
    }
}

impl<F> core::fmt::Debug for Traced<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Traced")
            .field("name", &self.run.name)
            .field("id", &self.run.task.as_ref().map(|t| t.id))
            .finish()
    }
}
