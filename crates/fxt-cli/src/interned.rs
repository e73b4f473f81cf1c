//! Strings counted by number: each distinct text of a walk gets a small id,
//! and a string-table index is resolved to its id once, not per event, so
//! that a command tallying events by category and name
//! ([`crate::input::Input::walk_view_ranges`]) hashes two integers instead
//! of copying and hashing two strings per event.
//!
//! An index means what the provider's table says at the record: the ids
//! resolved from indices are forgotten whenever the strings epoch changes
//! ([`crate::epoch`]), so they are looked up again.

use fxt_format::decode::{Context, HeadAt, StrRef, Text};
use rustc_hash::FxHashMap;

use crate::epoch::Epoch;

/// An index not resolved yet.
const NONE: u32 = u32::MAX;

/// The texts of one walk (or one range of it), numbered.
#[derive(Default)]
pub struct Interned {
    ids: FxHashMap<Text, u32>,
    texts: Vec<Text>,
    /// Per string index of the current provider: its id, or [`NONE`].
    by_index: Vec<u32>,
    /// The strings epoch `by_index` was filled in.
    epoch: Epoch,
}

impl Interned {
    /// The id of a string field of the record `ctx` is at.
    #[inline]
    pub fn id(&mut self, ctx: &Context<'_>, s: StrRef<'_>) -> u32 {
        let StrRef::Indexed(index) = s else {
            return self.intern(ctx.text(s));
        };
        if self.epoch.changed(ctx) {
            self.by_index.fill(NONE);
        }
        let slot = usize::from(index);
        match self.by_index.get(slot) {
            Some(&id) if id != NONE => id,
            _ => self.resolve(ctx, index),
        }
    }

    /// [`Interned::id`] of a string field of the event head read at `at`:
    /// an index remembered in the strings epoch there is found here, and
    /// anything else by a call handed `at` (two words in registers), so
    /// that the head walk writes nothing to memory for it.
    #[inline(always)]
    pub fn id_at(&mut self, at: HeadAt<'_, '_>, s: StrRef<'_>) -> u32 {
        if let StrRef::Indexed(index) = s {
            if self.epoch.holds(at.strings_epoch()) {
                match self.by_index.get(usize::from(index)) {
                    Some(&id) if id != NONE => return id,
                    _ => {}
                }
            }
        }
        self.id_slowly(at, s)
    }

    /// [`Interned::id_at`] of what is not found by index.
    #[inline(never)]
    fn id_slowly(&mut self, at: HeadAt<'_, '_>, s: StrRef<'_>) -> u32 {
        self.id(&at.context(), s)
    }

    /// Looks index `index` up in the current table and remembers its id.
    #[cold]
    fn resolve(&mut self, ctx: &Context<'_>, index: u16) -> u32 {
        let id = self.intern(ctx.text(StrRef::Indexed(index)));
        let slot = usize::from(index);
        if slot >= self.by_index.len() {
            // At most 32768 entries: indices are 15 bits.
            self.by_index.resize(slot + 1, NONE);
        }
        self.by_index[slot] = id;
        id
    }

    /// The id of `text`.
    pub fn intern(&mut self, text: Text) -> u32 {
        if let Some(&id) = self.ids.get(&text) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.texts.push(text.clone());
        self.ids.insert(text, id);
        id
    }

    /// The text of an id this table gave.
    pub fn text(&self, id: u32) -> &Text {
        &self.texts[id as usize]
    }
}
