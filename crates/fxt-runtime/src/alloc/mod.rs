//! Where the memory went (issue 45): [`Sampled`], a global allocator
//! wrapper that samples allocations by bytes while a session asks for it
//! ([`crate::Config::alloc_sample_bytes`], `FXT_ALLOC_SAMPLE`).
//!
//! ```no_run
//! #[global_allocator]
//! static A: fxt_runtime::alloc::Sampled<std::alloc::System> =
//!     fxt_runtime::alloc::Sampled::new(std::alloc::System);
//! ```
//!
//! # Cost
//!
//! With no session sampling allocations, an allocation or free costs one
//! relaxed load of a word of the allocator itself (its copy of the
//! sampling generation, `armed.rs`) and a branch besides the inner
//! allocator's. Sampling, an allocation also counts its bytes down on a
//! `const` thread local (`countdown.rs`) and a free reads a count of the
//! live table's summary (`live.rs`: whether any sampled block starts in
//! the 256 bytes of its address, modulo the summary's window), both inline
//! before the tail call to the inner allocator; only an allocation that
//! crosses its sample point (one per mean bytes, on average), or the free
//! of an address whose region holds a sampled block, goes out of line. A
//! thread that takes samples faster than a cap raises its own mean
//! (`countdown::pace`, on the record's own timestamp), so what samples
//! cost a thread is bounded whatever its allocation rate; each record
//! carries the mean it was sampled at. A sampled allocation
//! copies the stack and writes one record (`hook.rs`): the stack from
//! the wrapper's frame that called the inner allocator up (none of the
//! frames that decide and record below it), copied straight into the
//! thread's chunk.
//!
//! # What is recorded
//!
//! Each sampled allocation is an `fxt.alloc` record (size, address, the
//! stack, the mean) on the allocating thread's timeline; the free of a
//! sampled block (or its move by `realloc`) is one too, so a reader knows
//! which sampled blocks are live at any moment. Nothing else: the
//! process's estimated live bytes after each (the heap counter a viewer
//! draws) are derived from these records by readers
//! (`fxt_format::derived::heap`), not counted here. A thread records its sampled allocations from
//! the first: one that has not recorded in the session yet is leased a
//! chunk by the hook (`thread::join_from_hook`: the control state only
//! tried, nothing allocated; a thread that recorded in an earlier
//! session gives that session's chunk back and abandons its reference
//! to it, freed by the next start or finish, `state::retired`), its stack copied as far as the kernel can
//! read it (`stack::probe_above`: its bounds are asked for at its first
//! event only, `pthread_getattr_np` taking a lock of the thread's that
//! it may hold while it allocates); its first event registers it fully.
//! Allocations made while fxt's slow path runs on the thread are fxt's
//! own and not sampled. A sampled allocation that finds the thread's gate
//! shut (mid-record: a signal handler's), the control state locked (the
//! session starting), or no room is dropped and counted in
//! `Stats::records_dropped`.
//!
//! # Safety where allocators are hard
//!
//! * fxt's own allocations inside the hook: a re-entrancy guard passes
//!   them through unsampled; the hook itself allocates nothing. fxt's own
//!   threads (the streamer, the prefaulter), and its slow path on the
//!   program's threads, are never sampled.
//! * Locks: the hook waits for none a thread may hold while it allocates
//!   (a fresh chunk may grow a crash-safe file under the ring's grow
//!   lock, which a thread takes only with its writer borrowed, and the
//!   hook refuses a borrowed writer).
//! * `fork`: the child samples nothing (a `pthread_atfork` child handler
//!   turns sampling off without a lock).
//! * Threads that exit: the countdown and guard are `const` thread locals
//!   without destructors, so an allocation in a thread-local destructor
//!   works (and is dropped, counted, once the thread's writer is gone).
//! * Blocks allocated before the session (or while it was not sampling)
//!   are not in the live table: their frees record nothing.
//! * `realloc`: the old block, if sampled, is recorded freed; the new one
//!   is sampled as an allocation of its new size.
//! * Zero-size and over-aligned layouts go to the inner allocator as they
//!   are; the record keeps the size asked for.
//! * A signal handler that allocates: it runs the same lock-free path; if
//!   it interrupted the hook (guard) or a record (the gate is busy), its
//!   allocation is not sampled or its record is dropped and counted.

