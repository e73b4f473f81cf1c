//! What the rows pass keeps of an open duration begin or async begin
//! until its end: when, its thread, its category and name, and its
//! arguments.

use fxt_format::decode::{Arg, Text};

use super::args::Kept;

/// An open duration begin or async begin.
pub struct Open {
    pub ts: i64,
    pub pid: u64,
    pub tid: u64,
    /// The category's and name's ids in the rows' interned texts, when
    /// the arguments are [`BeginArgs::Kept`] (plain ids: the open begin
    /// is moved onto its stack and off again whole).
    pub category: u32,
    pub name: u32,
    pub args: BeginArgs,
}

/// A begin's arguments: kept from its view (texts by their ids in the
/// rows' interned texts) in a list of the [`KeptLists`], or decoded with
/// its category and name.
pub enum BeginArgs {
    Kept(ListId),
    Decoded(Box<Decoded>),
}

/// The number of a list of [`KeptLists`] ([`NO_LIST`]: a begin without
/// arguments).
pub type ListId = u32;

/// The list of a begin without arguments.
pub const NO_LIST: ListId = ListId::MAX;

/// The kept arguments of the open begins, each begin's in a list of its
/// own, lent by number: a begin fills a free list in place and its end
/// reads it there and frees it (no vector is moved onto a stack and off
/// again: a vector's words, stored apart and then copied whole, stall).
#[derive(Default)]
pub struct KeptLists {
    lists: Vec<Vec<Kept>>,
    free: Vec<ListId>,
}

impl KeptLists {
    /// A free list, emptied.
    #[inline]
    pub fn take(&mut self) -> ListId {
        match self.free.pop() {
            Some(id) => {
                self.lists[id as usize].clear();
                id
            }
            None => {
                self.lists.push(Vec::new());
                (self.lists.len() - 1) as ListId
            }
        }
    }

    /// List `id`, to fill.
    #[inline]
    pub fn list_mut(&mut self, id: ListId) -> &mut Vec<Kept> {
        &mut self.lists[id as usize]
    }

    /// The arguments in list `id` (none for [`NO_LIST`]).
    #[inline]
    pub fn list(&self, id: ListId) -> &[Kept] {
        self.lists.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Frees list `id` for a later begin (nothing for [`NO_LIST`]).
    #[inline]
    pub fn give_back(&mut self, id: ListId) {
        if id != NO_LIST {
            self.free.push(id);
        }
    }
}

/// A decoded begin's category, name and arguments (rare: only what views
/// do not read is decoded, so it lives behind a box).
pub struct Decoded {
    pub category: Text,
    pub name: Text,
    pub args: Vec<Arg>,
}
