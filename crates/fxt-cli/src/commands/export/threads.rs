//! The threads of one input, numbered in the order they first come, and
//! the open duration begins of each by that number. A trace has few
//! threads and they take turns, so a thread's number is found by its
//! slot (the low bits of its koid) before any hashing, and its stack of
//! begins stays (empty or not) rather than being made and dropped with
//! each outermost begin.

use rustc_hash::FxHashMap;

use fxt_format::decode::Thread;

use crate::recent::thread_slot;

/// A thread of a provider (koids are the provider's).
pub type ThreadKey = (Option<u32>, Thread);

/// Slots of [`Numbers::recent`].
const SLOTS: usize = 16;

/// Threads numbered in the order they first come.
#[derive(Default)]
pub struct Numbers {
    /// The threads, by number.
    keys: Vec<ThreadKey>,
    index: FxHashMap<ThreadKey, u32>,
    /// Per slot: the number of the last thread found there.
    recent: [u32; SLOTS],
}

impl Numbers {
    /// The number of thread `key`: the next one if it is new.
    #[inline(always)]
    pub fn number(&mut self, key: ThreadKey) -> u32 {
        let slot = match key.1 {
            Thread::Known { thread, .. } => thread_slot(thread, SLOTS),
            Thread::Undefined(index) => usize::from(index) % SLOTS,
        };
        let recent = self.recent[slot];
        if self.keys.get(recent as usize) == Some(&key) {
            return recent;
        }
        let number = self.find(key);
        self.recent[slot] = number;
        number
    }

    #[inline(never)]
    fn find(&mut self, key: ThreadKey) -> u32 {
        let next = self.keys.len() as u32;
        let number = *self.index.entry(key).or_insert(next);
        if number == next {
            self.keys.push(key);
        }
        number
    }
}

/// Open spans per thread, innermost last.
pub struct ThreadStacks<V> {
    numbers: Numbers,
    /// By thread number.
    stacks: Vec<Vec<V>>,
}

impl<V> Default for ThreadStacks<V> {
    fn default() -> Self {
        ThreadStacks {
            numbers: Numbers::default(),
            stacks: Vec::new(),
        }
    }
}

impl<V> ThreadStacks<V> {
    /// Opens `v` on thread `key`. Compiled into the caller, so that a
    /// large `v` is written straight into its stack, not stored and then
    /// copied whole (a copy of words just stored apart stalls).
    #[inline(always)]
    pub fn push(&mut self, key: ThreadKey, v: V) {
        let n = self.numbers.number(key) as usize;
        if n >= self.stacks.len() {
            self.add_stacks(n);
        }
        self.stacks[n].push(v);
    }

    /// Makes the stacks of threads up to number `n`.
    #[cold]
    #[inline(never)]
    fn add_stacks(&mut self, n: usize) {
        self.stacks.resize_with(n + 1, Vec::new);
    }

    /// Closes the innermost span open on thread `key`.
    #[inline(always)]
    pub fn pop(&mut self, key: ThreadKey) -> Option<V> {
        let n = self.numbers.number(key) as usize;
        self.stacks.get_mut(n)?.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(provider: Option<u32>, process: u64, thread: u64) -> ThreadKey {
        (provider, Thread::Known { process, thread })
    }

    #[test]
    fn threads_are_numbered_in_order_of_first_use_whatever_their_slots() {
        let mut numbers = Numbers::default();
        // Threads 1 and 17 share a slot; provider 2's thread 1 is another
        // thread; an undefined thread has a number too.
        let keys = [
            thread(Some(1), 10, 1),
            thread(Some(1), 10, 17),
            thread(Some(2), 10, 1),
            (Some(1), Thread::Undefined(3)),
            thread(Some(1), 11, 1),
        ];
        let first: Vec<u32> = keys.iter().map(|&k| numbers.number(k)).collect();
        assert_eq!(first, [0, 1, 2, 3, 4]);
        // Taking turns, and in reverse: each keeps its number.
        for _ in 0..3 {
            for (n, &k) in keys.iter().enumerate().rev() {
                assert_eq!(numbers.number(k), n as u32);
            }
        }
    }

    #[test]
    fn each_threads_spans_close_innermost_first() {
        let mut stacks = ThreadStacks::default();
        let (a, b) = (thread(None, 1, 2), thread(None, 1, 18));
        assert_eq!(stacks.pop(a), None);
        stacks.push(a, "a1");
        stacks.push(b, "b1");
        stacks.push(a, "a2");
        assert_eq!(stacks.pop(a), Some("a2"));
        assert_eq!(stacks.pop(b), Some("b1"));
        assert_eq!(stacks.pop(b), None);
        stacks.push(b, "b2");
        assert_eq!(stacks.pop(a), Some("a1"));
        assert_eq!(stacks.pop(a), None);
        assert_eq!(stacks.pop(b), Some("b2"));
    }
}
