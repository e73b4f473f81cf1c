//! What a sampled allocation, or the free of a sampled block, writes: one
//! `fxt.alloc` record (`fxt_format::samples::alloc`; readers derive the
//! heap counter of live bytes from them, `fxt_format::derived::heap`),
//! into the thread's own chunk through its cursor's gate, as a CPU sample
//! is written (`crate::sample`): the gate open for the
//! session's hot-path token or its samples-only token, else the record is
//! dropped and counted. No allocation and no lock waited for: the
//! records are encoded on the stack (a sampled allocation's stack words
//! copied straight into the chunk) and stored with the one store
//! protocol.
//!
//! A re-entrancy guard (a `const` thread local) makes an allocation made
//! while the hook runs on the same thread (fxt's own, or a signal
//! handler's that interrupted it) pass through unsampled.

use core::cell::Cell;
use core::sync::atomic::Ordering;

use fxt_format::encode::Encode;
use fxt_format::samples::{Alloc, AllocKind, Walk};

use super::countdown;
use super::runs::Runs;
use super::{Active, DROPPED, TAKEN, UNTRACKED};
use crate::callsite::gate_token;
use crate::memory::atomic::AtomicU64;
use crate::memory::filler::Store;
use crate::ring::Record;
use crate::sample::sample_token;
use crate::stack::{self, Capture, Registers};
use crate::thread;

/// Words of an alloc record without a stack (a free).
const FREE_WORDS: usize = Alloc::word_len_for(0);

