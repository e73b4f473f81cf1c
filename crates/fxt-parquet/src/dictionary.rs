//! The distinct strings of one column in one row group, numbered in the
//! order they first came, and kept as Parquet's dictionary page holds them
//! (PLAIN: each a 4-byte little-endian length and its bytes), so the page
//! is written as it is.
//!
//! A trace names the same few things row after row, and a row's text
//! comes borrowed from the trace's string table, at the same address each
//! time: a value is first looked for by its address among the recent ones
//! (then compared, since an address can be reused for other text), and
//! hashed only when that misses.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::take_like;

/// Slots of the by-address cache.
const RECENT: usize = 64;

/// A column's dictionary (see the module documentation).
pub struct Dictionary {
    /// The dictionary page: every value, PLAIN-encoded, in id order.
    page: Vec<u8>,
    /// Where each value's bytes are in `page`: start and length.
    spans: Vec<(usize, usize)>,
    /// The ids, by their value's hash.
    table: HashTable<u32>,
    /// Recent values by address: the address (0: none) and the id.
    recent: Box<[(usize, u32); RECENT]>,
}

impl Default for Dictionary {
    fn default() -> Dictionary {
        Dictionary {
            page: Vec::new(),
            spans: Vec::new(),
            table: HashTable::new(),
            recent: Box::new([(0, 0); RECENT]),
        }
    }
}

/// A finished dictionary: its page and how many values it holds.
#[derive(Clone)]
pub struct Page {
    /// The PLAIN-encoded values.
    pub bytes: Vec<u8>,
    /// Where each value's bytes are in `bytes`: start and length.
    pub spans: Vec<(usize, usize)>,
}

impl Page {
    /// Value `id`'s bytes.
    pub fn value(&self, id: usize) -> &[u8] {
        let (start, len) = self.spans[id];
        &self.bytes[start..start + len]
    }
}

impl Dictionary {
    /// The id of `s`, added if new.
    #[inline]
    pub fn id(&mut self, s: &[u8]) -> u32 {
        let address = s.as_ptr() as usize;
        let slot = (address >> 3) % RECENT;
        let (seen, id) = self.recent[slot];
        if seen == address && same(value(&self.page, &self.spans, id), s) {
            return id;
        }
        let id = self.find_or_add(s);
        self.recent[slot] = (address, id);
        id
    }

    /// The id of `s` by its hash, added if new.
    #[inline(never)]
    fn find_or_add(&mut self, s: &[u8]) -> u32 {
        let Dictionary {
            page, spans, table, ..
        } = self;
        let hash = FxBuildHasher.hash_one(s);
        if let Some(&id) = table.find(hash, |&id| value(page, spans, id) == s) {
            return id;
        }
        let id = spans.len() as u32;
        page.extend_from_slice(&(s.len() as u32).to_le_bytes());
        spans.push((page.len(), s.len()));
        page.extend_from_slice(s);
        table.insert_unique(hash, id, |&id| {
            FxBuildHasher.hash_one(value(page, spans, id))
        });
        id
    }

    /// Values so far.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Takes the page, leaving the dictionary empty for the next row
    /// group (with room for as much as this one held).
    pub fn finish(&mut self) -> Page {
        self.table.clear();
        self.recent.iter_mut().for_each(|slot| *slot = (0, 0));
        Page {
            bytes: take_like(&mut self.page),
            spans: take_like(&mut self.spans),
        }
    }
}

/// A short string as a few words that compare it whole (see
/// `Last::words`), and its id: a value a caller expects to see again
/// (a column's last, a row's first argument name), known then without
/// touching the dictionary ([`Dictionary::id_after`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Last {
    len: usize,
    words: (u64, u64),
    id: u32,
}

