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
//! With no session sampling allocations, an allocation costs one relaxed
//! load of a word of the allocator itself (its copy of the sampling
//! generation, `armed.rs`) and a branch besides the inner allocator's.
//! Sampling, it also counts its bytes down on a `const` thread local
//! (`countdown.rs`: a subtraction and a sign test), inline before the
//! tail call to the inner allocator, with no other test (an allocator
//! that is not a `static` of the executable counts down whether or not a
//! session samples, `armed.rs`). A free, sampling or not, tests its
//! pointer's low bits, no memory read: a sampled block carries a mark in
//! its address (`marked.rs`: it is allocated a page larger and handed out
//! page-aligned), so only the free of a page-aligned address (a few in a
//! thousand by chance) looks further (the live table's summary,
//! `live.rs`). Only an allocation that crosses the
//! end of its count (one per mean bytes, on average, or per
//! `countdown::CHECK_BYTES`), or such a free, goes out of line. A
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
//!   are not in the live table: their frees record nothing. A sampled
//!   block stays in the table (marked, it must be given back to the inner
//!   allocator as allocated) until freed, whatever sessions start or stop;
//!   a new session makes it stale: its free records nothing.
//! * `realloc`: a sampled block (or a block whose new size is sampled)
//!   moves: the new block allocated (and sampled as an allocation of its
//!   new size, or not), the bytes copied, the old one freed (and recorded
//!   freed, if sampled); a failed `realloc` leaves the old block as it
//!   was. Any other goes to the inner allocator's `realloc`.
//! * The inner allocator is given back each block with the layout it
//!   allocated it with. A sampled block costs a page and 16 bytes more
//!   while it lives. Zero-size layouts, and layouts aligned past a page,
//!   go to the inner allocator as they are (a
//!   sampled over-aligned block is tracked by the table alone; a
//!   zero-size one is recorded untracked); the record keeps the size
//!   asked for.
//! * A signal handler that allocates: it runs the same lock-free path; if
//!   it interrupted the hook (guard) or a record (the gate is busy), its
//!   allocation is not sampled or its record is dropped and counted.

mod armed;
mod countdown;
mod hook;
mod live;
mod marked;
mod runs;

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Once;

/// A global allocator that forwards to `A` and samples allocations while
/// a session asks for it (see the module docs).
///
/// A cache line of its own: every allocation on every thread reads
/// `armed`, so a static of the program's that shares its line and is
/// written often (a counter) would make each allocation wait for that
/// line (`bench-alloc --neighbour` measures it).
#[derive(Debug)]
#[repr(align(64))]
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
    live::make_all_stale();
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

/// Whether an allocation of `size` bytes whose bytes crossed the end of
/// the thread's count while `generation` samples is sampled, if it is
/// the program's: the session and the mean it is sampled at. Decided
/// before the block is allocated: a sampled block is allocated marked
/// (`marked.rs`).
#[cold]
#[inline(never)]
fn choose(size: usize, generation: u32) -> Option<u64> {
    // fxt's own threads (the streamer, the prefaulter, a provider's
    // listener) allocate for fxt: never sampled.
    if hook::in_hook() || crate::helpers::is_own_thread() {
        return None;
    }
    // Acquire: pairs with `start`'s Release store (the settings).
    if GENERATION.load(Ordering::Acquire) != generation {
        return None;
    }
    // fxt's own allocations on the program's threads (its slow path
    // registering the thread, say) are not sampled either: their sample
    // point passes (the process's bytes are all counted down).
    let mean = countdown::decide(size, generation, MEAN.load(Ordering::Relaxed));
    (mean != 0 && !crate::thread::in_slow_path()).then_some(mean)
}

/// Records the sampled allocation of `size` bytes at `ptr`, sampled at
/// `mean` in the session of `generation` ([`choose`] saw it with
/// Acquire); whether its record was written. Out of line: the session's
/// settings are read here, not in the frame that read `registers` (whose
/// frame and those above it are the stack copied).
#[inline(never)]
fn record_alloc(
    generation: u32,
    ptr: *mut u8,
    size: (u64, u64),
    registers: crate::stack::Registers,
    tracked: bool,
) -> bool {
    let active = Active::read(generation);
    hook::sampled_alloc(&active, ptr as u64, size, registers, tracked)
}

/// The free of the sampled block of `size` bytes at `ptr` (just removed
/// from the live table, not stale): recorded while a session samples.
#[cold]
#[inline(never)]
fn freed(ptr: *mut u8, size: usize) {
    // Acquire: as in `choose`.
    let generation = GENERATION.load(Ordering::Acquire);
    if generation != 0 {
        hook::sampled_free(&Active::read(generation), ptr as u64, size as u64);
    }
}

