//! Slots of recent threads: a command that keeps a state per thread finds
//! the thread of an event by its slot, with no hashing, when threads take
//! turns (a trace where each thread's events come a chunk at a time finds
//! it as the last one anyway); [`ByThread`] keeps such a state.

/// The slot of a thread among `slots` slots: the low bits of its koid
/// (koids are unique within a system, and a process's threads, made one
/// after another, differ there). The process's koid is left out: mixed in,
/// its low bits may cancel the thread's, as those of process 101's thread
/// 1001 and process 100's thread 1002 do.
#[inline(always)]
pub fn thread_slot(thread: u64, slots: usize) -> usize {
    thread as usize % slots
}

/// What a [`ByThread`] key says of its thread: its koid, for its slot.
pub trait ThreadKey: Copy + Eq + std::hash::Hash {
    /// The thread's koid (0 where it has none: an undefined thread).
    fn koid(&self) -> u64;
}

impl ThreadKey for (Option<u32>, fxt_format::decode::Thread) {
    #[inline(always)]
    fn koid(&self) -> u64 {
        match self.1 {
            fxt_format::decode::Thread::Known { thread, .. } => thread,
            fxt_format::decode::Thread::Undefined(_) => 0,
        }
    }
}

impl ThreadKey for (Option<u32>, u64, u64) {
    #[inline(always)]
    fn koid(&self) -> u64 {
        self.2
    }
}

/// A state per thread of a walk (per provider and thread: the key `K`),
/// found with no hashing as the last thread found or as the last one of
/// its slot ([`thread_slot`]), else by hash and made empty if new; the
/// states in the order their threads were first met.
pub struct ByThread<K, T> {
    /// Each thread's key and state.
    pub entries: Vec<(K, T)>,
    index: rustc_hash::FxHashMap<K, usize>,
    /// Index in `entries` of the last thread found (events come in runs).
    last: usize,
    /// Per slot: the index in `entries` of the last thread found there.
    recent: [u32; SLOTS],
}

/// Slots of [`ByThread`].
const SLOTS: usize = 16;

impl<K, T> Default for ByThread<K, T> {
    fn default() -> Self {
        ByThread {
            entries: Vec::new(),
            index: Default::default(),
            last: 0,
            recent: [0; SLOTS],
        }
    }
}

impl<K: ThreadKey, T: Default> ByThread<K, T> {
    /// The state of `key`'s thread, made empty if new.
    #[inline]
    pub fn get(&mut self, key: K) -> &mut T {
        let at = self.at(key);
        &mut self.entries[at].1
    }

    /// The index in `entries` of `key`'s thread, made empty if new.
    #[inline]
    pub fn at(&mut self, key: K) -> usize {
        if self.entries.get(self.last).is_some_and(|e| e.0 == key) {
            return self.last;
        }
        let slot = thread_slot(key.koid(), SLOTS);
        let recent = self.recent[slot] as usize;
        let at = if self.entries.get(recent).is_some_and(|e| e.0 == key) {
            recent
        } else {
            self.find(key)
        };
        self.recent[slot] = at as u32;
        self.last = at;
        at
    }

    /// [`ByThread::at`] by hash.
    #[inline(never)]
    fn find(&mut self, key: K) -> usize {
        let next = self.entries.len();
        let at = *self.index.entry(key).or_insert(next);
        if at == next {
            self.entries.push((key, T::default()));
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads taking turns, two of them in one slot, and the same koid
    /// under two providers: each key finds its own state, kept in the
    /// order first met.
    #[test]
    fn each_thread_finds_its_own_state() {
        let mut by: ByThread<(Option<u32>, u64, u64), Vec<u64>> = ByThread::default();
        let keys = [
            (None, 1, 1001),
            (None, 1, 1001 + SLOTS as u64),
            (Some(2), 1, 1001),
            (None, 1, 1002),
        ];
        for round in 0..3 {
            for (i, key) in keys.iter().enumerate() {
                by.get(*key).push(round * 10 + i as u64);
            }
        }
        let got: Vec<_> = by.entries.iter().map(|(k, v)| (*k, v.clone())).collect();
        let want: Vec<_> = (0..keys.len() as u64)
            .map(|i| (keys[i as usize], vec![i, 10 + i, 20 + i]))
            .collect();
        assert_eq!(got, want);
        assert_eq!(by.at(keys[1]), 1);
    }
}
