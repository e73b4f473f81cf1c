//! The hardware floor: the least work that records an FXT-like event.
//!
//! One clock read (`rdtsc` on x86-64), a reservation of the record's words
//! in a preallocated ring whose pages were all touched before timing, and
//! one store per word (header, timestamp, argument header and value...).
//! Headers are real FXT headers with indexed strings and thread, so the
//! records have the sizes fxt's own records should have: instant 2 words,
//! instant with one `u64` argument 4, counter with one `i64` value 5,
//! duration complete 3.
//!
//! Three variants, by how the reservation is made:
//! * [`Cursor::Plain`] (`floor`, **the floor**): each thread has its own
//!   ring and a plain thread-local cursor, and the words are plain stores.
//!   No tracer that lets a reader see the records can do less per event;
//!   it is the denominator of every ratio in the table;
//! * [`Cursor::PerThread`] (`floor-atomic`): each thread has its own ring,
//!   reserved through an (uncontended) atomic `fetch_add`, with relaxed
//!   atomic stores: what a lock-free per-thread reservation costs;
//! * [`Cursor::Shared`] (`floor-shared`): every thread reserves from one
//!   ring through one atomic cursor (what a naive shared buffer costs: the
//!   cursor's cache line bounces between cores);
//! * [`Cursor::PlainFresh`] (`floor-fresh`): the floor's code writing
//!   into memory that was *not* faulted in before timing, as a fresh
//!   session's buffer is: each thread's ring is a new anonymous mapping,
//!   and the cursor faults each 64 KiB it enters in with one
//!   `MADV_POPULATE_WRITE` (fxt's writers do the same when they overtake
//!   its prefaulter). What the kernel's work on fresh memory (a fault and
//!   a zeroed page per 4 KiB) costs, with no tracer around it: the least a
//!   fresh session's first pass can cost when no core is idle to fault the
//!   buffer in ahead of the writers.
//!
//! The empty loop body used as the baseline of a disabled call site is here
//! too ([`Scenario::Disabled`]).

use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use fxt_format::encode::header::{self, arg_type, event_type};

use crate::harness::{time_each, Scenario, Tracer};

/// Which cursor the floor reserves from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cursor {
    /// One ring and one atomic cursor shared by all threads.
    Shared,
    /// One ring and one (uncontended) atomic cursor per thread.
    PerThread,
    /// One ring per thread, a plain thread-local cursor, plain stores.
    Plain,
    /// As `Plain`, in fresh memory faulted in 64 KiB at a time while
    /// writing.
    PlainFresh,
}

/// The floor as a [`Tracer`].
#[derive(Debug)]
pub struct Floor {
    cursor: Cursor,
}

impl Floor {
    /// A floor with the given cursor layout (allocates nothing until a
    /// thread is initialised).
    pub const fn new(cursor: Cursor) -> Floor {
        Floor { cursor }
    }
}

/// Words in the shared ring (128 MiB, larger than any cache).
const SHARED_WORDS: usize = 1 << 24;
/// Words in each per-thread ring (32 MiB each, larger than any cache).
const PER_THREAD_WORDS: usize = 1 << 22;
/// Rings kept for per-thread cursors (thread indexes wrap around).
const MAX_THREADS: usize = 8;
/// Room after the ring's end so a record that starts near the end does not
/// need a second bounds check.
const SLACK_WORDS: usize = 16;

/// A ring of words with its reservation cursor on its own cache line.
#[repr(C, align(128))]
struct Ring {
    words: &'static [AtomicU64],
    mask: u64,
    _pad: [u8; 104],
    cursor: AtomicU64,
}

impl Ring {
    fn new(len: usize) -> Ring {
        debug_assert!(len.is_power_of_two());
        // Collecting zeroed atomics touches every page up front, so page
        // faults are not part of the measurement.
        let words: Vec<AtomicU64> = (0..len + SLACK_WORDS).map(|_| AtomicU64::new(0)).collect();
        Ring {
            words: Box::leak(words.into_boxed_slice()),
            mask: (len - 1) as u64,
            _pad: [0; 104],
            cursor: AtomicU64::new(0),
        }
    }

