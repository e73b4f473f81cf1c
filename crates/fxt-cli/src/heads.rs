//! The pieces of an event's printed line that come back with what it is
//! made of (its category and name, its thread), kept to be copied again:
//! `fxt dump` and `fxt json` keep theirs here, each piece in the one slot
//! its key chooses from what identifies it, with no hash.
//!
//! Threads taking turns with a few events each look up several pieces in
//! turn, which a piece for the last key alone missed every time, and a
//! hash of each key cost a sixth of a dump. A key holds what the record
//! holds (string indices, a thread's index or its inline koids), not what
//! they resolve to, so that nothing is resolved to find a piece: a key
//! with an index is exact only while the index reads the same, so the
//! pieces are kept under a generation that changes whenever the strings
//! epoch or the threads epoch a key depends on changes
//! ([`crate::epoch`]), and a piece of another generation is never found.
//! Two keys in one slot take turns at it; a key is found as itself or not
//! at all, never as another.

use fxt_format::decode::{
    ArgWordIter, Context, EventHead, EventKind, EventView, StrRef, Thread, ThreadRef,
};

use crate::piece::Piece;
use crate::recent::thread_slot;

/// Slots of a [`Heads`]: room for the category and name of each phase of
/// many names, or the pieces of many threads, few enough to fill anew at
/// each range.
const SLOTS: usize = 256;

/// What a piece is kept under, and the slot it is kept in.
pub trait Key: Copy + Eq {
    /// Whether the key holds string indices: its pieces are then of one
    /// strings epoch.
    const STRINGS: bool;
    /// Whether the key may hold a thread index: its pieces are then of
    /// one threads epoch.
    const THREADS: bool;

    /// The slot (modulo [`SLOTS`]): from what tells the keys of one trace
    /// apart, with no hash.
    fn slot(&self) -> usize;
}

/// An event's thread as its record holds it: an index into the
/// provider's thread table (what it resolves to at the record, defined or
/// not, under the threads epoch), or the koids of a thread inline in the
/// record or resolved already (which read the same whatever the epoch).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Who {
    /// A thread index (1..=255).
    Index(u8),
    /// A thread's process and thread koids.
    Koids(u64, u64),
}

impl Who {
    /// The thread field of an event head.
    #[inline(always)]
    pub fn of_head(head: &EventHead<'_>) -> Self {
        match head.thread_ref() {
            ThreadRef::Indexed(index) => Who::Index(index),
            ThreadRef::Inline { process, thread } => Who::Koids(process, thread),
        }
    }

    /// A thread as a view gives it (resolved; an undefined one by its
    /// index).
    #[inline(always)]
    pub fn of_thread(thread: Thread) -> Self {
        match thread {
            Thread::Known { process, thread } => Who::Koids(process, thread),
            Thread::Undefined(index) => Who::Index(index),
        }
    }

    /// The thread it stands for at the record `ctx` is at.
    #[inline]
    pub fn thread(self, ctx: &Context<'_>) -> Thread {
        match self {
            Who::Index(index) => ctx.thread(index),
            Who::Koids(process, thread) => Thread::Known { process, thread },
        }
    }

    /// Its slot among `slots`: an index as it is, a koid's low bits
    /// ([`crate::recent::thread_slot`]).
    #[inline(always)]
    fn slot(self, slots: usize) -> usize {
        match self {
            Who::Index(index) => usize::from(index),
            Who::Koids(_, thread) => thread_slot(thread, slots),
        }
    }
}

/// The fields of an event that `fxt dump` and `fxt json` write in blocks
/// (the usual event: its strings and argument names by index), as its
/// record holds them: read from its head in a file's walk
/// ([`crate::walk::Views::heads`]: no view made, its thread not looked
/// up) or from its view in a stream's, so that both write one line from
/// one reading.
pub struct Usual<'a> {
    /// The event type (0..=10).
    pub event_type: u8,
    /// When, in ticks.
    pub timestamp: u64,
    /// A duration complete event's end ticks.
    pub end: Option<u64>,
    /// A counter's, async or flow event's id.
    pub id: Option<u64>,
    /// The thread, as an index or koids.
    pub who: Who,
    pub category: StrRef<'a>,
    pub name: StrRef<'a>,
    pub arg_count: u8,
    /// The arguments' words, each argument's header first.
    pub args: ArgWordIter<'a>,
}

/// The event type of a flow step.
pub const FLOW_STEP: u8 = 9;
/// The event type of a flow end.
pub const FLOW_END: u8 = 10;
/// The event type of an instant.
pub const INSTANT: u8 = 0;
/// The event type of a counter.
pub const COUNTER: u8 = 1;

impl<'a> Usual<'a> {
    /// The fields of an event head.
    #[inline(always)]
    pub fn of_head(head: &EventHead<'a>) -> Self {
        Usual {
            event_type: head.event_type(),
            timestamp: head.timestamp(),
            end: head.end_ts(),
            id: head.id(),
            who: Who::of_head(head),
            category: head.category(),
            name: head.name(),
            arg_count: head.arg_count(),
            args: head.arg_words(),
        }
    }

