//! The atomics the chunk protocol ([`crate::buffer`]) is written against.
//!
//! Under `cfg(loom)` they are loom's, so the same code is model-checked by
//! `tests/loom.rs`; otherwise they are `core`'s. Only the buffer module uses
//! this: call sites and other `static`s need `const` constructors, which
//! loom's atomics do not have.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU64, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{fence, AtomicU64, Ordering};

/// Pads and aligns a value to 128 bytes (two cache lines, which also defeats
/// the adjacent-line prefetcher), so that words written by different threads
/// never share a cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A boxed slice of `n` atomic words, all zero.
///
/// Allocated zeroed so that the operating system hands out pages lazily: a
/// 256 MiB buffer costs nothing until it is written.
#[cfg(not(loom))]
pub(crate) fn zeroed_words(n: usize) -> Box<[AtomicU64]> {
    use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};
    if n == 0 {
        return Box::new([]);
    }
    let layout = Layout::array::<AtomicU64>(n).expect("buffer size overflows the address space");
    // SAFETY: `layout` has a non-zero size (n > 0).
    let ptr = unsafe { alloc_zeroed(layout) } as *mut AtomicU64;
    if ptr.is_null() {
        handle_alloc_error(layout);
    }
    advise_huge_pages(ptr as *mut u8, layout.size());
    let slice = core::ptr::slice_from_raw_parts_mut(ptr, n);
    // SAFETY: `ptr` was allocated by the global allocator with the layout of
    // `[AtomicU64; n]` (what `Box<[AtomicU64]>` frees with), it is non-null
    // and properly aligned, and all-zero bytes are a valid `AtomicU64` (it
    // has the same bit validity as `u64`). Ownership passes to the box.
    unsafe { Box::from_raw(slice) }
}

/// Asks Linux to back a large buffer with transparent huge pages (when THP
/// is in `madvise` mode): first-touch page faults are then 512 times fewer,
/// which keeps writers on different cores from serializing in the kernel's
/// page fault path while they fill a fresh buffer.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 2 * HUGE {
        return;
    }
    // The 2 MiB-aligned part of the allocation.
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: [start, end) lies inside the allocation we own and is page
        // aligned; MADV_HUGEPAGE only changes how the kernel backs the pages
        // (contents, all zero here, are preserved). Failure is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(all(not(loom), not(any(target_os = "linux", target_os = "android"))))]
fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

/// A boxed slice of `n` atomic words, all zero (loom's atomics are not
/// plain memory, so they are constructed one by one).
#[cfg(loom)]
pub(crate) fn zeroed_words(n: usize) -> Box<[AtomicU64]> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}
