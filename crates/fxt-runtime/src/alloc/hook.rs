//! What a sampled allocation, or the free of a sampled block, writes: an
//! `fxt.alloc` record (`fxt_format::samples::alloc`) and the process's
//! heap counter, into the thread's own chunk through its cursor's gate,
//! as a CPU sample is written (`crate::sample`): the gate open for the
//! session's hot-path token or its samples-only token, else the record is
//! dropped and counted. No lock, no allocation: the records are encoded
//! on the stack and stored with the one store protocol.
//!
//! A re-entrancy guard (a `const` thread local) makes an allocation made
//! while the hook runs on the same thread (fxt's own, or a signal
//! handler's that interrupted it) pass through unsampled.

use core::cell::Cell;
use core::sync::atomic::Ordering;

use fxt_format::encode::{Arg, ArgValue, Encode, Event, EventKind, StringRef, ThreadRef};
use fxt_format::samples::{estimated_bytes, Alloc, AllocKind, Walk};

use super::{live, Active, DROPPED, LIVE_BYTES, TAKEN, UNTRACKED};
use crate::callsite::gate_token;
use crate::memory::atomic::AtomicU64;
use crate::memory::filler::Store;
use crate::sample::sample_token;
use crate::thread;

/// Words of an alloc record without a stack (a free).
const FREE_WORDS: usize = Alloc::word_len_for(0);
/// Words the heap counter event takes at most (header, timestamp, inline
/// thread, inline category, name and argument name, the value).
const COUNTER_WORDS: usize = 16;
/// The heap counter's category, name and argument.
const COUNTER_CATEGORY: &str = "fxt";
const COUNTER_NAME: &str = "heap";
const COUNTER_ARG: &str = "live_bytes";

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

/// A sampled allocation of `size` bytes at `address`.
#[cold]
#[inline(never)]
pub(crate) fn sampled_alloc(session: &Active, address: u64, size: u64) {
    guarded(|| {
        TAKEN.fetch_add(1, Ordering::Relaxed);
        let Some(token) = open_token(session.generation) else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let timestamp = crate::clock::read(session.use_tsc);
        let tracked = live::insert(address);
        if !tracked {
            UNTRACKED.fetch_add(1, Ordering::Relaxed);
        }
        // The stack: registers and a bounded copy, for the reader to
        // unwind (`crate::stack`), taken into the thread's buffer.
        let written = thread::capture::with_buffer(|stack, out| {
            let capture = crate::stack::capture_current(stack);
            let record = Alloc {
                timestamp,
                pid: session.pid,
                tid: thread::capture::tid(),
                address,
                size,
                mean: session.mean,
                kind: AllocKind::Alloc,
                untracked: !tracked,
                walk: Walk::RawStack,
                truncated: capture.truncated,
                frames: &[],
                raw_stack: Some(capture.raw_stack(stack)),
            };
            write(&record, out, token, session.crash_safe)
        });
        if written != Some(true) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            if tracked {
                live::remove(address);
            }
            return;
        }
        if tracked {
            let delta = estimated_bytes(size, session.mean) as i64;
            let live = LIVE_BYTES.fetch_add(delta, Ordering::Relaxed) + delta;
            write_counter(session, token, timestamp, live);
        }
    });
}

/// The free of the sampled block of `size` bytes at `address` (already
/// removed from the live table).
#[cold]
#[inline(never)]
pub(crate) fn sampled_free(session: &Active, address: u64, size: u64) {
    guarded(|| {
        TAKEN.fetch_add(1, Ordering::Relaxed);
        let delta = estimated_bytes(size, session.mean) as i64;
        let live = LIVE_BYTES.fetch_sub(delta, Ordering::Relaxed) - delta;
        let Some(token) = open_token(session.generation) else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let timestamp = crate::clock::read(session.use_tsc);
        let record = Alloc {
            timestamp,
            pid: session.pid,
            tid: thread::capture::tid(),
            address,
            size,
            mean: session.mean,
            kind: AllocKind::Free,
            untracked: false,
            walk: Walk::PcOnly,
            truncated: false,
            frames: &[],
            raw_stack: None,
        };
        let mut out = [0u64; FREE_WORDS];
        if write(&record, &mut out, token, session.crash_safe) {
            write_counter(session, token, timestamp, live);
        } else {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// The token the thread's gate is open with for the session of
/// `generation`, if it is (the thread records in the session and is not
/// in the middle of a record or its slow path).
fn open_token(generation: u32) -> Option<u32> {
    let token = thread::local().cursor.token();
    (token == gate_token(generation) || token == sample_token(generation)).then_some(token)
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

/// Reserves room for `words` (a whole encoded record), stores and
/// publishes them.
fn store(words: &[u64], token: u32, crash_safe: bool) -> bool {
    let cursor = &thread::local().cursor;
    let slot = match cursor.reserve(token, words.len()) {
        Some(slot) => slot,
        None => {
            // The chunk is full: a fresh one, as a CPU sample takes it
            // (lock-free, never growing a crash-safe file).
            if !thread::refill_from_signal(words.len()) {
                return false;
            }
            match cursor.reserve(token, words.len()) {
                Some(slot) => slot,
                None => return false,
            }
        }
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

/// Writes the process's heap counter (estimated live bytes of the
/// sampled blocks) at `timestamp`; dropped and counted if it does not
/// fit.
fn write_counter(session: &Active, token: u32, timestamp: u64, live: i64) {
    let args = [Arg {
        name: StringRef::Inline(COUNTER_ARG),
        value: ArgValue::I64(live.max(0)),
    }];
    let event = Event {
        kind: EventKind::Counter { id: 0 },
        timestamp,
        thread: ThreadRef::Inline {
            process: session.pid,
            thread: thread::capture::tid(),
        },
        category: StringRef::Inline(COUNTER_CATEGORY),
        name: StringRef::Inline(COUNTER_NAME),
        args: &args,
    };
    let mut buf = [0u64; COUNTER_WORDS];
    let written = event
        .encode(&mut buf)
        .is_ok_and(|n| store(&buf[..n], token, session.crash_safe));
    if !written {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}
