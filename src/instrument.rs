//! What macro expansions call besides the runtime's hot path: owned
//! argument values, the duration scope guard and the `async fn` wrapper.
//!
//! Everything here is reached through `fxt::__macro_support` and is not
//! public API. It is built only on the runtime's emit functions
//! (`duration_complete`, `async_begin`, `async_end`, `now`,
//! `next_async_id`).

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use fxt_format::encode::{ArgValue, StringRef};
use fxt_runtime::__macro_support::{
    async_begin, async_end, duration_complete, log, next_async_id, now, Callsite, IntoArgValue,
    Site,
};

use crate::CounterValue;

/// Whether instrumentation is compiled in (`false` with the `disabled`
/// feature). Expansions test it through [`site`], so with the feature on,
/// every call site folds to nothing while its arguments still type-check.
pub const ENABLED: bool = !cfg!(feature = "disabled");

/// The call site's enabled state: one relaxed load and a branch, or a
/// constant `None` when instrumentation is compiled out.
#[inline(always)]
pub fn site(callsite: &'static Callsite) -> Option<Site> {
    if ENABLED {
        callsite.site()
    } else {
        None
    }
}

/// The FXT value of an argument (borrowed; used by records written at once).
#[inline(always)]
pub fn arg<T: IntoArgValue + ?Sized>(value: &T) -> ArgValue<'_> {
    value.into_arg_value()
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
    OwnedArg::new(value.into_arg_value())
}

/// The values of captured arguments.
#[inline]
fn values<const N: usize>(args: &[OwnedArg; N]) -> [ArgValue<'_>; N] {
    args.each_ref().map(OwnedArg::as_arg_value)
}

/// A duration that ends when this guard is dropped, on every way out of the
/// scope (return, `?`, a panic unwinding). Returned by
/// `trace_duration_scope!` and declared by `#[trace_duration]`.
///
/// Its `Drop` writes one *duration complete* record: begin is when the guard
/// was made, end is the drop.
#[must_use = "the duration ends when this guard is dropped: bind it with `let _scope = ...` (not `let _ = ...`)"]
pub struct DurationScope<const N: usize> {
    active: Option<ActiveDuration<N>>,
}

struct ActiveDuration<const N: usize> {
    site: Site,
    start: u64,
    args: [OwnedArg; N],
}

impl<const N: usize> DurationScope<N> {
    /// Starts a duration at the call site (now).
    #[inline]
    pub fn enabled(site: Site, args: [OwnedArg; N]) -> Self {
        DurationScope {
            active: Some(ActiveDuration {
                site,
                start: now(),
                args,
            }),
        }
    }

    /// A guard that writes nothing.
    #[inline(always)]
    pub const fn disabled() -> Self {
        DurationScope { active: None }
    }
}

impl<const N: usize> Drop for DurationScope<N> {
    #[inline]
    fn drop(&mut self) {
        if let Some(d) = &self.active {
            duration_complete(d.site, d.start, &values(&d.args));
        }
    }
}

impl<const N: usize> fmt::Debug for DurationScope<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurationScope")
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
///   (`next_async_id()`), and the arguments;
/// * every poll: a *duration complete* record on the polling thread (a
///   guard, so a panicking poll is recorded too), with the arguments;
/// * completion, or drop before completion (cancellation, unwinding): the
///   *async end* record with the same id.
///
/// It holds the body future by `Pin<&mut F>` (pinned on the stack of the
/// outer `async fn` with `core::pin::pin!`), so it is `Unpin` and needs no
/// unsafe projection.
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
            start: now(),
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
