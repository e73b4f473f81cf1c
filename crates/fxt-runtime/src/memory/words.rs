//! The memory of a buffer: `Words`, atomic words on the heap (zeroed,
//! faulted in lazily, huge pages where Linux offers them) or in a shared
//! file mapping.

use super::atomic::AtomicU64;

/// The memory of a buffer: `len` atomic words at `ptr`, owned through
/// `backing` (zeroed heap memory, or a part of a shared file mapping). It
/// derefs to `&[AtomicU64]` exactly like a `Box<[AtomicU64]>` (a pointer
/// and a length, no branch), so the hot path is the same for both.
#[cfg(not(loom))]
pub(crate) struct Words {
    ptr: core::ptr::NonNull<AtomicU64>,
    len: usize,
    backing: Backing,
}

#[cfg(not(loom))]
enum Backing {
    /// Nothing to free (`len == 0`).
    Empty,
    /// Allocated by the global allocator with this layout.
    Heap(std::alloc::Layout),
    /// A range of a file mapping, kept alive by this reference.
    Mapped(#[allow(dead_code)] std::sync::Arc<super::file_map::FileMap>),
}

// SAFETY: `Words` is, in effect, an owned `[AtomicU64]` (the heap
// allocation is owned exclusively; a mapping is owned jointly through an
// `Arc`, and only ever accessed as atomics). `[AtomicU64]` is `Send` and
// `Sync`, and `Backing` holds only `Send + Sync` data.
#[cfg(not(loom))]
unsafe impl Send for Words {}
// SAFETY: see `Send`: shared access only hands out `&[AtomicU64]`.
#[cfg(not(loom))]
unsafe impl Sync for Words {}

#[cfg(not(loom))]
impl core::ops::Deref for Words {
    type Target = [AtomicU64];
    #[inline(always)]
    fn deref(&self) -> &[AtomicU64] {
        // SAFETY: `ptr` is non-null, aligned for `AtomicU64` and valid for
        // reads and writes of `len` initialized words for as long as
        // `backing` lives, which is as long as `self` (both constructors,
        // `Words::zeroed` and `Words::mapped`, establish this). The memory
        // is only accessed through atomics, so shared references are sound.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(loom))]
impl Drop for Words {
    fn drop(&mut self) {
        if let Backing::Heap(layout) = self.backing {
            // SAFETY: `ptr` was returned by `alloc_zeroed(layout)` in
            // `Words::zeroed` and is freed only here, once.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, layout) }
        }
    }
}

#[cfg(not(loom))]
impl core::fmt::Debug for Words {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = match self.backing {
            Backing::Empty => "empty",
            Backing::Heap(_) => "heap",
            Backing::Mapped(_) => "mapped",
        };
        write!(f, "Words({kind}, {} words)", self.len)
    }
}

#[cfg(not(loom))]
impl Words {
    /// `n` atomic words, all zero, on the heap.
    ///
    /// Allocated zeroed so that the operating system hands out pages
    /// lazily: a 256 MiB buffer costs nothing until it is written.
    pub(crate) fn zeroed(n: usize) -> Words {
        use std::alloc::{alloc_zeroed, handle_alloc_error, Layout};
        if n == 0 {
            return Words {
                ptr: core::ptr::NonNull::dangling(),
                len: 0,
                backing: Backing::Empty,
            };
        }
        let layout =
            Layout::array::<AtomicU64>(n).expect("buffer size overflows the address space");
        // SAFETY: `layout` has a non-zero size (n > 0).
        let ptr = unsafe { alloc_zeroed(layout) } as *mut AtomicU64;
        let Some(ptr) = core::ptr::NonNull::new(ptr) else {
            handle_alloc_error(layout);
        };
        // All-zero bytes are a valid `AtomicU64` (it has the bit validity
        // of `u64`), so the `n` words are initialized; `Words` frees them
        // with `layout` (see `Deref` and `Drop`).
        Words {
            ptr,
            len: n,
            backing: Backing::Heap(layout),
        }
    }

    /// Words `[start, start + len)` of a file mapping.
    pub(crate) fn mapped(
        map: std::sync::Arc<super::file_map::FileMap>,
        start: usize,
        len: usize,
    ) -> Words {
        let all = map.words();
        assert!(
            start <= all.len() && len <= all.len() - start,
            "range outside the mapping"
        );
        let ptr = core::ptr::NonNull::from(&all[start..start + len]).cast::<AtomicU64>();
        Words {
            ptr,
            len,
            backing: Backing::Mapped(map),
        }
    }
}

/// Words per 4 KiB page.
pub(crate) const PAGE_WORDS: usize = 4096 / 8;

/// The memory of a buffer under loom: a boxed slice (loom's atomics are
/// not plain memory, so they are constructed one by one).
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Words(Box<[AtomicU64]>);

#[cfg(loom)]
impl core::ops::Deref for Words {
    type Target = [AtomicU64];
    fn deref(&self) -> &[AtomicU64] {
        &self.0
    }
}

#[cfg(loom)]
impl Words {
    /// `n` atomic words, all zero.
    pub(crate) fn zeroed(n: usize) -> Words {
        Words((0..n).map(|_| AtomicU64::new(0)).collect())
    }

    /// File mappings are not modelled: crash-safe sessions are not started
    /// under loom.
    pub(crate) fn mapped(_: std::sync::Arc<super::file_map::FileMap>, _: usize, _: usize) -> Words {
        unimplemented!("crash-safe mode under loom")
    }
}
