//! One module per tracer under comparison, each a [`Tracer`].
//!
//! Every adapter installs process-global state (a reporter, a subscriber, a
//! client thread), so build each at most once per process; the `bench-table`
//! binary runs each cell in its own process.

pub mod fastrace;
pub mod fxt;
#[cfg(feature = "perfetto-sdk")]
pub mod perfetto_sdk;
pub mod puffin;
pub mod tracing_chrome;
pub mod tracy;

use crate::floor::{Cursor, Floor};
use crate::harness::Tracer;

/// Every tracer name [`by_name`] accepts, in table column order.
///
/// `floor` is the true floor (plain thread-local cursor, plain stores);
/// `floor-atomic` and `floor-shared` are the atomic alternatives (see
/// [`crate::floor`]). `fxt` is a oneshot session with `Config::new()`
/// (what a user gets: drained to its file while it runs), `fxt-prefault`
/// the same with `.prefault(true)`, `fxt-memory` with `.drain(false)` (the
/// trace kept in memory until it finishes, the default before draining);
/// the circular and streaming modes come in the default and prefaulted
/// variants. `perfetto-sdk` needs the crate feature of that name
/// ([`built`]).
pub const NAMES: [&str; 17] = [
    "floor",
    "floor-fresh",
    "floor-atomic",
    "floor-shared",
    "fxt",
    "fxt-prefault",
    "fxt-memory",
    "fxt-circular",
    "fxt-circular-prefault",
    "fxt-streaming",
    "fxt-streaming-prefault",
    "fastrace",
    "tracy",
    "puffin",
    "tracing-chrome",
    "fxt-crash-safe",
    "perfetto-sdk",
];

/// Whether the tracer `name` is in this build: the Perfetto SDK (a vendored
/// C++ build) only with the `perfetto-sdk` feature.
pub fn built(name: &str) -> bool {
    name != "perfetto-sdk" || cfg!(feature = "perfetto-sdk")
}

/// The fxt variant a name of [`NAMES`] stands for: mode, prefault, crash
/// safety, drain (oneshot). `None` for the other tracers.
pub fn fxt_variant(name: &str) -> Option<(::fxt::Mode, bool, bool, bool)> {
    use ::fxt::Mode::*;
    Some(match name {
        "fxt" => (Oneshot, false, false, true),
        "fxt-prefault" => (Oneshot, true, false, true),
        "fxt-memory" => (Oneshot, false, false, false),
        "fxt-circular" => (Circular, false, false, true),
        "fxt-circular-prefault" => (Circular, true, false, true),
        "fxt-streaming" => (Streaming, false, false, true),
        "fxt-streaming-prefault" => (Streaming, true, false, true),
        "fxt-crash-safe" => (Oneshot, false, true, true),
        _ => return None,
    })
}

/// Builds the fxt variant `name` with a buffer of `bytes` (see
/// [`fxt_variant`]).
pub fn fxt_with_buffer(name: &'static str, bytes: usize) -> Option<fxt::Fxt> {
    let (mode, prefault, crash_safe, drain) = fxt_variant(name)?;
    let config = ::fxt::Config::new()
        .mode(mode)
        .buffer_size(bytes)
        .crash_safe(crash_safe)
        .drain(drain);
    // The plain variants keep the default (`Prefault::Background`, what a
    // program gets): `.prefault(false)` would be `Prefault::Off`.
    let config = if prefault {
        config.prefault(true)
    } else {
        config
    };
    Some(fxt::Fxt::configured(config).named(name))
}

/// Builds the tracer called `name` (see [`NAMES`]), installing its global
/// state. Returns `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Box<dyn Tracer>> {
    if let Some((mode, ..)) = fxt_variant(name) {
        let name = NAMES.iter().find(|n| **n == name)?;
        return Some(Box::new(fxt_with_buffer(name, fxt::default_buffer(mode))?));
    }
    Some(match name {
        "floor" => Box::new(Floor::new(Cursor::Plain)),
        "floor-fresh" => Box::new(Floor::new(Cursor::PlainFresh)),
        "floor-atomic" => Box::new(Floor::new(Cursor::PerThread)),
        "floor-shared" => Box::new(Floor::new(Cursor::Shared)),
        "fastrace" => Box::new(fastrace::Fastrace::new()),
        "tracy" => Box::new(tracy::Tracy::new()),
        "puffin" => Box::new(puffin::Puffin::new()),
        "tracing-chrome" => Box::new(tracing_chrome::TracingChrome::new()),
        #[cfg(feature = "perfetto-sdk")]
        "perfetto-sdk" => Box::new(perfetto_sdk::PerfettoSdk::new()),
        _ => return None,
    })
}
