//! Memory freed between row groups kept by the allocator for the next.
//!
//! Every table frees its row group's column buffers once they are
//! encoded and allocates as large ones for the next. glibc's allocator
//! would map large buffers anew and give freed memory back to the
//! kernel each time, so that each row group's buffers fault their pages
//! in again (cleared by the kernel first); kept in the heap, the next
//! row group's buffers reuse them. Memory held stays that of the largest
//! row groups in progress, as before.

/// Buffers up to this size come from the heap, not a mapping of their own
/// (glibc's largest allowed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MAP_ABOVE: libc::c_int = 32 << 20;

/// Freed memory at the heap's top kept up to this size.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const KEEP_FREED: libc::c_int = 256 << 20;

/// Asks the allocator to keep freed memory for reuse (on glibc; a no-op
/// elsewhere, where allocators differ).
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets the allocator's tunables, from valid
    // parameter numbers and values; it takes no pointers.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAP_ABOVE);
        libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP_FREED);
    }
}
