//! Emit: the event functions, which encode a record straight into
//! the writing thread's chunk.
//!
//! * The hot path ([`event`], [`duration_complete`]): the common event
//!   (indexed category, name, keys and thread; numeric, boolean, null or
//!   indexed-string arguments, see [`simple`]) written through the
//!   thread's cursor alone (`crate::thread::local`): read the clock, size
//!   the record, reserve, store the precomputed header (the call site's
//!   cached word already holds the category and name refs in header
//!   position), the timestamp and the arguments, publish. No `RefCell`, no
//!   `LocalKey::try_with`.
//! * The slow path: when the cursor's gate is closed for the event (first
//!   event of the thread in a session, crash-safe session, inline thread
//!   ref, re-entrancy) or the record does not fit the rest of the chunk,
//!   the event goes through the thread's writer (`crate::thread::with_writer`),
//!   which registers, rolls chunks over and writes through the same cursor
//!   — with the same [`simple`] encoder when it can, else [`general`].
//!
//! * A writer of its own ([`reserve`]): for a record of a fixed layout
//!   whose header and argument headers its caller computes once (a
//!   task's poll, `crate::task`), the hot path's reservation and stores
//!   with no argument matching; what it cannot reserve goes through the
//!   functions above.
//!
//! Every record is stored through `crate::memory::filler::Store` (header
//! last; in a crash-safe session behind a filler). The layout is the one
//! of `fxt_format::encode::Event`; a test checks both produce the same
//! words.

mod general;
mod simple;

use std::sync::atomic::{AtomicU64, Ordering};

use fxt_format::encode::header::event_type as ty;
use fxt_format::encode::ArgValue;

use crate::callsite::{Callsite, Site};
use crate::clock;
use crate::memory::filler::Store;
use crate::ring::Record;
use crate::thread::{self, with_writer, Writer};
use simple::Layout;

/// Emits an event record of type `ty` (with the trailing word `extra` for
/// the types that have one).
#[inline(always)]
pub(crate) fn event(site: Site, ty: u64, extra: Option<u64>, args: &[ArgValue<'_>]) {
    if !try_fast(site, ty, Times::NOW, extra, args) {
        slow_copied(site, ty, Times::NOW, extra, args);
    }
}

/// Emits a duration complete event from `start` to now.
#[inline(always)]
pub(crate) fn duration_complete(site: Site, start: u64, args: &[ArgValue<'_>]) {
    let times = Times {
        start: Some(start),
        at: None,
    };
    if !try_fast(site, ty::DURATION_COMPLETE, times, Some(0), args) {
        slow_copied(site, ty::DURATION_COMPLETE, times, Some(0), args);
    }
}

// Used by `sync` (a lock's records are written after its unlock) and
// `task` (a poll's records are written once it returned).
/// Emits a duration complete event from `start` to `end` (clock values
/// taken earlier).
#[inline]
pub(crate) fn duration_complete_at(site: Site, start: u64, end: u64, args: &[ArgValue<'_>]) {
    let times = Times {
        start: Some(start),
        at: Some(end),
    };
    if !try_fast(site, ty::DURATION_COMPLETE, times, Some(0), args) {
        slow_copied(site, ty::DURATION_COMPLETE, times, Some(0), args);
    }
}

/// A record reserved on the hot path for a caller that lays out its
/// words itself: a record of a fixed layout whose header and argument
/// headers the caller computed once (a task's poll, `crate::task`),
/// stored word by word with no per-argument matching. The words are
/// those `fxt_format::encode::Event` and [`simple`] write (the caller's
/// tests compare them).
pub(crate) struct Reserved<'a> {
    record: Record<'a>,
    store: Store<'a>,
    base: u64,
}

/// Reserves `words` words for an event of `site` through the thread's
/// cursor, if its gate is open for the site's session and the chunk has
/// room (`None`: nothing was reserved; write the event through the
/// general functions, which take the slow path).
#[inline(always)]
pub(crate) fn reserve(site: Site, words: usize) -> Option<Reserved<'static>> {
    let local = thread::local();
    let record = local.cursor.reserve(site.token(), words)?;
    // The hot path is never crash-safe: such a session keeps the gate
    // closed (its records need the filler protocol of the slow path).
    let store = Store::begin(record.slots(), words, false);
    Some(Reserved {
        store,
        base: local.header_base(site),
        record,
    })
}

impl Reserved<'_> {
    /// Stores word `i` (1 up to the size reserved, excluded).
    #[inline(always)]
    pub(crate) fn put(&self, i: usize, w: u64) {
        self.store.put(i, w);
    }

    /// Stores the header of an event of type `ty` with `args` arguments,
    /// then publishes the record (every other word stored).
    #[inline(always)]
    pub(crate) fn publish(self, ty: u64, args: usize) {
        let words = self.record.slots().len();
        self.store
            .end(simple::event_header(self.base, ty, args, words));
        self.record.publish();
    }
}

