//! A row's integer arguments by their shape. Rows of one kind carry the
//! same arguments in the same order (`thread` and `seq`; `bytes` and
//! `id`), integers named by string index: what the maps take from such a
//! row but its values (each argument's key, which names repeat) is found
//! once and holds while the decoder's strings read the same (its strings
//! epoch unchanged). A row of that shape then appends its keys and levels
//! as blocks and only its values one by one: no name resolved, no key
//! looked up, no type matched per argument.

use fxt_format::decode::{ArgWordIter, Context, IntArg, StrRef};

use crate::commands::export::encode::Dictionary;

/// Most arguments of one record (a 4-bit count).
pub const MOST: usize = 15;

/// The integer arguments of a row, in order, as the integer map holds
/// them.
pub type Values = [i64; MOST];

/// The shape of a row of integer arguments named by index.
#[derive(Default)]
pub struct Shape {
    /// The strings' epoch its names were read in (`None`: no shape).
    epoch: Option<u64>,
    /// Arguments.
    len: usize,
    /// Each argument's name index and type (header bits 16-31 and 0-3).
    signatures: [u32; MOST],
    /// Whether each argument is kept (not a name an earlier one took).
    kept: [bool; MOST],
    /// The kept arguments' keys, in order.
    keys: [u32; MOST],
    /// How many arguments are kept.
    entries: usize,
}

/// An argument's name index and type, from its header.
fn signature(header: u64) -> u32 {
    ((header >> 16) as u32 & 0xffff) << 4 | (header & 0xf) as u32
}

/// An integer argument's value as the integer map holds it (`None`: a
/// 64-bit unsigned value beyond it, which only the text map holds).
fn held(value: IntArg) -> Option<i64> {
    match value {
        IntArg::I32(v) => Some(i64::from(v)),
        IntArg::U32(v) => Some(i64::from(v)),
        IntArg::I64(v) => Some(v),
        IntArg::U64(v) => i64::try_from(v).ok(),
    }
}

impl Shape {
    /// The shape of an event's arguments (`count` of them, `words`, read
    /// in `ctx`), their names numbered by `keys`: `None` unless every one
    /// is an integer named by index.
    pub fn of(
        (count, words): (u8, ArgWordIter<'_>),
        ctx: &Context<'_>,
        keys: &mut Dictionary,
    ) -> Option<Shape> {
        let mut shape = Shape {
            epoch: Some(ctx.strings_epoch()),
            ..Shape::default()
        };
        let mut names = [0u16; MOST];
        for (k, a) in words.enumerate().take(MOST) {
            let (name, _) = a.int()?;
            names[k] = name;
            shape.signatures[k] = signature(a.header);
            shape.len = k + 1;
        }
        if shape.len != usize::from(count) {
            return None;
        }
        for (k, &name) in names[..shape.len].iter().enumerate() {
            let name = ctx.str(StrRef::Indexed(name)).unwrap_or("");
            let key = keys.id(name.as_bytes());
            // A name an earlier argument took keeps its first value.
            let kept = !shape.keys[..shape.entries].contains(&key);
            shape.kept[k] = kept;
            if kept {
                shape.keys[shape.entries] = key;
                shape.entries += 1;
            }
        }
        Some(shape)
    }

    /// Reads the values of an event's arguments (`count` of them, `words`)
    /// into `values` if the row is of
    /// this shape (false if not). Written in place: an array built here
    /// and returned would be stored a word at a time and copied out whole,
    /// which stalls.
    #[inline]
    pub fn read(
        &self,
        (count, words): (u8, ArgWordIter<'_>),
        ctx: &Context<'_>,
        values: &mut Values,
    ) -> bool {
        if self.epoch != Some(ctx.strings_epoch()) || usize::from(count) != self.len {
            return false;
        }
        for ((value, &expected), a) in values.iter_mut().zip(&self.signatures).zip(words) {
            if signature(a.header) != expected {
                return false;
            }
            match a.int().and_then(|(_, v)| held(v)) {
                Some(v) => *value = v,
                None => return false,
            }
        }
        true
    }

    /// The kept arguments' keys, in order.
    pub fn keys(&self) -> &[u32] {
        &self.keys[..self.entries]
    }

    /// The kept arguments' values, in order, of a row's `values`.
    pub fn kept<'v>(&'v self, values: &'v Values) -> impl Iterator<Item = i64> + 'v {
        values[..self.len]
            .iter()
            .zip(&self.kept)
            .filter(|(_, &kept)| kept)
            .map(|(&v, _)| v)
    }

    /// Arguments left out of each row (names an earlier one took).
    pub fn repeated(&self) -> u64 {
        (self.len - self.entries) as u64
    }
}
