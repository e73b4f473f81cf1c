//! [`Mutex`]: `parking_lot`'s mutex with its contention on the timeline.

use core::fmt;
use core::panic::Location;
use std::time::{Duration, Instant};

use lock_api::RawMutex as _;

use super::name::Name;
use super::tracked::{Mode, Tracked};

/// The raw lock of [`Mutex`]: `parking_lot`'s, plus the bookkeeping of its
/// contended acquisitions (`lock_api` builds the guards on it).
pub struct RawMutex {
    // A whole `parking_lot::Mutex<()>` (one byte, like its raw lock) so
    // that `Condvar` can lend `parking_lot::Condvar` a guard of it.
    pub(super) inner: parking_lot::Mutex<()>,
    pub(super) tracked: Tracked,
}

impl fmt::Debug for RawMutex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawMutex")
            .field("name", &self.tracked.name())
            .field("locked", &self.raw().is_locked())
            .finish()
    }
}

impl RawMutex {
    pub(super) const fn new(name: Name) -> RawMutex {
        RawMutex {
            inner: parking_lot::const_mutex(()),
            tracked: Tracked::new(name),
        }
    }

    /// What the lock is called in the trace.
    pub fn name(&self) -> String {
        self.tracked.name().to_string()
    }

    #[inline(always)]
    fn raw(&self) -> &parking_lot::RawMutex {
        // SAFETY: `raw` is unsafe only because the raw lock could be
        // unlocked behind a guard's back; this type locks and unlocks it
        // exactly as `lock_api` asks of its own methods (an unlock only
        // while the lock is held).
        unsafe { self.inner.raw() }
    }
}

// SAFETY: every method forwards to `parking_lot::RawMutex`'s method of the
// same contract (`lock` is its `try_lock`, then its `lock` when that
// failed), so the mutual exclusion is `parking_lot`'s.
unsafe impl lock_api::RawMutex for RawMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawMutex = RawMutex::new(Name::Unnamed);

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock(&self) {
        if !self.raw().try_lock() {
            self.tracked.wait(Mode::Exclusive, || {
                self.raw().lock();
                true
            });
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.raw().try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds the lock (this method's contract).
            unsafe { self.raw().unlock() }
        });
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.raw().is_locked()
    }
}

// SAFETY: as for `RawMutex`: `parking_lot`'s methods of the same contracts.
unsafe impl lock_api::RawMutexFair for RawMutex {
    #[inline]
    unsafe fn unlock_fair(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds the lock.
            unsafe { self.raw().unlock_fair() }
        });
    }

    #[inline]
    unsafe fn bump(&self) {
        // The lock is taken back at once: the records wait for the next
        // unlock.
        self.tracked.release();
        // SAFETY: the caller holds the lock.
        unsafe { self.raw().bump() }
    }
}

// SAFETY: as for `RawMutex`: `parking_lot`'s methods of the same contracts.
unsafe impl lock_api::RawMutexTimed for RawMutex {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.raw().try_lock()
            || self
                .tracked
                .wait(Mode::Exclusive, || self.raw().try_lock_for(timeout))
    }

    #[inline]
    fn try_lock_until(&self, timeout: Instant) -> bool {
        self.raw().try_lock()
            || self
                .tracked
                .wait(Mode::Exclusive, || self.raw().try_lock_until(timeout))
    }
}

super::wrapper::lock_type!(
    /// `parking_lot::Mutex` whose contended acquisitions are traced (category
    /// `lock`, see [the module docs](super)). Every method of
    /// `parking_lot::Mutex` is here, through `Deref` to the `lock_api` mutex
    /// both are built on; [`Mutex::new`] names the lock after where it is
    /// called, [`Mutex::named`] after a string.
    Mutex,
    RawMutex,
    "mutex",
    "mutexes"
);

/// `parking_lot::const_mutex`: a mutex named after where it is called.
#[track_caller]
#[inline]
pub const fn const_mutex<T>(value: T) -> Mutex<T> {
    Mutex::new(value)
}

/// The guard of a locked [`Mutex`] (`parking_lot::MutexGuard`).
pub type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawMutex, T>;
/// A [`MutexGuard`] mapped to a part of the value (`parking_lot::MappedMutexGuard`).
pub type MappedMutexGuard<'a, T> = lock_api::MappedMutexGuard<'a, RawMutex, T>;
