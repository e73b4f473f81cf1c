//! Fast [Fuchsia Trace Format](https://fuchsia.dev/fuchsia-src/reference/tracing/trace-format)
//! (FXT) instrumentation for Rust: annotate functions, call macros in hot
//! loops, collect the trace to a `.fxt` file, open it in
//! [Perfetto UI](https://ui.perfetto.dev).
//!
//! ```
//! use fxt::{trace_counter, trace_duration, trace_instant, Config};
//!
//! #[trace_duration(args(n))]
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
//! }
//!
//! let session = fxt::start(Config::new()).expect("no other session is running");
//! for i in 0..4u64 {
//!     trace_instant!("demo", "tick", "i" => i);
//!     trace_counter!("demo", "progress", "done" => i);
//!     fib(i);
//! }
//! // Collect into memory (`session.finish()` would write `trace.fxt`).
//! let (bytes, stats) = session.finish_to_vec().expect("collected");
//! assert!(stats.records_written > 0);
//! assert!(!bytes.is_empty());
//! ```
//!
//! # What to write
//!
//! | form | record |
//! |---|---|
//! | [`#[trace_duration]`](macro@trace_duration) on a function | one duration complete record per call (plus async begin/end for `async fn`) |
//! | [`trace_duration_scope!`] | a guard: duration complete record when it drops |
//! | [`trace_duration_begin!`] / [`trace_duration_end!`] | duration begin / end records |
//! | [`trace_instant!`] | instant event |
//! | [`trace_counter!`] | counter event |
//! | [`trace_async_begin!`] / [`trace_async_instant!`] / [`trace_async_end!`] | async events with an id |
//! | [`trace_flow_begin!`] / [`trace_flow_step!`] / [`trace_flow_end!`] | flow events with an id |
//! | [`trace_log!`] | log record (formatted only when enabled) |
//! | [`trace_blob!`] | blob record |
//!
//! Every function-like form starts with a category and a name, both
//! `&'static str` constants (string literals or `const`s), then the form's
//! own parts, then up to 15 arguments `"key" => value`, separated by
//! commas (a trailing comma is fine). Argument values are typed by their Rust
//! type through [`IntoArgValue`].
//!
//! # Cost
//!
//! Each call site is a `static` that caches whether its category is on in
//! the live session, and its interned strings. A disabled call site costs
//! one relaxed atomic load and a branch; the argument expressions are not
//! evaluated. An enabled one adds only the call that writes the record into
//! the thread's chunk of the buffer: no allocation, hashing or formatting
//! (except: `trace_log!` formats its message, and [`trace_duration_scope!`]
//! and `#[trace_duration]` copy string and blob arguments into owned
//! buffers, because their record is written when the scope ends).
//!
//! **Argument expressions (and ids) are evaluated only when the call site is
//! enabled**, so do not give them side effects the program relies on.
//!
//! # Compiling instrumentation out
//!
//! With the cargo feature **`disabled`**, every macro expands to code guarded
//! by a constant `false` (`__macro_support::ENABLED`), which the compiler
//! removes: nothing is recorded and nothing is left in the hot path. The
//! arguments are still type-checked, so code that builds with the feature
//! builds without it. (The feature lives in this crate because a procedural
//! macro cannot see its user's features: the expansions ask this crate.)
//!
//! # Sessions
//!
//! One session traces the whole process at a time: [`start`] it with a
//! [`Config`] (or [`Config::from_env`]), and finish it to a file, a writer or
//! memory. Name threads with [`set_thread_name`] so the trace viewer shows
//! them.
//!
//! # Tracing on demand: providers
//!
//! A long-running program can instead stay dormant until a trace manager
//! (`fxt trace`, of the same user or root) turns tracing on from outside,
//! for a window, a snapshot or until stopped, without a restart:
//! [`register_provider`] makes the process such a provider until its guard
//! is dropped. Dormant, it has no buffer and its call sites cost what they
//! cost with no session; one thread sleeps on the control socket.
//!
//! ```no_run
//! let _provider = fxt::register_provider("my-server")?;
//! // ... serve requests, instrumented with the macros ...
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub use fxt_format as format;
/// Sampled allocations: `#[global_allocator] static A:
/// fxt::alloc::Sampled<std::alloc::System> =
/// fxt::alloc::Sampled::new(std::alloc::System);`, then
/// [`Config::alloc_sample_bytes`] (or `FXT_ALLOC_SAMPLE`) for a session.
pub use fxt_runtime::alloc;
#[cfg(feature = "sync")]
pub use fxt_runtime::sync;
pub use fxt_runtime::task;
#[cfg(feature = "tokio")]
pub use fxt_runtime::task::tokio;

