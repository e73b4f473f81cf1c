//! The one layer that macro expansions call. **Not public API**: anything
//! here may change in any release.
//!
//! Generated code names it as `<fxt path>::__macro_support` (`$crate` for
//! the function-like macros, `::fxt` or the `crate = path` option for
//! `#[trace_duration]`). The `fxt` crate re-exports this module whole and
//! adds only what depends on `fxt` itself: the `disabled` feature's
//! `ENABLED` constant with the `site` gate built on it, and the `__trace!`
//! procedural macro. Expansions reach `core` through [`core`] here, so a
//! user's own module named `core` cannot break them.
//!
//! Pattern of an expansion (`trace_instant!("cat", "name", "a" => a, "b" => b)`):
//!
//! ```
//! use fxt_runtime::__macro_support as ms;
//! let (a, b) = (1u64, "text");
//! {
//!     static KEYS: [ms::KeyCache; 2] = [ms::KeyCache::NEW, ms::KeyCache::NEW];
//!     static SITE: ms::Callsite = ms::Callsite::new("cat", "name", &["a", "b"], &KEYS);
//!     if let ms::core::option::Option::Some(site) = SITE.site() {
//!         ms::instant(site, &[
//!             ms::arg(&a, &mut ms::ArgScratch::new()),
//!             ms::arg(&b, &mut ms::ArgScratch::new()),
//!         ]);
//!     }
//! }
//! ```
//!
//! What is here:
//!
//! * the call site statics ([`Callsite`], [`KeyCache`]) and the proof that
//!   one is enabled ([`Site`]);
//! * one emit function per record kind, each a thin call into the engine;
//! * argument values: borrowed ([`arg`], [`counter_arg`], [`blob_bytes`])
//!   for records written at once, owned ([`capture`], [`OwnedArg`]) for
//!   records written when a scope ends;
//! * the guards and futures that write those later records:
//!   [`DurationGuard`] (`trace_duration_scope!` and `#[trace_duration]` on
//!   functions) and [`Instrumented`] (`#[trace_duration]` on `async fn` and
//!   `#[async_trait]` methods);
//! * [`log_fmt`], which formats a `trace_log!` message only when enabled.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

pub use ::core;
pub use fxt_format::encode::{ArgValue, StringRef};

pub use crate::args::{ArgScratch, CounterValue, IntoArgValue};
pub use crate::callsite::{Callsite, KeyCache, Site};

use crate::emit;
use fxt_format::encode::header::event_type as ty;

/// Ticks of the session clock (the timestamp unit of the trace).
#[inline]
pub fn now() -> u64 {
    crate::clock::now()
}

/// The start of a duration on the calling thread: [`now`], moved by less
/// than a nanosecond when needed so that durations started one inside the
/// other begin on distinct nanoseconds (see `thread::Local::duration_start`).
#[inline(always)]
pub fn duration_start() -> u64 {
    crate::thread::local().duration_start(crate::clock::now(), crate::clock::start_step())
}

/// Instant event.
#[inline]
pub fn instant(site: Site, args: &[ArgValue<'_>]) {
    emit::event(site, ty::INSTANT, None, args)
}

/// Counter event: each numeric argument is a series of counter `id`.
#[inline]
pub fn counter(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::COUNTER, Some(id), args)
}

/// Duration begin event.
#[inline]
pub fn duration_begin(site: Site, args: &[ArgValue<'_>]) {
    emit::event(site, ty::DURATION_BEGIN, None, args)
}

/// Duration end event.
#[inline]
pub fn duration_end(site: Site, args: &[ArgValue<'_>]) {
    emit::event(site, ty::DURATION_END, None, args)
}

/// Duration complete event from `start` (a [`now`] value) to now.
#[inline]
pub fn duration_complete(site: Site, start: u64, args: &[ArgValue<'_>]) {
    emit::duration_complete(site, start, args)
}

/// Async begin event.
#[inline]
pub fn async_begin(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::ASYNC_BEGIN, Some(id), args)
}

/// Async instant event.
#[inline]
pub fn async_instant(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::ASYNC_INSTANT, Some(id), args)
}

/// Async end event.
#[inline]
pub fn async_end(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::ASYNC_END, Some(id), args)
}

