//! CPU samples (`Config::sample_hz`): every thread that records in a
//! sampling session is interrupted every 1/N seconds of its CPU time by a
//! signal (`SIGPROF`, see [`source`]); the handler copies the interrupted
//! registers and the top of the thread's stack ([`crate::stack`]) and
//! writes them as one raw-stack `fxt.sample` record ([`record`]) into the
//! thread's own chunk, through its cursor's gate like any event. The
//! program walks no stack: the reader unwinds the copy with the binaries'
//! unwind tables (`fxt_symbols::unwind`), so no unwinder is compiled into
//! a program that traces.
//!
//! # Writing from the handler
//!
//! The handler writes only when the thread's gate is open for the
//! sampling session: with the hot path's token (a normal session) or with
//! the samples-only token [`sample_token`] that the writer opens instead
//! when the hot path may not write (crash-safe session, inline thread ref;
//! no call site's token ever equals it). When the gate is shut (the thread
//! is writing a record: `BUSY`; in its slow path; between chunks) or the
//! chunk has no room, the sample is dropped and counted. A handler never
//! takes a lock, allocates, refills a chunk or touches the writer's
//! `RefCell`.
//!
//! # Lifetime
//!
//! The signal handler is installed once per process, when the first
//! sampling session starts, and stays (restoring the old disposition while
//! a signal may be pending would let it kill the process); a signal that
//! is not fxt's (not our timer's value, not our perf event's descriptor)
//! goes to the handler that was there before, if any. [`arm_thread`] (a
//! thread's registration in the session) notes its stack's bounds, opens
//! its source and gives the thread an alternate signal stack large enough
//! for the handler ([`alt_stack`]);
//! [`stop`] (finish) closes every source, and a thread that leaves the
//! session disarms itself.

mod alt_stack;
mod record;
mod source;

