//! The fixed pieces of the usual event's line (`fxt json`'s object, `fxt
//! dump`'s line), kept per event shape: what an event's header word, the
//! strings and threads epochs it is read at and its arguments' names make
//! of its line (json's head up to `"ts":`, what comes after the timestamp
//! or dump's end or id, each argument's name), laid out once, so that an
//! event of a shape met before is its values between copies of these,
//! found with one lookup.
//!
//! The header word holds the event's type, argument count, thread index,
//! category and name; the epochs, taken from a count shared by every
//! decoder, change whenever an index may read otherwise (a string or
//! thread defined, a provider switched), so a shape is exact by itself.
//! What a line takes from past the header (a counter's id, 0 or not; an
//! argument's name) is never decided by a shape's pieces: it is written,
//! or checked, per event.
//! An argument's name is checked where the argument is written, each
//! against the name its piece was made of.

use crate::piece::Piece;

/// Arguments whose names a shape keeps (any after them are looked up one
/// by one).
pub const ARGS: usize = 3;

/// Shapes kept at once: [`WAYS`] in each set, the set chosen by the header
/// word (a few shapes of one set take no turns at it).
const SHAPES: usize = 128;

/// Shapes of one set.
const WAYS: usize = 4;

/// [`Shape::args`] of no name (no name index is this large).
const NO_NAME: u32 = u32::MAX;

/// The fixed pieces of one shape's line.
#[derive(Default)]
pub struct Shape {
    /// The header word and epochs it was made for; 0 before it is made
    /// (no epoch is 0).
    header: u64,
    strings: u64,
    threads: u64,
    /// What comes before the timestamp (json's `{"ph":…,"cat":…,"name":…,"ts":`;
    /// empty for dump).
    pub head: Piece,
    /// What comes between the timestamp (dump: its end or id) and the
    /// arguments.
    pub after: Piece,
    /// Each argument's name index and piece (its name, with what comes
    /// before it).
    args: [(u32, Piece); ARGS],
}

impl Shape {
    /// Whether the shape was made for `header` at epochs `strings` and
    /// `threads`.
    #[inline(always)]
    pub fn is(&self, header: u64, strings: u64, threads: u64) -> bool {
        self.header == header && self.strings == strings && self.threads == threads
    }

    /// Makes the shape anew for `header` at epochs `strings` and
    /// `threads`: its head and after pieces from what `make` appends to
    /// each, its argument names unknown.
    #[cold]
    #[inline(never)]
    pub fn make(
        &mut self,
        (header, strings, threads): (u64, u64, u64),
        make: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>) -> Option<()>,
    ) -> Option<()> {
        // Unmade until both pieces are: an event that turns out not to
        // be the usual one leaves no shape behind.
        self.header = 0;
        let (mut head, mut after) = (Vec::new(), Vec::new());
        make(&mut head, &mut after)?;
        self.head.set(&head);
        self.after.set(&after);
        for arg in &mut self.args {
            arg.0 = NO_NAME;
        }
        (self.header, self.strings, self.threads) = (header, strings, threads);
        Some(())
    }

    /// The piece of argument `i` (below [`ARGS`]) named by index `name`:
    /// the one kept, or the one `make` appends to an empty buffer.
    #[inline(always)]
    pub fn arg(&mut self, i: usize, name: u16, make: impl FnOnce(&mut Vec<u8>)) -> &Piece {
        let slot = &mut self.args[i];
        if slot.0 != u32::from(name) {
            fill_arg(slot, name, make);
        }
        &slot.1
    }
}

/// Keeps what `make` appends as the piece of the argument named `name`.
#[cold]
#[inline(never)]
fn fill_arg(slot: &mut (u32, Piece), name: u16, make: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = Vec::new();
    make(&mut bytes);
    slot.1.set(&bytes);
    slot.0 = u32::from(name);
}

/// The shapes of recent events.
pub struct Shapes {
    slots: Box<[Shape; SHAPES]>,
    /// Each set's way to make a new shape in next.
    next: [u8; SHAPES / WAYS],
}