    /// The fields of an event view.
    #[inline(always)]
    pub fn of_view(view: &EventView<'a>) -> Self {
        Usual {
            event_type: view.kind.event_type() as u8,
            timestamp: view.timestamp,
            end: match view.kind {
                EventKind::DurationComplete { end } => Some(end),
                _ => None,
            },
            id: view.kind.id(),
            who: Who::of_thread(view.thread),
            category: view.category,
            name: view.name,
            arg_count: view.arg_count,
            args: view.arg_words(),
        }
    }
}

/// A piece made of an event's category and name, both by string index,
/// printed for one phase (a command's own letter or kind for the event's
/// type, 0 where the piece does not show it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Names {
    phase: u8,
    category: u16,
    name: u16,
}

impl Names {
    /// The key of category `category` and name `name`; `None` if either
    /// is inline (no index to keep it under).
    #[inline(always)]
    pub fn of(phase: u8, category: StrRef<'_>, name: StrRef<'_>) -> Option<Self> {
        Some(Names {
            phase,
            category: index(category)?,
            name: index(name)?,
        })
    }
}

impl Key for Names {
    const STRINGS: bool = true;
    const THREADS: bool = false;

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

/// A piece made of an event's thread and up to two flags of the event
/// (json's: whether it is an instant, whether the piece opens its
/// arguments).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OfThread {
    who: Who,
    flags: u8,
}

/// Threads whose pieces are kept at once (four slots each, one per value
/// of the flags).
const THREADS: usize = SLOTS / 4;

impl OfThread {
    /// The key of thread `who` with flags `first` and `second`.
    #[inline(always)]
    pub fn of(who: Who, first: bool, second: bool) -> Self {
        OfThread {
            who,
            flags: (u8::from(first) << 1) | u8::from(second),
        }
    }
}

impl Key for OfThread {
    const STRINGS: bool = false;
    const THREADS: bool = true;

    /// The thread's slot, the flags in the low bits.
    #[inline(always)]
    fn slot(&self) -> usize {
        (self.who.slot(THREADS) << 2) | usize::from(self.flags)
    }
}

/// A piece made of an event's thread and its category and name (dump's
/// ` thread=… category=… name=…`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadNames {
    who: Who,
    names: Names,
}

impl ThreadNames {
    /// The key of thread `who` with `names`.
    #[inline(always)]
    pub fn of(who: Who, names: Names) -> Self {
        ThreadNames { who, names }
    }
}

impl Key for ThreadNames {
    const STRINGS: bool = true;
    const THREADS: bool = true;

    /// The thread's slot among 16 in the high bits, the names' (without
    /// their phase) in the low four.
    #[inline(always)]
    fn slot(&self) -> usize {
        (self.who.slot(SLOTS / 16) << 4) | ((self.names.slot() >> 3) & 15)
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
    /// [`SLOTS`] slots once one is set (none before): the generation a
    /// piece was made in, its key and the piece.
    slots: Vec<(u64, Option<K>, Piece)>,
    /// The epochs the keys depend on ([`Key::STRINGS`], [`Key::THREADS`];
    /// 0 for one they do not) at the last look-up, `None` before.
    epochs: Option<(u64, u64)>,
    /// Changes with the epochs; no slot holds a piece of generation 0.
    generation: u64,
    /// Where a new piece is made.
    scratch: Vec<u8>,
}

impl<K> Default for Heads<K> {
    fn default() -> Self {
        Heads {
            slots: Vec::new(),
            epochs: None,
            generation: 0,
            scratch: Vec::new(),
        }
    }
}

impl<K: Key> Heads<K> {
    /// The piece of `key` at the record `ctx` is at: the one kept, or the
    /// one `make` appends to an empty buffer, kept in place of its slot's
    /// last.
    #[inline(always)]
    pub fn get(&mut self, ctx: &Context<'_>, key: K, make: impl FnOnce(&mut Vec<u8>)) -> &Piece {
        let epochs = (
            if K::STRINGS { ctx.strings_epoch() } else { 0 },
            if K::THREADS { ctx.threads_epoch() } else { 0 },
        );
        self.get_at(epochs, key, make)
    }

    /// [`Heads::get`] at `epochs` (strings, threads).
    #[inline(always)]
    fn get_at(&mut self, epochs: (u64, u64), key: K, make: impl FnOnce(&mut Vec<u8>)) -> &Piece {
        if self.epochs != Some(epochs) {
            self.epochs = Some(epochs);
            // Never back to 0: a u64 counted once per record at most.
            self.generation += 1;
        }
        let at = key.slot() % SLOTS;
        match self.slots.get(at) {
            Some((generation, Some(kept), _)) if *generation == self.generation && *kept == key => {
            }
            _ => self.fill(at, key, make),
        }
        &self.slots[at].2
    }

