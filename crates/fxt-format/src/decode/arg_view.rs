//! Reading an event view's arguments in place ([`EventView::args`]): each
//! argument's name as a [`StrRef`] and its value borrowing the record, for
//! a reader that formats every argument of every event (`fxt dump`,
//! `fxt json`) without building a `Vec<Arg>` and its strings per record.
//!
//! The reads are those of decoding an argument (`decode_arg`): the same
//! framing ([`frame_arg`]), the same string refs, the same value words, so
//! an argument reads here exactly when it decodes, with the same values.
//!
//! [`EventView::args`]: super::EventView::args

use super::args::frame_arg;
use super::cursor::{Cursor, Region};
use super::error::DecodeError;
use super::resolve::string_ref;
use super::view::StrRef;

/// An argument's value as the record holds it: [`super::ArgValue`] with
/// its string unresolved and its blob borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgValueView<'a> {
    /// Type 0: no value.
    Null,
    /// Type 1: 32-bit signed integer.
    I32(i32),
    /// Type 2: 32-bit unsigned integer.
    U32(u32),
    /// Type 3: 64-bit signed integer.
    I64(i64),
    /// Type 4: 64-bit unsigned integer.
    U64(u64),
    /// Type 5: double-precision float.
    F64(f64),
    /// Type 6: string (resolve with [`super::Context::text`]).
    Str(StrRef<'a>),
    /// Type 7: pointer.
    Pointer(u64),
    /// Type 8: kernel object id.
    Koid(u64),
    /// Type 9: boolean.
    Bool(bool),
    /// Type 10: opaque bytes (padding removed).
    Blob(&'a [u8]),
    /// An argument type this decoder does not know (11..=15).
    Unknown {
        /// The argument type field.
        arg_type: u8,
        /// The argument's header word.
        header: u64,
        /// The argument's size in words, header included.
        size_words: u16,
    },
}

/// One argument of an event view: its name and value, unresolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArgView<'a> {
    /// The argument's name (resolve with [`super::Context::text`]).
    pub name: StrRef<'a>,
    /// Its value.
    pub value: ArgValueView<'a>,
}

/// The arguments of an event view, in record order.
///
/// A view was checked when it was made (its arguments read as decoding
/// reads them), so every item is `Ok` for a view the reader yielded; an
/// `Err` (and the end of the iteration after it) would be the error
/// decoding gives.
pub struct ArgViews<'a> {
    /// The record's bytes from its first argument.
    bytes: &'a [u8],
    /// Where the next argument starts in `bytes`.
    at: usize,
    /// Input offset of `bytes[0]`.
    base: u64,
    region: Region,
    left: u8,
}

impl<'a> ArgViews<'a> {
    /// `count` arguments at the start of `bytes` (input offset `base`), in
    /// a record of `region`.
    pub(crate) fn new(bytes: &'a [u8], base: u64, region: Region, count: u8) -> Self {
        Self {
            bytes,
            at: 0,
            base,
            region,
            left: count,
        }
    }

    /// The next argument read field by field, as decoding reads it.
    #[cold]
    fn careful(&mut self) -> Result<ArgView<'a>, DecodeError> {
        let rest = self.bytes.get(self.at..).unwrap_or_default();
        let mut cursor = Cursor::new(rest, self.base + self.at as u64, self.region);
        let arg = read_arg(&mut cursor)?;
        // Within `bytes`: the cursor moved over `rest`.
        self.at = (cursor.offset() - self.base) as usize;
        Ok(arg)
    }
}

impl<'a> Iterator for ArgViews<'a> {
    type Item = Result<ArgView<'a>, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        if let Some((arg, size)) = plain_arg(self.bytes, self.at) {
            self.at += size;
            return Some(Ok(arg));
        }
        let item = self.careful();
        if item.is_err() {
            self.left = 0;
        }
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(usize::from(self.left)))
    }
}

/// Word `at` (a byte offset) of `bytes`, if there are 8 bytes there.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// A string ref that names no inline text: `None` for an inline one.
#[inline(always)]
fn plain_ref<'a>(string_ref: u16) -> Option<StrRef<'a>> {
    match string_ref {
        0 => Some(StrRef::Empty),
        r if r & 0x8000 == 0 => Some(StrRef::Indexed(r)),
        _ => None,
    }
}

/// The argument at byte `at` of `bytes` and its size in bytes, if it has
/// the usual shape: its name by index, its value a number, a boolean or an
/// indexed string, its words all there. `None` for anything else (inline
/// texts, blobs, unknown types, damage): [`read_arg`] then reads it as
/// decoding does. Whatever this accepts, `read_arg` reads with the same
/// result (the tests compare both with the decoded arguments).
#[inline(always)]
fn plain_arg(bytes: &[u8], at: usize) -> Option<(ArgView<'_>, usize)> {
    let header = word_at(bytes, at)?;
    let size = ((header >> 4) & 0xfff) as usize * 8;
    if size == 0 || bytes.len() - at < size {
        return None;
    }
    let name = plain_ref((header >> 16) as u16)?;
    let high = (header >> 32) as u32;
    let word = || word_at(bytes, at + 8).filter(|_| size >= 16);
    let value = match header & 0xf {
        0 => ArgValueView::Null,
        1 => ArgValueView::I32(high as i32),
        2 => ArgValueView::U32(high),
        3 => ArgValueView::I64(word()? as i64),
        4 => ArgValueView::U64(word()?),
        5 => ArgValueView::F64(f64::from_bits(word()?)),
        6 => ArgValueView::Str(plain_ref(high as u16)?),
        7 => ArgValueView::Pointer(word()?),
        8 => ArgValueView::Koid(word()?),
        9 => ArgValueView::Bool(high & 1 == 1),
        _ => return None,
    };
    Some((ArgView { name, value }, size))
}

