//! The process-global control state: the live session, the category
//! filter, the last session generation, whether this process is a
//! forked child in which fxt is inert, and what runs after a change.
//!
//! Only slow paths take the control lock: call site registration, a
//! thread's first event in a session, start/stop, category changes. The
//! fork child handler (in `crate::session`) takes no lock: it sets
//! [`FORKED`] with a plain atomic store.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Shared;

/// Categories on or off.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    /// `true`: every category not in `disabled`.
    pub(crate) all: bool,
    pub(crate) enabled: Vec<String>,
    disabled: Vec<String>,
}

impl Filter {
    /// Every category on.
    pub(crate) const fn all() -> Filter {
        Filter {
            all: true,
            enabled: Vec::new(),
            disabled: Vec::new(),
        }
    }

    /// Only the categories of `list` on.
    pub(crate) fn only(list: Vec<String>) -> Filter {
        Filter {
            all: false,
            enabled: list,
            disabled: Vec::new(),
        }
    }

    pub(crate) fn enabled(&self, category: &str) -> bool {
        if self.disabled.iter().any(|c| c == category) {
            return false;
        }
        self.all || self.enabled.iter().any(|c| c == category)
    }

    pub(crate) fn enable(&mut self, category: &str) {
        self.disabled.retain(|c| c != category);
        if !self.enabled.iter().any(|c| c == category) {
            self.enabled.push(category.to_string());
        }
    }

    pub(crate) fn disable(&mut self, category: &str) {
        self.enabled.retain(|c| c != category);
        if !self.disabled.iter().any(|c| c == category) {
            self.disabled.push(category.to_string());
        }
    }
}

/// Process-global control state, behind [`control`].
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) current: Option<Arc<Shared>>,
    pub(crate) filter: Filter,
    /// Generation of the last session started (see [`Control::next_generation`]).
    last_generation: u32,
}

impl Control {
    /// A new session generation: 1, 2, … up to `max`, then 1 again. A
    /// generation tells a call site's cached decision and a thread's
    /// registration which session they belong to.
    pub(crate) fn next_generation(&mut self, max: u32) -> u32 {
        self.last_generation = if self.last_generation >= max {
            1
        } else {
            self.last_generation + 1
        };
        self.last_generation
    }
}

pub(crate) static CONTROL: Mutex<Control> = Mutex::new(Control {
    current: None,
    filter: Filter::all(),
    last_generation: 0,
});

/// Whether a session is live (for `crate::is_enabled`).
pub(crate) static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Records emitted for a session that was already over when they were
/// written (a thread still running, or a thread-local destructor, after
/// `finish`): counted process-wide and reported by the next finish as
/// `Stats::late_records_dropped`.
pub(crate) static LATE: AtomicU64 = AtomicU64::new(0);

/// Sessions started and not yet completely finished (their file written).
pub(crate) static UNFINISHED: AtomicUsize = AtomicUsize::new(0);

/// Set in the child of a `fork` taken while a session was unfinished: fxt
/// is inert in this process (see `crate::session`).
pub(crate) static FORKED: AtomicBool = AtomicBool::new(false);

/// Whether this process is a forked child in which fxt is inert.
#[inline]
pub(crate) fn forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// Locks the control state (poisoning ignored: every critical section
/// leaves it consistent).
pub(crate) fn control() -> MutexGuard<'static, Control> {
    CONTROL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live session if it is the one of `generation` and the control
/// state is not locked (by any thread, this one included): for an
/// allocation hook, which may run while this thread holds the lock and
/// so never waits for it.
pub(crate) fn try_current(generation: u32) -> Option<Arc<Shared>> {
    if forked() {
        return None;
    }
    let ctl = CONTROL.try_lock().ok()?;
    ctl.current
        .as_ref()
        .filter(|s| s.generation == generation)
        .cloned()
}

/// The live session, if any (never in a forked child).
pub(crate) fn current() -> Option<Arc<Shared>> {
    if forked() {
        return None;
    }
    control().current.clone()
}

/// What runs after a session starts or stops and after a category
/// changes, without the control lock: set by a part of the crate that
/// keeps a decision of its own outside the call sites (the `tracing`
/// interest of `task::tokio`'s wake layer).
static ON_CHANGE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets what runs after each change (see [`ON_CHANGE`]; the first caller's
/// `f` stays).
#[cfg_attr(not(feature = "tokio-wakes"), allow(dead_code))]
pub(crate) fn on_change(f: fn()) {
    let _ = ON_CHANGE.set(f);
}

/// Runs [`ON_CHANGE`]'s function, if set (never under the control lock:
/// it may take other locks that a thread holding them would take the
/// control lock after).
pub(crate) fn changed() {
    // Not while a panic unwinds (a session finished by the panic hook):
    // the panic may have been raised under the very lock `f` takes.
    if std::thread::panicking() {
        return;
    }
    if let Some(f) = ON_CHANGE.get() {
        f();
    }
}