    /// Reserves `n` words and returns them (one `lock xadd`).
    #[inline(always)]
    fn reserve(&self, n: u64) -> &[AtomicU64] {
        let at = (self.cursor.fetch_add(n, Ordering::Relaxed) & self.mask) as usize;
        // SAFETY: `at <= mask` and the slice has SLACK_WORDS >= n words after
        // `mask`, so `at + n` is in bounds.
        unsafe { self.words.get_unchecked(at..at + n as usize) }
    }
}

fn shared_ring() -> &'static Ring {
    static RING: OnceLock<Ring> = OnceLock::new();
    RING.get_or_init(|| Ring::new(SHARED_WORDS))
}

fn thread_ring(index: usize) -> &'static Ring {
    static RINGS: [OnceLock<Ring>; MAX_THREADS] = [const { OnceLock::new() }; MAX_THREADS];
    RINGS[index % MAX_THREADS].get_or_init(|| Ring::new(PER_THREAD_WORDS))
}

thread_local! {
    /// The ring the current thread records into.
    static RING: Cell<Option<&'static Ring>> = const { Cell::new(None) };
    /// The plain ring of the current thread (null until `thread_init`).
    static PLAIN_WORDS: Cell<*mut u64> = const { Cell::new(std::ptr::null_mut()) };
    /// The plain cursor of the current thread (a word index, wrapped with
    /// `PER_THREAD_WORDS - 1`).
    static PLAIN_CURSOR: Cell<usize> = const { Cell::new(0) };
    /// Fresh floor: the address up to which the thread's ring is faulted in
    /// (`usize::MAX` once all of it is).
    static FRESH_FAULTED: Cell<usize> = const { Cell::new(0) };
}

/// A per-thread plain ring: `PER_THREAD_WORDS + SLACK_WORDS` words, every
/// page written once (so no page fault happens while timing), leaked.
fn plain_ring(index: usize) -> *mut u64 {
    /// Ring addresses by thread index (as `usize`: raw pointers are not
    /// `Sync`; each ring is written only by the thread of its index).
    static RINGS: [OnceLock<usize>; MAX_THREADS] = [const { OnceLock::new() }; MAX_THREADS];
    *RINGS[index % MAX_THREADS].get_or_init(|| {
        // `vec![1; n]` writes every word (unlike `vec![0; n]`, which may
        // come from fresh, untouched zero pages).
        let words: Vec<u64> = vec![1; PER_THREAD_WORDS + SLACK_WORDS];
        Box::leak(words.into_boxed_slice()).as_mut_ptr() as usize
    }) as *mut u64
}

/// A per-thread ring like [`plain_ring`] in a new anonymous mapping that
/// nothing touched (see [`Cursor::PlainFresh`]). Leaked; one per thread
/// index.
fn fresh_ring(index: usize) -> *mut u64 {
    static RINGS: [OnceLock<usize>; MAX_THREADS] = [const { OnceLock::new() }; MAX_THREADS];
    *RINGS[index % MAX_THREADS].get_or_init(|| map_fresh(FRESH_BYTES) as usize) as *mut u64
}

/// `bytes` of a new private anonymous mapping, untouched (zero pages
/// mapped on first write). Never unmapped unless the caller does.
pub fn map_fresh(bytes: usize) -> *mut u8 {
    // SAFETY: a new private anonymous mapping (no address hint, no file);
    // the result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "mmap of {bytes} bytes");
    p as *mut u8
}

/// Bytes the fresh floor faults in at a time (fxt's default chunk).
const FRESH_STEP: usize = 64 << 10;
/// Size of a fresh floor ring's mapping: the ring and its slack, in whole
/// steps.
const FRESH_BYTES: usize = ((PER_THREAD_WORDS + SLACK_WORDS) * 8).next_multiple_of(FRESH_STEP);

