//! What a thread's sampled allocations need ready before the allocation
//! hook runs (issue 45): its OS id and its stack's bounds, looked up when
//! the thread registers in a session that samples allocations (the slow
//! path, never an allocation hook: the first lookup of a stack may
//! allocate). The hook copies the stack straight into the thread's chunk
//! (`crate::alloc`), so no buffer is kept.
//!
//! `const` thread locals without a destructor, so an allocation hook
//! reaches them (or finds them unset) at any moment of the thread's life.

use core::cell::Cell;

thread_local! {
    /// The thread's OS id, looked up once (a system call per sample
    /// otherwise).
    static TID: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's OS id (cached after [`prepare`]).
pub(crate) fn tid() -> u64 {
    let cached = TID.try_with(Cell::get).unwrap_or(0);
    if cached != 0 {
        return cached;
    }
    super::os_tid()
}

/// Looks up the calling thread's OS id and its stack's bounds (which may
/// allocate: never from the hook).
pub(crate) fn prepare() {
    let _ = crate::stack::current_stack();
    let _ = TID.try_with(|t| t.set(super::os_tid()));
}

/// The `fork` child's part: the child is another thread of another
/// process.
pub(crate) fn forget_after_fork() {
    let _ = TID.try_with(|t| t.set(0));
}
