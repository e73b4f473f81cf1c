//! [`RwLock`]: `parking_lot`'s reader-writer lock with its contention on
//! the timeline (shared, exclusive and upgradable waits).

use core::fmt;
use core::panic::Location;
use std::time::{Duration, Instant};

use lock_api::{RawRwLock as _, RawRwLockRecursive as _, RawRwLockUpgrade as _};

use super::name::Name;
use super::tracked::{Mode, Tracked};

/// The raw lock of [`RwLock`]: `parking_lot`'s, plus the bookkeeping of its
/// contended acquisitions (`lock_api` builds the guards on it).
pub struct RawRwLock {
    inner: parking_lot::RawRwLock,
    tracked: Tracked,
}

impl fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawRwLock")
            .field("name", &self.tracked.name())
            .field("locked", &self.inner.is_locked())
            .finish()
    }
}

impl RawRwLock {
    const fn new(name: Name) -> RawRwLock {
        RawRwLock {
            inner: <parking_lot::RawRwLock as lock_api::RawRwLock>::INIT,
            tracked: Tracked::new(name),
        }
    }

    /// What the lock is called in the trace.
    pub fn name(&self) -> String {
        self.tracked.name().to_string()
    }

    /// `try` first; when it fails, `blocking` as a traced wait.
    #[inline(always)]
    fn take(
        &self,
        mode: Mode,
        r#try: impl FnOnce() -> bool,
        blocking: impl FnOnce() -> bool,
    ) -> bool {
        r#try() || self.tracked.wait(mode, blocking)
    }
}

// SAFETY: every method (here and in the other `lock_api` traits below)
// forwards to `parking_lot::RawRwLock`'s method of the same contract (a
// blocking or timed acquisition is its `try_` method first, then the
// method itself), so the exclusion is `parking_lot`'s; the bookkeeping
// before an unlock only reads and writes `tracked`.
unsafe impl lock_api::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawRwLock = RawRwLock::new(Name::Unnamed);

    type GuardMarker = lock_api::GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        let i = &self.inner;
        self.take(
            Mode::Shared,
            || i.try_lock_shared(),
            || {
                i.lock_shared();
                true
            },
        );
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        self.inner.try_lock_shared()
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds a shared lock.
            unsafe { self.inner.unlock_shared() }
        });
    }

    #[inline]
    fn lock_exclusive(&self) {
        let i = &self.inner;
        self.take(
            Mode::Exclusive,
            || i.try_lock_exclusive(),
            || {
                i.lock_exclusive();
                true
            },
        );
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        self.inner.try_lock_exclusive()
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds the exclusive lock.
            unsafe { self.inner.unlock_exclusive() }
        });
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.inner.is_locked_exclusive()
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockFair for RawRwLock {
    #[inline]
    unsafe fn unlock_shared_fair(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds a shared lock.
            unsafe { self.inner.unlock_shared_fair() }
        });
    }

    #[inline]
    unsafe fn unlock_exclusive_fair(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds the exclusive lock.
            unsafe { self.inner.unlock_exclusive_fair() }
        });
    }

    #[inline]
    unsafe fn bump_shared(&self) {
        // The lock is taken back at once: the records wait for the next
        // unlock.
        self.tracked.release();
        // SAFETY: the caller holds a shared lock.
        unsafe { self.inner.bump_shared() }
    }

    #[inline]
    unsafe fn bump_exclusive(&self) {
        // The lock is taken back at once: the records wait for the next
        // unlock.
        self.tracked.release();
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.inner.bump_exclusive() }
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.inner.downgrade() }
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;

    #[inline]
    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Shared,
            || i.try_lock_shared(),
            || i.try_lock_shared_for(timeout),
        )
    }

    #[inline]
    fn try_lock_shared_until(&self, timeout: Instant) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Shared,
            || i.try_lock_shared(),
            || i.try_lock_shared_until(timeout),
        )
    }

    #[inline]
    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Exclusive,
            || i.try_lock_exclusive(),
            || i.try_lock_exclusive_for(timeout),
        )
    }

    #[inline]
    fn try_lock_exclusive_until(&self, timeout: Instant) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Exclusive,
            || i.try_lock_exclusive(),
            || i.try_lock_exclusive_until(timeout),
        )
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockRecursive for RawRwLock {
    #[inline]
    fn lock_shared_recursive(&self) {
        let i = &self.inner;
        self.take(
            Mode::Shared,
            || i.try_lock_shared_recursive(),
            || {
                i.lock_shared_recursive();
                true
            },
        );
    }

    #[inline]
    fn try_lock_shared_recursive(&self) -> bool {
        self.inner.try_lock_shared_recursive()
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockRecursiveTimed for RawRwLock {
    #[inline]
    fn try_lock_shared_recursive_for(&self, timeout: Duration) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Shared,
            || i.try_lock_shared_recursive(),
            || i.try_lock_shared_recursive_for(timeout),
        )
    }

    #[inline]
    fn try_lock_shared_recursive_until(&self, timeout: Instant) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Shared,
            || i.try_lock_shared_recursive(),
            || i.try_lock_shared_recursive_until(timeout),
        )
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockUpgrade for RawRwLock {
    #[inline]
    fn lock_upgradable(&self) {
        let i = &self.inner;
        self.take(
            Mode::Upgradable,
            || i.try_lock_upgradable(),
            || {
                i.lock_upgradable();
                true
            },
        );
    }

    #[inline]
    fn try_lock_upgradable(&self) -> bool {
        self.inner.try_lock_upgradable()
    }

    #[inline]
    unsafe fn unlock_upgradable(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds the upgradable lock.
            unsafe { self.inner.unlock_upgradable() }
        });
    }

    #[inline]
    unsafe fn upgrade(&self) {
        let i = &self.inner;
        self.take(
            Mode::Exclusive,
            // SAFETY: the caller holds the upgradable lock.
            || unsafe { i.try_upgrade() },
            || {
                // SAFETY: the caller holds the upgradable lock.
                unsafe { i.upgrade() };
                true
            },
        );
    }

    #[inline]
    unsafe fn try_upgrade(&self) -> bool {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.inner.try_upgrade() }
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockUpgradeFair for RawRwLock {
    #[inline]
    unsafe fn unlock_upgradable_fair(&self) {
        self.tracked.unlock(|| {
            // SAFETY: the caller holds the upgradable lock.
            unsafe { self.inner.unlock_upgradable_fair() }
        });
    }

    #[inline]
    unsafe fn bump_upgradable(&self) {
        // The lock is taken back at once: the records wait for the next
        // unlock.
        self.tracked.release();
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.inner.bump_upgradable() }
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockUpgradeDowngrade for RawRwLock {
    #[inline]
    unsafe fn downgrade_upgradable(&self) {
        // SAFETY: the caller holds the upgradable lock.
        unsafe { self.inner.downgrade_upgradable() }
    }

    #[inline]
    unsafe fn downgrade_to_upgradable(&self) {
        // SAFETY: the caller holds the exclusive lock.
        unsafe { self.inner.downgrade_to_upgradable() }
    }
}

// SAFETY: `parking_lot::RawRwLock`'s methods of the same contracts (see
// `lock_api::RawRwLock` above).
unsafe impl lock_api::RawRwLockUpgradeTimed for RawRwLock {
    #[inline]
    fn try_lock_upgradable_for(&self, timeout: Duration) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Upgradable,
            || i.try_lock_upgradable(),
            || i.try_lock_upgradable_for(timeout),
        )
    }

    #[inline]
    fn try_lock_upgradable_until(&self, timeout: Instant) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Upgradable,
            || i.try_lock_upgradable(),
            || i.try_lock_upgradable_until(timeout),
        )
    }

    #[inline]
    unsafe fn try_upgrade_for(&self, timeout: Duration) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Exclusive,
            // SAFETY: the caller holds the upgradable lock.
            || unsafe { i.try_upgrade() },
            // SAFETY: the caller holds the upgradable lock.
            || unsafe { i.try_upgrade_for(timeout) },
        )
    }

    #[inline]
    unsafe fn try_upgrade_until(&self, timeout: Instant) -> bool {
        let i = &self.inner;
        self.take(
            Mode::Exclusive,
            // SAFETY: the caller holds the upgradable lock.
            || unsafe { i.try_upgrade() },
            // SAFETY: the caller holds the upgradable lock.
            || unsafe { i.try_upgrade_until(timeout) },
        )
    }
}

