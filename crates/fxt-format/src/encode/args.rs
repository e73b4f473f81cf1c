//! Arguments: typed key/value pairs attached to events and object records.
//!
//! _argument header word_ (every type)
//!
//! | bits | field |
//! |---|---|
//! | `[0 .. 3]` | argument type |
//! | `[4 .. 15]` | argument size in words, header included |
//! | `[16 .. 31]` | name (string ref) |
//! | `[32 .. 63]` | type-specific (below), zero if unused |
//!
//! followed by the name stream (only for an inline name), then:
//!
//! | type | `[32 .. 63]` of the header | after the name stream |
//! |---|---|---|
//! | 0 null | 0 | — |
//! | 1 int32 | the value | — |
//! | 2 uint32 | the value | — |
//! | 3 int64 | 0 | value word |
//! | 4 uint64 | 0 | value word |
//! | 5 double | 0 | value word (IEEE 754 bits) |
//! | 6 string | value string ref in `[32 .. 47]` | value stream (inline value only) |
//! | 7 pointer | 0 | value word |
//! | 8 koid | 0 | value word |
//! | 9 bool | value in bit 32 | — |
//! | 10 blob | blob size in bytes | payload stream |

use super::header::{self, arg_type};
use super::refs::StringRef;
use super::stream::stream_words;
use super::{EncodeError, WordWriter, MAX_ARG_WORDS};

/// The value of an argument to encode ([`crate::value::Value`]): a
/// string by [`StringRef`], bytes borrowed; an unknown type is never
/// written.
pub type ArgValue<'a> = crate::value::Value<StringRef<'a>, &'a [u8], core::convert::Infallible>;

impl ArgValue<'_> {
    /// The argument's type, the bits `[32 .. 63]` of its header (for a
    /// string, its ref if indexed, else 0: an inline ref is the name
    /// stream's business), and its value word if its type carries one
    /// ([`arg_type::has_value_word`]). The one place a value's shape is
    /// written; what goes after the name stream besides the value word is
    /// a string's or a blob's stream.
    ///
    /// ```
    /// use fxt_format::encode::{header::arg_type, ArgValue};
    /// assert_eq!(ArgValue::I32(-1).parts(), (arg_type::I32, 0xffff_ffff, None));
    /// assert_eq!(ArgValue::F64(1.0).parts(), (arg_type::F64, 0, Some(1f64.to_bits())));
    /// ```
    #[inline(always)]
    pub const fn parts(&self) -> (u64, u64, Option<u64>) {
        match *self {
            ArgValue::Null => (arg_type::NULL, 0, None),
            ArgValue::I32(x) => (arg_type::I32, x as u32 as u64, None),
            ArgValue::U32(x) => (arg_type::U32, x as u64, None),
            ArgValue::I64(x) => (arg_type::I64, 0, Some(x as u64)),
            ArgValue::U64(x) => (arg_type::U64, 0, Some(x)),
            ArgValue::F64(x) => (arg_type::F64, 0, Some(x.to_bits())),
            ArgValue::Str(StringRef::Index(i)) => (arg_type::STRING, i as u64, None),
            ArgValue::Str(_) => (arg_type::STRING, 0, None),
            ArgValue::Pointer(x) => (arg_type::POINTER, 0, Some(x)),
            ArgValue::Koid(x) => (arg_type::KOID, 0, Some(x)),
            ArgValue::Bool(b) => (arg_type::BOOL, b as u64, None),
            ArgValue::Blob(b) => (arg_type::BLOB, b.len() as u64, None),
            ArgValue::Unknown { skipped, .. } => match skipped {},
        }
    }
}

/// A named argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arg<'a> {
    /// The argument's name.
    pub name: StringRef<'a>,
    /// The argument's value.
    pub value: ArgValue<'a>,
}

impl<'a> Arg<'a> {
    /// An argument with the given name and value.
    #[inline]
    pub const fn new(name: StringRef<'a>, value: ArgValue<'a>) -> Self {
        Self { name, value }
    }

    /// Size of the encoded argument in words.
    #[inline]
    pub fn word_len(&self) -> Result<usize, EncodeError> {
        let value_words = match self.value {
            ArgValue::Str(s) => s.stream_words(),
            ArgValue::Blob(b) => {
                if b.len() > u32::MAX as usize {
                    return Err(EncodeError::ArgTooLarge {
                        words: stream_words(b.len()),
                    });
                }
                stream_words(b.len())
            }
            v => usize::from(v.parts().2.is_some()),
        };
        let words = 1 + self.name.stream_words() + value_words;
        if words > MAX_ARG_WORDS {
            Err(EncodeError::ArgTooLarge { words })
        } else {
            Ok(words)
        }
    }

    /// Writes the argument.
    pub fn write(&self, w: &mut WordWriter<'_>) -> Result<(), EncodeError> {
        let words = self.word_len()?;
        let name = self.name.encoded()?;
        let (ty, high, word) = self.value.parts();
        let high = match self.value {
            ArgValue::Str(s) => s.encoded()? as u64,
            _ => high,
        };
        w.word(header::arg(ty, words, name) | (high << 32))?;
        self.name.write_stream(w)?;
        match (self.value, word) {
            (_, Some(v)) => w.word(v),
            (ArgValue::Str(s), _) => s.write_stream(w),
            (ArgValue::Blob(b), _) => w.stream(b),
            _ => Ok(()),
        }
    }
}
