//! The provider after `fork`: the child has no listener thread, so the
//! descriptors that thread owns (the listening socket, its wake-up end,
//! the connections it is serving) would stay open in the child, unused,
//! for as long as it runs. A `pthread_atfork` child handler closes them
//! and marks the child unregistered. Every descriptor is also
//! close-on-exec, so none reaches a program the child `exec`s.
//!
//! Descriptors are recorded in [`SLOTS`] after they are opened and
//! removed before they are closed: the handler may miss one (it then only
//! stays open in the child) but never closes a number the parent reused.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// The pid of the registered provider (0: none). The child handler clears
/// it, so a guard can tell it was inherited.
pub(crate) static PROVIDER_PID: AtomicU32 = AtomicU32::new(0);

/// The listener's descriptors: the socket, its wake-up end, and up to
/// `MAX_PENDING` connections (see `listener`), with room to spare.
const SLOTS_LEN: usize = 24;
#[allow(clippy::declare_interior_mutable_const)]
const FREE: AtomicI32 = AtomicI32::new(-1);
static SLOTS: [AtomicI32; SLOTS_LEN] = [FREE; SLOTS_LEN];

/// Records `fd` for the child handler (not recorded when every slot is
/// taken: it then only stays open in a child, close-on-exec).
pub(crate) fn track(fd: i32) {
    for slot in &SLOTS {
        // Relaxed: the handler runs in the child, which sees the parent's
        // memory as the forking thread did; a slot being written there is
        // a descriptor either left open or closed, both harmless.
        if slot
            .compare_exchange(-1, fd, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Forgets `fd`; call before closing it.
pub(crate) fn untrack(fd: i32) {
    for slot in &SLOTS {
        if slot
            .compare_exchange(fd, -1, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// The `pthread_atfork` child handler: only async-signal-safe work (atomic
/// swaps and `close`).
extern "C" fn atfork_child() {
    PROVIDER_PID.store(0, Ordering::Relaxed);
    for slot in &SLOTS {
        let fd = slot.swap(-1, Ordering::Relaxed);
        if fd >= 0 {
            // SAFETY: `fd` was open in the parent when it forked (tracked
            // after opening, untracked before closing), so it is this
            // child's copy, owned by a thread that does not exist here.
            unsafe { libc::close(fd) };
        }
    }
}

/// Registers the child handler (atomics and `close` only), once per
/// process.
pub(crate) fn register_atfork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    crate::state::fork::on_fork_child(
        &ONCE,
        atfork_child,
        "a forked child keeps the provider's socket open",
    );
}

/// A descriptor owner recorded for the child handler while it lives
/// (untracked in `drop`, before the owner closes it).
pub(crate) struct Tracked<T: std::os::fd::AsRawFd>(pub(crate) T);

impl<T: std::os::fd::AsRawFd> Tracked<T> {
    pub(crate) fn new(inner: T) -> Tracked<T> {
        track(inner.as_raw_fd());
        Tracked(inner)
    }
}

impl<T: std::os::fd::AsRawFd> Drop for Tracked<T> {
    fn drop(&mut self) {
        untrack(self.0.as_raw_fd());
    }
}