impl Last {
    /// Words that hold every byte of `s` when it is 16 bytes or shorter
    /// (two that overlap, or the first, middle and last byte), so that two
    /// strings of one length are equal exactly when their words are.
    #[inline(always)]
    fn words(s: &[u8]) -> Option<(u64, u64)> {
        let n = s.len();
        Some(match n {
            0 => (0, 0),
            1..4 => (
                u64::from(s[0]) | u64::from(s[n / 2]) << 8 | u64::from(s[n - 1]) << 16,
                0,
            ),
            4..8 => (
                u64::from(u32::from_le_bytes(*s.first_chunk::<4>()?)),
                u64::from(u32::from_le_bytes(*s.last_chunk::<4>()?)),
            ),
            8..=16 => (
                u64::from_le_bytes(*s.first_chunk::<8>()?),
                u64::from_le_bytes(*s.last_chunk::<8>()?),
            ),
            _ => return None,
        })
    }
}

impl Dictionary {
    /// The id of `s`, which is `last`'s if `s` is its value (compared
    /// from the words alone: no load from the dictionary); `last` then
    /// remembers `s`. A `last` must be cleared when the dictionary is
    /// finished (ids start over).
    #[inline(always)]
    pub fn id_after(&mut self, last: &mut Option<Last>, s: &[u8]) -> u32 {
        let words = Last::words(s);
        match (*last, words) {
            (Some(l), Some(words)) if l.len == s.len() && l.words == words => l.id,
            _ => {
                let id = self.id(s);
                *last = words.map(|words| Last {
                    len: s.len(),
                    words,
                    id,
                });
                id
            }
        }
    }
}

/// Values a [`Recent`] holds.
const WAYS: usize = 4;

/// The last few distinct short values of a column, as [`Last`] holds
/// them: a column's values often take turns among a few (a thread's
/// slices' names), and a value taken from a decoded record sits at the
/// address the one before it had, which the dictionary's by-address
/// cache cannot tell apart without comparing. Cleared (`default`) when
/// the dictionary is finished: ids start over.
#[derive(Clone, Copy, Default)]
pub struct Recent {
    slots: [Option<Last>; WAYS],
    /// The slot the next new value takes (oldest first).
    next: usize,
}

impl Dictionary {
    /// The id of `s`, which is one of `recent`'s if `s` is its value
    /// (compared from the words alone); `recent` then holds `s`, in place
    /// of its oldest value.
    #[inline(always)]
    pub fn id_recent(&mut self, recent: &mut Recent, s: &[u8]) -> u32 {
        let Some(words) = Last::words(s) else {
            return self.id(s);
        };
        for last in recent.slots.iter().flatten() {
            if last.len == s.len() && last.words == words {
                return last.id;
            }
        }
        let id = self.id(s);
        recent.slots[recent.next % WAYS] = Some(Last {
            len: s.len(),
            words,
            id,
        });
        recent.next = recent.next.wrapping_add(1);
        id
    }
}

/// Whether `a` and `b` hold the same bytes: names are short, and two
/// overlapping words (or halves, or the first, middle and last byte)
/// compare them without a call.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    match n {
        0 => true,
        1..4 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..8 => {
            a.first_chunk::<4>() == b.first_chunk::<4>()
                && a.last_chunk::<4>() == b.last_chunk::<4>()
        }
        8..=16 => {
            a.first_chunk::<8>() == b.first_chunk::<8>()
                && a.last_chunk::<8>() == b.last_chunk::<8>()
        }
        _ => a == b,
    }
}