/// Faults `[p, p + FRESH_STEP)` in for writing without writing it
/// (`MADV_POPULATE_WRITE`, Linux 5.14+), else by writing one byte per page.
#[cold]
#[inline(never)]
fn populate(p: *mut u8) {
    const MADV_POPULATE_WRITE: libc::c_int = 23;
    // SAFETY: `[p, p + FRESH_STEP)` lies in the thread's fresh ring (see
    // `plain_reserve_fresh`), a writable mapping of this module.
    if unsafe { libc::madvise(p.cast(), FRESH_STEP, MADV_POPULATE_WRITE) } == 0 {
        return;
    }
    for off in (0..FRESH_STEP).step_by(4096) {
        // SAFETY: as above; `off < FRESH_STEP`.
        unsafe { p.add(off).write_volatile(0) };
    }
}

/// [`plain_reserve`] for the fresh floor: faults the next 64 KiB in when
/// the record reaches past what is faulted in so far. (After the ring
/// wraps, every record ends below the mark: all of it is faulted in.)
#[inline(always)]
fn plain_reserve_fresh(n: usize) -> *mut u64 {
    let w = plain_reserve(n);
    let end = w as usize + n * 8;
    let faulted = FRESH_FAULTED.with(Cell::get);
    if end > faulted {
        // Records are far smaller than a step: one step covers this one.
        populate(faulted as *mut u8);
        FRESH_FAULTED.with(|f| f.set(faulted + FRESH_STEP));
    }
    w
}

/// Reserves `n` words of the calling thread's plain ring (`FRESH`: of the
/// fresh floor's, see [`plain_reserve_fresh`]).
#[inline(always)]
fn reserve_plain<const FRESH: bool>(n: usize) -> *mut u64 {
    if FRESH {
        plain_reserve_fresh(n)
    } else {
        plain_reserve(n)
    }
}

/// Reserves `n` words of the calling thread's plain ring.
#[inline(always)]
fn plain_reserve(n: usize) -> *mut u64 {
    let base = PLAIN_WORDS.with(Cell::get);
    assert!(
        !base.is_null(),
        "Floor::thread_init not called on this thread"
    );
    let at = PLAIN_CURSOR.with(Cell::get);
    PLAIN_CURSOR.with(|c| c.set((at + n) & (PER_THREAD_WORDS - 1)));
    // SAFETY: `at < PER_THREAD_WORDS` and the ring has SLACK_WORDS >= n
    // words after that, so `at + n` is in bounds of the allocation.
    unsafe { base.add(at) }
}

/// Stores `v` at word `i` of a plain reservation.
#[inline(always)]
fn plain_put(w: *mut u64, i: usize, v: u64) {
    // SAFETY: `w` comes from `plain_reserve(n)` with `i < n`; the ring is
    // only ever accessed by its own thread.
    unsafe { w.add(i).write(v) }
}

/// The clock every cell reads (see [`crate::harness::ticks`]).
pub use crate::harness::ticks;

const HDR_INSTANT: u64 = header::event(event_type::INSTANT, 2, 0, 1, 1, 2);
const HDR_INSTANT_ARG: u64 = header::event(event_type::INSTANT, 4, 1, 1, 1, 3);
const HDR_COUNTER: u64 = header::event(event_type::COUNTER, 5, 1, 1, 1, 4);
const HDR_DURATION: u64 = header::event(event_type::DURATION_COMPLETE, 3, 0, 1, 1, 5);
const ARG_U64: u64 = header::arg(arg_type::U64, 2, 6);
const ARG_I64: u64 = header::arg(arg_type::I64, 2, 7);

#[inline(always)]
fn ring() -> &'static Ring {
    RING.with(Cell::get)
        .expect("Floor::thread_init not called on this thread")
}

#[inline(always)]
fn put(words: &[AtomicU64], i: usize, v: u64) {
    words[i].store(v, Ordering::Relaxed);
}

/// Floor instant: 2 words.
#[inline(always)]
pub fn instant() {
    let t = ticks();
    let w = ring().reserve(2);
    put(w, 0, HDR_INSTANT);
    put(w, 1, t);
}