/// Traces every call of a function as one **duration**.
///
/// ```
/// use fxt::trace_duration;
///
/// #[trace_duration]                                     // name "parse", category = this crate's name
/// fn parse(input: &str) -> Result<u32, std::num::ParseIntError> {
///     input.trim().parse()
/// }
///
/// #[trace_duration(name = "load config", category = "io", args(path, retries = 3))]
/// fn load(path: &str) -> usize {
///     path.len()
/// }
///
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// assert_eq!(parse(" 42 "), Ok(42));
/// assert_eq!(load("app.toml"), 8);
/// # let (bytes, _) = session.finish_to_vec().unwrap();
/// # let records = fxt::format::decode::decode_all(&bytes).unwrap();
/// # assert!(records.iter().any(|r| matches!(r, fxt::format::decode::Record::Event(e) if e.name == "load config")));
/// ```
///
/// # What is recorded
///
/// * **Functions**: one *duration complete* record (begin and end
///   timestamps) per call, written when the call ends: by returning, by `?`,
///   or by a panic unwinding through it (a guard's `Drop` writes it).
/// * **`async fn`**: by default (`async = "both"`) an *async begin* record
///   at the first poll and an *async end* record at completion, with one id
///   from [`next_async_id`], so the viewer shows the whole call even when it
///   moves between threads; plus one *duration complete* record per poll,
///   on the thread that polled, showing where it actually ran. A future
///   dropped before completion gets its async end record at the drop.
///   `async = "span"` records only the begin/end pair, `async = "polls"`
///   only the polls.
///
/// Works on free functions, methods (`self`, `&self`, `&mut self`), trait
/// methods with a body and trait impl methods, generic functions, functions
/// returning `impl Trait`, `unsafe fn`, `extern "C" fn`, `async fn` (also in
/// traits), functions a `macro_rules!` macro writes (`$vis fn $name() $body`,
/// fragments in the options), and the methods of `#[async_trait]` traits and
/// impls: there it recognises async-trait's rewriting (a function returning
/// `Pin<Box<dyn Future>>` whose body is `Box::pin(async move { .. })`) and
/// traces the boxed future as an `async fn` (begin/end and one duration per
/// poll), not the call that boxes it. It rejects `const fn` and declarations
/// without a body.
/// A function whose body does not parse yet keeps its body untouched, so
/// rustc reports the real syntax error.
///
/// # Options
///
/// | option | default | meaning |
/// |---|---|---|
/// | `name = ...` | the function's name | the event name: a `&'static str` constant (literal, `const`, `concat!`; not `Self::..`) |
/// | `category = ...` | the crate's name (`CARGO_CRATE_NAME`) | the category, as `name` |
/// | `args(p, key = expr, ...)` | none | arguments to record: a parameter `p` under its own name, or any expression under `key` (up to 15) |
/// | `async = "both" \| "span" \| "polls"` | `"both"` | what an `async fn` (or `#[async_trait]` method) records (see above) |
/// | `crate = path` | `::fxt` | where the `fxt` crate is, if renamed or re-exported |
///
/// Argument expressions are evaluated when the call starts (for an `async
/// fn`: at its first poll), and only when the call site is enabled. Because
/// the record is written when the call ends, their values are kept until
/// then: numbers are copied, strings and byte slices are copied into owned
/// buffers (the one allocation of an enabled traced call that records a
/// string). Types map to FXT types by [`IntoArgValue`].
///
/// # Renamed dependency
///
/// ```
/// extern crate fxt as tracing_fxt;
///
/// #[tracing_fxt::trace_duration(crate = tracing_fxt)]
/// fn step() {}
/// # step();
/// ```
///
/// # Expansion
///
/// The body gets one statement in front: a block-local `static` call site
/// (category, name, argument keys and their interned-string caches) and a
/// guard that is live only if the call site is enabled in the running
/// session. An `async fn` body runs as an inner future wrapped by a future
/// that writes the records. The signature is untouched.
pub use fxt_macros::trace_duration;
pub use fxt_runtime::{
    disable_category, enable_category, install_panic_hook, is_enabled, parse_size, set_thread_name,
    snapshot, snapshot_on_signal, start, start_from_env, tsc_usable, ArgScratch, ClockSource,
    CollectError, Config, CounterValue, HelperScheduling, IntoArgValue, Koid, Mode, Prefault,
    Session, StartError, Stats, DEFAULT_ALLOC_SAMPLE_BYTES, FINISH_GRACE, RECORD_ENV,
};
#[cfg(unix)]
pub use fxt_runtime::{register_provider, ProviderGuard};

