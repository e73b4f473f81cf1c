//! An event row's key: what decides its provider, thread, category and
//! name columns ([`super::schema`]'s `Key`), so that a row whose key is
//! its table's last row's is appended as a copy of it ([`super::rows`]).

use fxt_format::decode::{Context as At, EventKind, EventView, StrRef, Thread};

/// What an event row's `Key` columns are made of: its provider,
/// its thread, the strings epoch, and its category and name by string
/// index (0: empty). Two rows of one input with one key have the same
/// values in those columns. Whole words, each written and read as one (a key of
/// narrower fields, read back as words, stalled each row); the last word
/// is 0 for an event without a key (a decoded one, or texts inline).
pub type EventKey = [u64; 5];

/// The key of no event.
pub const NO_KEY: EventKey = [0; 5];

/// The tables of events written as they come, as indices of the rows'
/// last keys (a slice's texts are its begin's, decoded).
pub const INSTANTS: usize = 0;
/// The counters table (see [`INSTANTS`]).
pub const COUNTERS: usize = 1;
/// The flows table (see [`INSTANTS`]).
pub const FLOWS: usize = 2;
/// The slices table, as an index of the rows' last providers and threads.
pub const SLICES: usize = 3;

/// A row's provider and thread: provider, pid, tid.
pub type Who = (Option<u32>, u64, u64);

/// The table of events of kind `kind` written as they come.
pub fn table_of(kind: EventKind) -> Option<usize> {
    match kind {
        EventKind::Instant | EventKind::AsyncInstant { .. } => Some(INSTANTS),
        EventKind::Counter { .. } => Some(COUNTERS),
        EventKind::FlowBegin { .. } | EventKind::FlowStep { .. } | EventKind::FlowEnd { .. } => {
            Some(FLOWS)
        }
        _ => None,
    }
}

/// The key of event view `e` ([`NO_KEY`] if a text is inline).
pub fn view_key(ctx: &At<'_>, e: &EventView<'_>) -> EventKey {
    let index = |s: StrRef<'_>| match s {
        StrRef::Empty => Some(0),
        StrRef::Indexed(i) => Some(u64::from(i)),
        StrRef::Inline(_) => None,
    };
    let (Some(category), Some(name)) = (index(e.category), index(e.name)) else {
        return NO_KEY;
    };
    let (pid, tid) = koids(e.thread);
    let provider = ctx.provider_id().map_or(0, |p| 1 << 32 | u64::from(p));
    [
        provider,
        pid,
        tid,
        ctx.strings_epoch(),
        1 << 32 | category << 16 | name,
    ]
}

/// The koids of a thread field (0 for an undefined one, which the first
/// pass has already left out).
pub fn koids(t: Thread) -> (u64, u64) {
    match t {
        Thread::Known { process, thread } => (process, thread),
        Thread::Undefined(_) => (0, 0),
    }
}
