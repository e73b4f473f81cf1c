//! The memory of a buffer: `Words`, atomic words on the heap (zeroed,
//! faulted in lazily) or in a shared mapping of a file that grows.

use std::ops::Range;

use super::atomic::AtomicU64;

/// Words per 4 KiB page.
pub(crate) const PAGE_WORDS: usize = 4096 / 8;

/// The memory of a buffer: `len` atomic words, owned through `backing`
/// (zeroed heap memory, or a part of a shared file mapping). Reached by
/// ranges ([`Words::slice`]) rather than as one slice, because the mapped
/// kind may only be referenced where its file has grown
/// ([`Words::ready`]).
#[cfg(not(loom))]
pub(crate) struct Words {
    len: usize,
    backing: Backing,
}

#[cfg(not(loom))]
enum Backing {
    /// `len` zeroed words from the global allocator (`None` when empty).
    Heap(Option<core::ptr::NonNull<AtomicU64>>, std::alloc::Layout),
    /// Words `start..start + len` of a file mapping.
    Mapped(std::sync::Arc<super::file_map::FileMap>, usize),
}

// SAFETY: `Words` is, in effect, an owned `[AtomicU64]` (the heap
// allocation is owned exclusively; a mapping is owned jointly through an
// `Arc`, and only ever accessed as atomics). `[AtomicU64]` is `Send` and
// `Sync`, and `Backing` holds only `Send + Sync` data besides the pointer.
#[cfg(not(loom))]
unsafe impl Send for Words {}
// SAFETY: see `Send`: shared access only hands out `&[AtomicU64]`.
#[cfg(not(loom))]
unsafe impl Sync for Words {}

#[cfg(not(loom))]
impl Drop for Words {
    fn drop(&mut self) {
        if let Backing::Heap(Some(ptr), layout) = self.backing {
            // SAFETY: `ptr` was returned by `alloc_zeroed(layout)` in
            // `Words::zeroed` and is freed only here, once.
            unsafe { std::alloc::dealloc(ptr.as_ptr() as *mut u8, layout) }
        }
    }
}

#[cfg(not(loom))]
impl core::fmt::Debug for Words {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = match self.backing {
            Backing::Heap(..) => "heap",
            Backing::Mapped(..) => "mapped",
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
        let layout =
            Layout::array::<AtomicU64>(n).expect("buffer size overflows the address space");
        if n == 0 {
            return Words {
                len: 0,
                backing: Backing::Heap(None, layout),
            };
        }
        // SAFETY: `layout` has a non-zero size (n > 0).
        let ptr = unsafe { alloc_zeroed(layout) } as *mut AtomicU64;
        let Some(ptr) = core::ptr::NonNull::new(ptr) else {
            handle_alloc_error(layout);
        };
        // All-zero bytes are a valid `AtomicU64` (it has the bit validity
        // of `u64`), so the `n` words are initialized; `Words` frees them
        // with `layout` (see `slice` and `Drop`).
        Words {
            len: n,
            backing: Backing::Heap(Some(ptr), layout),
        }
    }

    /// Words `[start, start + len)` of a file mapping.
    pub(crate) fn mapped(
        map: std::sync::Arc<super::file_map::FileMap>,
        start: usize,
        len: usize,
    ) -> Words {
        assert!(
            start <= map.len_words() && len <= map.len_words() - start,
            "range outside the mapping"
        );
        Words {
            len,
            backing: Backing::Mapped(map, start),
        }
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The words of `range` (inside `0..len`; for mapped words, inside
    /// what [`Words::ready`] made ready — else this panics).
    #[inline]
    pub(crate) fn slice(&self, range: Range<usize>) -> &[AtomicU64] {
        assert!(range.start <= range.end && range.end <= self.len);
        match &self.backing {
            Backing::Heap(None, _) => &[],
            Backing::Heap(Some(ptr), _) => {
                // SAFETY: `ptr` is aligned and valid for reads and writes
                // of `len` initialized words for as long as `self` lives
                // (see `zeroed`); `range` lies inside them (asserted). The
                // memory is only accessed through atomics, so shared
                // references are sound.
                unsafe { core::slice::from_raw_parts(ptr.as_ptr().add(range.start), range.len()) }
            }
            Backing::Mapped(map, start) => map.slice(start + range.start, range.len()),
        }
    }

    /// Makes `range` usable: for words of a growing file, grows the file
    /// over it (appending fillers); heap words always are.
    pub(crate) fn ready(&self, range: Range<usize>) -> std::io::Result<()> {
        match &self.backing {
            Backing::Heap(..) => Ok(()),
            Backing::Mapped(map, start) => map.grow_to((start + range.end) * 8),
        }
    }
}

/// The memory of a buffer under loom: a boxed slice (loom's atomics are
/// not plain memory, so they are constructed one by one).
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Words(Box<[AtomicU64]>);

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

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn slice(&self, range: Range<usize>) -> &[AtomicU64] {
        &self.0[range]
    }

    pub(crate) fn ready(&self, _: Range<usize>) -> std::io::Result<()> {
        Ok(())
    }
}
