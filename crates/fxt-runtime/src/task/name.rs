//! Task names and the call site each name records with.
//!
//! A task is named by [`Name`]: a `&'static str` given to `traced`, or the
//! source location that wrapped (or spawned) it. Its records are written
//! through a `&'static Callsite` whose name is the task's, so the first
//! use of a name in the process builds one and leaks it (as the lock names
//! of `sync` and the `tracing` layer's call sites do): tasks with the same
//! name share it. Names are program text, so their number is bounded by
//! the program; past [`MAX_NAMES`] distinct names, tasks record under one
//! shared call site named [`OTHER`].

use core::fmt;
use core::panic::Location;
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::macro_support::{Callsite, KeyCache};

/// The category of every task record.
pub const CATEGORY: &str = "task";

/// The argument keys of a task's records, by position: the task's id, the
/// scheduling delay of a poll (ns from the wake to the poll), the koid of
/// the thread that made that wake, the id of the task whose poll made it, whether a Tokio runtime's I/O or timer
/// driver woke it, whether the poll was long, whether the task was
/// dropped before it completed, and where the task was made (`file:line`,
/// on its life's begin). A poll's arguments come first: a record writes
/// its arguments up to the last it has.
pub(crate) const ARG_NAMES: &[&str] = &[
    "task",
    "delay",
    "waker_thread",
    "woken_by",
    "woken_by_driver",
    "long",
    "dropped",
    "location",
];

/// At most this many names get their own call site.
const MAX_NAMES: usize = 4096;

/// The name of the call site shared by the tasks beyond [`MAX_NAMES`].
const OTHER: &str = "other tasks";

static OTHER_KEYS: [KeyCache; 8] = [KeyCache::NEW; 8];
static OTHER_SITE: Callsite = Callsite::new(CATEGORY, OTHER, ARG_NAMES, &OTHER_KEYS);

/// What a task is called in the trace.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name {
    /// Given to `traced`.
    Given(&'static str),
    /// Where the task was wrapped or spawned: shown as `file:line`.
    At(&'static Location<'static>),
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Name::Given(s) => f.write_str(s),
            Name::At(l) => write!(f, "{}:{}", l.file(), l.line()),
        }
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// The key of a name in the registry: equal names share a call site (a
/// given name has line 0, which no location has).
type Key = (&'static str, u32);

impl Name {
    fn key(self) -> Key {
        match self {
            Name::Given(s) => (s, 0),
            Name::At(l) => (l.file(), l.line()),
        }
    }
}

/// The call sites built so far, by name.
static SITES: Mutex<BTreeMap<Key, &'static Callsite>> = Mutex::new(BTreeMap::new());

/// The call site of `name` (built on first use). Called only with the
/// category on, once per task: each task keeps the result.
pub(crate) fn callsite(name: Name) -> &'static Callsite {
    // A panic elsewhere cannot leave the map half-updated (one insert), so
    // a poisoned lock is still a good map.
    let mut sites = SITES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(site) = sites.get(&name.key()) {
        return site;
    }
    if sites.len() >= MAX_NAMES {
        return &OTHER_SITE;
    }
    let text: &'static str = match name {
        Name::Given(s) => s,
        other => Box::leak(other.to_string().into_boxed_str()),
    };
    let keys: &'static [KeyCache; 8] = Box::leak(Box::new([KeyCache::NEW; 8]));
    let site: &'static Callsite =
        Box::leak(Box::new(Callsite::new(CATEGORY, text, ARG_NAMES, keys)));
    sites.insert(name.key(), site);
    site
}
