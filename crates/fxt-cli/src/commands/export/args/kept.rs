//! A begin's arguments kept from its view ([`super::Kept`]) held by
//! their shape ([`super::held`]): a row whose arguments are all integers
//! the integer map holds or defined strings (a frame's number and phase)
//! appends its values straight to the maps' value leaves and only its
//! shape's number for its keys and levels, as a row of integers read
//! from a view does. Rows of one kind name their arguments alike, in one
//! order: the last row's shape is kept and compared first.

use std::fmt::Write;

use super::shape::MOST;
use super::{Kept, KeptValue, MapBuilders, POSITIONS};
use crate::commands::export::summary::Summary;
use crate::interned::Interned;

/// The shape of the last begin's row held: its entries' keys, which of
/// them are integers (a bit each), and its number.
#[derive(Clone, Copy)]
pub struct LastKept {
    keys: [u32; MOST],
    len: usize,
    ints: u16,
    number: u32,
}

/// Whether argument `a` is held: an integer the integer map holds, or a
/// defined string.
#[inline]
fn holdable(a: &Kept, texts: &Interned) -> bool {
    match a.value {
        KeptValue::Signed(_) => true,
        KeptValue::Unsigned(v) => i64::try_from(v).is_ok(),
        KeptValue::Str(id) => texts.text(id).as_str().is_some(),
        _ => false,
    }
}

impl MapBuilders {
    /// Holds the row of a begin's arguments `kept` (texts by their ids in
    /// `texts`), its values appended, if each is held ([`holdable`]);
    /// false, nothing appended, if not.
    pub(super) fn hold_kept(
        &mut self,
        kept: &[Kept],
        texts: &Interned,
        summary: &mut Summary,
    ) -> bool {
        if kept.len() > MOST || !kept.iter().all(|a| holdable(a, texts)) {
            return false;
        }
        let mut keys = [0u32; MOST];
        let (mut len, mut ints) = (0, 0u16);
        for (at, a) in kept.iter().enumerate() {
            let name = texts.text(a.name).as_str().unwrap_or("").as_bytes();
            let key = self.keys.id_after(&mut self.names[at % POSITIONS], name);
            // A name an earlier argument took: the first value is kept.
            if keys[..len].contains(&key) {
                summary.repeated_arg_names += 1;
                continue;
            }
            match a.value {
                KeptValue::Signed(v) => self.int(v),
                KeptValue::Unsigned(v) => self.int(v as i64),
                KeptValue::Str(id) => {
                    let s = texts.text(id).as_str().unwrap_or("");
                    // Writing to a string builder cannot fail.
                    self.text.1.value_with(|out| {
                        let _ = out.write_str(s);
                    });
                    keys[len] = key;
                    len += 1;
                    continue;
                }
                _ => unreachable!("only held arguments are read"),
            }
            ints |= 1 << len;
            keys[len] = key;
            len += 1;
        }
        let number = self.kept_number(&keys[..len], ints);
        self.held.push(number);
        true
    }

    /// Appends an integer entry's values to the text and integer maps.
    #[inline(always)]
    fn int(&mut self, v: i64) {
        self.text.1.i64(v);
        self.ints.1.value(v);
    }

    /// The number of the shape of a begin's row whose entries have `keys`,
    /// those whose bit is set in `ints` integers.
    fn kept_number(&mut self, keys: &[u32], ints: u16) -> u32 {
        if let Some(last) = &self.last_kept {
            // Compared word by word: a slice's `==` calls `memcmp`, a
            // call per row.
            let differ = keys.iter().zip(&last.keys).fold(0, |d, (a, b)| d | (a ^ b));
            if last.ints == ints && last.len == keys.len() && differ == 0 {
                return last.number;
            }
        }
        // A fixed array, not a `Vec`: rows whose kept shapes take turns
        // come here each row.
        let (mut int_keys, mut n) = ([0u32; MOST], 0);
        for (k, &key) in keys.iter().enumerate() {
            if ints & (1 << k) != 0 {
                int_keys[n] = key;
                n += 1;
            }
        }
        let number = self.held.number(keys, &int_keys[..n]);
        let mut last = LastKept {
            keys: [0; MOST],
            len: keys.len(),
            ints,
            number,
        };
        last.keys[..keys.len()].copy_from_slice(keys);
        self.last_kept = Some(last);
        number
    }
}