/// A process-unique id for [`trace_async_begin!`] and friends, or for flows.
///
/// ```
/// let a = fxt::next_async_id();
/// let b = fxt::next_async_id();
/// assert_ne!(a, b);
/// ```
#[inline]
pub fn next_async_id() -> u64 {
    fxt_runtime::__macro_support::next_async_id()
}

/// What macro expansions call. **Not public API**: it may change in any
/// release.
///
/// It is `fxt_runtime::__macro_support` (the one layer expansions use, see
/// there) plus what depends on this crate: the `disabled` feature
/// ([`ENABLED`](__macro_support::ENABLED) and the [`site`](__macro_support::site)
/// gate built on it) and the `__trace!` engine of the function-like macros.
#[doc(hidden)]
pub mod __macro_support {
    pub use fxt_macros::__trace;
    pub use fxt_runtime::__macro_support::*;

    /// Whether instrumentation is compiled in (`false` with the `disabled`
    /// feature). Expansions test it through [`site`], so with the feature on,
    /// every call site folds to nothing while its arguments still type-check.
    pub const ENABLED: bool = !cfg!(feature = "disabled");

    /// The call site's enabled state: one relaxed load and a branch, or a
    /// constant `None` when instrumentation is compiled out.
    #[inline(always)]
    pub fn site(callsite: &'static Callsite, keys: &'static [KeyCache]) -> Option<Site> {
        if ENABLED {
            callsite.site_with_keys(keys)
        } else {
            None
        }
    }
}

/// Records an **instant** event.
///
/// `trace_instant!(category, name $(, "key" => value)*)`
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// let queue_len = 3u32;
/// fxt::trace_instant!("net", "packet dropped");
/// fxt::trace_instant!("net", "packet dropped", "queue" => queue_len, "reason" => "full");
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_instant {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(instant $crate; $($tokens)*)
    };
}

/// Records a **counter** event: one or more numeric series, drawn as a graph.
///
/// `trace_counter!(category, name $(, id = u64)? $(, "series" => number)+)`
///
/// The optional `id = expr` (default 0) tells apart counters with the same
/// name. Every value must be a number ([`CounterValue`]).
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// let (used, free) = (1024u64, 3072u64);
/// fxt::trace_counter!("mem", "heap", "used" => used, "free" => free);
/// fxt::trace_counter!("mem", "pool", id = 2, "used" => 17u32);
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_counter {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(counter $crate; $($tokens)*)
    };
}

/// Starts a **duration** that ends when the returned guard drops; one
/// duration complete record is written then.
///
/// `trace_duration_scope!(category, name $(, "key" => value)*)`
///
/// Bind the guard to a named variable (`let _scope = ...`): `let _ = ...`
/// would end the duration at once. The arguments are evaluated now and kept
/// until the end (strings copied), only when the call site is enabled.
///
/// (The attribute [`macro@trace_duration`] and a function-like macro cannot
/// share one name in Rust, hence the `_scope` suffix.)
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// fn parse(input: &str) -> usize {
///     let _scope = fxt::trace_duration_scope!("parser", "parse", "len" => input.len());
///     input.split(',').count()
/// }
/// assert_eq!(parse("a,b"), 2);
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_duration_scope {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(duration_scope $crate; $($tokens)*)
    };
}

/// Records a **duration begin** event; pair it with [`trace_duration_end!`]
/// on the same thread.
///
/// `trace_duration_begin!(category, name $(, "key" => value)*)`
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// fxt::trace_duration_begin!("io", "flush", "bytes" => 4096u32);
/// // ... work ...
/// fxt::trace_duration_end!("io", "flush");
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_duration_begin {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(duration_begin $crate; $($tokens)*)
    };
}

/// Records a **duration end** event (see [`trace_duration_begin!`]).
///
/// `trace_duration_end!(category, name $(, "key" => value)*)`
#[macro_export]
macro_rules! trace_duration_end {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(duration_end $crate; $($tokens)*)
    };
}

