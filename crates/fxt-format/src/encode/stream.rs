//! Streams (strings and binary data) and the word writer every encoder uses.
//!
//! A stream is a sequence of bytes padded with zeros to the next 8-byte
//! boundary; a stream whose length is a multiple of 8 has no padding.
//!
//! | bytes `8k .. 8k+8` of the stream | word `k` |
//! |---|---|
//! | `b0 b1 .. b7` | `u64::from_le_bytes([b0, .., b7])` (missing bytes are 0) |

use super::{check_room, EncodeError};

/// The longest string fxt writes, in bytes (the specification's conservative
/// limit). Longer strings are cut at a character boundary.
pub const MAX_STRING_LEN: usize = 32000;

/// Cuts `s` to at most [`MAX_STRING_LEN`] bytes, never inside a character.
///
/// ```
/// use fxt_format::encode::truncate_str;
/// let s = "é".repeat(16001); // 32002 bytes of 2-byte characters
/// assert_eq!(truncate_str(&s).len(), 32000);
/// let t = format!("a{}", "é".repeat(16000)); // 32001 bytes
/// assert_eq!(truncate_str(&t).len(), 31999);
/// ```
pub fn truncate_str(s: &str) -> &str {
    truncate_str_to(s, MAX_STRING_LEN)
}

/// Cuts `s` to at most `max` bytes, never inside a character.
pub fn truncate_str_to(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Words a stream of `len` bytes occupies (padding included).
#[inline]
pub const fn stream_words(len: usize) -> usize {
    len.div_ceil(8)
}

/// Writes words into the front of a slice, in order, without panicking.
///
/// Encoders check the slice's length against their exact size first, so the
/// bounds checks here never fail; they exist so that no input can make an
/// encoder panic even if a size computation were wrong.
pub struct WordWriter<'a> {
    out: &'a mut [u64],
    pos: usize,
}

impl<'a> WordWriter<'a> {
    /// A writer over `out` that needs room for `needed` words.
    #[inline]
    pub fn new(out: &'a mut [u64], needed: usize) -> Result<Self, EncodeError> {
        check_room(out, needed)?;
        Ok(Self { out, pos: 0 })
    }

    /// Words written so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Appends one word.
    #[inline]
    pub fn word(&mut self, word: u64) -> Result<(), EncodeError> {
        match self.out.get_mut(self.pos) {
            Some(slot) => {
                *slot = word;
                self.pos += 1;
                Ok(())
            }
            None => Err(EncodeError::BufferTooSmall {
                needed: self.pos + 1,
                available: self.out.len(),
            }),
        }
    }

    /// Appends a stream: `bytes` packed little-endian, zero padded to a word.
    pub fn stream(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            self.word(u64::from_le_bytes(b))?;
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(b))?;
        }
        Ok(())
    }
}
