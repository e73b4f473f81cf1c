//! What macro expansions call. **Not public API**: it may change in any
//! release. Generated code reaches it as `::fxt::__macro_support`.
//!
//! Pattern of an expansion:
//!
//! ```
//! use fxt_runtime::__macro_support as ms;
//! use fxt_runtime::IntoArgValue;
//! let (a, b) = (1u64, "text");
//! {
//!     static KEYS: [ms::KeyCache; 2] = [ms::KeyCache::NEW, ms::KeyCache::NEW];
//!     static SITE: ms::Callsite = ms::Callsite::new("cat", "name", &["a", "b"], &KEYS);
//!     if let Some(site) = SITE.site() {
//!         ms::instant(site, &[a.into_arg_value(), b.into_arg_value()]);
//!     }
//! }
//! ```

pub use fxt_format::encode::{ArgValue, StringRef};

pub use crate::args::IntoArgValue;
pub use crate::callsite::{Callsite, KeyCache, Site};

use crate::emit;
use fxt_format::encode::header::event_type as ty;

/// Ticks of the session clock (the timestamp unit of the trace).
#[inline]
pub fn now() -> u64 {
    crate::clock::now()
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

/// Emits a duration complete event from its creation to its drop.
#[derive(Debug)]
#[must_use = "the duration ends when the guard is dropped"]
pub struct DurationGuard {
    site: Option<(Site, u64)>,
}

impl DurationGuard {
    /// Starts timing when `site` is `Some` (does nothing otherwise).
    #[inline]
    pub fn new(site: Option<Site>) -> DurationGuard {
        DurationGuard {
            site: site.map(|s| (s, now())),
        }
    }
}

impl Drop for DurationGuard {
    #[inline]
    fn drop(&mut self) {
        if let Some((site, start)) = self.site {
            duration_complete(site, start, &[]);
        }
    }
}
