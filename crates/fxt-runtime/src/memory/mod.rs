//! Memory: the words a buffer is made of and the rules for
//! storing records into them.
//!
//! * [`atomic`]: the atomics every layer above is written against
//!   (`loom`'s under `cfg(loom)`, so the ring and the cursor are
//!   model-checked as they run).
//! * [`words`]: heap or file-mapped words (`Words`), huge pages, prefault.
//! * [`file_map`]: the shared mapping of a crash-safe output file.
//! * [`prefault`]: faulting pages in ahead of the writers.
//! * [`filler`]: the crash-safe store protocol (filler, body, header), the
//!   one place records are stored so that a file is valid at every moment.
//!
//! Nothing here knows about chunks, sessions or threads.

pub(crate) mod file_map;
pub(crate) mod filler;
pub(crate) mod prefault;
pub(crate) mod words;

/// The atomics the chunk protocol is written against: loom's under
/// `cfg(loom)` (so `tests/loom.rs` checks the code the hot path runs),
/// `core`'s otherwise. Call sites and other `static`s use `core`'s
/// directly: they need `const` constructors, which loom's atomics lack.
pub mod atomic {
    #[cfg(loom)]
    pub use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

    #[cfg(not(loom))]
    pub use core::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
}

/// Pads and aligns a value to the cache line pair the hardware prefetches
/// together (128 bytes: the adjacent-line prefetcher of x86-64, and the
/// line size of some ARM cores), so that words written by different
/// threads never share a line. Written here, not taken from
/// `crossbeam-utils`: a few lines against a crate compiled into every
/// program that traces.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(T);

impl<T> CachePadded<T> {
    /// `value`, padded.
    pub(crate) const fn new(value: T) -> Self {
        CachePadded(value)
    }
}

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> core::ops::DerefMut for CachePadded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