use core::cell::Cell;
use core::sync::atomic::{compiler_fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use crate::callsite::{gate_token, GEN_MASK, INLINE};
use crate::ring::Cursor;
use crate::stack::{Registers, MAX_STACK_WORDS};
pub(crate) use source::SourceKind;

/// The signal samples are delivered with.
const SIGNAL: libc::c_int = libc::SIGPROF;

/// The gate token a writer opens its cursor with when only samples may
/// write through it (see the module docs): never a call site's token
/// (those have `ENABLED` set), never `CLOSED` or `BUSY`.
#[inline]
pub(crate) fn sample_token(generation: u32) -> u32 {
    (INLINE | (generation as u64 & GEN_MASK)) as u32
}

/// The sampling session's generation (0: not sampling).
static ACTIVE: AtomicU32 = AtomicU32::new(0);
/// Its clock and store protocol.
static USE_TSC: AtomicBool = AtomicBool::new(false);
static CRASH_SAFE: AtomicBool = AtomicBool::new(false);
/// The process id samples carry.
static PID: AtomicU64 = AtomicU64::new(0);
/// Samples taken in the session (the handler ran for one of its threads),
/// and those of them not written.
static TAKEN: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// The periods the kernel merged into the timer signals of written
/// samples (their `si_overrun`): a written sample stands for one period
/// plus its signal's merged ones.
static MERGED_PERIODS: AtomicU64 = AtomicU64::new(0);
/// Whether to try `perf_event_open` first (cleared once the kernel refuses
/// it; not when descriptors ran short).
static TRY_PERF: AtomicBool = AtomicBool::new(true);
/// Every armed source, by arm id; [`stop`] closes them all.
static SOURCES: Mutex<Vec<Armed>> = Mutex::new(Vec::new());
/// An armed source: its arm id, its thread, the source.
type Armed = (u64, u64, source::Source);
static NEXT_ARM: AtomicU64 = AtomicU64::new(1);
/// The disposition of the signal before fxt's (to chain to).
static PREVIOUS: Mutex<Option<libc::sigaction>> = Mutex::new(None);
static PREVIOUS_COPY: AtomicPtr<libc::sigaction> = AtomicPtr::new(core::ptr::null_mut());

/// What the handler needs of its thread; `const`, without a destructor
/// (usable from a handler at any moment of the thread's life).
struct ThreadSampler {
    /// Armed in the session of this generation (0: not armed).
    generation: Cell<u32>,
    cursor: Cell<*const Cursor>,
    stack: Cell<(u64, u64)>,
    tid: Cell<u64>,
    /// The perf event's descriptor (-1: a timer).
    fd: Cell<i32>,
    arm_id: Cell<u64>,
    /// Gives the cursor a fresh chunk when a sample does not fit
    /// (`crate::thread::refill_from_signal`, passed down by the writer).
    refill: Cell<Option<Refill>>,
    /// The alternate signal stack fxt gave this thread, if it did (see
    /// [`alt_stack`]).
    alt_stack: Cell<Option<alt_stack::AltStack>>,
}

/// See [`ThreadSampler::refill`]: `true` when the cursor has a fresh chunk.
pub(crate) type Refill = fn(usize) -> bool;

thread_local! {
    static THREAD: ThreadSampler = const {
        ThreadSampler {
            generation: Cell::new(0),
            cursor: Cell::new(core::ptr::null()),
            stack: Cell::new((0, 0)),
            tid: Cell::new(0),
            fd: Cell::new(-1),
            arm_id: Cell::new(0),
            refill: Cell::new(None),
            alt_stack: Cell::new(None),
        }
    };
}

/// Starts sampling the session of `generation` (its threads arm as they
/// register). Installs the handler on first use.
pub(crate) fn start(generation: u32, use_tsc: bool, crash_safe: bool, pid: u64) {
    install_handler();
    static AT_FORK: Once = Once::new();
    crate::state::fork::on_fork_child(
        &AT_FORK,
        forget_after_fork,
        "a forked child may block on the sampler's lock",
    );
    USE_TSC.store(use_tsc, Ordering::Relaxed);
    CRASH_SAFE.store(crash_safe, Ordering::Relaxed);
    PID.store(pid, Ordering::Relaxed);
    TAKEN.store(0, Ordering::Relaxed);
    DROPPED.store(0, Ordering::Relaxed);
    MERGED_PERIODS.store(0, Ordering::Relaxed);
    // Release: pairs with the handler's Acquire load; the settings above
    // are visible to a handler that sees the session active.
    ACTIVE.store(generation, Ordering::Release);
}

/// What a session's sampling did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    /// Samples taken (the handler ran for a thread of the session).
    pub(crate) taken: u64,
    /// Of those, not written (the gate was shut or the chunk full).
    pub(crate) dropped: u64,
    /// Periods merged into the signals of written samples (the trace's
    /// `fxt.sampling` record carries them).
    pub(crate) merged_periods: u64,
}

/// Stops sampling `generation`: no handler writes for it after this
/// returns, except one already past its check (the finish's grace period
/// covers it, as for events), and every source is closed.
pub(crate) fn stop(generation: u32) -> Option<Counts> {
    if ACTIVE
        .compare_exchange(generation, 0, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return None;
    }
    let sources = std::mem::take(&mut *lock_sources());
    let tids: Vec<u64> = sources.iter().map(|(_, tid, _)| *tid).collect();
    drop(sources);
    settle_pending(&tids);
    Some(counts())
}

/// Waits (a bounded while) until none of threads `tids` has a SIGPROF
/// pending from a source just closed: a program that sets SIGPROF to its
/// default disposition after the session would be killed by one. A thread
/// that blocks the signal keeps it pending; the wait then ends at its
/// bound.
fn settle_pending(tids: &[u64]) {
    const TRIES: u32 = 2000;
    let mut tries = 0;
    for &tid in tids {
        while sigprof_pending(tid) && tries < TRIES {
            tries += 1;
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }
}

/// Whether thread `tid` of this process has SIGPROF pending (its
/// `SigPnd` in `/proc`; `false` when it is gone or cannot be read).
fn sigprof_pending(tid: u64) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigPnd:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (SIGNAL - 1)) != 0)
}

/// Reads the counts so far (collection of a running session).
pub(crate) fn counts() -> Counts {
    Counts {
        taken: TAKEN.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
        merged_periods: MERGED_PERIODS.load(Ordering::Relaxed),
    }
}

fn lock_sources() -> std::sync::MutexGuard<'static, Vec<Armed>> {
    SOURCES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Arms the calling thread (`tid`, its cursor `cursor`) for the session
