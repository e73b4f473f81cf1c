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
/// rows' interned texts), or decoded with its category and name.
pub enum BeginArgs {
    Kept(Vec<Kept>),
    Decoded(Box<Decoded>),
}

/// A decoded begin's category, name and arguments (rare: only what views
/// do not read is decoded, so it lives behind a box).
pub struct Decoded {
    pub category: Text,
    pub name: Text,
    pub args: Vec<Arg>,
}
