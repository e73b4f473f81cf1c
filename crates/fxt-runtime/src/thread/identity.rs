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