/// of `generation`, sampled at `hz`. Returns the source kind, or `None`
/// when the session is not sampling or no source could be opened.
pub(crate) fn arm_thread(
    cursor: &'static Cursor,
    tid: u64,
    generation: u32,
    hz: u32,
    refill: Refill,
) -> Option<SourceKind> {
    if hz == 0 || ACTIVE.load(Ordering::Acquire) != generation {
        return None;
    }
    disarm_thread();
    // Unknown (the C library reads the main thread's from /proc, which
    // fails when descriptors run out): said once, not left unsampled
    // silently.
    let Some(stack) = crate::stack::current_stack().map(|s| (s.start, s.end)) else {
        report_once(&std::io::Error::other("its stack's bounds are unknown"));
        return None;
    };
    // Before the source: its first signal runs on the alternate stack.
    THREAD.with(|t| t.alt_stack.set(alt_stack::AltStack::install()));
    let period_ns = (1_000_000_000 / hz as u64).max(1);
    let perf = TRY_PERF.load(Ordering::Relaxed);
    let source = match source::Source::open(tid as i32, SIGNAL, period_ns, perf) {
        Ok((s, refused)) => {
            if refused {
                TRY_PERF.store(false, Ordering::Relaxed);
            }
            s
        }
        Err(e) => {
            report_once(&e);
            disarm_thread();
            return None;
        }
    };
    let kind = source.kind();
    let id = NEXT_ARM.fetch_add(1, Ordering::Relaxed);
    THREAD.with(|t| {
        t.cursor.set(cursor);
        t.stack.set(stack);
        t.tid.set(tid);
        t.fd.set(source.fd());
        t.arm_id.set(id);
        t.refill.set(Some(refill));
        // The handler reads the fields above only after seeing the
        // generation (same thread: a compiler fence orders them).
        compiler_fence(Ordering::SeqCst);
        t.generation.set(generation);
    });
    {
        let mut sources = lock_sources();
        // Checked again under the lock `stop` drains the list with: a
        // `stop` that cleared `ACTIVE` after the check above either took
        // the lock first (so this sees its store) or takes it after this
        // push (and closes the source). Either way no source outlives it.
        if ACTIVE.load(Ordering::Acquire) == generation {
            sources.push((id, tid, source));
            return Some(kind);
        }
    }
    drop(source);
    disarm_thread();
    None
}

/// Disarms the calling thread: closes its source (unless [`stop`] did).
/// A signal already pending finds the thread disarmed.
pub(crate) fn disarm_thread() {
    let _ = THREAD.try_with(|t| {
        if t.generation.get() != 0 {
            t.generation.set(0);
            compiler_fence(Ordering::SeqCst);
            let id = t.arm_id.get();
            let source = {
                let mut sources = lock_sources();
                let i = sources.iter().position(|(s, ..)| *s == id);
                i.map(|i| sources.swap_remove(i))
            };
            drop(source);
        }
        // Last: a signal still pending from the source finds the
        // generation cleared and returns at once, on whatever stack.
        if let Some(alt) = t.alt_stack.take() {
            alt.remove();
        }
    });
}

/// The `fork` child handler: the child (only the forking thread) samples
/// nothing and forgets this thread's arming without taking a lock (another
/// thread may have held `SOURCES` at the fork), so its later disarm (at
/// its exit) takes none either. Its copies of the parent's sources stay
/// open until it exits: a timer is not inherited, and a perf event
/// counts only the parent's thread, which `stop` disables.
extern "C" fn forget_after_fork() {
    ACTIVE.store(0, Ordering::Relaxed);
    let _ = THREAD.try_with(|t| {
        t.generation.set(0);
        t.fd.set(-1);
    });
}

fn report_once(e: &std::io::Error) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| eprintln!("fxt: cannot sample this thread's CPU time: {e}"));
}

fn install_handler() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: a zeroed `sigaction` is a valid starting value; the
        // handler has the `SA_SIGINFO` signature, the mask is emptied
        // before use, and `sigaction` only reads `action` and writes
        // `old`.
        unsafe {
            let mut action: libc::sigaction = core::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            // On the alternate stack (`alt_stack`): never on the sampled
            // thread's own.
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(SIGNAL, &action, &mut old) == 0 {
                let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
                let kept = previous.insert(old);
                PREVIOUS_COPY.store(kept as *mut libc::sigaction, Ordering::Release);
            }
        }
    });
}