/// Flow begin event.
#[inline]
pub fn flow_begin(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::FLOW_BEGIN, Some(id), args)
}

/// Flow step event.
#[inline]
pub fn flow_step(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::FLOW_STEP, Some(id), args)
}

/// Flow end event.
#[inline]
pub fn flow_end(site: Site, id: u64, args: &[ArgValue<'_>]) {
    emit::event(site, ty::FLOW_END, Some(id), args)
}

/// Log record (the site's category gates it; its name is not written).
#[inline]
pub fn log(site: Site, message: &str) {
    emit::log(site, message)
}

/// Blob record named by the site's name; a large blob record (with the
/// site's category and name, a timestamp and the thread) when the data does
/// not fit a normal record (about 32 KiB). Large blob records are kept
/// outside the ring, up to a quarter of the buffer size in total (beyond
/// that they are dropped and counted), and written after the durable
/// records.
#[inline]
pub fn blob(site: Site, data: &[u8]) {
    emit::blob(site, data)
}

/// A process-unique correlation id for async and flow events (never 0).
#[inline]
pub fn next_async_id() -> u64 {
    emit::next_async_id()
}

/// The FXT value of an argument, for records written at once: borrowed
/// from the value, or from `scratch` (a temporary of the expansion's
/// statement, so it lives as long as the record's argument list).
#[inline(always)]
pub fn arg<'a, T: IntoArgValue + ?Sized>(
    value: &'a T,
    scratch: &'a mut ArgScratch,
) -> ArgValue<'a> {
    value.into_arg_value(scratch)
}

/// The FXT value of a counter series: numbers only.
#[inline(always)]
pub fn counter_arg<T: CounterValue + ?Sized>(value: &T) -> ArgValue<'static> {
    value.counter_value()
}

/// The bytes of `trace_blob!`.
#[inline(always)]
pub fn blob_bytes<T: AsRef<[u8]> + ?Sized>(value: &T) -> &[u8] {
    value.as_ref()
}

/// An argument value kept until a record written later (a duration's end):
/// numbers are copied, inline strings and blobs copied into owned buffers.
/// Only built on the enabled path.
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedArg {
    /// A value that borrows nothing.
    Value(ArgValue<'static>),
    /// An inline string.
    Str(String),
    /// A blob argument.
    Blob(Vec<u8>),
}

impl OwnedArg {
    /// Detaches a value from what it borrows.
    #[inline]
    pub fn new(value: ArgValue<'_>) -> OwnedArg {
        let owned = match value {
            ArgValue::Null => ArgValue::Null,
            ArgValue::I32(v) => ArgValue::I32(v),
            ArgValue::U32(v) => ArgValue::U32(v),
            ArgValue::I64(v) => ArgValue::I64(v),
            ArgValue::U64(v) => ArgValue::U64(v),
            ArgValue::F64(v) => ArgValue::F64(v),
            ArgValue::Pointer(v) => ArgValue::Pointer(v),
            ArgValue::Koid(v) => ArgValue::Koid(v),
            ArgValue::Bool(v) => ArgValue::Bool(v),
            ArgValue::Str(StringRef::Empty) => ArgValue::Str(StringRef::Empty),
            ArgValue::Str(StringRef::Index(i)) => ArgValue::Str(StringRef::Index(i)),
            ArgValue::Str(StringRef::Inline(s)) => return OwnedArg::Str(s.to_owned()),
            ArgValue::Blob(b) => return OwnedArg::Blob(b.to_vec()),
        };
        OwnedArg::Value(owned)
    }

    /// The value to write.
    #[inline]
    pub fn as_arg_value(&self) -> ArgValue<'_> {
        match self {
            OwnedArg::Value(v) => *v,
            OwnedArg::Str(s) => ArgValue::Str(StringRef::Inline(s)),
            OwnedArg::Blob(b) => ArgValue::Blob(b),
        }
    }
}

