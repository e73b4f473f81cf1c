//! Slots of recent threads: a command that keeps a state per thread finds
//! the thread of an event by its slot, with no hashing, when threads take
//! turns (a trace where each thread's events come a chunk at a time finds
//! it as the last one anyway).

/// The slot of a thread among `slots` slots: the low bits of its koid
/// (koids are unique within a system, and a process's threads, made one
/// after another, differ there). The process's koid is left out: mixed in,
/// its low bits may cancel the thread's, as those of process 101's thread
/// 1001 and process 100's thread 1002 do.
#[inline(always)]
pub fn thread_slot(thread: u64, slots: usize) -> usize {
    thread as usize % slots
}