/// The `siginfo_t` fields the handler reads: `si_code`, the word at
/// offset 24 of the union (a timer's `si_value`, an I/O signal's `si_fd`)
/// and the `int` at offset 20 (a timer's `si_overrun`).
fn siginfo_parts(info: *const libc::siginfo_t) -> (i32, u64, i32) {
    // SAFETY: the kernel passes a full `siginfo_t` (128 bytes) to an
    // `SA_SIGINFO` handler; the fields lie within it, aligned.
    unsafe {
        let code = (*info).si_code;
        let word = *info.cast::<u8>().add(24).cast::<u64>();
        let overrun = *info.cast::<u8>().add(20).cast::<i32>();
        (code, word, overrun)
    }
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: `__errno_location` returns this thread's errno.
    let errno = unsafe { *libc::__errno_location() };
    let (code, word, overrun) = siginfo_parts(info);
    let ours = match code {
        source::SI_TIMER => word as usize == source::TIMER_MAGIC,
        source::POLL_IN..=source::POLL_HUP => THREAD
            .try_with(|t| t.fd.get() >= 0 && t.fd.get() == word as u32 as i32)
            .unwrap_or(false),
        _ => false,
    };
    if ours {
        // A timer's signal stands for the expirations the kernel merged
        // into it too (a perf event's never merges any).
        let merged = match code {
            source::SI_TIMER => u64::try_from(overrun).unwrap_or(0),
            _ => 0,
        };
        take_sample(ctx, merged);
    } else {
        chain(sig, info, ctx);
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

/// Passes a signal that is not fxt's to the handler that was installed
/// before (a default or ignored disposition: nothing happens).
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let previous = PREVIOUS_COPY.load(Ordering::Acquire);
    if previous.is_null() {
        return;
    }
    // SAFETY: `previous` points into `PREVIOUS`, written once before the
    // pointer was published and never again.
    let previous = unsafe { &*previous };
    let handler = previous.sa_sigaction;
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        return;
    }
    // SAFETY: the previous handler was installed with these flags, so it
    // has the matching signature; it is called as the kernel would.
    unsafe {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                core::mem::transmute(handler);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = core::mem::transmute(handler);
            f(sig);
        }
    }
}

/// The interrupted registers of an `SA_SIGINFO` handler's context.
fn interrupted(ctx: *mut libc::c_void) -> Registers {
    // SAFETY: the kernel passes a `ucontext_t` as the handler's third
    // argument; its saved general registers are plain integers.
    let gregs = unsafe { &(*ctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs };
    Registers {
        pc: gregs[libc::REG_RIP as usize] as u64,
        sp: gregs[libc::REG_RSP as usize] as u64,
        bp: gregs[libc::REG_RBP as usize] as u64,
    }
}

/// The handler's work for one of fxt's signals (see the module docs);
/// `merged`: the periods the kernel merged into it.
fn take_sample(ctx: *mut libc::c_void, merged: u64) {
    let generation = ACTIVE.load(Ordering::Acquire);
    if generation == 0 {
        return;
    }
    let _ = THREAD.try_with(|t| {
        if t.generation.get() != generation {
            return;
        }
        TAKEN.fetch_add(1, Ordering::Relaxed);
        if !room_to_sample(t) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Growing a crash-safe file is forbidden from here on (asserted).
        crate::memory::file_map::set_in_handler(true);
        if !write_sample(t, generation, ctx) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        } else if merged > 0 {
            MERGED_PERIODS.fetch_add(merged, Ordering::Relaxed);
        }
        crate::memory::file_map::set_in_handler(false);
    });
}

/// Whether the handler has the stack it needs: on an alternate stack
/// (fxt's, or the thread's own when at least as large), yes; on the
/// thread's own stack (its alternate stack was disabled), only with
/// [`alt_stack::HANDLER_ROOM`] left below this frame.
fn room_to_sample(t: &ThreadSampler) -> bool {
    let marker = 0u8;
    let here = core::hint::black_box(&marker) as *const u8 as u64;
    let (lo, hi) = t.stack.get();
    !(lo..hi).contains(&here) || here - lo >= alt_stack::HANDLER_ROOM
}

