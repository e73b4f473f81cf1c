//! The pieces of an event's printed line that come back with what it is
//! made of (its category and name, its thread), kept to be copied again:
//! `fxt dump` and `fxt json` keep theirs here, each piece in the one slot
//! its key chooses from what identifies it, with no hash.
//!
//! Threads taking turns with a few events each look up several pieces in
//! turn, which a piece for the last key alone missed every time, and a
//! hash of each key cost a sixth of a dump. A key is exact by itself: a
//! piece made from string indices is kept under the strings epoch it was
//! resolved in ([`crate::epoch`]), so it is never found once an index may
//! read otherwise, and one made from a thread under the thread's koids (as
//! the decoder resolved them). Two keys in one slot take turns at it; a
//! key is found as itself or not at all, never as another.

use fxt_format::decode::{Context, StrRef, Thread};

use crate::piece::Piece;
use crate::recent::thread_slot;

/// Slots of a [`Heads`]: room for the category and name of each phase of
/// many names, or the pieces of many threads, few enough to fill anew at
/// each range.
const SLOTS: usize = 256;

/// What a piece is kept under, and the slot it is kept in.
pub trait Key: Copy + Eq {
    /// The slot (modulo [`SLOTS`]): from what tells the keys of one trace
    /// apart, with no hash.
    fn slot(&self) -> usize;
}

/// A piece made of an event's category and name, both by string index,
/// printed for one phase (a command's own letter or kind for the event's
/// type, 0 where the piece does not show it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Names {
    epoch: u64,
    phase: u8,
    category: u16,
    name: u16,
}

impl Names {
    /// The key of category `category` and name `name` at the record `ctx`
    /// is at; `None` if either is inline (no index to keep it under).
    #[inline(always)]
    pub fn of(
        ctx: &Context<'_>,
        phase: u8,
        category: StrRef<'_>,
        name: StrRef<'_>,
    ) -> Option<Self> {
        Self::at(ctx.strings_epoch(), phase, category, name)
    }

    /// [`Names::of`] at a record whose strings epoch is `epoch`.
    #[inline(always)]
    pub fn at(epoch: u64, phase: u8, category: StrRef<'_>, name: StrRef<'_>) -> Option<Self> {
        Some(Names {
            epoch,
            phase,
            category: index(category)?,
            name: index(name)?,
        })
    }
}

impl Key for Names {
    /// The low bits of the phase tell apart the phases of the usual event
    /// (json's `X`, `i`, `B`, `C`, `E`; dump's event types); names and
    /// categories take the bits above.
    #[inline(always)]
    fn slot(&self) -> usize {
        let strings =
            usize::from(self.name).wrapping_add(usize::from(self.category).wrapping_mul(5));
        (strings << 3) | usize::from(self.phase & 7)
    }
}

/// An event's thread as part of dump's key: its koids, or its undefined
/// index, each read from the view's thread field by field. A copy of the
/// whole [`Thread`] is one 16-byte load across two words the decoder has
/// just stored apart, which waits for the stores to reach the cache (the
/// line of most time in `fxt json`'s profile; json's own key is faster
/// as the copy, all the same).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ThreadWords {
    process: u64,
    thread: u64,
    /// The index of an undefined thread, [`KNOWN`] for a known one.
    undefined: u32,
}

/// [`ThreadWords::undefined`] of a known thread (no index is this large).
const KNOWN: u32 = u32::MAX;

impl ThreadWords {
    #[inline(always)]
    fn of(thread: &Thread) -> Self {
        match *thread {
            Thread::Known { process, thread } => ThreadWords {
                process,
                thread,
                undefined: KNOWN,
            },
            Thread::Undefined(index) => ThreadWords {
                process: 0,
                thread: 0,
                undefined: u32::from(index),
            },
        }
    }

    /// The thread's slot among `slots` ([`crate::recent::thread_slot`]),
    /// or the undefined index.
    #[inline(always)]
    fn slot(&self, slots: usize) -> usize {
        if self.undefined == KNOWN {
            thread_slot(self.thread, slots)
        } else {
            self.undefined as usize
        }
    }
}

/// A piece made of an event's thread and up to two flags of the event
/// (json's: whether it is an instant, whether the piece opens its
/// arguments).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OfThread {
    thread: Thread,
    flags: u8,
}

