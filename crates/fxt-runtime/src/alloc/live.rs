//! The live sampled blocks: a fixed-size lock-free table of addresses, so
//! that the free of a sampled block (and only of one) is recorded.
//!
//! Open addressing in buckets of [`BUCKET`] slots (one cache line): an
//! address may sit in any slot of its bucket, so a lookup reads one cache
//! line and an insert claims an empty slot with one CAS. A bucket with no
//! empty slot refuses the insert: the allocation is recorded *untracked*
//! (its free will not be), and counted ([`super::Counts::untracked`]) —
//! never silently. No allocation, no lock: callable from the allocator.
//!
//! Every free looks its address up while a session samples, and almost
//! none is a sampled block's: a byte per bucket counts the addresses it
//! holds, so that a free whose bucket is empty reads one byte of a small
//! summary (8 KiB, which stays in cache) instead of a cache line of the
//! large table.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Slots of the table: 64 Ki addresses (512 KiB of zeroed static memory,
/// touched only where blocks are sampled).
const SLOTS: usize = 1 << 16;
/// Slots of a bucket (64 bytes).
const BUCKET: usize = 8;
/// An empty slot (no block lives at address 0).
const EMPTY: u64 = 0;

#[repr(align(64))]
struct Bucket([AtomicU64; BUCKET]);

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_BUCKET: Bucket = Bucket([const { AtomicU64::new(EMPTY) }; BUCKET]);

static TABLE: [Bucket; SLOTS / BUCKET] = [EMPTY_BUCKET; SLOTS / BUCKET];

/// Addresses in each bucket of [`TABLE`] (at most [`BUCKET`]; counted up
/// before an insert claims a slot, down after a removal empties one, so
/// never below the bucket's addresses).
static COUNTS: [AtomicU8; SLOTS / BUCKET] = [const { AtomicU8::new(0) }; SLOTS / BUCKET];

/// The bucket index of `address` (Fibonacci hashing of the address
/// without its alignment bits).
#[inline(always)]
fn index(address: u64) -> usize {
    let h = (address >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - (SLOTS / BUCKET).trailing_zeros())) as usize
}

/// The bucket of `address`.
#[cfg(test)]
fn bucket(address: u64) -> &'static Bucket {
    &TABLE[index(address)]
}

/// Records `address` as a live sampled block; `false`: its bucket is full
/// (the block is not tracked).
pub(crate) fn insert(address: u64) -> bool {
    if address == EMPTY {
        return false;
    }
    let i = index(address);
    // Relaxed, here and below: the table holds addresses only; no other
    // memory is published through it. An address is inserted by the
    // thread that got the block and removed by the one that frees it,
    // which the program orders (a block is freed after it is allocated),
    // so the freeing thread sees the count and the slot this stored.
    COUNTS[i].fetch_add(1, Ordering::Relaxed);
    for slot in &TABLE[i].0 {
        if slot
            .compare_exchange(EMPTY, address, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return true;
        }
    }
    COUNTS[i].fetch_sub(1, Ordering::Relaxed);
    false
}

/// Starts fetching the cache lines that inserting `address` touches (its
/// bucket and its count), so that [`insert`], called a while later, finds
/// them near: the table is large, a sampled block's bucket rarely cached.
#[inline(always)]
pub(crate) fn prefetch(address: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let i = index(address);
        let bucket = TABLE[i].0.as_ptr().cast::<i8>();
        let count = (&COUNTS[i] as *const AtomicU8).cast::<i8>();
        // SAFETY: a prefetch only hints the cache (it never faults nor
        // changes memory); both addresses are of statics.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(bucket);
            _mm_prefetch::<_MM_HINT_T0>(count);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// Whether `address` may be a live sampled block (its bucket holds one):
/// the one byte every free reads while a session samples.
#[inline(always)]
pub(crate) fn may_hold(address: u64) -> bool {
    // Relaxed: see `insert`.
    COUNTS[index(address)].load(Ordering::Relaxed) != 0
}

/// Removes `address` if it is a live sampled block; whether it was.
#[inline(always)]
pub(crate) fn remove(address: u64) -> bool {
    let i = index(address);
    // Relaxed: see `insert`. An empty bucket (almost every free's) holds
    // no address: one byte read.
    if COUNTS[i].load(Ordering::Relaxed) == 0 || address == EMPTY {
        return false;
    }
    remove_from(i, address)
}

#[inline(never)]
fn remove_from(i: usize, address: u64) -> bool {
    for slot in &TABLE[i].0 {
        // Relaxed: see `insert`. Only the freeing thread removes an
        // address (a block is freed once), so the CAS succeeds when the
        // load saw it.
        if slot.load(Ordering::Relaxed) == address
            && slot
                .compare_exchange(address, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            COUNTS[i].fetch_sub(1, Ordering::Relaxed);
            return true;
        }
    }
    false
}

/// Empties the table (a new session: blocks of an earlier one are not
/// its own).
pub(crate) fn clear() {
    for (b, count) in TABLE.iter().zip(&COUNTS) {
        if count.load(Ordering::Relaxed) == 0 {
            continue;
        }
        for slot in &b.0 {
            slot.store(EMPTY, Ordering::Relaxed);
        }
        count.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses of one bucket fill it, the next is refused, and a removal
    /// makes room; other addresses are unaffected. (One test: the table
    /// is process-global.)
    #[test]
    fn a_full_bucket_refuses_and_a_removal_makes_room() {
        // Find BUCKET + 1 addresses that hash to one bucket.
        let target = bucket(0x1000) as *const Bucket;
        let same: Vec<u64> = (1..)
            .map(|i: u64| 0x1000 + i * 16)
            .filter(|&a| core::ptr::eq(bucket(a), target))
            .take(BUCKET + 1)
            .collect();
        for &a in &same[..BUCKET] {
            assert!(insert(a), "{a:#x}");
        }
        assert!(!insert(same[BUCKET]), "the bucket is full");
        assert!(!remove(same[BUCKET]), "never inserted");
        assert!(remove(same[3]));
        assert!(!remove(same[3]), "removed once");
        assert!(insert(same[BUCKET]));
        assert!(!insert(0), "address 0 is never tracked");
        let i = index(same[0]);
        assert_eq!(
            COUNTS[i].load(Ordering::Relaxed) as usize,
            BUCKET,
            "the summary counts the bucket's addresses"
        );
        for &a in same.iter().filter(|&&a| a != same[3]) {
            assert!(remove(a), "{a:#x}");
        }
        assert_eq!(COUNTS[i].load(Ordering::Relaxed), 0, "emptied");
        assert!(insert(same[0]));
        clear();
        assert!(!remove(same[0]), "cleared");
        assert_eq!(COUNTS[i].load(Ordering::Relaxed), 0);
    }
}
