//! Locks whose contention is on the timeline: [`Mutex`], [`RwLock`] and
//! [`Condvar`], with `parking_lot`'s API (its guards, mapped guards,
//! `try_*`, `*_for`/`*_until`, upgradable reads, fair unlocks), so that
//! replacing `parking_lot::Mutex` with `fxt::sync::Mutex` is a change of
//! import.
//!
//! ```
//! use fxt_runtime::sync::{Condvar, Mutex}; // `fxt::sync` in the `fxt` crate
//!
//! static CACHE: Mutex<Vec<u32>> = Mutex::named("cache", Vec::new());
//! let counter = Mutex::new(0); // named "file.rs:line:column" of this call
//! assert!(counter.name().ends_with(&format!(":{}:15", line!() - 1)));
//! *counter.lock() += 1;
//! CACHE.lock().push(1);
//! let ready = (Mutex::new(false), Condvar::new());
//! *ready.0.lock() = true;
//! ready.1.notify_all();
//! assert_eq!(counter.into_inner(), 1);
//! ```
//!
//! # What is recorded (category `lock`)
//!
//! Nothing while a lock is uncontended: locking is `parking_lot`'s fast
//! path, unlocking adds one relaxed load and a branch. When a thread's
//! first try fails, the waiter records one **wait slice** named after the
//! lock, from its first try to the acquisition, with arguments `mode`
//! (`exclusive`, `shared`, `upgradable`), `state` (`wait`, or `timed out`
//! for a `try_*_for`/`_until` that gave up) and, when another thread's
//! release ended the wait, `holder` (that thread's koid) and `handoff_ns`
//! (nanoseconds from the release to the acquisition). The releasing
//! thread writes nothing.
//!
//! Readers draw the rest from those records (`fxt_symbols::derived`, which
//! `fxt open`, `fxt symbolize` and the archives append, and with feature
//! `symbolize` the session itself, to every trace it can read back): a
//! slice of the
//! same name with `state` = `held` on the holder's thread (the part of its
//! hold during which someone waited) and a **flow** from the release to
//! the acquisition, so Perfetto draws an arrow from the holder to the
//! waiter.
//!
//! Turning the category `lock` off (as any category) turns all of it off.
//! A wait or a hold that began before the session records nothing in it;
//! a wait is written when the waiter releases the lock, so one whose hold
//! outlives the session is not recorded either.
//! In a forked child of a process with a session, nothing is recorded.
//! Locks with the same name (`named`, or the same line) are counted
//! together by `fxt stats`.
//!
//! Slices of one thread must nest: a drawn `held` slice starts no earlier
//! than the thread's previous lock slice ended, but a thread holding lock
//! A while it waits for lock B can get slices that overlap without
//! nesting when someone starts waiting for A during that wait.
//!
//! The record is written outside the critical section (after the waiter's
//! own release of the lock; a release only stamps the lock with its time
//! and thread), so recording makes no hold longer, and a lock a global
//! allocator takes can record.
//!
//! A lock is larger than `parking_lot`'s (one byte): it also holds its
//! name, its waiter count and the latest release's time and thread.

mod condvar;
mod mutex;
mod name;
mod rwlock;
mod tracked;
mod wrapper;

pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{const_mutex, MappedMutexGuard, Mutex, MutexGuard, RawMutex};
pub use name::CATEGORY;
pub use rwlock::{
    const_rwlock, MappedRwLockReadGuard, MappedRwLockWriteGuard, RawRwLock, RwLock,
    RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard,
};