mod armed;
mod countdown;
mod hook;
mod live;
mod runs;

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

/// A global allocator that forwards to `A` and samples allocations while
/// a session asks for it (see the module docs).
#[derive(Debug)]
pub struct Sampled<A> {
    inner: A,
    /// The sampling generation as this allocator reads it: 0 (not
    /// sampling) or the session's once registered, else `armed::UNSEEN`
    /// or `armed::FOLLOW` (read [`GENERATION`]).
    armed: AtomicU32,
}

impl<A> Sampled<A> {
    /// Wraps `inner` (any `GlobalAlloc`: the system allocator, mimalloc,
    /// jemalloc).
    pub const fn new(inner: A) -> Self {
        Sampled {
            inner,
            armed: AtomicU32::new(armed::UNSEEN),
        }
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

impl<A: Default> Default for Sampled<A> {
    fn default() -> Self {
        Sampled::new(A::default())
    }
}

/// The sampling session's generation (0: not sampling), which every
/// registered allocator keeps a copy of (`armed.rs`).
static GENERATION: AtomicU32 = AtomicU32::new(0);
/// Its settings, written before [`GENERATION`] is published.
static MEAN: AtomicU64 = AtomicU64::new(0);
static PID: AtomicU64 = AtomicU64::new(0);
static USE_TSC: AtomicBool = AtomicBool::new(false);
static CRASH_SAFE: AtomicBool = AtomicBool::new(false);
/// Sampled allocations and frees of sampled blocks in the session, those
/// not written, and the allocations the live table had no room for.
static TAKEN: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static UNTRACKED: AtomicU64 = AtomicU64::new(0);

/// The sampling session, as the hook reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Active {
    generation: u32,
    mean: u64,
    pid: u64,
    use_tsc: bool,
    crash_safe: bool,
}

impl Active {
    /// The session's settings, read after its generation `generation`
    /// was seen with Acquire.
    fn read(generation: u32) -> Active {
        Active {
            generation,
            mean: MEAN.load(Ordering::Relaxed),
            pid: PID.load(Ordering::Relaxed),
            use_tsc: USE_TSC.load(Ordering::Relaxed),
            crash_safe: CRASH_SAFE.load(Ordering::Relaxed),
        }
    }
}

/// Starts sampling allocations for the session of `generation` at mean
/// `mean` bytes.
pub(crate) fn start(generation: u32, mean: u64, pid: u64, use_tsc: bool, crash_safe: bool) {
    static AT_FORK: Once = Once::new();
    crate::state::fork::on_fork_child(
        &AT_FORK,
        forget_after_fork,
        "a forked child may sample allocations into its parent's buffer",
    );
    live::clear();
    TAKEN.store(0, Ordering::Relaxed);
    DROPPED.store(0, Ordering::Relaxed);
    UNTRACKED.store(0, Ordering::Relaxed);
    MEAN.store(mean.max(1), Ordering::Relaxed);
    PID.store(pid, Ordering::Relaxed);
    USE_TSC.store(use_tsc, Ordering::Relaxed);
    CRASH_SAFE.store(crash_safe, Ordering::Relaxed);
    // Release (SeqCst: the registration's protocol, `armed.rs`): pairs
    // with the slow path's Acquire load; the settings above are visible
    // to a hook that sees the generation.
    GENERATION.store(generation, Ordering::SeqCst);
    armed::publish(generation);
}

/// What a session's allocation sampling did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    /// Sampled allocations and frees of sampled blocks.
    pub(crate) taken: u64,
    /// Records (allocations, frees) not written.
    pub(crate) dropped: u64,
    /// Sampled allocations whose free is not tracked (the live table had
    /// no room).
    pub(crate) untracked: u64,
}

/// Stops sampling `generation` (a hook already past its check writes
/// within the finish's grace period, as an event does).
pub(crate) fn stop(generation: u32) -> bool {
    let stopped = GENERATION
        .compare_exchange(generation, 0, Ordering::SeqCst, Ordering::Relaxed)
        .is_ok();
    if stopped {
        armed::publish(0);
    }
    stopped
}

