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
//! none is a sampled block's: a small summary counts the live sampled
//! blocks of each [`REGION`] of the address space (taken modulo
//! [`REGIONS`] of them), so that a free whose region holds none reads two
//! bytes of it instead of a cache line of the large table. By region, not
//! by the table's hash: the blocks a program frees one after another lie
//! near each other, so their frees read the same few lines of the summary,
//! which stay in cache (a hash spreads them over all of its lines).

use core::sync::atomic::{AtomicU16, AtomicU64, Ordering};

/// Slots of the table: 64 Ki addresses (512 KiB of zeroed static memory,
/// written only where blocks are sampled).
const SLOTS: usize = 1 << 16;
/// Slots of a bucket (64 bytes).
const BUCKET: usize = 8;
/// Buckets of the table.
const BUCKETS: usize = SLOTS / BUCKET;
/// An empty slot (no block lives at address 0).
const EMPTY: u64 = 0;

#[repr(align(64))]
struct Bucket([AtomicU64; BUCKET]);

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_BUCKET: Bucket = Bucket([const { AtomicU64::new(EMPTY) }; BUCKET]);

static TABLE: [Bucket; BUCKETS] = [EMPTY_BUCKET; BUCKETS];

/// Bytes of the address space a count of the summary covers: a few small
/// blocks (a page would hold dozens around a sampled block, whose frees
/// would all look the table up).
const REGION: u64 = 256;
/// Counts of the summary (16 KiB; an address's region is taken modulo
/// their number, so the summary covers a 2 MiB window that repeats, and
/// a line of it 8 KiB of the window).
const REGIONS: usize = 1 << 13;
/// Most blocks a region's count takes: past it, an insert is refused
/// (untracked, counted). A region holds at most [`SLOTS`] tracked blocks,
/// and each thread inserts one at a time, so the count reaches it only
/// with more than 4096 threads inserting into a region that holds
/// 61 Ki blocks already, and never wraps.
const REGION_LIMIT: u16 = u16::MAX - 4096;

/// Live sampled blocks of each region (counted up before an insert claims
/// a slot, down after a removal empties one, so never below the region's
/// tracked blocks).
static LIVE_IN: [AtomicU16; REGIONS] = [const { AtomicU16::new(0) }; REGIONS];

/// The bucket index of `address` (Fibonacci hashing of the address
/// without its alignment bits).
#[inline(always)]
fn index(address: u64) -> usize {
    let h = (address >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - BUCKETS.trailing_zeros())) as usize
}

/// The summary's count for `address`.
#[inline(always)]
fn region(address: u64) -> &'static AtomicU16 {
    &LIVE_IN[(address / REGION) as usize % REGIONS]
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
    let count = region(address);
    // Relaxed, here and below: the table holds addresses only; no other
    // memory is published through it. An address is inserted by the
    // thread that got the block and removed by the one that frees it,
    // which the program orders (a block is freed after it is allocated),
    // so the freeing thread sees the count and the slot this stored.
    if count.load(Ordering::Relaxed) >= REGION_LIMIT {
        return false;
    }
    count.fetch_add(1, Ordering::Relaxed);
    for slot in &TABLE[index(address)].0 {
        if slot
            .compare_exchange(EMPTY, address, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return true;
        }
    }
    count.fetch_sub(1, Ordering::Relaxed);
    false
}

/// Starts fetching the cache lines that inserting `address` touches (its
/// bucket and its region's count), so that [`insert`], called a while
/// later, finds them near: the table is large, a sampled block's bucket
/// rarely cached.
#[inline(always)]
pub(crate) fn prefetch(address: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bucket = TABLE[index(address)].0.as_ptr().cast::<i8>();
        let count = (region(address) as *const AtomicU16).cast::<i8>();
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

/// Whether `address` may be a live sampled block (its region holds one):
/// the two bytes every free reads while a session samples.
#[inline(always)]
pub(crate) fn may_hold(address: u64) -> bool {
    // Relaxed: see `insert`.
    region(address).load(Ordering::Relaxed) != 0
}

/// Removes `address` if it is a live sampled block; whether it was.
#[inline(always)]
pub(crate) fn remove(address: u64) -> bool {
    // Relaxed: see `insert`. A region without sampled blocks (almost
    // every free's) holds no address: two bytes read.
    if !may_hold(address) || address == EMPTY {
        return false;
    }
    remove_from(address)
}

#[inline(never)]
fn remove_from(address: u64) -> bool {
    for slot in &TABLE[index(address)].0 {
        // Relaxed: see `insert`. Only the freeing thread removes an
        // address (a block is freed once), so the CAS succeeds when the
        // load saw it.
        if slot.load(Ordering::Relaxed) == address
            && slot
                .compare_exchange(address, EMPTY, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            region(address).fetch_sub(1, Ordering::Relaxed);
            return true;
        }
    }
    false
}

/// Empties the table (a new session: blocks of an earlier one are not
/// its own). Reads every slot (pages never written read as the zero page)
/// and writes only those that hold an address.
pub(crate) fn clear() {
    for b in &TABLE {
        for slot in &b.0 {
            if slot.load(Ordering::Relaxed) != EMPTY {
                slot.store(EMPTY, Ordering::Relaxed);
            }
        }
    }
    for count in &LIVE_IN {
        if count.load(Ordering::Relaxed) != 0 {
            count.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses of one bucket fill it, the next is refused, and a removal
    /// makes room; the summary counts each region's live blocks (an
    /// address near one, or a window of regions away, may be one; the
    /// table says it is not), and a region without any says no. (One
    /// test: the table is process-global.)
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
        let live: Vec<u64> = same.iter().copied().filter(|&a| a != same[3]).collect();
        let window = REGION * REGIONS as u64;
        for &a in &live {
            assert!(may_hold(a), "{a:#x}");
            let in_region = live
                .iter()
                .filter(|&&b| (b % window) / REGION == (a % window) / REGION)
                .count();
            assert_eq!(
                region(a).load(Ordering::Relaxed) as usize,
                in_region,
                "the summary counts the region's live blocks ({a:#x})"
            );
        }
        let near = live[0] ^ 8;
        let alias = live[0] + window;
        for maybe in [near, alias] {
            assert!(may_hold(maybe) && !remove(maybe), "{maybe:#x}");
        }
        let quiet = (0..)
            .map(|k: u64| 0x7000_0000 + k * REGION)
            .find(|&a| region(a).load(Ordering::Relaxed) == 0)
            .unwrap();
        assert!(!may_hold(quiet) && !remove(quiet), "{quiet:#x}");
        for &a in &live {
            assert!(remove(a), "{a:#x}");
        }
        for &a in &same {
            assert_eq!(region(a).load(Ordering::Relaxed), 0, "emptied");
        }
        assert!(insert(same[0]));
        clear();
        assert!(!remove(same[0]), "cleared");
        assert!(!may_hold(same[0]));
    }
}
