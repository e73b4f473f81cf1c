//! One module per tracer under comparison, each a [`Tracer`].
//!
//! Every adapter installs process-global state (a reporter, a subscriber, a
//! client thread), so build each at most once per process; the `bench-table`
//! binary runs each cell in its own process.

pub mod fastrace;
pub mod fxt;
pub mod puffin;
pub mod tracing_chrome;
pub mod tracy;

use crate::floor::{Cursor, Floor};
use crate::harness::Tracer;

/// Every tracer name [`by_name`] accepts, in table column order.
pub const NAMES: [&str; 9] = [
    "floor-shared",
    "floor",
    "fxt-oneshot",
    "fxt-circular",
    "fxt-streaming",
    "fastrace",
    "tracy",
    "puffin",
    "tracing-chrome",
];

/// Builds the tracer called `name` (see [`NAMES`]), installing its global
/// state. Returns `None` for an unknown name.
pub fn by_name(name: &str) -> Option<Box<dyn Tracer>> {
    Some(match name {
        "floor-shared" => Box::new(Floor::new(Cursor::Shared)),
        "floor" => Box::new(Floor::new(Cursor::PerThread)),
        "fxt-oneshot" => Box::new(fxt::Fxt::new(::fxt::Mode::Oneshot)),
        "fxt-circular" => Box::new(fxt::Fxt::new(::fxt::Mode::Circular)),
        "fxt-streaming" => Box::new(fxt::Fxt::new(::fxt::Mode::Streaming)),
        "fastrace" => Box::new(fastrace::Fastrace::new()),
        "tracy" => Box::new(tracy::Tracy::new()),
        "puffin" => Box::new(puffin::Puffin::new()),
        "tracing-chrome" => Box::new(tracing_chrome::TracingChrome::new()),
        _ => return None,
    })
}