/// The counts so far.
pub(crate) fn counts() -> Counts {
    Counts {
        taken: TAKEN.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
        untracked: UNTRACKED.load(Ordering::Relaxed),
    }
}

/// The `fork` child handler: the child samples nothing (no lock taken).
extern "C" fn forget_after_fork() {
    GENERATION.store(0, Ordering::SeqCst);
    armed::publish(0);
    crate::thread::capture::forget_after_fork();
}

/// After an allocation of `size` bytes at `ptr` whose bytes crossed the
/// thread's sample point while `generation` samples: samples it if it is
/// the program's. `registers` were read by the caller (the wrapper's
/// frame that called the inner allocator), whose frame and those above
/// it are the stack copied: none of this function's, nor the hook's.
#[cold]
#[inline(never)]
fn decide(ptr: *mut u8, size: usize, generation: u32, registers: crate::stack::Registers) {
    // fxt's own threads (the streamer, the prefaulter, a provider's
    // listener) allocate for fxt: never sampled.
    if hook::in_hook() || crate::helpers::is_own_thread() {
        return;
    }
    // Acquire: pairs with `start`'s Release store (the settings).
    if GENERATION.load(Ordering::Acquire) != generation {
        return;
    }
    let active = Active::read(generation);
    // fxt's own allocations on the program's threads (its slow path
    // registering the thread, say) are not sampled either: their sample
    // point passes (the process's bytes are all counted down).
    let mean = countdown::decide(size, generation, active.mean);
    if mean != 0 && !crate::thread::in_slow_path() {
        hook::sampled_alloc(&active, ptr as u64, (size as u64, mean), registers);
    }
}

/// Before the free of the block of `size` bytes at `ptr`: records it if
/// it is a live sampled block.
#[inline(always)]
fn before_free(ptr: *mut u8, size: usize, generation: u32) {
    if live::remove(ptr as u64) {
        freed(ptr, size, generation);
    }
}

#[cold]
#[inline(never)]
fn freed(ptr: *mut u8, size: usize, generation: u32) {
    // Acquire: as in `decide`.
    if GENERATION.load(Ordering::Acquire) == generation {
        hook::sampled_free(&Active::read(generation), ptr as u64, size as u64);
    }
}

