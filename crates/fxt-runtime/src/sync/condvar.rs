//! [`Condvar`]: `parking_lot::Condvar` for the guards of [`super::Mutex`].

use core::fmt;
use core::mem::ManuallyDrop;
use std::time::{Duration, Instant};

pub use parking_lot::WaitTimeoutResult;

use super::mutex::{MutexGuard, RawMutex};

/// A condition variable for [`super::Mutex`], with `parking_lot::Condvar`'s
/// API and behaviour (it is one: a wait lends it a guard of the mutex's
/// inner `parking_lot` lock; the condition of `wait_while*` is called
/// with the lock held, as there). Going to sleep releases the mutex like an
/// unlock does, so a thread waiting for the mutex then gets its arrow; the
/// mutex taken back on wake-up is `parking_lot`'s requeued acquisition and
/// is not traced.
#[derive(Default)]
pub struct Condvar(parking_lot::Condvar);

impl fmt::Debug for Condvar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Condvar { .. }")
    }
}

impl Condvar {
    /// A condition variable.
    #[inline]
    pub const fn new() -> Condvar {
        Condvar(parking_lot::Condvar::new())
    }

    /// Wakes one waiter; whether there was one.
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.0.notify_one()
    }

    /// Wakes every waiter; how many there were.
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.0.notify_all()
    }

    /// Blocks until notified (spurious wake-ups are possible).
    pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
        self.with_inner(guard, |cv, g, _| cv.wait(g));
    }

    /// Blocks until notified or `timeout`.
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        timeout: Instant,
    ) -> WaitTimeoutResult {
        self.with_inner(guard, |cv, g, _| cv.wait_until(g, timeout))
    }

    /// Blocks until notified or for at most `timeout`.
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        self.with_inner(guard, |cv, g, _| cv.wait_for(g, timeout))
    }

    /// Blocks while `condition` holds.
    pub fn wait_while<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: F,
    ) {
        self.with_inner(guard, |cv, g, data| cv.wait_while(g, |_| condition(data)));
    }

    /// Blocks while `condition` holds, until `timeout`.
    pub fn wait_while_until<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: F,
        timeout: Instant,
    ) -> WaitTimeoutResult {
        self.with_inner(guard, |cv, g, data| {
            cv.wait_while_until(g, |_| condition(data), timeout)
        })
    }

    /// Blocks while `condition` holds, for at most `timeout`.
    pub fn wait_while_for<T: ?Sized, F: FnMut(&mut T) -> bool>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        mut condition: F,
        timeout: Duration,
    ) -> WaitTimeoutResult {
        self.with_inner(guard, |cv, g, data| {
            cv.wait_while_for(g, |_| condition(data), timeout)
        })
    }

    /// Runs `f` with `parking_lot`'s condition variable and a guard of the
    /// mutex's inner lock, held (and kept held) by `guard`.
    fn with_inner<T: ?Sized, R>(
        &self,
        guard: &mut MutexGuard<'_, T>,
        f: impl FnOnce(&parking_lot::Condvar, &mut parking_lot::MutexGuard<'_, ()>, &mut T) -> R,
    ) -> R {
        let mutex = MutexGuard::mutex(guard);
        // SAFETY: `raw` is unsafe because the raw lock could be unlocked
        // behind the guard's back; here it is only lent, locked, to the
        // condition variable, which gives it back locked.
        let raw: &RawMutex = unsafe { mutex.raw() };
        // Going to sleep releases the mutex; it is taken back on wake-up,
        // so the release's records wait for the next unlock.
        raw.tracked.release();
        // SAFETY: `guard` holds this lock, and the inner guard is never
        // dropped (`ManuallyDrop`, also when `f` panics): the lock stays
        // `guard`'s, which unlocks it once.
        let mut inner = ManuallyDrop::new(unsafe { raw.inner.make_guard_unchecked() });
        f(&self.0, &mut inner, &mut **guard)
    }
}
