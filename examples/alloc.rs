//! Sampled allocations (issue 45's "done when" program).
//!
//! Two sites allocate through one shared helper, `make_block`
//! (`#[inline(never)]`, so only a whole stack tells their allocations
//! apart): `site_a` allocates three times the bytes `site_b` does, and
//! frees them all; `site_b` keeps one block in four live to the end of the
//! trace ([`LIVE_BYTES`]). The global allocator is fxt's sampling wrapper.
//!
//! ```text
//! FXT_ALLOC_SAMPLE=4K cargo run --release --example alloc
//! fxt flame --alloc --folded trace.fxt        # bytes allocated, by stack
//! fxt flame --alloc --live --folded trace.fxt # what is live at the end
//! fxt stats trace.fxt                         # the allocations section
//! fxt open trace.fxt                          # Perfetto: the heap profile
//! fxt record --alloc-sample 4K -- target/release/examples/alloc
//! ```

use std::hint::black_box;

#[global_allocator]
static ALLOCATOR: fxt::alloc::Sampled<std::alloc::System> =
    fxt::alloc::Sampled::new(std::alloc::System);

/// Bytes of each block.
pub const BLOCK: usize = 1000;
/// Blocks `site_a` allocates (and frees).
pub const A_BLOCKS: usize = 48_000;
/// Blocks `site_b` allocates; it keeps one in [`KEEP_EVERY`].
pub const B_BLOCKS: usize = 16_000;
/// `site_b` keeps every this-many-th block live.
pub const KEEP_EVERY: usize = 4;
/// Bytes `site_a` allocates.
pub const A_BYTES: usize = A_BLOCKS * BLOCK;
/// Bytes `site_b` allocates.
pub const B_BYTES: usize = B_BLOCKS * BLOCK;
/// Bytes live at the end (all of them `site_b`'s).
pub const LIVE_BYTES: usize = B_BLOCKS / KEEP_EVERY * BLOCK;

/// The shared helper: one zeroed block of `n` bytes.
#[inline(never)]
pub fn make_block(n: usize) -> Box<[u8]> {
    black_box(vec![0u8; black_box(n)].into_boxed_slice())
}

/// Allocates [`A_BYTES`] through the helper, freeing each block.
#[inline(never)]
pub fn site_a() {
    for _ in 0..A_BLOCKS {
        drop(black_box(make_block(BLOCK)));
    }
}

/// Allocates [`B_BYTES`] through the helper, keeping one block in
/// [`KEEP_EVERY`] in `kept`.
#[inline(never)]
pub fn site_b(kept: &mut Vec<Box<[u8]>>) {
    for i in 0..B_BLOCKS {
        let block = make_block(BLOCK);
        if i % KEEP_EVERY == 0 {
            kept.push(block);
        } else {
            drop(black_box(block));
        }
    }
}

/// Runs both sites (each in a slice of its name) and returns what stays
/// live; `kept` has room for it already, so that it allocates nothing.
pub fn run(kept: &mut Vec<Box<[u8]>>) {
    {
        let _s = fxt::trace_duration_scope!("alloc", "site a");
        site_a();
    }
    {
        let _s = fxt::trace_duration_scope!("alloc", "site b");
        site_b(kept);
    }
}

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut kept = Vec::with_capacity(B_BLOCKS / KEEP_EVERY);
    let session = fxt::start_from_env()?;
    run(&mut kept);
    let stats = session.finish()?;
    eprintln!(
        "{} sampled allocations and frees ({} dropped records), {} bytes live at the end",
        stats.alloc_samples,
        stats.records_dropped,
        kept.len() * BLOCK
    );
    drop(kept);
    Ok(())
}
