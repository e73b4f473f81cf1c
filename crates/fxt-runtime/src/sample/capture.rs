//! The calling thread's own stack, walked from a normal context (not a
//! signal handler): what a sampled allocation records (issue 45).
//!
//! The one function the allocation hook calls for a stack ([`capture`]),
//! with the unwinder the CPU samples use: the same module list
//! ([`super::MODULES`], kept alive by the same [`super::IN_FLIGHT`]
//! protocol) and a cache of its own per thread ([`prepare`], made when the
//! thread registers in a session that samples allocations, outside any
//! allocation hook), so a CPU sample's handler that interrupts a capture
//! never shares its cache. Allocation-free and lock-free: the walk reads
//! only the thread's stack from the capture's own frame up.

use core::cell::Cell;
use core::sync::atomic::Ordering;

use super::unwind::{self, Cache, Method, Regs, MAX_FRAMES};

/// The thread's capture state; `const`, without a destructor (usable from
/// a thread-local destructor's allocation).
struct Capture {
    /// The thread's stack (`[low, high)`; `(0, 0)`: not prepared).
    stack: Cell<(u64, u64)>,
    cache: Cell<*mut Cache>,
}

thread_local! {
    static CAPTURE: Capture = const {
        Capture {
            stack: Cell::new((0, 0)),
            cache: Cell::new(core::ptr::null_mut()),
        }
    };
}

/// Makes the calling thread ready to capture its stack: its bounds and an
/// unwind cache (allocated here: never called from an allocation hook).
/// Refreshes the module list if the loader's objects changed.
pub(crate) fn prepare() {
    super::refresh_modules();
    let Some(stack) = crate::stack::current_stack().map(|s| (s.start, s.end)) else {
        return;
    };
    let _ = CAPTURE.try_with(|c| {
        if c.cache.get().is_null() {
            if let Some(cache) = super::new_cache(stack) {
                c.cache.set(Box::into_raw(cache));
            }
        }
        c.stack.set(stack);
    });
}

/// Frees the calling thread's capture cache (it leaves the session, or
/// exits). The allocation hook does not capture once the thread's gate is
/// closed, which its caller closed first.
pub(crate) fn release() {
    let _ = CAPTURE.try_with(|c| {
        c.stack.set((0, 0));
        let cache = c.cache.replace(core::ptr::null_mut());
        if !cache.is_null() {
            // SAFETY: `cache` came from `Box::into_raw` in `prepare` on this
            // thread and has just left the thread local: no capture reaches
            // it any more (captures run on this thread only, and not during
            // this call: the hook's re-entrancy guard or closed gate).
            drop(unsafe { Box::from_raw(cache) });
        }
    });
}

/// The `fork` child's part: forgets the cache without freeing it (the
/// child frees nothing the parent's bookkeeping owns).
pub(crate) fn forget_after_fork() {
    let _ = CAPTURE.try_with(|c| {
        c.cache.set(core::ptr::null_mut());
        c.stack.set((0, 0));
    });
}

/// The calling thread's stack from its caller's frame outward into `out`
/// (innermost first): the frame count, how it was walked, and whether the
/// walk stopped before the outermost frame. With the unwind tables when
/// the thread was [`prepare`]d, else the frame-pointer chain. Allocates
/// nothing and takes no lock.
#[inline(never)]
pub(crate) fn capture(out: &mut [u64; MAX_FRAMES]) -> (usize, Method, bool) {
    let (pc, sp, bp): (u64, u64, u64);
    // SAFETY: reads the instruction pointer, stack pointer and frame
    // pointer into registers; no memory is touched and no flag changed.
    unsafe {
        core::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags),
        );
    }
    let regs = Regs { pc, sp, bp };
    let Ok((stack, cache)) = CAPTURE.try_with(|c| (c.stack.get(), c.cache.get())) else {
        out[0] = pc;
        return (1, Method::PcOnly, true);
    };
    let readable = unwind::readable(sp, &(stack.0..stack.1));
    // SeqCst: before the load of `MODULES`, in the order `free_retired`
    // relies on (as the signal handler does).
    super::IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let modules = super::MODULES.load(Ordering::SeqCst);
    // SAFETY: a list is freed only when retired and no walk is in flight;
    // this one counts itself in `IN_FLIGHT` until it is done.
    let modules = unsafe { modules.as_ref() };
    // SAFETY: the cache was boxed by `prepare` for this thread and is freed
    // only by `release` on this thread, never during a capture; a CPU
    // sample's handler uses a cache of its own.
    let cache = unsafe { cache.as_mut() };
    let walked = unwind::walk(modules, cache, regs, &readable, out);
    // Release: the reads of the list happen before a free that reads this
    // decrement (`free_retired`).
    super::IN_FLIGHT.fetch_sub(1, Ordering::Release);
    walked
}