/// Records an **async begin** event: the start of an operation that may end
/// on another thread, correlated by its id.
///
/// `trace_async_begin!(category, name, id = u64 $(, "key" => value)*)`
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// let id = fxt::next_async_id();
/// fxt::trace_async_begin!("rpc", "request", id = id, "method" => "get");
/// std::thread::spawn(move || {
///     fxt::trace_async_instant!("rpc", "request", id = id, "stage" => "sent");
///     fxt::trace_async_end!("rpc", "request", id = id);
/// })
/// .join()
/// .unwrap();
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_async_begin {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(async_begin $crate; $($tokens)*)
    };
}

/// Records an **async instant** event (see [`trace_async_begin!`]).
///
/// `trace_async_instant!(category, name, id = u64 $(, "key" => value)*)`
#[macro_export]
macro_rules! trace_async_instant {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(async_instant $crate; $($tokens)*)
    };
}

/// Records an **async end** event (see [`trace_async_begin!`]).
///
/// `trace_async_end!(category, name, id = u64 $(, "key" => value)*)`
#[macro_export]
macro_rules! trace_async_end {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(async_end $crate; $($tokens)*)
    };
}

/// Records a **flow begin** event: an arrow from the enclosing duration to
/// the durations that record the step and end events with the same id.
///
/// `trace_flow_begin!(category, name, id = u64 $(, "key" => value)*)`
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// let flow = fxt::next_async_id();
/// {
///     let _send = fxt::trace_duration_scope!("ipc", "send");
///     fxt::trace_flow_begin!("ipc", "message", id = flow);
/// }
/// {
///     let _route = fxt::trace_duration_scope!("ipc", "route");
///     fxt::trace_flow_step!("ipc", "message", id = flow);
/// }
/// {
///     let _receive = fxt::trace_duration_scope!("ipc", "receive");
///     fxt::trace_flow_end!("ipc", "message", id = flow, "ok" => true);
/// }
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_flow_begin {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(flow_begin $crate; $($tokens)*)
    };
}

/// Records a **flow step** event (see [`trace_flow_begin!`]).
///
/// `trace_flow_step!(category, name, id = u64 $(, "key" => value)*)`
#[macro_export]
macro_rules! trace_flow_step {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(flow_step $crate; $($tokens)*)
    };
}

/// Records a **flow end** event (see [`trace_flow_begin!`]).
///
/// `trace_flow_end!(category, name, id = u64 $(, "key" => value)*)`
#[macro_export]
macro_rules! trace_flow_end {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(flow_end $crate; $($tokens)*)
    };
}

/// Records a **log** message, with `format!` syntax.
///
/// `trace_log!(category, "format" $(, format arguments)*)`
///
/// The category gates it like any event; the message is formatted only when
/// the call site is enabled (into a stack buffer up to 1 KiB).
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// let attempt = 3;
/// fxt::trace_log!("net", "retrying connection, attempt {attempt}");
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_log {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(log $crate; $($tokens)*)
    };
}

/// Records a **blob** of bytes (anything `AsRef<[u8]>`), named by `name`.
///
/// `trace_blob!(category, name, bytes)`
///
/// ```
/// # let session = fxt::start(fxt::Config::new()).unwrap();
/// let packet = vec![0x45u8, 0x00, 0x00, 0x54];
/// fxt::trace_blob!("net", "packet", packet);
/// # session.finish_to_vec().unwrap();
/// ```
#[macro_export]
macro_rules! trace_blob {
    ($($tokens:tt)*) => {
        $crate::__macro_support::__trace!(blob $crate; $($tokens)*)
    };
}

#[cfg(feature = "tracing")]
pub mod tracing_layer;

/// README's and the guide's Rust blocks compile (`cargo test --doc`), each
/// page with the features its blocks use. `docs/guide/tasks.md` is not
/// among them: its blocks are fragments of a Tokio program.
#[cfg(doctest)]
mod doc_pages {
    #[doc = include_str!("../README.md")]
    struct Readme;

    #[doc = include_str!("../docs/guide/running-service.md")]
    struct RunningService;

    #[cfg(feature = "tracing")]
    #[doc = include_str!("../docs/guide/instrument.md")]
    struct Instrument;

    #[cfg(feature = "sync")]
    #[doc = include_str!("../docs/guide/locks.md")]
    struct Locks;
}
