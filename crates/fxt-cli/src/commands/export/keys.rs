//! An event row's key: what decides its source, thread, category and
//! name columns, so that those columns are looked up once per key in a
//! row group ([`super::events`]).

use fxt_format::decode::{Context as At, EventView, StrRef, Thread};

/// What an event row's key columns are made of: its input and provider,
/// its thread, and its category and name (by string index and strings
/// epoch, or by their ids in the rows' [`crate::interned::Interned`]
/// texts). Two rows with one key have the same values in those columns.
/// Whole words; the last is 0 for an event without a key (texts inline
/// or decoded).
pub type EventKey = [u64; 5];

/// The key of no event.
pub const NO_KEY: EventKey = [0; 5];

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

/// A key's input number's place in its first word (above the provider).
const INPUT_SHIFT: u32 = 40;

/// `key` as a key of the input numbered `input` (no key stays none).
#[inline]
pub fn of_input(mut key: EventKey, input: u64) -> EventKey {
    key[0] |= input << INPUT_SHIFT;
    key
}

/// The key of a row whose texts are `category` and `name` by their ids
/// in the rows' interned texts (a begin read from a view). Its fourth
/// word's top bit tells it from a view's key, whose fourth word is a
/// strings epoch.
pub fn interned_key(
    provider: Option<u32>,
    (pid, tid): (u64, u64),
    category: u32,
    name: u32,
) -> EventKey {
    let provider = provider.map_or(0, |p| 1 << 32 | u64::from(p));
    [
        provider,
        pid,
        tid,
        1 << 63 | u64::from(category),
        1 << 32 | u64::from(name),
    ]
}