/// Value `id` of a page being built.
#[inline]
fn value<'a>(page: &'a [u8], spans: &[(usize, usize)], id: u32) -> &'a [u8] {
    let (start, len) = spans[id as usize];
    &page[start..start + len]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_numbered_in_order_of_first_use_and_the_page_is_plain() {
        let mut d = Dictionary::default();
        let names = ["stress", "ev", "stress", "", "ev", "thread-1"];
        let ids: Vec<u32> = names.iter().map(|n| d.id(n.as_bytes())).collect();
        assert_eq!(ids, [0, 1, 0, 2, 1, 3]);
        assert_eq!(d.len(), 4);
        let page = d.finish();
        assert_eq!(
            page.bytes,
            b"\x06\0\0\0stress\x02\0\0\0ev\0\0\0\0\x08\0\0\0thread-1"
        );
        assert_eq!(page.value(3), b"thread-1");
        // The next row group starts over.
        assert_eq!(d.id(b"ev"), 0);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn an_address_reused_for_other_text_is_not_mistaken_for_it() {
        let mut d = Dictionary::default();
        let mut buffer = *b"first!";
        let a = d.id(&buffer);
        buffer.copy_from_slice(b"second");
        let b = d.id(&buffer);
        assert_ne!(a, b);
        assert_eq!(d.id(b"first!"), a);
        assert_eq!(d.id(&buffer), b);
    }

    #[test]
    fn short_strings_of_one_length_have_equal_words_exactly_when_equal() {
        for len in 0..=16usize {
            let base: Vec<u8> = (0..len as u8).map(|b| b'a' + b).collect();
            let words = Last::words(&base).unwrap();
            // Each byte changed alone changes the words.
            for at in 0..len {
                let mut other = base.clone();
                other[at] ^= 0x20;
                assert_ne!(Last::words(&other), Some(words), "len {len} byte {at}");
            }
            assert_eq!(Last::words(&base.clone()), Some(words));
        }
        assert_eq!(Last::words(&[b'x'; 17]), None);
    }

    #[test]
    fn strings_differing_in_any_byte_are_not_the_same() {
        for len in 0..=40usize {
            let base: Vec<u8> = (0..len as u8).map(|b| b'a' + b % 26).collect();
            assert!(same(&base, &base.clone()));
            for at in 0..len {
                let mut other = base.clone();
                other[at] ^= 0x20;
                assert!(!same(&base, &other), "len {len} byte {at}");
            }
            assert!(!same(&base, &base[..len.saturating_sub(1)]) || len == 0);
        }
    }

    #[test]
    fn values_taking_turns_keep_their_ids_and_start_over_when_finished() {
        let mut d = Dictionary::default();
        let mut recent = Recent::default();
        // One buffer for every value (as a decoded record's texts are):
        // the by-address cache cannot tell them apart.
        let mut buffer = [0u8; 5];
        let mut id = |d: &mut Dictionary, recent: &mut Recent, v: &str| {
            buffer[..v.len()].copy_from_slice(v.as_bytes());
            d.id_recent(recent, &buffer[..v.len()])
        };
        // More values than the recent ones hold, in turns, then back.
        let values = [
            "a", "bb", "ccc", "dddd", "eeeee", "bb", "a", "eeeee", "ccc", "ff",
        ];
        let ids: Vec<u32> = values.iter().map(|v| id(&mut d, &mut recent, v)).collect();
        assert_eq!(ids, [0, 1, 2, 3, 4, 1, 0, 4, 2, 5]);
        let page = d.finish();
        for (v, id) in values.iter().zip(&ids) {
            assert_eq!(page.value(*id as usize), v.as_bytes());
        }
        // The next row group's dictionary numbers anew: a cleared recent
        // set forgets ids of the old one (each of its values included).
        recent = Recent::default();
        assert_eq!(id(&mut d, &mut recent, "ff"), 0);
        assert_eq!(id(&mut d, &mut recent, "ccc"), 1);
        assert_eq!(id(&mut d, &mut recent, "ff"), 0);
    }

    #[test]
    fn many_values_keep_their_ids() {
        let mut d = Dictionary::default();
        let values: Vec<String> = (0..10_000).map(|i| format!("name-{}", i % 3_000)).collect();
        let ids: Vec<u32> = values.iter().map(|v| d.id(v.as_bytes())).collect();
        assert_eq!(d.len(), 3_000);
        let page = d.finish();
        for (v, id) in values.iter().zip(ids) {
            assert_eq!(page.value(id as usize), v.as_bytes());
        }
    }
}