/// Reads one argument and moves the cursor past its whole size.
#[inline]
fn read_arg<'a>(cursor: &mut Cursor<'a>) -> Result<ArgView<'a>, DecodeError> {
    let (header, size_words, mut arg) = frame_arg(cursor)?;
    let arg_type = (header & 0xf) as u8;
    let name = string_ref((header >> 16) as u16, &mut arg)?;
    let high = (header >> 32) as u32;
    let value = match arg_type {
        0 => ArgValueView::Null,
        1 => ArgValueView::I32(high as i32),
        2 => ArgValueView::U32(high),
        3 => ArgValueView::I64(arg.word()? as i64),
        4 => ArgValueView::U64(arg.word()?),
        5 => ArgValueView::F64(f64::from_bits(arg.word()?)),
        6 => ArgValueView::Str(string_ref(high as u16, &mut arg)?),
        7 => ArgValueView::Pointer(arg.word()?),
        8 => ArgValueView::Koid(arg.word()?),
        9 => ArgValueView::Bool(high & 1 == 1),
        10 => ArgValueView::Blob(arg.stream(u64::from(high))?),
        _ => ArgValueView::Unknown {
            arg_type,
            header,
            size_words,
        },
    };
    Ok(ArgView { name, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{ArgValue, SliceReader, View};
    use crate::encode::{self as e, encode_into_vec, Arg, StringRef, ThreadRef};

    /// An event with one argument of every type, names and strings both
    /// inline and indexed, read in place and decoded whole.
    #[test]
    fn every_argument_type_reads_as_it_decodes() {
        let blob = [7u8, 8, 9, 10, 11];
        let args = [
            Arg::new(StringRef::Index(1), e::ArgValue::Null),
            Arg::new(StringRef::Inline("i32"), e::ArgValue::I32(-5)),
            Arg::new(StringRef::Index(1), e::ArgValue::U32(7)),
            Arg::new(StringRef::Inline("i64"), e::ArgValue::I64(-1 << 40)),
            Arg::new(StringRef::Index(1), e::ArgValue::U64(u64::MAX)),
            Arg::new(StringRef::Index(1), e::ArgValue::F64(-0.25)),
            Arg::new(
                StringRef::Index(1),
                e::ArgValue::Str(StringRef::Inline("v")),
            ),
            Arg::new(StringRef::Index(2), e::ArgValue::Str(StringRef::Index(1))),
            Arg::new(StringRef::Index(1), e::ArgValue::Pointer(0xdead)),
            Arg::new(StringRef::Index(1), e::ArgValue::Koid(42)),
            Arg::new(StringRef::Index(1), e::ArgValue::Bool(true)),
            Arg::new(StringRef::Index(1), e::ArgValue::Blob(&blob)),
        ];
        let mut words = Vec::new();
        encode_into_vec(
            &e::StringRecord {
                index: 1,
                value: "k",
            },
            &mut words,
        )
        .unwrap();
        let event = e::Event {
            kind: e::EventKind::Instant,
            timestamp: 5,
            thread: ThreadRef::Inline {
                process: 1,
                thread: 2,
            },
            category: StringRef::Index(1),
            name: StringRef::Inline("n"),
            args: &args,
        };
        encode_into_vec(&event, &mut words).unwrap();
        let bytes = e::words_to_bytes(&words);
        let mut reader = SliceReader::new(&bytes);
        reader.next_view();
        let (item, ctx) = reader.next_view().unwrap();
        let Ok(View::Event(view)) = item else {
            panic!("an event view: {item:?}");
        };
        let decoded = ctx.event(&view).unwrap();
        let read: Vec<_> = view.args().map(Result::unwrap).collect();
        assert_eq!(read.len(), args.len());
        let text = |s| ctx.text(s).to_string();
        for (arg, whole) in read.iter().zip(&decoded.args) {
            assert_eq!(text(arg.name), whole.name.to_string());
            match (arg.value, &whole.value) {
                (ArgValueView::Str(s), ArgValue::Str(t)) => assert_eq!(text(s), t.to_string()),
                (ArgValueView::Blob(b), ArgValue::Blob(w)) => assert_eq!(b, w.as_slice()),
                (value, whole) => assert_eq!(format!("{value:?}"), format!("{whole:?}")),
            }
        }
        assert_eq!(read[7].value, ArgValueView::Str(StrRef::Indexed(1)));
        assert_eq!(read[11].value, ArgValueView::Blob(&blob));
    }
}
