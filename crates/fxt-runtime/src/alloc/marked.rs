//! The mark a sampled block carries in its address, so that a free tells
//! from the pointer alone whether the block may be a sampled one: a
//! sampled block is allocated from the inner allocator a page and a
//! header larger than asked, and handed out at the page boundary in it.
//! Only the frees of page-aligned addresses (a few in a thousand of the
//! program's others, by chance) look in the live table (`live.rs`), which
//! says which are sampled blocks. The test is one of the pointer's low
//! bits (all of a page's offset but the lowest three) and a branch: no layout is looked at, since a layout aligned past
//! a page (the only one not marked, its block tracked by the table
//! alone) has a page-aligned address anyway.
//!
//! The header, just below the address handed out, holds how far into
//! the inner block that address lies, so that the free gives the inner
//! allocator back the block and the layout it allocated. A layout whose
//! alignment is larger than a page, or of no bytes, is not marked: its
//! block is handed out as the inner allocator gives it.

use core::alloc::Layout;

/// Bytes of a page: every marked block starts one.
const PAGE: usize = 4096;
/// Bytes below a marked block that hold its offset in the inner block.
const HEADER: usize = 16;

/// The bits of an address a free tests: those of a page's offset but
/// the lowest three. A page-aligned address has none of them set; the
/// compiler tests a mask that is not all of the low bits with one
/// instruction that fuses with its branch, where it shifts the address
/// for a mask of the low bits (a copy, a shift and a branch).
const TESTED: usize = (PAGE - 1) & !7;

/// Whether the free of `ptr` may be a sampled block's (the caller then
/// looks in the live table): its address's bits [`TESTED`] are clear, as
/// every page-aligned address's are: every marked block's, and every
/// block's whose layout is too aligned to be marked. (An address that is
/// not page-aligned passes only if it is not 8-aligned either, which no
/// marked block's is: the table says it is not there.)
#[inline(always)]
pub(super) fn may_be_sampled(ptr: *mut u8) -> bool {
    ptr as usize & TESTED == 0
}

/// The layout a sampled block of `layout` is allocated with from the
/// inner allocator (`None`: it is not marked).
#[inline]
pub(super) fn inner_layout(layout: Layout) -> Option<Layout> {
    if layout.size() == 0 || layout.align() > PAGE {
        return None;
    }
    let size = layout.size().checked_add(PAGE + HEADER)?;
    Layout::from_size_align(size, layout.align()).ok()
}

/// Whether a sampled block of `layout` that is not marked is tracked
/// (its free, page-aligned, looks in the table): only one whose
/// alignment is too large to be marked (a block of no bytes is never
/// tracked).
#[inline]
pub(super) fn tracked_unmarked(layout: Layout) -> bool {
    layout.size() != 0 && layout.align() > PAGE
}

/// The marked address in the inner block at `base` (allocated with
/// [`inner_layout`]), its header written.
///
/// # Safety
///
/// `base` is a block of the inner allocator of at least
/// [`inner_layout`]'s size.
pub(super) unsafe fn place(base: *mut u8) -> *mut u8 {
    let at = base as usize + HEADER;
    let offset = HEADER + (at.wrapping_neg() % PAGE);
    // SAFETY: `offset` is below `HEADER + PAGE`, and the block's size
    // past it is the size asked for: the address and the header's word
    // below it (8-aligned: the address is page-aligned, `offset` at least
    // `HEADER`) lie in the block, which the caller owns.
    unsafe {
        let marked = base.add(offset);
        marked.cast::<usize>().sub(1).write(offset);
        marked
    }
}

/// The inner block of the marked block at `marked`.
///
/// # Safety
///
/// `marked` was returned by [`place`] and its block not freed since.
pub(super) unsafe fn base(marked: *mut u8) -> *mut u8 {
    // SAFETY: `place` wrote the offset into the header below `marked`,
    // in the inner block, which nothing else writes.
    unsafe {
        let offset = marked.cast::<usize>().sub(1).read();
        marked.sub(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every base (at each 16-byte offset in a page) gives a marked
    /// address, aligned, inside its block with the size asked for after
    /// it, and back.
    #[test]
    fn marks_round_trip() {
        let layout = Layout::from_size_align(100, 16).unwrap();
        let inner = inner_layout(layout).unwrap();
        let mut block = vec![0u8; inner.size() + PAGE];
        let start = block.as_mut_ptr();
        for shift in (0..PAGE).step_by(16) {
            // SAFETY: `shift + inner.size()` bytes fit in the vector.
            let base = unsafe { start.add(shift) };
            // SAFETY: the block has `inner`'s size from `base`.
            let marked = unsafe { place(base) };
            assert_eq!(marked as usize % PAGE, 0);
            assert!(marked as usize >= base as usize + HEADER);
            assert!(marked as usize + 100 <= base as usize + inner.size());
            assert!(may_be_sampled(marked));
            // SAFETY: placed just above.
            assert_eq!(unsafe { super::base(marked) }, base);
        }
        assert!(inner_layout(Layout::from_size_align(0, 1).unwrap()).is_none());
        assert!(inner_layout(Layout::from_size_align(8, 2 * PAGE).unwrap()).is_none());
        assert!(inner_layout(Layout::from_size_align(8, PAGE).unwrap()).is_some());
        assert!(!may_be_sampled((PAGE + 16) as *mut u8));
        assert!(!may_be_sampled((PAGE + 8) as *mut u8));
        assert!(!may_be_sampled((PAGE - 8) as *mut u8));
        assert!(may_be_sampled((2 * PAGE) as *mut u8));
    }
}