/// Floor instant with one `u64` argument: 4 words.
#[inline(always)]
pub fn instant_arg(v: u64) {
    let t = ticks();
    let w = ring().reserve(4);
    put(w, 0, HDR_INSTANT_ARG);
    put(w, 1, t);
    put(w, 2, ARG_U64);
    put(w, 3, v);
}

/// Floor counter with one `i64` value: 5 words (header, time, argument
/// header, value, counter id).
#[inline(always)]
pub fn counter(v: i64) {
    let t = ticks();
    let w = ring().reserve(5);
    put(w, 0, HDR_COUNTER);
    put(w, 1, t);
    put(w, 2, ARG_I64);
    put(w, 3, v as u64);
    put(w, 4, 0);
}

/// Floor duration: an empty traced function with two clock reads and one
/// 3-word duration-complete record.
#[inline(never)]
pub fn traced_fn() {
    let start = ticks();
    black_box(());
    let end = ticks();
    let w = ring().reserve(3);
    put(w, 0, HDR_DURATION);
    put(w, 1, start);
    put(w, 2, end);
}

/// True-floor instant: 2 plain words.
#[inline(always)]
pub fn plain_instant<const FRESH: bool>() {
    let t = ticks();
    let w = reserve_plain::<FRESH>(2);
    plain_put(w, 0, HDR_INSTANT);
    plain_put(w, 1, t);
}

/// True-floor instant with one `u64` argument: 4 plain words.
#[inline(always)]
pub fn plain_instant_arg<const FRESH: bool>(v: u64) {
    let t = ticks();
    let w = reserve_plain::<FRESH>(4);
    plain_put(w, 0, HDR_INSTANT_ARG);
    plain_put(w, 1, t);
    plain_put(w, 2, ARG_U64);
    plain_put(w, 3, v);
}

/// True-floor counter with one `i64` value: 5 plain words.
#[inline(always)]
pub fn plain_counter<const FRESH: bool>(v: i64) {
    let t = ticks();
    let w = reserve_plain::<FRESH>(5);
    plain_put(w, 0, HDR_COUNTER);
    plain_put(w, 1, t);
    plain_put(w, 2, ARG_I64);
    plain_put(w, 3, v as u64);
    plain_put(w, 4, 0);
}

/// True-floor duration: an empty traced function, two clock reads, one
/// 3-word record with plain stores.
#[inline(never)]
pub fn plain_traced_fn<const FRESH: bool>() {
    let start = ticks();
    black_box(());
    let end = ticks();
    let w = reserve_plain::<FRESH>(3);
    plain_put(w, 0, HDR_DURATION);
    plain_put(w, 1, start);
    plain_put(w, 2, end);
}

impl Tracer for Floor {
    fn name(&self) -> &'static str {
        match self.cursor {
            Cursor::Shared => "floor-shared",
            Cursor::PerThread => "floor-atomic",
            Cursor::Plain => "floor",
            Cursor::PlainFresh => "floor-fresh",
        }
    }

    fn supports(&self, _scenario: Scenario) -> bool {
        true
    }

    fn thread_init(&self, index: usize) {
        let ring = match self.cursor {
            Cursor::Shared => shared_ring(),
            Cursor::PerThread => thread_ring(index),
            Cursor::Plain => {
                PLAIN_WORDS.with(|w| w.set(plain_ring(index)));
                return;
            }
            Cursor::PlainFresh => {
                let ring = fresh_ring(index);
                PLAIN_WORDS.with(|w| w.set(ring));
                FRESH_FAULTED.with(|f| f.set(ring as usize));
                return;
            }
        };
        RING.with(|r| r.set(Some(ring)));
    }

    fn run(&self, scenario: Scenario, events: u64) {
        match self.cursor {
            Cursor::Plain => return run_plain::<false>(scenario, events),
            Cursor::PlainFresh => return run_plain::<true>(scenario, events),
            Cursor::Shared | Cursor::PerThread => {}
        }
        match scenario {
            Scenario::Instant => (0..events).for_each(|_| instant()),
            Scenario::InstantArg => (0..events).for_each(|i| instant_arg(black_box(i))),
            Scenario::Counter => (0..events).for_each(|i| counter(black_box(i as i64))),
            Scenario::DurationAttr | Scenario::DurationGuard => {
                (0..events).for_each(|_| traced_fn())
            }
            Scenario::Disabled => empty_loop(events),
        }
    }

    fn run_timed(&self, scenario: Scenario, out: &mut [u64]) -> bool {
        match self.cursor {
            Cursor::Plain => timed_plain::<false>(scenario, out),
            Cursor::PlainFresh => timed_plain::<true>(scenario, out),
            Cursor::Shared | Cursor::PerThread => return false,
        }
        true
    }
}