/// Captures an argument of a record written later.
#[inline]
pub fn capture<T: IntoArgValue + ?Sized>(value: &T) -> OwnedArg {
    OwnedArg::new(value.into_arg_value(&mut ArgScratch::new()))
}

/// The values of captured arguments.
#[inline]
fn values<const N: usize>(args: &[OwnedArg; N]) -> [ArgValue<'_>; N] {
    args.each_ref().map(OwnedArg::as_arg_value)
}

/// A duration that ends when this guard is dropped, on every way out of the
/// scope (return, `?`, a panic unwinding), with `N` captured arguments.
/// Returned by `trace_duration_scope!` and declared by `#[trace_duration]`
/// on functions.
///
/// Its `Drop` writes one *duration complete* record: begin is when the guard
/// was made, end is the drop.
#[must_use = "the duration ends when this guard is dropped: bind it with `let _scope = ...` (not `let _ = ...`)"]
pub struct DurationGuard<const N: usize = 0> {
    active: Option<ActiveDuration<N>>,
}

struct ActiveDuration<const N: usize> {
    // The site as its two words (a `Site` also carries its key caches,
    // which the drop reads back from the call site: fewer stores when the
    // guard is made, in every traced call).
    callsite: &'static Callsite,
    word: u64,
    start: u64,
    args: [OwnedArg; N],
}

impl<const N: usize> DurationGuard<N> {
    /// Starts a duration at the call site (now).
    #[inline(always)]
    pub fn enabled(site: Site, args: [OwnedArg; N]) -> Self {
        DurationGuard {
            active: Some(ActiveDuration {
                callsite: site.callsite,
                word: site.word,
                start: duration_start(),
                args,
            }),
        }
    }

    /// A guard that writes nothing.
    #[inline(always)]
    pub const fn disabled() -> Self {
        DurationGuard { active: None }
    }

    /// Ends the duration now (what dropping the guard does), inlined into
    /// the caller: `#[trace_duration]` ends its guard this way at the end
    /// of the function body, so the record is written by code specialized
    /// for the call site rather than by the guard's shared drop code.
    #[inline(always)]
    pub fn end(mut self) {
        let active = self.active.take();
        // Nothing left to drop in `self` (its duration is taken), so its
        // drop code need not run at all.
        core::mem::forget(self);
        if let Some(d) = active {
            let site = Site::from_parts(d.callsite, d.word);
            duration_complete(site, d.start, &values(&d.args));
        }
    }
}

impl DurationGuard {
    /// A duration without arguments, started now when `site` is `Some`
    /// (a guard that writes nothing otherwise).
    #[inline]
    pub fn new(site: Option<Site>) -> Self {
        match site {
            Some(site) => DurationGuard::enabled(site, []),
            None => DurationGuard::disabled(),
        }
    }
}

impl<const N: usize> Drop for DurationGuard<N> {
    // Always inlined: the hot path (`emit`) is then specialized for the
    // call site, instead of one out-of-line copy per argument count.
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(d) = &self.active {
            let site = Site::from_parts(d.callsite, d.word);
            duration_complete(site, d.start, &values(&d.args));
        }
    }
}

impl<const N: usize> fmt::Debug for DurationGuard<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurationGuard")
            .field("enabled", &self.active.is_some())
            .finish()
    }
}

/// What `#[trace_duration]` records for an `async fn` (`async = "..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AsyncMode {
    /// Async begin/end around the whole call, and a duration per poll.
    Both,
    /// Only the async begin/end pair (how long the call took).
    Span,
    /// Only a duration per poll (where it ran).
    Polls,
}

impl AsyncMode {
    fn span(self) -> bool {
        matches!(self, AsyncMode::Both | AsyncMode::Span)
    }

    fn polls(self) -> bool {
        matches!(self, AsyncMode::Both | AsyncMode::Polls)
    }
}

/// The call site and captured arguments of a traced `async fn` call.
pub struct AsyncScope<const N: usize> {
    active: Option<(Site, AsyncMode, [OwnedArg; N])>,
}

