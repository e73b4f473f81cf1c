//! A Tokio runtime's own hooks: [`instrument`].
//!
//! * Stable Tokio: each worker's parked time, as a duration `parked` on
//!   the worker's thread (so idle time is visible between the polls).
//! * Built with `--cfg tokio_unstable`: every task the runtime spawns
//!   (plain `tokio::spawn` included, and the tasks of libraries), named by
//!   its spawn location: its life as an async slice with the task's id and
//!   each poll as a duration on the worker and an async slice on the
//!   task's track, as [`traced`](super::traced) records them. Tokio's
//!   hooks see no wakes, so these polls have no `delay` and no arrows:
//!   wrap a future with [`traced`](super::traced) for those.
//!
//! The ids of these tasks are Tokio's task ids with bit 62 set, so they
//! never meet the ids of [`next_async_id`](crate::__macro_support::next_async_id).

use core::cell::Cell;

use ::tokio::runtime::Builder;

use super::name::CATEGORY;
use crate::macro_support::{self as ms, Callsite, KeyCache};

static PARKED_KEYS: [KeyCache; 0] = [];
static PARKED: Callsite = Callsite::new(CATEGORY, "parked", &[], &PARKED_KEYS);

thread_local! {
    /// When this worker parked, and the session generation it was
    /// recorded in (0: not recording).
    static PARKED_AT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

/// Installs fxt's hooks on a runtime's builder (see the module docs).
/// Nothing is recorded while no session records category
/// [`CATEGORY`]; a hook then costs one relaxed load and a branch.
///
/// ```
/// let mut builder = tokio::runtime::Builder::new_multi_thread();
/// fxt_runtime::task::tokio::instrument(&mut builder);
/// let runtime = builder.build().unwrap();
/// # drop(runtime);
/// ```
pub fn instrument(builder: &mut Builder) -> &mut Builder {
    builder.on_thread_park(park).on_thread_unpark(unpark);
    #[cfg(tokio_unstable)]
    unstable::install(builder);
    builder
}

fn park() {
    if let Some(site) = PARKED.site() {
        PARKED_AT.set((ms::duration_start(), site.generation()));
    }
}

fn unpark() {
    let Some(site) = PARKED.site() else {
        return;
    };
    let (start, generation) = PARKED_AT.replace((0, 0));
    // A park of an earlier session (or before this one) is not this
    // trace's.
    if generation == site.generation() {
        ms::duration_complete(site, start, &[]);
    }
}

#[cfg(tokio_unstable)]
mod unstable {
    //! The task hooks of `--cfg tokio_unstable`.

    use core::cell::Cell;
    use core::fmt::Write;
    use core::sync::atomic::Ordering;

    use ::tokio::runtime::{Builder, TaskMeta};
    use fxt_format::encode::ArgValue;

    use super::super::name::{self, Name};
    use super::super::LONG_POLL_NS;
    use crate::clock;
    use crate::macro_support::{self as ms, Callsite, Site};

    /// Bit of the async ids of the tasks seen through Tokio's hooks.
    const TOKIO_ID: u64 = 1 << 62;

    thread_local! {
        /// The call site of the last spawn location this thread looked up
        /// (a lookup takes the registry's lock).
        static LAST: Cell<Option<(&'static core::panic::Location<'static>, &'static Callsite)>> =
            const { Cell::new(None) };
        /// When the poll running on this thread started (0: not recorded).
        static POLL_START: Cell<u64> = const { Cell::new(0) };
    }

    pub(super) fn install(builder: &mut Builder) {
        builder
            .on_task_spawn(|meta| {
                if let Some((site, id)) = task(meta) {
                    ms::async_begin(site, id, &[ArgValue::U64(id)]);
                }
            })
            .on_before_task_poll(|meta| {
                if let Some((site, id)) = task(meta) {
                    POLL_START.set(ms::duration_start());
                    ms::async_begin(site, id, &[]);
                }
            })
            .on_after_task_poll(|meta| {
                let start = POLL_START.replace(0);
                if let (Some((site, id)), true) = (task(meta), start != 0) {
                    poll_end(site, id, start);
                }
            })
            .on_task_terminate(|meta| {
                if let Some((site, id)) = task(meta) {
                    ms::async_end(site, id, &[ArgValue::U64(id)]);
                }
            });
    }

    /// The task's call site (if the category records) and async id.
    fn task(meta: &TaskMeta<'_>) -> Option<(Site, u64)> {
        super::super::GATE.site()?;
        let at = meta.spawned_at();
        let callsite = match LAST.get() {
            Some((l, c)) if core::ptr::eq(l, at) => c,
            _ => {
                let c = name::callsite(Name::At(at));
                LAST.set(Some((at, c)));
                c
            }
        };
        Some((callsite.site()?, TOKIO_ID | id_of(meta)))
    }

    fn poll_end(site: Site, id: u64, start: u64) {
        let took = clock::ticks_to_ns(ms::now().saturating_sub(start));
        // Relaxed: see `long_poll_threshold`.
        if took >= LONG_POLL_NS.load(Ordering::Relaxed) {
            let args = [ArgValue::U64(id), ArgValue::Null, ArgValue::Bool(true)];
            ms::duration_complete(site, start, &args);
        } else {
            ms::duration_complete(site, start, &[ArgValue::U64(id)]);
        }
        ms::async_end(site, id, &[]);
    }

    /// Tokio's task id as a number (it shows it only through `Display`).
    fn id_of(meta: &TaskMeta<'_>) -> u64 {
        struct Digits(u64);
        impl Write for Digits {
            fn write_str(&mut self, s: &str) -> core::fmt::Result {
                for b in s.bytes().filter(u8::is_ascii_digit) {
                    self.0 = self.0.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
                }
                Ok(())
            }
        }
        let mut digits = Digits(0);
        let _ = write!(digits, "{}", meta.id());
        digits.0 & !TOKIO_ID
    }
}