/// The plain floors' loop (`FRESH`: the fresh floor's).
fn run_plain<const FRESH: bool>(scenario: Scenario, events: u64) {
    match scenario {
        Scenario::Instant => (0..events).for_each(|_| plain_instant::<FRESH>()),
        Scenario::InstantArg => (0..events).for_each(|i| plain_instant_arg::<FRESH>(black_box(i))),
        Scenario::Counter => (0..events).for_each(|i| plain_counter::<FRESH>(black_box(i as i64))),
        Scenario::DurationAttr | Scenario::DurationGuard => {
            (0..events).for_each(|_| plain_traced_fn::<FRESH>())
        }
        Scenario::Disabled => empty_loop(events),
    }
}

/// The plain floors' events timed one by one.
fn timed_plain<const FRESH: bool>(scenario: Scenario, out: &mut [u64]) {
    match scenario {
        Scenario::Instant => time_each(out, |_| plain_instant::<FRESH>()),
        Scenario::InstantArg => time_each(out, |i| plain_instant_arg::<FRESH>(black_box(i))),
        Scenario::Counter => time_each(out, |i| plain_counter::<FRESH>(black_box(i as i64))),
        Scenario::DurationAttr | Scenario::DurationGuard => {
            time_each(out, |_| plain_traced_fn::<FRESH>())
        }
        Scenario::Disabled => time_each(out, |i| {
            black_box(i);
        }),
    }
}

/// The empty loop body: the baseline a disabled call site is held to.
#[inline(never)]
pub fn empty_loop(events: u64) {
    for i in 0..events {
        black_box(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::measure;

    #[test]
    fn floor_records_real_fxt_sizes() {
        assert_eq!((HDR_INSTANT >> 4) & 0xfff, 2);
        assert_eq!((HDR_COUNTER >> 4) & 0xfff, 5);
        let floor = Floor::new(Cursor::PerThread);
        for s in Scenario::ALL {
            measure(&floor, s, 2, 100);
        }
        let ring = thread_ring(0);
        assert!(ring.cursor.load(Ordering::Relaxed) > 0);
        assert!(ring
            .words
            .iter()
            .any(|w| w.load(Ordering::Relaxed) == HDR_INSTANT));
    }

    #[test]
    fn plain_floor_writes_records_into_its_thread_ring() {
        let floor = Floor::new(Cursor::Plain);
        // Thread indexes 5 and 6: rings no other test of this module uses.
        std::thread::scope(|s| {
            for index in [5, 6] {
                let floor = &floor;
                s.spawn(move || {
                    floor.thread_init(index);
                    floor.run(Scenario::Counter, 3);
                    assert_eq!(PLAIN_CURSOR.with(Cell::get), 15);
                    let base = plain_ring(index);
                    // SAFETY: the ring has more than 15 words and this
                    // thread is the only one using ring `index`.
                    let words = unsafe { std::slice::from_raw_parts(base, 15) };
                    for (i, record) in words.chunks(5).enumerate() {
                        assert_eq!(record[0], HDR_COUNTER);
                        assert_eq!(record[2], ARG_I64);
                        assert_eq!(record[3], i as u64);
                    }
                });
            }
        });
    }
}