    /// Keeps what `make` appends as the piece of `key` in slot `at`.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, at: usize, key: K, make: impl FnOnce(&mut Vec<u8>)) {
        if self.slots.is_empty() {
            self.slots = (0..SLOTS).map(|_| (0, None, Piece::default())).collect();
        }
        self.scratch.clear();
        make(&mut self.scratch);
        let slot = &mut self.slots[at];
        slot.0 = self.generation;
        slot.1 = Some(key);
        slot.2.set(&self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key whose slot is given.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    struct At(usize, u32);

    impl Key for At {
        const STRINGS: bool = true;
        const THREADS: bool = true;

        fn slot(&self) -> usize {
            self.0
        }
    }

    /// The bytes of `key`'s piece at `epochs`, and whether they were made
    /// anew.
    fn got(heads: &mut Heads<At>, epochs: (u64, u64), key: At, bytes: &[u8]) -> (Vec<u8>, bool) {
        let mut made = false;
        let piece = heads.get_at(epochs, key, |out| {
            made = true;
            out.extend_from_slice(bytes);
        });
        (piece.bytes().to_vec(), made)
    }

    #[test]
    fn a_key_finds_its_own_piece_or_none() {
        let mut heads: Heads<At> = Heads::default();
        let e = (1, 1);
        assert_eq!(
            got(&mut heads, e, At(5, 1), b"one"),
            (b"one".to_vec(), true)
        );
        assert_eq!(
            got(&mut heads, e, At(7, 2), b"two"),
            (b"two".to_vec(), true)
        );
        // Kept: found again, not made again.
        assert_eq!(got(&mut heads, e, At(5, 1), b"-"), (b"one".to_vec(), false));
        // Another key in the same slot (modulo the slots) takes it: each
        // is then made anew in turn, never found as the other.
        let shared = At(5 + SLOTS, 3);
        assert_eq!(
            got(&mut heads, e, shared, b"three"),
            (b"three".to_vec(), true)
        );
        assert_eq!(
            got(&mut heads, e, At(5, 1), b"uno"),
            (b"uno".to_vec(), true)
        );
        assert_eq!(
            got(&mut heads, e, shared, b"tres"),
            (b"tres".to_vec(), true)
        );
        assert_eq!(got(&mut heads, e, At(7, 2), b"-"), (b"two".to_vec(), false));
        // A piece longer than a block is kept whole.
        let long = [b'x'; 200];
        assert_eq!(got(&mut heads, e, At(9, 4), &long), (long.to_vec(), true));
        assert_eq!(got(&mut heads, e, At(9, 4), b"-"), (long.to_vec(), false));
    }

    #[test]
    fn a_piece_of_other_epochs_is_never_found() {
        let mut heads: Heads<At> = Heads::default();
        let key = At(5, 1);
        assert_eq!(got(&mut heads, (1, 1), key, b"a"), (b"a".to_vec(), true));
        assert_eq!(got(&mut heads, (1, 1), key, b"-"), (b"a".to_vec(), false));
        // The strings epoch changes, then the threads epoch: made anew
        // each time, then kept.
        assert_eq!(got(&mut heads, (2, 1), key, b"b"), (b"b".to_vec(), true));
        assert_eq!(got(&mut heads, (2, 1), key, b"-"), (b"b".to_vec(), false));
        assert_eq!(got(&mut heads, (2, 3), key, b"c"), (b"c".to_vec(), true));
        // Back to epochs seen before (not met: epochs are never reused)
        // finds nothing of theirs either.
        assert_eq!(got(&mut heads, (1, 1), key, b"d"), (b"d".to_vec(), true));
        assert_eq!(
            got(&mut heads, (1, 1), At(7, 2), b"e"),
            (b"e".to_vec(), true)
        );
    }

    #[test]
    fn names_of_each_phase_have_slots_of_their_own() {
        let mut slots = Vec::new();
        for phase in [b'X', b'i', b'B', b'C', b'E'] {
            for name in 2..=6 {
                let key = Names {
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
        let keys = [
            OfThread::of(Who::Koids(100, 1001), false, false),
            OfThread::of(Who::Koids(100, 1001), false, true),
            OfThread::of(Who::Koids(100, 1001), true, false),
            OfThread::of(Who::Koids(100, 1001), true, true),
            OfThread::of(Who::Koids(101, 1002), false, false),
            OfThread::of(Who::Index(3), false, false),
            OfThread::of(Who::Index(4), false, false),
        ];
        let slots: Vec<usize> = keys.iter().map(|k| k.slot() % SLOTS).collect();
        for (i, a) in slots.iter().enumerate() {
            assert!(!slots[i + 1..].contains(a), "{slots:?}");
        }
        // Two threads in one slot are still two keys: koids, indices,
        // and an index beside koids of the same number.
        let pairs = [
            (Who::Koids(7, 1001 + THREADS as u64), Who::Koids(100, 1001)),
            (Who::Index(3 + THREADS as u8), Who::Index(3)),
            (Who::Koids(0, 3), Who::Index(3)),
        ];
        for (a, b) in pairs {
            let (a, b) = (OfThread::of(a, false, false), OfThread::of(b, false, false));
            assert_ne!(a, b);
            assert_eq!(a.slot() % SLOTS, b.slot() % SLOTS);
        }
    }
}