impl<const N: usize> AsyncScope<N> {
    /// Traces the call.
    #[inline]
    pub fn enabled(site: Site, mode: AsyncMode, args: [OwnedArg; N]) -> Self {
        AsyncScope {
            active: Some((site, mode, args)),
        }
    }

    /// Traces nothing.
    #[inline(always)]
    pub const fn disabled() -> Self {
        AsyncScope { active: None }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Progress {
    NotStarted,
    Running,
    Done,
}

/// The future of a traced `async fn` body.
///
/// * first poll: an *async begin* record with a fresh id
///   ([`next_async_id`]), and the arguments;
/// * every poll: a *duration complete* record on the polling thread (a
///   guard, so a panicking poll is recorded too), with the arguments;
/// * completion, or drop before completion (cancellation, unwinding): the
///   *async end* record with the same id.
///
/// It holds the body future by `Pin<&mut F>` (pinned on the stack of the
/// outer `async` block with `core::pin::pin!`), so it is `Unpin` and needs
/// no unsafe projection.
#[must_use = "futures do nothing unless polled"]
pub struct Instrumented<'a, F: Future, const N: usize> {
    inner: Pin<&'a mut F>,
    scope: AsyncScope<N>,
    id: u64,
    progress: Progress,
}

impl<'a, F: Future, const N: usize> Instrumented<'a, F, N> {
    /// Wraps the pinned body future.
    #[inline]
    pub fn new(inner: Pin<&'a mut F>, scope: AsyncScope<N>) -> Self {
        Instrumented {
            inner,
            scope,
            id: 0,
            progress: Progress::NotStarted,
        }
    }
}

/// Writes a duration complete record when dropped (around one poll).
struct PollGuard<'v, 'a> {
    site: Site,
    start: u64,
    values: &'v [ArgValue<'a>],
}

impl Drop for PollGuard<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        duration_complete(self.site, self.start, self.values);
    }
}

impl<F: Future, const N: usize> Future for Instrumented<'_, F, N> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let Some((site, mode, args)) = &this.scope.active else {
            return this.inner.as_mut().poll(cx);
        };
        let (site, mode) = (*site, *mode);
        let values = values(args);
        if this.progress == Progress::NotStarted {
            this.progress = Progress::Running;
            if mode.span() {
                this.id = next_async_id();
                async_begin(site, this.id, &values);
            }
        }
        let guard = mode.polls().then(|| PollGuard {
            site,
            start: duration_start(),
            values: &values,
        });
        let result = this.inner.as_mut().poll(cx);
        drop(guard);
        if result.is_ready() {
            this.progress = Progress::Done;
            if mode.span() {
                // The arguments are on the begin record already.
                async_end(site, this.id, &[]);
            }
        }
        result
    }
}

impl<F: Future, const N: usize> Drop for Instrumented<'_, F, N> {
    fn drop(&mut self) {
        if self.progress != Progress::Running {
            return;
        }
        if let Some((site, mode, _)) = &self.scope.active {
            if mode.span() {
                async_end(*site, self.id, &[]);
            }
        }
    }
}

/// `trace_log!`: the message is formatted only here, on the enabled path,
/// into a stack buffer (no allocation up to 1 KiB; longer messages are
/// formatted into a `String`). A message without arguments is not formatted
/// at all.
#[inline(never)]
pub fn log_fmt(site: Site, args: fmt::Arguments<'_>) {
    if let Some(text) = args.as_str() {
        log(site, text);
        return;
    }
    let mut buf = StackBuf {
        bytes: [0; 1024],
        len: 0,
    };
    if fmt::write(&mut buf, args).is_ok() {
        // Whole `&str` pieces were copied, so the bytes are UTF-8.
        if let Ok(text) = core::str::from_utf8(&buf.bytes[..buf.len]) {
            log(site, text);
            return;
        }
    }
    log(site, &std::fmt::format(args));
}

struct StackBuf {
    bytes: [u8; 1024],
    len: usize,
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dest = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        dest.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