impl<A: GlobalAlloc> Sampled<A> {
    /// `alloc` (`alloc_zeroed` when `ZEROED`) by an allocator not
    /// registered yet (its first call, which registers it) or that follows
    /// the global generation (`armed.rs`): out of line, called last, so
    /// that the entry points keep no frame.
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[cold]
    #[inline(never)]
    unsafe fn alloc_unusual<const ZEROED: bool>(&self, layout: Layout, armed: u32) -> *mut u8 {
        let generation = armed::resolve(&self.armed, armed);
        if crosses(layout.size(), generation) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.alloc_crossed::<ZEROED>(layout, generation) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner_alloc::<ZEROED>(layout) }
    }

    /// The inner allocator's `alloc` (`alloc_zeroed` when `ZEROED`).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[inline(always)]
    unsafe fn inner_alloc<const ZEROED: bool>(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            if ZEROED {
                self.inner.alloc_zeroed(layout)
            } else {
                self.inner.alloc(layout)
            }
        }
    }

    /// `alloc` (`alloc_zeroed` when `ZEROED`) whose bytes crossed the
    /// thread's next sample point while `generation` samples: out of line,
    /// so that every other call is the countdown and a tail call to the
    /// inner allocator (no frame of the wrapper's).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[cold]
    #[inline(never)]
    unsafe fn alloc_crossed<const ZEROED: bool>(&self, layout: Layout, generation: u32) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let ptr = unsafe { self.inner_alloc::<ZEROED>(layout) };
        if !ptr.is_null() {
            // Read here, in the wrapper's outermost frame: the stack
            // copied is this frame and those above it (the program's),
            // none of the frames below that decide and record.
            let registers = crate::stack::current_registers();
            decide(ptr, layout.size(), generation, registers);
        }
        ptr
    }

    /// `alloc` or `alloc_zeroed`: the allocator's copy of the generation
    /// read and compared with 0 (all while nothing samples), then the
    /// countdown, each before a tail call.
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[inline(always)]
    unsafe fn alloc_sampled<const ZEROED: bool>(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a flag; `decide` reads the global generation again with
        // Acquire before it reads the session's settings.
        let armed = self.armed.load(Ordering::Relaxed);
        if armed != 0 {
            if armed >= armed::FOLLOW {
                if !armed::follows_idle(armed) {
                    // SAFETY: the caller's contract, passed on.
                    return unsafe { self.alloc_unusual::<ZEROED>(layout, armed) };
                }
            } else if countdown::crossed(layout.size()) {
                // SAFETY: the caller's contract, passed on.
                return unsafe { self.alloc_crossed::<ZEROED>(layout, armed) };
            }
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner_alloc::<ZEROED>(layout) }
    }

    /// `dealloc` by an allocator not registered yet or that follows the
    /// global generation (as [`Self::alloc_unusual`]).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::dealloc`].
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_unusual(&self, ptr: *mut u8, layout: Layout, armed: u32) {
        let generation = armed::resolve(&self.armed, armed);
        if maybe_sampled(ptr, generation) {
            before_free(ptr, layout.size(), generation);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    /// `realloc` while the allocator's copy of the generation is `armed`
    /// (not 0): out of line, so that the entry point keeps no frame.
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::realloc`].
    #[inline(never)]
    unsafe fn realloc_sampled(
        &self,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
        armed: u32,
    ) -> *mut u8 {
        let generation = armed::resolve_inline(&self.armed, armed);
        // The old block is recorded freed before the inner call (which may
        // free it); a failed `realloc` leaves it recorded freed (its later
        // free records nothing).
        if maybe_sampled(ptr, generation) {
            before_free(ptr, layout.size(), generation);
        }
        let crossed = crosses(new_size, generation);
        // SAFETY: the caller's contract, passed on.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if crossed && !new.is_null() {
            // Read here: as in `alloc_crossed`.
            let registers = crate::stack::current_registers();
            decide(new, new_size, generation, registers);
        }
        new
    }

    /// `dealloc` of a block whose address may be a live sampled block's
    /// while the allocator's copy of the generation is `armed` (not 0;
    /// out of line, as [`Self::alloc_crossed`]).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::dealloc`].
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_maybe_sampled(&self, ptr: *mut u8, layout: Layout, armed: u32) {
        if armed >= armed::FOLLOW {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.dealloc_unusual(ptr, layout, armed) };
        }
        // Before the inner free: once freed, the address may be handed out
        // (and sampled) again on another thread.
        before_free(ptr, layout.size(), armed);
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) }
    }
}

/// Whether an allocation of `size` bytes while `generation` (0: none)
/// samples crosses the thread's next sample point (the caller then takes
/// the allocation's cold path): a thread-local subtraction and a compare.
#[inline(always)]
fn crosses(size: usize, generation: u32) -> bool {
    generation != 0 && countdown::crossed(size)
}

/// Whether the free of the block at `ptr` while `generation` (0: none)
/// samples may be a live sampled block's (a count of the live table's
/// summary read; almost never).
#[inline(always)]
fn maybe_sampled(ptr: *mut u8, generation: u32) -> bool {
    generation != 0 && live::may_hold(ptr as u64)
}

// SAFETY: every method forwards to the inner allocator with the caller's
// arguments unchanged and returns its result unchanged; the sampling
// around it reads the returned pointer as a number only.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Sampled<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.alloc_sampled::<false>(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.alloc_sampled::<true>(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Relaxed: a flag; `freed` reads the global generation again with
        // Acquire before it reads the session's settings.
        let armed = self.armed.load(Ordering::Relaxed);
        // An allocator that is not registered or follows the global
        // generation checks the summary as a registered one does: no
        // sampled block lives where it says none does, whatever samples
        // (it is left behind by a session only where blocks it sampled
        // are still live); the slow path sorts the rest out.
        if armed != 0 && live::may_hold(ptr as u64) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.dealloc_maybe_sampled(ptr, layout, armed) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Relaxed: as in `dealloc`.
        let armed = self.armed.load(Ordering::Relaxed);
        if armed != 0 {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.realloc_sampled(ptr, layout, new_size, armed) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.realloc(ptr, layout, new_size) }
    }
}