impl Default for Shapes {
    fn default() -> Self {
        let slots: Box<[Shape]> = (0..SHAPES).map(|_| Shape::default()).collect();
        let Ok(slots) = slots.try_into() else {
            unreachable!("SHAPES shapes were made")
        };
        Shapes {
            slots,
            next: [0; SHAPES / WAYS],
        }
    }
}

impl Shapes {
    /// Where the shape of `header` at epochs `strings` and `threads` is,
    /// and whether it is there (or the slot to make it in): one of the
    /// [`WAYS`] of its set, chosen by its thread, category, name, type and
    /// argument count folded and mixed by one multiply.
    #[inline(always)]
    pub fn find(&mut self, header: u64, strings: u64, threads: u64) -> (usize, bool) {
        let folded = header ^ (header >> 29);
        let set = (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as usize;
        let first = (set * WAYS) % SHAPES;
        for at in first..first + WAYS {
            if self.slots[at % SHAPES].is(header, strings, threads) {
                return (at, true);
            }
        }
        self.missed(set)
    }

    /// The slot a new shape of set `set` is made in (each of its own in
    /// turn).
    #[cold]
    fn missed(&mut self, set: usize) -> (usize, bool) {
        let next = &mut self.next[set % (SHAPES / WAYS)];
        *next = (*next + 1) % WAYS as u8;
        ((set * WAYS) % SHAPES + usize::from(*next), false)
    }

    /// The shape in slot `at` (from [`Shapes::find`]).
    #[inline(always)]
    pub fn at(&mut self, at: usize) -> &mut Shape {
        &mut self.slots[at % SHAPES]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes the shape of `key` in `shapes`, its head `head`.
    fn make(shapes: &mut Shapes, key: (u64, u64, u64), head: &[u8]) -> usize {
        let (at, found) = shapes.find(key.0, key.1, key.2);
        assert!(!found);
        shapes
            .at(at)
            .make(key, |h, a| {
                h.extend_from_slice(head);
                a.push(b',');
                Some(())
            })
            .unwrap();
        at
    }

    #[test]
    fn a_shape_is_found_for_its_own_header_and_epochs_only() {
        let mut shapes = Shapes::default();
        let at = make(&mut shapes, (0x3000101030024, 15, 23), b"one");
        assert_eq!(shapes.find(0x3000101030024, 15, 23), (at, true));
        assert_eq!(shapes.at(at).head.bytes(), b"one");
        for other in [(0x3000102030024, 15, 23), (0x3000101030024, 16, 23)] {
            assert!(!shapes.find(other.0, other.1, other.2).1);
        }
        assert!(!shapes.find(0x3000101030024, 15, 24).1);
        // Many headers at once are all kept.
        let keys: Vec<u64> = (0..32u64)
            .map(|i| 0x3000100030024 | ((i % 8 + 1) << 24) | ((i / 8) << 48))
            .collect();
        for &header in &keys {
            if !shapes.find(header, 15, 23).1 {
                make(&mut shapes, (header, 15, 23), b"h");
            }
        }
        let kept = keys.iter().filter(|&&h| shapes.find(h, 15, 23).1).count();
        assert!(kept >= 28, "{kept}");
    }

    #[test]
    fn an_argument_piece_is_made_again_for_another_name() {
        let mut shapes = Shapes::default();
        let at = make(&mut shapes, (1, 2, 3), b"h");
        let shape = shapes.at(at);
        assert_eq!(shape.arg(0, 7, |p| p.extend_from_slice(b"a")).bytes(), b"a");
        assert_eq!(shape.arg(0, 7, |p| p.extend_from_slice(b"-")).bytes(), b"a");
        assert_eq!(shape.arg(0, 8, |p| p.extend_from_slice(b"b")).bytes(), b"b");
        assert_eq!(shape.arg(1, 7, |p| p.extend_from_slice(b"c")).bytes(), b"c");
        // Made anew: its names are unknown again.
        shape.make((1, 2, 4), |_, _| Some(())).unwrap();
        assert_eq!(shape.arg(0, 8, |p| p.extend_from_slice(b"d")).bytes(), b"d");
        // A shape that is not made is found for nothing.
        assert!(shape.make((1, 2, 5), |_, _| None).is_none());
        assert!(!shape.is(1, 2, 5) && !shape.is(1, 2, 4));
    }
}
