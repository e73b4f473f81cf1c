//! The simple event layout: indexed category, name, keys and thread;
//! numeric, boolean, null or indexed-string arguments. One encoder, used
//! by the hot path and by the slow path alike.

use fxt_format::encode::header::{self, record_type};
use fxt_format::encode::{ArgValue, StringRef, MAX_ARGS};

use crate::callsite::Site;
use crate::memory::filler::Store;

/// Words of an argument's value beyond its header, for the types the
/// simple layout handles; `None` for the others.
#[inline(always)]
pub(super) fn value_words(v: &ArgValue<'_>) -> Option<usize> {
    match v {
        ArgValue::Str(StringRef::Index(i)) if !(1..=0x7fff).contains(i) => None,
        ArgValue::Str(StringRef::Inline(_)) | ArgValue::Blob(_) => None,
        v => Some(usize::from(v.parts().2.is_some())),
    }
}

/// The argument header's type and upper 32 bits for a value, and its value
/// word if any. (For an inline `Str` the ref is computed by the caller.)
#[inline(always)]
pub(super) fn value_parts(v: &ArgValue<'_>) -> (u64, u64, Option<u64>) {
    v.parts()
}

/// An event the simple layout can write: its size and its arguments' key
/// bits (`ref << 16`, as in an argument header).
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub(super) words: usize,
    key_bits: [u64; MAX_ARGS],
}

impl Layout {
    /// The layout of an event with `args` and an optional trailing word at
    /// `site`, if the simple layout can write it: at most 15 arguments,
    /// indexed key refs and simple argument values (`None` otherwise, for
    /// the general encoder). The site's own refs are checked by the caller
    /// (`Site::has_inline`).
    #[inline(always)]
    pub(super) fn of(site: Site, extra: bool, args: &[ArgValue<'_>]) -> Option<Layout> {
        if args.len() > MAX_ARGS {
            return None;
        }
        let token = site.token();
        let keys = site.keys;
        let mut words = 2 + extra as usize;
        let mut key_bits = [0u64; MAX_ARGS];
        for (i, a) in args.iter().enumerate() {
            let v = value_words(a)?;
            if let Some(k) = keys.get(i) {
                // Interned, indexed, in the site's session (an inline key
                // ref never matches the token).
                key_bits[i] = k.header_bits(token)?;
            }
            words += 1 + v;
        }
        Some(Layout { words, key_bits })
    }

    /// Stores the event (`store` begun over exactly [`Layout::words`]
    /// words): the timestamp, the arguments, the trailing word, then the
    /// header, whose upper half and thread ref bits are `base` (see
    /// [`event_header`]).
    #[inline(always)]
    pub(super) fn store(
        &self,
        store: Store<'_>,
        base: u64,
        ty: u64,
        ts: u64,
        args: &[ArgValue<'_>],
        extra: Option<u64>,
    ) {
        store.put(1, ts);
        let mut i = 2;
        for (n, a) in args.iter().enumerate() {
            let (t, high, value) = value_parts(a);
            let aw = 1 + value.is_some() as usize;
            store.put(i, header::arg(t, aw, 0) | self.key_bits[n] | (high << 32));
            if let Some(v) = value {
                store.put(i + 1, v);
            }
            i += aw;
        }
        if let Some(x) = extra {
            store.put(i, x);
        }
        store.end(event_header(base, ty, args.len(), self.words));
    }
}

/// The event header: `base` (the call site's category and name refs in
/// the upper half, the thread ref bits in bits 24..32, see [`header_base`]),
/// the type, argument count and size.
#[inline(always)]
pub(super) fn event_header(base: u64, ty: u64, arg_count: usize, words: usize) -> u64 {
    base | ((arg_count as u64) << 20) | (ty << 16) | header::record(record_type::EVENT, words)
}

/// The call site's category and name refs (the upper half of its cache
/// word, already in header position) with `thread_bits`. (The hot path
/// gets the same with one XOR: `thread::Local::header_base`.)
#[inline(always)]
pub(super) fn header_base(site: Site, thread_bits: u64) -> u64 {
    (site.word & 0xffff_ffff_0000_0000) | thread_bits
}