super::wrapper::lock_type!(
    /// `parking_lot::RwLock` whose contended acquisitions are traced (category
    /// `lock`, with the mode: shared, exclusive or upgradable). Every method of
    /// `parking_lot::RwLock` is here, through `Deref` to the `lock_api` lock
    /// both are built on; [`RwLock::new`] names the lock after where it is
    /// called, [`RwLock::named`] after a string.
    RwLock,
    RawRwLock,
    "lock",
    "locks"
);

/// `parking_lot::const_rwlock`: a lock named after where it is called.
#[track_caller]
#[inline]
pub const fn const_rwlock<T>(value: T) -> RwLock<T> {
    RwLock::new(value)
}

/// Shared guard (`parking_lot::RwLockReadGuard`).
pub type RwLockReadGuard<'a, T> = lock_api::RwLockReadGuard<'a, RawRwLock, T>;
/// Exclusive guard (`parking_lot::RwLockWriteGuard`).
pub type RwLockWriteGuard<'a, T> = lock_api::RwLockWriteGuard<'a, RawRwLock, T>;
/// Upgradable guard (`parking_lot::RwLockUpgradableReadGuard`).
pub type RwLockUpgradableReadGuard<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, RawRwLock, T>;
/// Mapped shared guard (`parking_lot::MappedRwLockReadGuard`).
pub type MappedRwLockReadGuard<'a, T> = lock_api::MappedRwLockReadGuard<'a, RawRwLock, T>;
/// Mapped exclusive guard (`parking_lot::MappedRwLockWriteGuard`).
pub type MappedRwLockWriteGuard<'a, T> = lock_api::MappedRwLockWriteGuard<'a, RawRwLock, T>;
