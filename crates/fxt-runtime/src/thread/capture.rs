//! A thread's buffer for its sampled allocations' records (issue 45):
//! room for a copy of its stack (`crate::stack::capture_current`) and for
//! the record that carries it, off the thread's stack (a copy must not
//! cover its own buffer, and a few kilobytes on the stack of every
//! allocation would push the program's frames out of the copy's bound).
//!
//! Made when the thread registers in a session that samples allocations
//! (the slow path, never an allocation hook), freed when it leaves the
//! session or exits; `const` and without a destructor, so an allocation
//! hook reaches it (or finds none) at any moment of the thread's life.

use core::cell::Cell;

use fxt_format::samples::Alloc;

use crate::stack::{ARCH, MAX_STACK_WORDS};

/// Words of the buffer: the stack copy, then the largest record.
pub(crate) const WORDS: usize = MAX_STACK_WORDS + Alloc::word_len_raw(ARCH, MAX_STACK_WORDS);

type Buffer = [u64; WORDS];

thread_local! {
    static BUFFER: Cell<*mut Buffer> = const { Cell::new(core::ptr::null_mut()) };
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

/// Gives the calling thread its buffer, if it has none, and looks up its
/// stack's bounds (which may allocate: never from the hook).
pub(crate) fn prepare() {
    let _ = crate::stack::current_stack();
    let _ = TID.try_with(|t| t.set(super::os_tid()));
    let _ = BUFFER.try_with(|b| {
        if b.get().is_null() {
            let buffer: Box<Buffer> = vec![0u64; WORDS]
                .into_boxed_slice()
                .try_into()
                .expect("WORDS words");
            b.set(Box::into_raw(buffer));
        }
    });
}

/// Frees the calling thread's buffer. Its caller closed the thread's gate
/// first: the allocation hook, which checks the gate before it takes the
/// buffer, no longer reaches it.
pub(crate) fn release() {
    let _ = BUFFER.try_with(|b| {
        let buffer = b.replace(core::ptr::null_mut());
        if !buffer.is_null() {
            // SAFETY: `buffer` came from `Box::into_raw` in `prepare` on
            // this thread and has just left the thread local; the hook
            // (on this thread only) is not running: this runs in the
            // thread's slow path or its writer's destructor.
            drop(unsafe { Box::from_raw(buffer) });
        }
    });
}

/// The `fork` child's part: forgets the buffer without freeing it (the
/// child's copy of it is its own memory, leaked: nothing the parent's
/// bookkeeping owns is freed).
pub(crate) fn forget_after_fork() {
    let _ = BUFFER.try_with(|b| b.set(core::ptr::null_mut()));
    // The child is another thread of another process.
    let _ = TID.try_with(|t| t.set(0));
}

/// The calling thread's buffer, split into the stack copy's part and the
/// record's, for `f`; `None` when the thread has none. Not re-entrant: the
/// allocation hook calls it under its re-entrancy guard only.
pub(crate) fn with_buffer<R>(f: impl FnOnce(&mut [u64], &mut [u64]) -> R) -> Option<R> {
    let buffer = BUFFER.try_with(Cell::get).ok()?;
    // SAFETY: the buffer was boxed by `prepare` for this thread and is
    // freed only by `release` on this thread, never while the hook runs;
    // the hook's guard makes this the only reference.
    let buffer = unsafe { buffer.as_mut() }?;
    let (stack, record) = buffer.split_at_mut(MAX_STACK_WORDS);
    Some(f(stack, record))
}
