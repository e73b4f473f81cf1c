//! Faulting a buffer's pages in before the writers reach them.
//!
//! A fresh buffer is zeroed memory the kernel maps lazily: the first store
//! to each 4 KiB page traps, and the kernel allocates and zeroes a page, on
//! the hot path of a fresh session (`bench-table --sections fresh`, `fxt`
//! against `fxt-prefault`, shows what it costs an event). [`run`] walks the buffer ahead of the writers (in the order
//! they lease chunks, skipping what they already passed) and populates it
//! slice by slice with `MADV_POPULATE_WRITE`, which allocates the pages
//! without changing a byte, so it may run while writers store into the
//! same memory. The thread that runs it has the lowest CPU priority
//! (`crate::helpers`, `SCHED_IDLE`): it takes an idle core, never one from
//! the program; writers never wait for
//! it. A writer that overtakes it populates each chunk it leases with one
//! call (`Ring::acquire`) instead of taking a trap per page.
//!
//! Huge pages are not requested: the kernel zeroes a whole 2 MiB page at
//! its first touch, so a writer that overtakes the prefaulter would stall
//! for that whole page instead of one 4 KiB page, and the first touch of
//! `MADV_HUGEPAGE` memory was slower per byte, not faster, when tried.

use std::sync::atomic::AtomicBool;

use super::atomic::{AtomicU64, Ordering};
use super::words::{Words, PAGE_WORDS};

/// Words populated per step (256 KiB): small enough to notice a stop or
/// the writers' progress quickly, large enough to amortize the call.
const SLICE_WORDS: usize = 256 << 10 >> 3;

/// How far ahead of the writers' frontier the prefaulter of a drained
/// ring goes (see [`run`]): 8 MiB, a few milliseconds of two writers
/// outrunning the disk.
pub(crate) const DRAINED_LEAD_WORDS: usize = 8 << 20 >> 3;

/// How long the prefaulter waits when it is `lead` words ahead, at first.
const AHEAD_WAIT: std::time::Duration = std::time::Duration::from_micros(500);

/// How long it waits at most: each wait that finds the writers' frontier
/// where it was doubles the next, so that a session whose writers record
/// little does not wake it 2000 times a second (writers that overtake it
/// after a quiet spell populate the chunks they lease themselves; a
/// finish wakes it).
const IDLE_WAIT: std::time::Duration = std::time::Duration::from_millis(16);

/// Populates `words` from the writers' frontier on, until the end or
/// `stop`, staying at most `lead` words ahead of the frontier (a drained
/// ring reuses its first chunks and may never need the rest: faulting it
/// all in would only cost memory). `frontier()` is the word index below
/// which writers have already leased (and so faulted, or are faulting) the
/// memory; `progress` gets the index below which this run populated the
/// memory. Words of a crash-safe file are grown first ([`Words::ready`]).
pub(crate) fn run(
    words: &Words,
    frontier: impl Fn() -> usize,
    lead: usize,
    stop: &AtomicBool,
    progress: &AtomicU64,
) {
    let mut pos = 0;
    let (mut wait, mut waited_at) = (AHEAD_WAIT, usize::MAX);
    while pos < words.len() && !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let front = frontier();
        pos = pos.max(front);
        if pos >= front.saturating_add(lead) {
            if front != waited_at {
                (wait, waited_at) = (AHEAD_WAIT, front);
            }
            // Unparked by a finish (`stop` set).
            std::thread::park_timeout(wait);
            wait = (wait * 2).min(IDLE_WAIT);
            continue;
        }
        let end = (pos + SLICE_WORDS).min(words.len());
        if pos >= end {
            break;
        }
        if words.ready(pos..end).is_err() {
            // The file cannot grow (disk full): writers will find out.
            break;
        }
        populate(words.slice(pos..end));
        pos = end;
        // Relaxed: a hint for writers, which skip populating below it.
        progress.store(end as u64, Ordering::Relaxed);
    }
}

/// Makes all of `words` ready and faults it in (`Prefault::AtStart`).
pub(crate) fn prepare_all(words: &Words) -> std::io::Result<()> {
    words.ready(0..words.len())?;
    populate(words.slice(0..words.len()));
    Ok(())
}

/// Faults `words` in for writing without changing them.
pub(crate) fn populate(words: &[AtomicU64]) {
    if words.is_empty() {
        return;
    }
    if !populate_write(words) {
        // No MADV_POPULATE_WRITE (Linux < 5.14, other systems): a
        // compare-exchange of 0 with 0 writes (so faults the page in for
        // writing) but never changes a value a writer stored.
        for w in words.iter().step_by(PAGE_WORDS) {
            let _ = w.compare_exchange(0, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
fn populate_write(words: &[AtomicU64]) -> bool {
    const MADV_POPULATE_WRITE: libc::c_int = 23;
    const PAGE: usize = 4096;
    let start = (words.as_ptr() as usize).next_multiple_of(PAGE);
    let end = (words.as_ptr() as usize + std::mem::size_of_val(words)) / PAGE * PAGE;
    if end <= start {
        return true;
    }
    // SAFETY: [start, end) is page aligned and lies inside `words`, memory
    // this process owns for the call (heap or a shared file mapping).
    // MADV_POPULATE_WRITE only allocates page frames (write fault
    // semantics) and never changes their contents, so concurrent atomic
    // stores by writers are unaffected.
    let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE) };
    rc == 0
}

#[cfg(not(all(not(loom), any(target_os = "linux", target_os = "android"))))]
fn populate_write(_words: &[AtomicU64]) -> bool {
    false
}
