//! Thread identity: the OS thread id a thread's records carry.

/// The calling thread's OS thread id: `gettid` on Linux, elsewhere a
/// process-unique counter.
pub(crate) fn os_tid() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `gettid` has no preconditions and cannot fail.
        (unsafe { libc::gettid() }) as u64
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

std::thread_local! {
    /// This thread's [`os_tid`] (0: not looked up yet).
    static KOID: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// This thread's koid as its records carry it ([`os_tid`]), looked up once
/// per thread: the hot paths that name another thread in an argument (a
/// lock's holder, a task's waker) read it without a system call. A forked
/// child's thread keeps its parent's value, but fxt records nothing in a
/// child forked while tracing.
#[inline]
pub(crate) fn koid() -> u64 {
    match KOID.get() {
        0 => {
            let k = os_tid();
            KOID.set(k);
            k
        }
        k => k,
    }
}