impl<A: GlobalAlloc> Sampled<A> {
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

    /// `alloc` (`alloc_zeroed` when `ZEROED`) whose bytes crossed the end
    /// of the thread's count while the allocator's copy of the generation
    /// was not 0: read again here (a session's, or [`armed::UNSEEN`] or
    /// [`armed::FOLLOW`]: resolved here, the allocator registered at its
    /// first crossing; 0 if the session just stopped), so that the entry
    /// compares the copy in memory and keeps nothing of it. Out of line,
    /// so that every other call is the countdown and a tail call to the
    /// inner allocator (no frame of the wrapper's).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[cold]
    #[inline(never)]
    unsafe fn alloc_crossed<const ZEROED: bool>(&self, layout: Layout) -> *mut u8 {
        // Relaxed: as in `alloc_sampled`.
        let armed = self.armed.load(Ordering::Relaxed);
        let generation = armed::resolve_inline(&self.armed, armed);
        if generation == 0 {
            // An allocator that follows the global generation (or was just
            // registered) while nothing samples: its count drawn anew,
            // crossed again a part later at most.
            countdown::idle();
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner_alloc::<ZEROED>(layout) };
        }
        match choose(layout.size(), generation) {
            // SAFETY: the caller's contract, passed on.
            Some(mean) => unsafe { self.alloc_chosen::<ZEROED>(layout, generation, mean) },
            // SAFETY: the caller's contract, passed on.
            None => unsafe { self.inner_alloc::<ZEROED>(layout) },
        }
    }

    /// `alloc` (`alloc_zeroed` when `ZEROED`) sampled in the session
    /// of `generation` at `mean` ([`choose`]).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[inline(never)]
    unsafe fn alloc_chosen<const ZEROED: bool>(
        &self,
        layout: Layout,
        generation: u32,
        mean: u64,
    ) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let (ptr, tracked) = unsafe { self.alloc_tracked::<ZEROED>(layout) };
        if !ptr.is_null() {
            // Read here, in the wrapper's outermost frame: the stack
            // copied is this frame and those above it (the program's),
            // none of the frames below that decide and record.
            let registers = crate::stack::current_registers();
            let size = (layout.size() as u64, mean);
            if !record_alloc(generation, ptr, size, registers, tracked) && tracked {
                live::make_one_stale(ptr as u64);
            }
        }
        ptr
    }

    /// A sampled block of `layout` (zeroed when `ZEROED`), marked and in
    /// the live table when it can be (`marked.rs`), and whether it is in
    /// the table (else untracked: its free is not recorded).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[inline]
    unsafe fn alloc_tracked<const ZEROED: bool>(&self, layout: Layout) -> (*mut u8, bool) {
        if let Some(inner) = marked::inner_layout(layout) {
            // SAFETY: the caller's contract, passed on (`inner` is larger,
            // as aligned).
            let base = unsafe { self.inner_alloc::<ZEROED>(inner) };
            if base.is_null() {
                return (base, false);
            }
            // SAFETY: `base` is a fresh block of `inner`'s size.
            let ptr = unsafe { marked::place(base) };
            if live::insert(ptr as u64) {
                return (ptr, true);
            }
            // No room in the table: the block is not marked (a marked
            // block not in the table would be freed as it is).
            // SAFETY: allocated just above with `inner`, not handed out.
            unsafe { self.inner.dealloc(base, inner) };
        }
        // SAFETY: the caller's contract, passed on.
        let ptr = unsafe { self.inner_alloc::<ZEROED>(layout) };
        let tracked =
            !ptr.is_null() && marked::tracked_unmarked(layout) && live::insert(ptr as u64);
        (ptr, tracked)
    }

    /// `alloc` or `alloc_zeroed`: the allocator's copy of the generation
    /// read and compared with 0 (all while nothing samples), then the
    /// countdown, each before a tail call. Any copy but 0 counts down (a
    /// session's generation, or an allocator not registered yet or that
    /// follows the global generation: [`Self::alloc_crossed`] resolves
    /// those), so that a sampling allocation tests one value only.
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::alloc`].
    #[inline(always)]
    unsafe fn alloc_sampled<const ZEROED: bool>(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a flag; `choose` reads the global generation again with
        // Acquire before it reads the session's settings.
        if self.armed.load(Ordering::Relaxed) != 0 && countdown::crossed(layout.size()) {
            // Out of line: the countdown falls through to the tail call.
            core::hint::cold_path();
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.alloc_crossed::<ZEROED>(layout) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner_alloc::<ZEROED>(layout) }
    }

    /// `dealloc` of a block whose pointer carries the mark of a sampled
    /// block (`marked.rs`): records
    /// its free if it is a sampled block of the session, and gives the
    /// inner allocator back the block it allocated (out of line, as
    /// [`Self::alloc_crossed`]).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::dealloc`].
    #[cold]
    #[inline(never)]
    unsafe fn dealloc_maybe_sampled(&self, ptr: *mut u8, layout: Layout) {
        // Before the inner free: once freed, the address may be handed out
        // (and sampled) again on another thread.
        let Some(recorded) = live::remove(ptr as u64) else {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.inner.dealloc(ptr, layout) };
        };
        if recorded {
            freed(ptr, layout.size());
        }
        // SAFETY: the caller's contract, passed on; a sampled block in the
        // table is marked whenever its layout can be.
        unsafe { self.dealloc_sampled_block(ptr, layout) }
    }

    /// Gives the inner allocator back the sampled block at `ptr` (taken out
    /// of the live table).
    ///
    /// # Safety
    ///
    /// As for [`GlobalAlloc::dealloc`]; `ptr` was allocated by
    /// [`Self::alloc_tracked`] and was in the table.
    unsafe fn dealloc_sampled_block(&self, ptr: *mut u8, layout: Layout) {
        match marked::inner_layout(layout) {
            // SAFETY: the block was allocated marked (a tracked block of a
            // layout that can be marked always is), from `base` with
            // `inner`.
            Some(inner) => unsafe { self.inner.dealloc(marked::base(ptr), inner) },
            // SAFETY: the caller's contract, passed on.
            None => unsafe { self.inner.dealloc(ptr, layout) },
        }
    }

    /// `realloc` while the allocator's copy of the generation is `armed`
    /// or of a block that may be a sampled one: out of line, so that the
    /// entry point keeps no frame. A sampled block (or a new block
    /// sampled) moves: a new block allocated, the bytes copied, the old
    /// one freed, each through the wrapper.
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
        // SAFETY: the caller's contract: `new_size`, rounded up to the
        // alignment, does not overflow `isize`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let sampled = marked::may_be_sampled(ptr) && live::holds(ptr as u64);
        let generation = if armed == 0 {
            0
        } else {
            armed::resolve_inline(&self.armed, armed)
        };
        let chosen = if !sampled && crosses(new_size, generation) {
            choose(new_size, generation)
        } else {
            None
        };
        let new = match chosen {
            // SAFETY: the caller's contract, passed on.
            Some(mean) => unsafe { self.alloc_chosen::<false>(new_layout, generation, mean) },
            // SAFETY: the caller's contract, passed on.
            None if sampled => unsafe { self.alloc_sampled::<false>(new_layout) },
            // SAFETY: the caller's contract, passed on.
            None => return unsafe { self.inner.realloc(ptr, layout, new_size) },
        };
        if !new.is_null() {
            // SAFETY: both blocks are valid for the bytes copied and
            // distinct (the old one is still live); the old one is freed
            // with its layout, as the caller's contract says.
            unsafe {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

/// Whether an allocation of `size` bytes while `generation` (0: none)
/// samples crosses the end of the thread's count (the caller then takes
/// the allocation's cold path): a thread-local subtraction and a sign
/// test.
#[inline(always)]
fn crosses(size: usize, generation: u32) -> bool {
    generation != 0 && countdown::crossed(size)
}

// SAFETY: every method forwards to the inner allocator with the caller's
// arguments unchanged and returns its result unchanged, except for a
// sampled block: allocated larger from the inner allocator and handed
// out inside it (`marked.rs`), and given back to it, block and layout as
// allocated, when freed (its free told by its mark and the live table);
// its `realloc` allocates, copies and frees through the wrapper.
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
        // Whatever samples (a sampled block may outlive its session): the
        // pointer's low bits, no memory read.
        if marked::may_be_sampled(ptr) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.dealloc_maybe_sampled(ptr, layout) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Relaxed: as in `alloc`.
        let armed = self.armed.load(Ordering::Relaxed);
        if armed != 0 || marked::may_be_sampled(ptr) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { self.realloc_sampled(ptr, layout, new_size, armed) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { self.inner.realloc(ptr, layout, new_size) }
    }
}
