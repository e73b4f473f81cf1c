//! Lock names and the call site each name records with.
//!
//! A lock is named by [`Name`]: a `&'static str` given to `named`, or the
//! source location of its `new` (`#[track_caller]`). Events need a
//! `&'static Callsite` per name, so the first contended use of a name in
//! the process builds one (and leaks it, like the `tracing` layer's call
//! sites): locks with the same name share it. Names are program text, so
//! their number is bounded by the program; past [`MAX_NAMES`] distinct
//! names, locks record under one shared call site named [`OTHER`].

use core::fmt;
use core::panic::Location;
use std::collections::BTreeMap;

use crate::macro_support::{Callsite, KeyCache};

/// The category of every lock event.
pub const CATEGORY: &str = "lock";

/// The argument keys of a lock's wait: the lock's mode (`exclusive`,
/// `shared`, `upgradable`), what the slice is (`wait`, `timed out`), and
/// for a wait another thread's release ended, that thread's koid and the
/// nanoseconds from the release to the acquisition
/// (`fxt_format::derived::lock`).
pub(crate) const ARG_NAMES: &[&str] = &["mode", "state", "holder", "handoff_ns"];

/// At most this many names get their own call site.
const MAX_NAMES: usize = 4096;

/// The name of the call site shared by the locks beyond [`MAX_NAMES`].
const OTHER: &str = "other locks";

static OTHER_KEYS: [KeyCache; 4] = [KeyCache::NEW; 4];
static OTHER_SITE: Callsite = Callsite::new(CATEGORY, OTHER, ARG_NAMES, &OTHER_KEYS);

/// What a lock is called in the trace.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    /// Given to `named`.
    Named(&'static str),
    /// Where the lock was made.
    At(&'static Location<'static>),
    /// Made by `lock_api`'s own constructors (through the raw lock's `INIT`).
    Unnamed,
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Name::Named(s) => f.write_str(s),
            Name::At(l) => write!(f, "{}:{}:{}", l.file(), l.line(), l.column()),
            Name::Unnamed => f.write_str("lock"),
        }
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// The key of a name in the registry: equal names share a call site.
type Key = (&'static str, u32, u32);

impl Name {
    fn key(self) -> Key {
        match self {
            Name::Named(s) => (s, 0, 0),
            Name::At(l) => (l.file(), l.line(), l.column()),
            Name::Unnamed => ("lock", 0, 0),
        }
    }
}

/// The call sites built so far, by name.
static SITES: parking_lot::Mutex<BTreeMap<Key, &'static Callsite>> =
    parking_lot::const_mutex(BTreeMap::new());

/// The call site of `name` (built on first use). Called only on a
/// contended path with the category on, once per lock: each lock caches
/// the result.
pub(crate) fn callsite(name: Name) -> &'static Callsite {
    let mut sites = SITES.lock();
    if let Some(site) = sites.get(&name.key()) {
        return site;
    }
    if sites.len() >= MAX_NAMES {
        return &OTHER_SITE;
    }
    let text: &'static str = match name {
        Name::Named(s) => s,
        other => Box::leak(other.to_string().into_boxed_str()),
    };
    let keys: &'static [KeyCache; 4] = Box::leak(Box::new([KeyCache::NEW; 4]));
    let site: &'static Callsite =
        Box::leak(Box::new(Callsite::new(CATEGORY, text, ARG_NAMES, keys)));
    sites.insert(name.key(), site);
    site
}