/// Threads whose pieces are kept at once (four slots each, one per value
/// of the flags).
const THREADS: usize = SLOTS / 4;

impl OfThread {
    /// The key of `thread` with flags `first` and `second`.
    #[inline(always)]
    pub fn of(thread: Thread, first: bool, second: bool) -> Self {
        OfThread {
            thread,
            flags: (u8::from(first) << 1) | u8::from(second),
        }
    }
}

impl Key for OfThread {
    /// The thread's slot ([`crate::recent::thread_slot`]), the flags in
    /// the low bits.
    #[inline(always)]
    fn slot(&self) -> usize {
        let thread = match self.thread {
            Thread::Known { thread, .. } => thread_slot(thread, THREADS),
            Thread::Undefined(index) => usize::from(index),
        };
        (thread << 2) | usize::from(self.flags)
    }
}

/// A piece made of an event's thread and its category and name (dump's
/// ` thread=… category=… name=…`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadNames {
    thread: ThreadWords,
    names: Names,
}

impl ThreadNames {
    /// The key of `thread` with `names`.
    #[inline(always)]
    pub fn of(thread: &Thread, names: Names) -> Self {
        ThreadNames {
            thread: ThreadWords::of(thread),
            names,
        }
    }
}

impl Key for ThreadNames {
    /// The thread's slot among 16 ([`crate::recent::thread_slot`]) in the
    /// high bits, the names' (without their phase) in the low four.
    #[inline(always)]
    fn slot(&self) -> usize {
        (self.thread.slot(SLOTS / 16) << 4) | ((self.names.slot() >> 3) & 15)
    }
}

/// The index of a string field that is not inline (0 for the empty
/// string).
#[inline(always)]
fn index(s: StrRef<'_>) -> Option<u16> {
    match s {
        StrRef::Empty => Some(0),
        StrRef::Indexed(i) => Some(i),
        StrRef::Inline(_) => None,
    }
}

/// The pieces of recent keys, each in the slot its key chooses.
pub struct Heads<K> {
    /// The slots, of a fixed number: a slot is found with no bound to
    /// check.
    slots: Box<[(Option<K>, Piece); SLOTS]>,
    /// Where a new piece is made.
    scratch: Vec<u8>,
}

impl<K> Default for Heads<K> {
    fn default() -> Self {
        let slots: Box<[(Option<K>, Piece)]> =
            (0..SLOTS).map(|_| (None, Piece::default())).collect();
        let Ok(slots) = slots.try_into() else {
            unreachable!("SLOTS slots were made")
        };
        Heads {
            slots,
            scratch: Vec::new(),
        }
    }
}

impl<K: Key> Heads<K> {
    /// The piece of `key`: the one kept, or the one `make` appends to an
    /// empty buffer, kept in place of its slot's last.
    #[inline(always)]
    pub fn get(&mut self, key: K, make: impl FnOnce(&mut Vec<u8>)) -> &Piece {
        let at = key.slot() % SLOTS;
        match &self.slots[at] {
            (Some(kept), _) if *kept == key => {}
            _ => self.fill(at, key, make),
        }
        &self.slots[at].1
    }