/// Copies the stack and writes the record; `false`: dropped.
fn write_sample(t: &ThreadSampler, generation: u32, ctx: *mut libc::c_void) -> bool {
    // SAFETY: set by `arm_thread` on this thread to its `Local`'s cursor,
    // which lives (const, no destructor) as long as the thread.
    let cursor = unsafe { &*t.cursor.get() };
    let token = cursor.token();
    if token != gate_token(generation) && token != sample_token(generation) {
        // Busy (a record in progress), in the slow path, or detached.
        return false;
    }
    let ts = crate::clock::read(USE_TSC.load(Ordering::Relaxed));
    let (lo, hi) = t.stack.get();
    // On the alternate stack (or with `HANDLER_ROOM` left on the
    // thread's own): never inside the range it copies.
    let mut copy = [0u64; MAX_STACK_WORDS];
    let capture = crate::stack::capture_interrupted(interrupted(ctx), &(lo..hi), &mut copy);
    let sample = fxt_format::samples::RawSample {
        timestamp: ts,
        pid: PID.load(Ordering::Relaxed),
        tid: t.tid.get(),
        truncated: capture.truncated,
        stack: capture.raw_stack(&copy),
    };
    let words = record::words(capture.stack_words);
    let slot = match cursor.reserve(token, words) {
        Some(slot) => slot,
        None => {
            // The chunk is full: a thread that records nothing else (a long
            // span) gets a fresh chunk here, not at its next event.
            let refilled = t.refill.get().is_some_and(|refill| refill(words));
            match refilled.then(|| cursor.reserve(token, words)).flatten() {
                Some(slot) => slot,
                None => return false,
            }
        }
    };
    let stored = record::store(&sample, slot.slots(), CRASH_SAFE.load(Ordering::Relaxed));
    if !stored {
        // Never (the copy is bounded below the format's limit): a filler
        // of the reserved size keeps the chunk readable.
        record::store_filler(slot.slots());
    }
    slot.publish();
    stored
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests that start and stop sampling, one at a time.
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: Mutex<()> = Mutex::new(());
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A child forked while another thread of the parent held the
    /// sources' lock disarms (as at its exit) without blocking on it.
    #[test]
    fn a_forked_child_disarms_without_the_lock() {
        let _serial = serial();
        const GENERATION: u32 = 0x7ff1;
        let cursor: &'static Cursor = Box::leak(Box::new(Cursor::new()));
        start(GENERATION, false, false, std::process::id() as u64);
        // SAFETY: `gettid` has no preconditions.
        let tid = unsafe { libc::gettid() } as u64;
        // 1 Hz: armed, but no sample lands during the test.
        assert!(arm_thread(cursor, tid, GENERATION, 1, |_| false).is_some());
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let guard = lock_sources();
            held_tx.send(()).unwrap();
            let _ = go_rx.recv();
            drop(guard);
        });
        held_rx.recv().unwrap();
        // SAFETY: the child only disarms (no lock, no allocation once
        // fixed) and leaves with `_exit`.
        let child = unsafe { libc::fork() };
        if child == 0 {
            disarm_thread();
            // SAFETY: ends the child without running the parent's
            // exit handlers.
            unsafe { libc::_exit(0) };
        }
        assert!(child > 0, "fork failed");
        go_tx.send(()).unwrap();
        holder.join().unwrap();
        // A child that blocked never exits: bounded so the test fails
        // instead of hanging (the bound is not a measure of anything).
        let mut status = 0;
        let mut exited = false;
        for _ in 0..6000 {
            // SAFETY: `status` is a valid out-pointer; `child` is ours.
            if unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) } == child {
                exited = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if !exited {
            // SAFETY: our child; reaped right after.
            unsafe {
                libc::kill(child, libc::SIGKILL);
                libc::waitpid(child, &mut status, 0);
            }
        }
        disarm_thread();
        stop(GENERATION);
        assert!(exited, "the forked child blocked on the sources' lock");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}
