//! The layer's call sites: what it keeps for each `tracing` call site
//! ([`LayerSite`]), and the lock-free table that finds it from the call
//! site's `&'static Metadata`.
//!
//! The table is open addressing over a fixed array of `OnceLock`s indexed
//! by the metadata's address: a lookup is a multiplication and one or a few
//! Acquire loads, never a lock or a hash function. Insertions (once per call
//! site, from `register_callsite`) are serialized by [`INSERTING`]; a call
//! site that finds no free slot within [`MAX_PROBE`] goes to the locked
//! [`OVERFLOW`] list.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use fxt_runtime::__macro_support as ms;
use tracing_core::field::Field;
use tracing_core::Metadata;

use super::MAX_ARGS;

/// What the layer keeps for one `tracing` call site (built once, leaked).
pub(super) struct LayerSite {
    /// Category = target, name = the metadata name, arguments = the fields
    /// other than `message`, in field order.
    pub(super) plain: &'static ms::Callsite,
    /// The same with a trailing `message` argument (events with a message
    /// that varies).
    with_message: &'static ms::Callsite,
    /// Argument position of each field, by field index (`None`: the
    /// message, or a field beyond the argument limit).
    positions: &'static [Option<u8>],
    /// The argument names of `plain`.
    pub(super) names: &'static [&'static str],
    /// Index of the `message` field, if the call site has one.
    pub(super) message: Option<usize>,
    /// Events: the call site named by its message, while that message has
    /// always been the same text.
    pub(super) named: OnceLock<Named>,
    /// Events: the message has varied; use `with_message`.
    pub(super) varying: AtomicBool,
}

/// An fxt call site named by an event's (constant) message.
pub(super) struct Named {
    pub(super) message: &'static str,
    pub(super) callsite: &'static ms::Callsite,
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

fn leak_callsite(
    category: &'static str,
    name: &'static str,
    names: &'static [&'static str],
) -> &'static ms::Callsite {
    let keys: &'static [ms::KeyCache] = Box::leak(
        (0..names.len())
            .map(|_| ms::KeyCache::NEW)
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    leak(ms::Callsite::new(category, name, names, keys))
}

impl LayerSite {
    fn build(meta: &'static Metadata<'static>) -> LayerSite {
        let fields = meta.fields();
        let mut names = Vec::new();
        let mut positions = Vec::with_capacity(fields.len());
        let mut message = None;
        for (i, f) in fields.iter().enumerate() {
            if f.name() == "message" && meta.is_event() {
                message = Some(i);
                positions.push(None);
            } else if names.len() < MAX_ARGS {
                positions.push(Some(names.len() as u8));
                names.push(f.name());
            } else {
                positions.push(None);
            }
        }
        let plain_names: &'static [&'static str] = Box::leak(names.clone().into_boxed_slice());
        let plain = leak_callsite(meta.target(), meta.name(), plain_names);
        let with_message = if message.is_some() && names.len() < MAX_ARGS {
            names.push("message");
            leak_callsite(
                meta.target(),
                meta.name(),
                Box::leak(names.into_boxed_slice()),
            )
        } else {
            plain
        };
        LayerSite {
            plain,
            with_message,
            positions: Box::leak(positions.into_boxed_slice()),
            names: plain_names,
            message,
            named: OnceLock::new(),
            varying: AtomicBool::new(false),
        }
    }

    #[inline]
    pub(super) fn position(&self, field: &Field) -> Option<usize> {
        self.positions
            .get(field.index())
            .copied()
            .flatten()
            .map(usize::from)
    }

    /// The call site an event with `message` is written with, and whether
    /// the message goes in as an argument.
    pub(super) fn event_callsite(&self, message: Option<&str>) -> (&'static ms::Callsite, bool) {
        let Some(message) = message else {
            return (self.plain, false);
        };
        if !self.varying.load(Ordering::Relaxed) {
            let named = self.named.get_or_init(|| {
                let text: &'static str = Box::leak(message.to_owned().into_boxed_str());
                Named {
                    message: text,
                    callsite: leak_callsite(self.plain.category(), text, self.names),
                }
            });
            if named.message == message {
                return (named.callsite, false);
            }
            self.varying.store(true, Ordering::Relaxed);
        }
        (self.with_message, true)
    }
}

const TABLE_BITS: u32 = 12;
const TABLE_SIZE: usize = 1 << TABLE_BITS;
const MAX_PROBE: usize = 16;

struct Entry {
    meta: &'static Metadata<'static>,
    site: &'static LayerSite,
}

static TABLE: [OnceLock<Entry>; TABLE_SIZE] = [const { OnceLock::new() }; TABLE_SIZE];
/// Held by whoever inserts a call site: only its holder sets a slot of
/// [`TABLE`] or pushes to [`OVERFLOW`], so a free slot it found stays free.
static INSERTING: Mutex<()> = Mutex::new(());
/// The call sites that found no free slot within [`MAX_PROBE`] of home.
static OVERFLOW: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

#[inline]
fn home(meta: &'static Metadata<'static>) -> usize {
    let addr = meta as *const Metadata<'static> as usize as u64;
    (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - TABLE_BITS)) as usize
}

#[inline]
fn lookup(meta: &'static Metadata<'static>) -> Option<&'static LayerSite> {
    let mut i = home(meta);
    for _ in 0..MAX_PROBE {
        match TABLE[i].get() {
            None => return None,
            Some(e) if std::ptr::eq(e.meta, meta) => return Some(e.site),
            Some(_) => i = (i + 1) % TABLE_SIZE,
        }
    }
    lookup_overflow(meta)
}

#[cold]
fn lookup_overflow(meta: &'static Metadata<'static>) -> Option<&'static LayerSite> {
    let overflow = OVERFLOW.lock().unwrap_or_else(|e| e.into_inner());
    overflow
        .iter()
        .find(|e| std::ptr::eq(e.meta, meta))
        .map(|e| e.site)
}

/// The call site's `LayerSite`, built on first sight.
#[inline]
pub(super) fn site_of(meta: &'static Metadata<'static>) -> &'static LayerSite {
    match lookup(meta) {
        Some(site) => site,
        None => insert(meta),
    }
}

#[cold]
#[inline(never)]
fn insert(meta: &'static Metadata<'static>) -> &'static LayerSite {
    let _inserting = INSERTING.lock().unwrap_or_else(|e| e.into_inner());
    let mut i = home(meta);
    for _ in 0..MAX_PROBE {
        match TABLE[i].get() {
            Some(e) if std::ptr::eq(e.meta, meta) => return e.site,
            Some(_) => i = (i + 1) % TABLE_SIZE,
            None => {
                let site = leak(LayerSite::build(meta));
                // Only inserters set slots, and they hold `INSERTING`: the slot
                // is still free.
                let _ = TABLE[i].set(Entry { meta, site });
                return site;
            }
        }
    }
    let mut overflow = OVERFLOW.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = overflow.iter().find(|e| std::ptr::eq(e.meta, meta)) {
        return e.site;
    }
    let site = leak(LayerSite::build(meta));
    overflow.push(Entry { meta, site });
    site
}