/// When an event happened: `start`, a duration complete event's start
/// (`None` for the other events); `at`, the event's timestamp or a complete
/// event's end (`None`: the clock, read as the record is written).
#[derive(Clone, Copy)]
pub(super) struct Times {
    pub(super) start: Option<u64>,
    pub(super) at: Option<u64>,
}

impl Times {
    const NOW: Times = Times {
        start: None,
        at: None,
    };
}

/// The hot path: the simple layout through the thread's cursor, if its
/// gate is open for the site's session and the record fits the chunk.
/// `false`: nothing was written; take the slow path.
#[inline(always)]
fn try_fast(site: Site, ty: u64, times: Times, extra: Option<u64>, args: &[ArgValue<'_>]) -> bool {
    let Some(layout) = Layout::of(site, extra.is_some(), args) else {
        return false;
    };
    let local = thread::local();
    // The site's token equals the gate's only for a site of the thread's
    // session with every ref indexed (`crate::callsite`).
    let Some(record) = local.cursor.reserve(site.token(), layout.words) else {
        return false;
    };
    let (ts, extra) = stamps(local.use_tsc(), times, extra);
    let store = Store::begin(record.slots(), layout.words, false);
    layout.store(store, local.header_base(site), ty, ts, args, extra);
    record.publish();
    true
}

/// Calls [`slow`] with a copy of `args` made on the way (up to four of
/// them): the caller's argument array is then only read by the hot path,
/// so the compiler keeps it in registers instead of storing it to memory
/// before every event for a slow path that rarely runs (the copy's stores
/// happen only here). Inlined, the length is a constant and one arm
/// remains.
#[inline(always)]
fn slow_copied(site: Site, ty: u64, times: Times, extra: Option<u64>, args: &[ArgValue<'_>]) {
    let (callsite, word) = (site.callsite, site.word);
    match *args {
        [] => slow(callsite, word, ty, times, extra, &[]),
        [a] => slow(callsite, word, ty, times, extra, &[a]),
        [a, b] => slow(callsite, word, ty, times, extra, &[a, b]),
        [a, b, c] => slow(callsite, word, ty, times, extra, &[a, b, c]),
        [a, b, c, d] => slow(callsite, word, ty, times, extra, &[a, b, c, d]),
        _ => slow(callsite, word, ty, times, extra, args),
    }
}

#[cold]
#[inline(never)]
fn slow(
    callsite: &'static Callsite,
    word: u64,
    ty: u64,
    times: Times,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) {
    // The site as two words (a `Site` passed whole would be passed in
    // memory, keeping it on the hot path's stack).
    let site = Site::from_parts(callsite, word);
    with_writer(site, |w| event_in(w, site, ty, times, extra, args));
}

/// An event through the writer: the simple layout when the site, the
/// thread and the arguments allow it, else the general encoder.
#[inline(always)]
fn event_in(
    w: &mut Writer,
    site: Site,
    ty: u64,
    times: Times,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) {
    if !w.ready(site) {
        return;
    }
    let layout = match site.has_inline() || w.inline_thread {
        true => None,
        false => Layout::of(site, extra.is_some(), args),
    };
    let Some(layout) = layout else {
        return general::event(w, site, ty, times, extra, args);
    };
    let (ts, extra) = stamps(w.use_tsc, times, extra);
    let (crash_safe, base) = (w.crash_safe, simple::header_base(site, w.thread_bits));
    let Some(record) = w.reserve(layout.words) else {
        return;
    };
    let store = Store::begin(record.slots(), layout.words, crash_safe);
    layout.store(store, base, ty, ts, args, extra);
    record.publish();
}

/// The timestamp and trailing word of an event: normally now (or `at`)
/// and `extra`; for a duration complete event (`start` given), `start` and
/// now (or `at`).
#[inline(always)]
fn stamps(use_tsc: bool, times: Times, extra: Option<u64>) -> (u64, Option<u64>) {
    let now = match times.at {
        Some(at) => at,
        None => clock::read(use_tsc),
    };
    match times.start {
        Some(s) => (s, Some(now)),
        None => (now, extra),
    }
}

/// Emits a log record.
pub(crate) fn log(site: Site, message: &str) {
    with_writer(site, |w| {
        if w.ready(site) {
            general::log(w, message);
        }
    });
}

/// Emits a blob record named by the site's name (see `general::blob`).
pub(crate) fn blob(site: Site, data: &[u8]) {
    with_writer(site, |w| {
        if w.ready(site) {
            general::blob(w, site, data);
        }
    });
}

static NEXT_ASYNC_ID: AtomicU64 = AtomicU64::new(1);

/// A process-unique id for async and flow events.
pub(crate) fn next_async_id() -> u64 {
    NEXT_ASYNC_ID.fetch_add(1, Ordering::Relaxed)
}
