//! The sample encoder allocates nothing (a signal handler calls it): every
//! allocation of this test binary is counted, per thread (the harness runs
//! the tests on threads of their own, and its other threads allocate
//! meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use fxt_format::encode::Encode;
use fxt_format::samples::{Sample, Walk, MAX_FRAMES};

struct Counting;

thread_local! {
    /// This thread's allocations (`const`, without a destructor: usable
    /// from the allocator at any point of the thread's life).
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// The calling thread's allocations so far.
fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn encoding_a_sample_allocates_nothing() {
    let frames = [0x5555_0000_u64; MAX_FRAMES];
    let mut out = [0u64; Sample::word_len_for(MAX_FRAMES)];
    let before = allocations();
    let mut written = 0;
    for n in [0, 1, 17, MAX_FRAMES] {
        let sample = Sample {
            timestamp: n as u64,
            pid: 1,
            tid: 2,
            walk: Walk::UnwindTables,
            truncated: n == MAX_FRAMES,
            frames: &frames[..n],
        };
        written += sample.encode(&mut out).unwrap();
    }
    let after = allocations();
    assert_eq!(written, 4 * Sample::word_len_for(0) + 1 + 17 + MAX_FRAMES);
    assert_eq!(after, before, "the sample encoder allocated");
}

/// The `fxt.alloc` encoder allocates nothing either (an allocator hook
/// calls it).
#[test]
fn encoding_an_alloc_record_allocates_nothing() {
    use fxt_format::samples::{Alloc, AllocKind};
    let frames = [0x5555_0000_u64; MAX_FRAMES];
    let mut out = [0u64; Alloc::word_len_for(MAX_FRAMES)];
    let before = allocations();
    let mut written = 0;
    for n in [0, 1, MAX_FRAMES] {
        let record = Alloc {
            timestamp: n as u64,
            pid: 1,
            tid: 2,
            address: 0x1000,
            size: 24,
            mean: 4096,
            kind: AllocKind::Alloc,
            untracked: false,
            walk: Walk::UnwindTables,
            truncated: false,
            frames: &frames[..n],
            raw_stack: None,
        };
        written += record.encode(&mut out).unwrap();
    }
    let after = allocations();
    assert_eq!(written, 3 * Alloc::word_len_for(0) + 1 + MAX_FRAMES);
    assert_eq!(after, before, "the alloc encoder allocated");
}
