//! String fields written as a command prints them, each string index
//! formatted once: a command that prints every event (`fxt dump`,
//! `fxt json`) copies the quoted, escaped bytes of an index it has seen
//! instead of looking the string up and escaping it again per event.
//!
//! An index means what the provider's table says at the record: what was
//! formatted is forgotten whenever the strings epoch changes
//! ([`crate::epoch`]).

use std::marker::PhantomData;

use fxt_format::decode::{Context, StrRef};

use crate::epoch::Epoch;
use crate::piece::Piece;

/// How a command prints a string field.
pub trait Form {
    /// Appends a defined string.
    fn text(out: &mut Vec<u8>, s: &str);
    /// Appends a reference to string index `index`, which the provider's
    /// table does not hold.
    fn undefined(out: &mut Vec<u8>, index: u16);
}

/// The printed bytes of the string indices met so far, in form `F`.
pub struct Formatted<F> {
    /// Per string index of the current provider: its bytes, if known.
    slots: Vec<Slot>,
    /// The strings epoch the slots were filled in.
    epoch: Epoch,
    form: PhantomData<F>,
}

/// One index's printed bytes (the buffer is kept when the index is
/// forgotten, to be refilled).
#[derive(Default)]
struct Slot {
    known: bool,
    bytes: Piece,
}

impl<F: Form> Default for Formatted<F> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            epoch: Epoch::default(),
            form: PhantomData,
        }
    }
}

impl<F: Form> Formatted<F> {
    /// Appends string field `s` of the record `ctx` is at.
    #[inline(always)]
    pub fn write(&mut self, out: &mut Vec<u8>, ctx: &Context<'_>, s: StrRef<'_>) {
        match s {
            StrRef::Indexed(index) => self.indexed(ctx, index).put(out),
            StrRef::Empty => F::text(out, ""),
            StrRef::Inline(text) => F::text(out, text),
        }
    }

    /// The printed bytes of string index `index` at the record `ctx` is
    /// at.
    #[inline(always)]
    pub fn indexed(&mut self, ctx: &Context<'_>, index: u16) -> &Piece {
        self.indexed_at(ctx.strings_epoch(), ctx, index)
    }

    /// [`Formatted::indexed`] at a record whose strings epoch is `epoch`
    /// (`ctx`'s, read once per event by the caller).
    #[inline(always)]
    pub fn indexed_at(&mut self, epoch: u64, ctx: &Context<'_>, index: u16) -> &Piece {
        let at = usize::from(index);
        if self.epoch.changed_to(epoch) {
            self.forget();
        }
        // A known index goes straight on to its bytes, so that its bound
        // is checked once (where both paths met, it was checked again).
        match self.slots.get(at) {
            Some(slot) if slot.known => {}
            _ => return self.resolve(ctx, index),
        }
        &self.slots[at].bytes
    }

    /// Looks index `index` up in the current table and keeps its bytes.
    #[cold]
    fn resolve(&mut self, ctx: &Context<'_>, index: u16) -> &Piece {
        let at = usize::from(index);
        if at >= self.slots.len() {
            // At most 32768 slots: indices are 15 bits.
            self.slots.resize_with(at + 1, Slot::default);
        }
        let mut bytes = Vec::new();
        let text = ctx.text(StrRef::Indexed(index));
        match text.as_str() {
            Some(s) => F::text(&mut bytes, s),
            None => F::undefined(&mut bytes, index),
        }
        let slot = &mut self.slots[at];
        slot.bytes.set(&bytes);
        slot.known = true;
        &slot.bytes
    }

    /// Forgets every index's bytes (their buffers kept).
    #[cold]
    fn forget(&mut self) {
        self.slots.iter_mut().for_each(|slot| slot.known = false)
    }
}
