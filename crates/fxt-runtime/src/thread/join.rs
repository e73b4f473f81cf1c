//! Joining a session and refilling a chunk from outside the writer's own
//! event calls: an event's slow path (`join_current`), and an allocation
//! hook or a signal handler, which must neither lock nor allocate.

use super::*;

/// For a signal handler (a CPU sample) whose record found the gate open but
/// no room in the chunk: attaches the cursor to a fresh chunk, if the
/// interrupted code is not using the writer (then `false`, as when no chunk
/// is available; the caller counts its record as dropped). Lock-free and
/// allocation-free: the ring's release and its handler acquire are atomics
/// only (a chunk a crash-safe file does not cover yet is refused, never
/// grown into), and the writer's thread local is initialized (the thread
/// registered).
pub(crate) fn refill_from_signal(words: usize) -> bool {
    refill_outside_writer(words, true)
}

/// For an allocation hook whose record found the gate open but no room in
/// the chunk: as [`refill_from_signal`], but in a normal context, so the
/// chunk may be one a crash-safe file does not cover yet (the file grows:
/// the ring's grow lock and a `pwrite`, which no holder of on this thread
/// can be interrupted by the hook: this thread takes them only with its
/// writer borrowed, and the writer is refused then) and it is faulted in
/// with one call. The hook's own allocations meanwhile pass through
/// unsampled (its re-entrancy guard).
pub(crate) fn refill_from_hook(words: usize) -> bool {
    refill_outside_writer(words, false)
}

fn refill_outside_writer(words: usize, handler: bool) -> bool {
    let local = local();
    WRITER
        .try_with(|cell| {
            let Ok(mut w) = cell.try_borrow_mut() else {
                return false;
            };
            let Some(shared) = w.shared.clone() else {
                return false;
            };
            local.cursor.set_token(CLOSED);
            // SAFETY: as in `Writer::refill`. The handler's variant: a
            // crash-safe file is never grown here (the sample is dropped
            // and counted instead).
            let refill = unsafe {
                if handler {
                    w.hold
                        .refill_in_handler(&shared.buffers.ring, &local.cursor, words)
                } else {
                    w.hold.refill(&shared.buffers.ring, &local.cursor, words)
                }
            };
            let ready = match refill {
                Refill::Ready { overwritten } => {
                    if overwritten > 0 {
                        w.drop_records(overwritten);
                    }
                    true
                }
                Refill::NoChunk | Refill::TooLarge => false,
            };
            w.open_gate(local);
            ready
        })
        .unwrap_or(false)
}

/// Registers the calling thread in the live session of `generation` and
/// leases it a chunk, as its first record would: the thread that starts a
/// sampling session is sampled from the start (other threads from their
/// first record).
pub(crate) fn join_current(generation: u32) {
    let local = local();
    if local.cursor.busy() {
        return;
    }
    let _ = WRITER.try_with(|cell| {
        let Ok(mut w) = cell.try_borrow_mut() else {
            return;
        };
        local.cursor.set_token(CLOSED);
        if (w.generation == generation || w.register(generation)) && !w.hold.has_lease() {
            if let Some(shared) = w.shared.clone() {
                // SAFETY: as in `Writer::refill`: the writer holds `shared`
                // until it releases the hold; the cursor is this thread's.
                let _ = unsafe { w.hold.refill(&shared.buffers.ring, &local.cursor, 1) };
            }
        }
        w.open_gate(local);
    });
}

/// Whether fxt's slow path runs on this thread now (its writer is
/// borrowed): an allocation made now is fxt's own (registering the
/// thread, starting or finishing a session), as its helper threads' are.
/// `false` once the writer is gone (thread exit).
pub(crate) fn in_slow_path() -> bool {
    WRITER
        .try_with(|cell| cell.try_borrow_mut().is_err())
        .unwrap_or(false)
}

/// For an allocation hook on a thread that has not recorded in the live
/// session of `generation` yet (no event so far): leases the thread a
/// chunk of the session so that its sampled allocations are written, and
/// opens its gate for them; the thread registers fully (thread record,
/// name, counters) on its first event, as any thread. Whether the gate is
/// open now.
///
/// A thread whose writer still holds an earlier session (it recorded in
/// it, or joined it from its hook, and has had no event since) leaves it
/// first ([`Writer::leave_from_hook`]).
///
/// Safe where the hook runs: it takes no lock it could wait for (the
/// control state is only tried, the writer only borrowed if free: a
/// thread interrupted in either, or in the ring's grow lock, which it
/// takes only with its writer borrowed, is refused) and allocates or
/// frees nothing (an earlier session's reference is abandoned, not
/// dropped).
pub(crate) fn join_from_hook(generation: u32) -> bool {
    let local = local();
    if local.cursor.busy() || state::forked() {
        return false;
    }
    WRITER
        .try_with(|cell| {
            let Ok(mut w) = cell.try_borrow_mut() else {
                return false;
            };
            // In the session already: its gate is shut for another reason
            // (no chunk to be had, a crash-safe session's inline thread).
            if w.generation == generation || w.alloc_only == generation {
                return false;
            }
            let Some(s) = state::try_current(generation) else {
                return false;
            };
            // The session the writer holds is not the live one (`s`): it
            // is over, and was listed as stopped before `s` started.
            w.leave_from_hook();
            if w.tid == 0 {
                w.tid = os_tid();
            }
            w.pid = s.settings.pid;
            w.crash_safe = s.settings.crash_safe;
            w.use_tsc = s.clock.use_tsc;
            w.inline_thread = true;
            w.thread_bits = 0;
            let ring = &s.buffers.ring;
            // SAFETY: as in `Writer::refill`: the writer holds `s` (below)
            // until it releases the hold; the cursor is this thread's.
            let refill = unsafe { w.hold.refill(ring, &local.cursor, 1) };
            w.shared = Some(s);
            if let Refill::Ready { overwritten } = refill {
                if overwritten > 0 {
                    w.drop_records(overwritten);
                }
            }
            // The generation stays 0: the thread's first event registers
            // it (and lets this lease go first).
            w.alloc_only = generation;
            w.open_gate(local);
            w.hold.has_lease()
        })
        .unwrap_or(false)
}
