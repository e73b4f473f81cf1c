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
//! The table also tells a free whether the block's address carries the
//! mark of a sampled block by chance only (`marked.rs`): a marked block
//! stays in it as long as it lives, whatever sessions start or stop, so
//! that its free gives the inner allocator back the block it allocated.
//! A session's start makes the blocks of earlier ones *stale* (their
//! frees are not its own: not recorded), as does a sampled allocation
//! whose record was not written; the free of a stale block removes it and
//! records nothing.
//!
//! Only the frees whose address carries the mark (or whose layout is too
//! aligned to be marked) look here: a small summary counts the live
//! sampled blocks of each [`REGION`] of the address space (taken modulo
//! [`REGIONS`] of them), so that such a free whose region holds none
//! (almost every chance match) reads two bytes of it instead of a cache
//! line of the large table.

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
/// The bit of a slot that says its block is stale (no address has it).
const STALE: u64 = 1 << 63;

#[repr(align(64))]
struct Bucket([AtomicU64; BUCKET]);

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY_BUCKET: Bucket = Bucket([const { AtomicU64::new(EMPTY) }; BUCKET]);

static TABLE: [Bucket; BUCKETS] = [EMPTY_BUCKET; BUCKETS];

/// Bytes of the address space a count of the summary covers: a page
/// (marked blocks all lie at the same offset in theirs).
const REGION: u64 = 4096;
/// Counts of the summary (16 KiB; an address's region is taken modulo
/// their number, so the summary covers a 32 MiB window that repeats).
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
    if address == EMPTY || address & STALE != 0 {
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

/// Whether `address` may be a sampled block in the table (its region
/// holds one).
#[inline(always)]
fn may_hold(address: u64) -> bool {
    // Relaxed: see `insert`.
    region(address).load(Ordering::Relaxed) != 0
}

/// Removes `address` if it is a sampled block in the table: `None` when
/// it is not, else whether its free is recorded (`false`: stale).
pub(crate) fn remove(address: u64) -> Option<bool> {
    // Relaxed: see `insert`. A region without sampled blocks (almost
    // every chance match's) holds no address: two bytes read.
    if !may_hold(address) || address == EMPTY || address & STALE != 0 {
        return None;
    }
    for slot in &TABLE[index(address)].0 {
        // Relaxed: see `insert`. Only the freeing thread removes an
        // address (a block is freed once), and the only other change to
        // its slot is to make it stale: the CAS is retried then.
        let mut seen = slot.load(Ordering::Relaxed);
        while seen & !STALE == address {
            match slot.compare_exchange(seen, EMPTY, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    region(address).fetch_sub(1, Ordering::Relaxed);
                    return Some(seen & STALE == 0);
                }
                Err(now) => seen = now,
            }
        }
    }
    None
}

/// Whether `address` is a sampled block in the table (stale or not).
pub(crate) fn holds(address: u64) -> bool {
    may_hold(address)
        && address != EMPTY
        && TABLE[index(address)]
            .0
            .iter()
            .any(|slot| slot.load(Ordering::Relaxed) & !STALE == address)
}

/// Makes the slot `slot` stale if it holds a block (`only`: that one).
fn make_stale(slot: &AtomicU64, only: Option<u64>) {
    let mut seen = slot.load(Ordering::Relaxed);
    while seen != EMPTY && seen & STALE == 0 && only.is_none_or(|a| a == seen) {
        match slot.compare_exchange(seen, seen | STALE, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => seen = now,
        }
    }
}

/// Makes the block at `address` stale (its allocation's record was not
/// written: its free is not recorded either).
pub(crate) fn make_one_stale(address: u64) {
    for slot in &TABLE[index(address)].0 {
        make_stale(slot, Some(address));
    }
}

/// Makes every block in the table stale (a new session: blocks of an
/// earlier one are not its own, yet stay until freed). Reads every slot
/// (pages never written read as the zero page) and writes only those
/// that hold a block.
pub(crate) fn make_all_stale() {
    for b in &TABLE {
        for slot in &b.0 {
            make_stale(slot, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses of one bucket fill it, the next is refused, and a removal
    /// makes room; the summary counts each region's live blocks (an
    /// address near one, or a window of regions away, may be one; the
    /// table says it is not), and a region without any says no; a stale
    /// block is removed as not recorded. (One test: the table is
    /// process-global.)
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
        assert_eq!(remove(same[BUCKET]), None, "never inserted");
        assert_eq!(remove(same[3]), Some(true));
        assert_eq!(remove(same[3]), None, "removed once");
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
            assert!(may_hold(maybe) && remove(maybe).is_none(), "{maybe:#x}");
        }
        let quiet = (0..)
            .map(|k: u64| 0x7000_0000 + k * REGION)
            .find(|&a| region(a).load(Ordering::Relaxed) == 0)
            .unwrap();
        assert!(!may_hold(quiet) && remove(quiet).is_none(), "{quiet:#x}");
        make_one_stale(live[1]);
        assert!(holds(live[1]) && holds(live[2]) && !holds(same[3]));
        for &a in &live {
            assert_eq!(remove(a), Some(a != live[1]), "{a:#x}");
        }
        for &a in &same {
            assert_eq!(region(a).load(Ordering::Relaxed), 0, "emptied");
        }
        assert!(insert(same[0]));
        make_all_stale();
        assert_eq!(remove(same[0]), Some(false), "stale");
        assert!(!may_hold(same[0]));
    }
}
