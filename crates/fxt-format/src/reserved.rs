//! Reserved bits: the "reserved (must be zero)" fields of record headers,
//! of the large blob format header and of argument headers.
//!
//! The decoder ignores them (the format may give them a meaning later);
//! a strict checker reports them, and a repairing tool clears them, which
//! changes nothing a reader decodes.
//!
//! ```
//! use fxt_format::reserved::{clear_reserved_bits, reserved_bits};
//! // An initialization record (type 1, size 2) with bit 63 set.
//! let mut words = [0x8000_0000_0000_0021u64, 1_000_000_000];
//! let found = reserved_bits(&words);
//! assert_eq!((found[0].word, found[0].mask), (0, 1 << 63));
//! clear_reserved_bits(&mut words);
//! assert_eq!(words[0], 0x21);
//! ```

use crate::encode::header::{arg_type, metadata_type, record_type};
use crate::encode::stream::stream_words;

/// Reserved bits found set in one word of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReservedBits {
    /// Index of the word in the record (0 is the header).
    pub word: usize,
    /// The reserved bits that are set.
    pub mask: u64,
    /// Which header the word is.
    pub what: &'static str,
}

/// Bits `[lo .. hi]` (inclusive) of `word`.
fn field(word: u64, lo: u32, hi: u32) -> u64 {
    (word >> lo) & (u64::MAX >> (63 - (hi - lo)))
}

/// A mask of bits `[lo .. hi]` (inclusive).
fn range(lo: u32, hi: u32) -> u64 {
    (u64::MAX >> (63 - (hi - lo))) << lo
}

/// Words of an inline string's stream for a string ref (0 when indexed).
fn inline_words(string_ref: u64) -> usize {
    if string_ref & 0x8000 != 0 {
        stream_words((string_ref & 0x7fff) as usize)
    } else {
        0
    }
}

/// The reserved bits of an argument header `header` (by its type).
#[inline]
pub fn arg_reserved_mask(header: u64) -> u64 {
    match field(header, 0, 3) {
        arg_type::NULL
        | arg_type::I64
        | arg_type::U64
        | arg_type::F64
        | arg_type::POINTER
        | arg_type::KOID => range(32, 63),
        arg_type::STRING => range(48, 63),
        arg_type::BOOL => range(33, 63),
        _ => 0,
    }
}

/// Every reserved bit set in the record `words` (a whole record, header
/// first), in word order. Argument headers past the record's end, or after
/// an argument of size 0, are not looked at (the decoder reports those).
pub fn reserved_bits(words: &[u64]) -> Vec<ReservedBits> {
    reserved_bits_of(|i| words.get(i).copied())
}

/// [`reserved_bits`] of a record as it lies in a trace's bytes (a whole
/// record, header first; a last partial word is not looked at), without
/// copying its words.
pub fn reserved_bits_in(bytes: &[u8]) -> Vec<ReservedBits> {
    reserved_bits_of(|i| {
        let word = bytes.get(i * 8..i * 8 + 8)?;
        Some(u64::from_le_bytes(word.try_into().ok()?))
    })
}

/// [`reserved_bits`] of the record whose word `i` is `word(i)`.
#[inline]
fn reserved_bits_of(word: impl Fn(usize) -> Option<u64>) -> Vec<ReservedBits> {
    let mut found = Vec::new();
    let Some(h) = word(0) else {
        return found;
    };
    let mut check = |what: &'static str, word: usize, value: u64, mask: u64| {
        if value & mask != 0 {
            found.push(ReservedBits {
                word,
                mask: value & mask,
                what,
            });
        }
    };
    // Where the arguments start (in words) and how many there are.
    let mut args: Option<(usize, u64)> = None;
    match h & 0xf {
        record_type::METADATA => match field(h, 16, 19) {
            metadata_type::PROVIDER_INFO => check("provider info header", 0, h, range(60, 63)),
            metadata_type::PROVIDER_SECTION => {
                check("provider section header", 0, h, range(52, 63))
            }
            metadata_type::PROVIDER_EVENT => check("provider event header", 0, h, range(56, 63)),
            metadata_type::TRACE_INFO if field(h, 20, 23) == 0 => {
                check("magic number record", 0, h, range(56, 63))
            }
            _ => {}
        },
        record_type::INITIALIZATION => check("initialization record header", 0, h, range(16, 63)),
        record_type::STRING => check("string record header", 0, h, range(31, 31) | range(47, 63)),
        record_type::THREAD => check("thread record header", 0, h, range(24, 63)),
        record_type::EVENT => {
            let start = 2
                + if field(h, 24, 31) == 0 { 2 } else { 0 }
                + inline_words(field(h, 32, 47))
                + inline_words(field(h, 48, 63));
            args = Some((start, field(h, 20, 23)));
        }
        record_type::BLOB => check("blob record header", 0, h, range(47, 47) | range(56, 63)),
        record_type::USERSPACE_OBJECT => {
            check("userspace object record header", 0, h, range(44, 63));
            let start =
                2 + if field(h, 16, 23) == 0 { 1 } else { 0 } + inline_words(field(h, 24, 39));
            args = Some((start, field(h, 40, 43)));
        }
        record_type::KERNEL_OBJECT => {
            check("kernel object record header", 0, h, range(44, 63));
            args = Some((2 + inline_words(field(h, 24, 39)), field(h, 40, 43)));
        }
        record_type::SCHEDULING => match field(h, 60, 63) {
            1 => {
                check("context switch record header", 0, h, range(40, 59));
                args = Some((4, field(h, 16, 19)));
            }
            2 => {
                check("thread wakeup record header", 0, h, range(36, 59));
                args = Some((3, field(h, 16, 19)));
            }
            _ => {}
        },
        record_type::LOG => check("log record header", 0, h, range(31, 31) | range(40, 63)),
        record_type::LARGE => {
            check("large record header", 0, h, range(44, 63));
            if let (0, Some(f)) = (field(h, 36, 39), word(1)) {
                match field(h, 40, 43) {
                    0 => {
                        check("large blob format header", 1, f, range(44, 63));
                        let start = 2
                            + inline_words(field(f, 0, 15))
                            + inline_words(field(f, 16, 31))
                            + 1
                            + if field(f, 36, 43) == 0 { 2 } else { 0 };
                        args = Some((start, field(f, 32, 35)));
                    }
                    1 => check("large blob format header", 1, f, range(32, 63)),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let Some((mut pos, count)) = args else {
        return found;
    };
    for _ in 0..count {
        let Some(a) = word(pos) else {
            break;
        };
        let size = field(a, 4, 15) as usize;
        if size == 0 {
            break;
        }
        check("argument header", pos, a, arg_reserved_mask(a));
        pos += size;
    }
    found
}

/// Clears every reserved bit of the record `words`; returns how many words
/// changed. What the decoder reads from the record does not change.
pub fn clear_reserved_bits(words: &mut [u64]) -> usize {
    let found = reserved_bits(words);
    for r in &found {
        if let Some(w) = words.get_mut(r.word) {
            *w &= !r.mask;
        }
    }
    found.len()
}