thread_local! {
    /// Set while this thread runs the hook.
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` unless the hook is already running on this thread.
fn guarded(f: impl FnOnce()) {
    let entered = IN_HOOK.with(|g| !g.replace(true));
    if entered {
        f();
        IN_HOOK.with(|g| g.set(false));
    }
}

/// Whether the hook runs on this thread now (its allocations are not
/// sampled).
#[inline(always)]
pub(crate) fn in_hook() -> bool {
    IN_HOOK.with(Cell::get)
}

/// A sampled allocation of `size` bytes at `address`, sampled at the
/// thread's mean `mean` (its record's), `tracked` in the live table or
/// not (then counted: its free will not be recorded); whether its record
/// was written. `registers` were
/// read by the wrapper's frame that called the inner allocator, which
/// and those above it are the stack copied (the frames between it and
/// this function, this function's and those below are not: the copy
/// holds none of the hook's own frames). Its timestamp is the clock the
/// thread's pace reads (`countdown::pace`).
#[cold]
#[inline(never)]
pub(crate) fn sampled_alloc(
    session: &Active,
    address: u64,
    (size, mean): (u64, u64),
    registers: Registers,
    tracked: bool,
) -> bool {
    let mut written = false;
    guarded(|| {
        TAKEN.fetch_add(1, Ordering::Relaxed);
        if !tracked {
            UNTRACKED.fetch_add(1, Ordering::Relaxed);
        }
        let Some(token) = open_token(session.generation) else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let timestamp = crate::clock::read(session.use_tsc);
        countdown::pace(crate::clock::ticks_to_ns(timestamp), session.mean);
        // The stack from the caller's stack pointer up: to the top of the
        // thread's stack, or for a thread that has not registered (whose
        // stack is not known yet) as far as the kernel can read it.
        let (capture, probed) = match stack::cached_stack() {
            Some(stack) => (
                stack::plan(registers, registers.sp, &stack, usize::MAX),
                false,
            ),
            None => {
                let (top, cut) = stack::probe_above(registers.sp);
                let mut capture =
                    stack::plan(registers, registers.sp, &(registers.sp..top), usize::MAX);
                capture.truncated = cut;
                (capture, true)
            }
        };
        let record = Alloc {
            walk: Walk::RawStack,
            truncated: capture.truncated,
            raw_stack: Some(capture.raw_stack(&[])),
            mean,
            untracked: !tracked,
            ..record(session, timestamp, address, size, AllocKind::Alloc)
        };
        written = write_with_stack(&record, &capture, probed, token, session.crash_safe);
        if !written {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    });
    written
}

/// Words of a raw-stack alloc record before its stack words.
const HEAD_WORDS: usize = Alloc::word_len_raw(stack::ARCH, 0);

/// Writes `record` (a sampled allocation with a raw stack whose words
/// are those `capture` plans), copying the stack words straight from the
/// stack into the thread's chunk (through the kernel when they were
/// `probed`: they may lie past the thread's stack); `false`: no room.
fn write_with_stack(
    record: &Alloc<'_>,
    capture: &Capture,
    probed: bool,
    token: u32,
    crash_safe: bool,
) -> bool {
    let stack_words = capture.stack_words;
    let stack = capture.stack_address as *const u64;
    let word = |i: usize| {
        // SAFETY: word `i < stack_words` is an 8-aligned word of this
        // thread's own stack between the caller's stack pointer and the
        // stack's top (`stack::plan`), all mapped; the frames there are
        // suspended while this runs (this thread runs the hook, whose own
        // frames lie below that stack pointer), so the read races with no
        // write.
        unsafe { stack.add(i).read() }
    };
    // Copies `n` stack words from word `from` into slots `at..`.
    let copy = |slots: &[AtomicU64], at: usize, from: usize, n: usize| {
        let to = slots[at..at + n].as_ptr() as *mut u64;
        // SAFETY: the source is `n` words of the stack as `word` reads
        // them (`from + n <= stack_words`); the destination is `n`
        // reserved slots of this record, which no reader reads before
        // the record is published (atomics: their memory may be written
        // through a shared reference) and which do not overlap the stack.
        unsafe { core::ptr::copy_nonoverlapping(stack.add(from), to, n) };
    };
    // A probed copy is read by the kernel, as it is.
    let runs = (!probed).then(|| Runs::plan(stack_words, word));
    let runs = runs.filter(|r| r.words() < stack_words);
    let mut head = [0u64; HEAD_WORDS];
    let Ok((n, words)) = record.encode_head(stack_words, runs.as_ref().map(Runs::words), &mut head)
    else {
        return false;
    };
    let Some(slot) = reserve(words, token) else {
        return false;
    };
    let slots: &[AtomicU64] = slot.slots();
    let stored = Store::begin(slots, words, crash_safe);
    for (i, &w) in head[..n].iter().enumerate().skip(1) {
        stored.put(i, w);
    }
    if let Some(runs) = &runs {
        let (mut at, mut from) = (n, 0);
        for run in runs.runs() {
            stored.put(at, run.word());
            at += 1;
            from += run.zeros as usize;
            let literals = run.literals as usize;
            copy(slots, at, from, literals);
            at += literals;
            from += literals;
        }
    } else if probed {
        // The kernel stores into the reserved slots (atomics: their
        // memory may be written through a shared reference), which no
        // reader reads before the record is published.
        let to = slots[n..n + stack_words].as_ptr() as *mut u8;
        let copied = stack::read_own(capture.stack_address, to, stack_words * 8) / 8;
        for i in copied..stack_words {
            // Not read (a page gone meanwhile, or the call refused).
            stored.put(n + i, 0);
        }
    } else {
        copy(slots, n, 0, stack_words);
    }
    stored.end(head[0]);
    slot.publish();
    true
}

/// The free of the sampled block of `size` bytes at `address` (already
/// removed from the live table).
#[cold]
#[inline(never)]
pub(crate) fn sampled_free(session: &Active, address: u64, size: u64) {
    guarded(|| {
        TAKEN.fetch_add(1, Ordering::Relaxed);
        let Some(token) = open_token(session.generation) else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let timestamp = crate::clock::read(session.use_tsc);
        let record = record(session, timestamp, address, size, AllocKind::Free);
        let mut out = [0u64; FREE_WORDS];
        if !write(&record, &mut out, token, session.crash_safe) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// The record of `kind` of the block of `size` bytes at `address`, as a
/// free's (no stack, the session's mean: a reader weights a block by its
/// allocation's record; an allocation sets its own stack and mean).
fn record(
    session: &Active,
    timestamp: u64,
    address: u64,
    size: u64,
    kind: AllocKind,
) -> Alloc<'static> {
    Alloc {
        timestamp,
        pid: session.pid,
        tid: thread::capture::tid(),
        address,
        size,
        mean: session.mean,
        kind,
        untracked: false,
        walk: Walk::PcOnly,
        truncated: false,
        frames: &[],
        raw_stack: None,
    }
}

/// The token the thread's gate is open with for the session of
/// `generation`, if it is (the thread records in the session and is not
/// in the middle of a record or its slow path). A thread that has not
/// recorded in the session yet is leased a chunk for its allocation
/// records first (`thread::join_from_hook`).
fn open_token(generation: u32) -> Option<u32> {
    let is_open = |token| token == gate_token(generation) || token == sample_token(generation);
    let token = thread::local().cursor.token();
    if is_open(token) {
        return Some(token);
    }
    if !thread::join_from_hook(generation) {
        return None;
    }
    let token = thread::local().cursor.token();
    is_open(token).then_some(token)
}

/// Encodes `record` into `out`, then writes it through the thread's
/// cursor; `false`: it does not encode (`out` too small), or no room (the
/// chunk is full and no fresh one could be had).
fn write(record: &impl Encode, out: &mut [u64], token: u32, crash_safe: bool) -> bool {
    let Ok(n) = record.encode(out) else {
        return false;
    };
    store(&out[..n], token, crash_safe)
}

/// Room for a record of `words` words in the thread's chunk, or in a
/// fresh one when it is full.
fn reserve(words: usize, token: u32) -> Option<Record<'static>> {
    let cursor = &thread::local().cursor;
    if let Some(slot) = cursor.reserve(token, words) {
        return Some(slot);
    }
    // The chunk is full: a fresh one, as a thread takes it (the hook runs
    // in a normal context: a crash-safe file may grow).
    if !thread::refill_from_hook(words) {
        return None;
    }
    cursor.reserve(token, words)
}

/// Reserves room for `words` (a whole encoded record), stores and
/// publishes them.
fn store(words: &[u64], token: u32, crash_safe: bool) -> bool {
    let Some(slot) = reserve(words.len(), token) else {
        return false;
    };
    let slots: &[AtomicU64] = slot.slots();
    let stored = Store::begin(slots, words.len(), crash_safe);
    for (i, &w) in words.iter().enumerate().skip(1) {
        stored.put(i, w);
    }
    stored.end(words[0]);
    slot.publish();
    true
}