    /// Keeps what `make` appends as the piece of `key` in slot `at`.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, at: usize, key: K, make: impl FnOnce(&mut Vec<u8>)) {
        self.scratch.clear();
        make(&mut self.scratch);
        let slot = &mut self.slots[at];
        slot.0 = Some(key);
        slot.1.set(&self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key whose slot is given.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    struct At(usize, u32);

    impl Key for At {
        fn slot(&self) -> usize {
            self.0
        }
    }

    /// The bytes of `key`'s piece, and whether they were made anew.
    fn got(heads: &mut Heads<At>, key: At, bytes: &[u8]) -> (Vec<u8>, bool) {
        let mut made = false;
        let piece = heads.get(key, |out| {
            made = true;
            out.extend_from_slice(bytes);
        });
        (piece.bytes().to_vec(), made)
    }

    #[test]
    fn a_key_finds_its_own_piece_or_none() {
        let mut heads: Heads<At> = Heads::default();
        assert_eq!(got(&mut heads, At(5, 1), b"one"), (b"one".to_vec(), true));
        assert_eq!(got(&mut heads, At(7, 2), b"two"), (b"two".to_vec(), true));
        // Kept: found again, not made again.
        assert_eq!(got(&mut heads, At(5, 1), b"-"), (b"one".to_vec(), false));
        // Another key in the same slot (modulo the slots) takes it: each
        // is then made anew in turn, never found as the other.
        let shared = At(5 + SLOTS, 3);
        assert_eq!(got(&mut heads, shared, b"three"), (b"three".to_vec(), true));
        assert_eq!(got(&mut heads, At(5, 1), b"uno"), (b"uno".to_vec(), true));
        assert_eq!(got(&mut heads, shared, b"tres"), (b"tres".to_vec(), true));
        assert_eq!(got(&mut heads, At(7, 2), b"-"), (b"two".to_vec(), false));
        // A piece longer than a block is kept whole.
        let long = [b'x'; 200];
        assert_eq!(got(&mut heads, At(9, 4), &long), (long.to_vec(), true));
        assert_eq!(got(&mut heads, At(9, 4), b"-"), (long.to_vec(), false));
    }

    #[test]
    fn names_of_each_phase_have_slots_of_their_own() {
        let mut slots = Vec::new();
        for phase in [b'X', b'i', b'B', b'C', b'E'] {
            for name in 2..=6 {
                let key = Names {
                    epoch: 1,
                    phase,
                    category: 1,
                    name,
                };
                slots.push(key.slot() % SLOTS);
            }
        }
        for (i, a) in slots.iter().enumerate() {
            assert!(!slots[i + 1..].contains(a), "{slots:?}");
        }
    }

    #[test]
    fn threads_and_flags_have_slots_of_their_own() {
        let known = |process, thread| Thread::Known { process, thread };
        let keys = [
            OfThread::of(known(100, 1001), false, false),
            OfThread::of(known(100, 1001), false, true),
            OfThread::of(known(100, 1001), true, false),
            OfThread::of(known(100, 1001), true, true),
            OfThread::of(known(101, 1002), false, false),
            OfThread::of(Thread::Undefined(3), false, false),
        ];
        let slots: Vec<usize> = keys.iter().map(|k| k.slot() % SLOTS).collect();
        for (i, a) in slots.iter().enumerate() {
            assert!(!slots[i + 1..].contains(a), "{slots:?}");
        }
        // Two threads in one slot are still two keys.
        let other = OfThread::of(known(7, 1001 + THREADS as u64), false, false);
        assert_ne!(other, keys[0]);
        assert_eq!(other.slot() % SLOTS, keys[0].slot() % SLOTS);
        // An undefined thread is not the known one of koids 0 and its
        // index, nor another undefined one.
        let undefined = OfThread::of(Thread::Undefined(3), false, false);
        assert_ne!(undefined, OfThread::of(known(0, 3), false, false));
        assert_ne!(undefined, OfThread::of(known(0, 0), false, false));
        assert_ne!(undefined, OfThread::of(Thread::Undefined(4), false, false));
        assert_eq!(undefined, keys[5]);
    }

    #[test]
    fn dumps_keys_tell_threads_apart_whatever_their_slot() {
        let names = Names {
            epoch: 1,
            phase: 0,
            category: 1,
            name: 2,
        };
        let key = |thread| ThreadNames::of(&thread, names);
        let known = |process, thread| key(Thread::Known { process, thread });
        let undefined = key(Thread::Undefined(3));
        assert_eq!(undefined, key(Thread::Undefined(3)));
        assert_eq!(known(100, 1001), known(100, 1001));
        for other in [
            known(0, 3),
            known(0, 0),
            key(Thread::Undefined(4)),
            known(u64::from(KNOWN), 3),
        ] {
            assert_ne!(undefined, other);
        }
        // Two threads in one slot, or one thread of two processes.
        let same_slot = known(100, 1001 + (SLOTS / 16) as u64);
        assert_eq!(same_slot.slot() % SLOTS, known(100, 1001).slot() % SLOTS);
        assert_ne!(same_slot, known(100, 1001));
        assert_ne!(known(101, 1001), known(100, 1001));
        // Other names of one thread.
        let other_names = Names { name: 3, ..names };
        assert_ne!(
            ThreadNames::of(&Thread::Undefined(3), other_names),
            undefined
        );
    }
}
