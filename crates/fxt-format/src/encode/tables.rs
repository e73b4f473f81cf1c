//! String records (type 2) and thread records (type 3): the tables that
//! indexed string and thread refs point into.
//!
//! _string record header_
//!
//! | bits | field |
//! |---|---|
//! | `[0 .. 3]` | 2 |
//! | `[4 .. 15]` | size in words |
//! | `[16 .. 30]` | string index (`0x0001 ..= 0x7fff`) |
//! | `[31]` | 0 |
//! | `[32 .. 46]` | string length in bytes |
//! | `[47 .. 63]` | 0 |
//!
//! followed by the string stream.
//!
//! _thread record_: header (`[0 .. 3]` = 3, size 3, `[16 .. 23]` thread
//! index, never 0), then the process koid word and the thread koid word.

use super::header::{self, record_type};
use super::stream::{stream_words, truncate_str};
use super::{check_record_words, Encode, EncodeError, WordWriter};

/// Registers `value` at `index` in the string table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StringRecord<'a> {
    /// Index in `1..=0x7fff`.
    pub index: u16,
    /// The string; cut to 32000 bytes at a character boundary.
    pub value: &'a str,
}

impl Encode for StringRecord<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_record_words(1 + stream_words(truncate_str(self.value).len()))
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        if !(1..=0x7fff).contains(&self.index) {
            return Err(EncodeError::InvalidStringIndex(self.index));
        }
        let words = self.word_len()?;
        let value = truncate_str(self.value).as_bytes();
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::STRING, words)
                | ((self.index as u64) << 16)
                | ((value.len() as u64) << 32),
        )?;
        w.stream(value)?;
        Ok(words)
    }
}

/// Registers a (process, thread) koid pair at `index` in the thread table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadRecord {
    /// Index in `1..=255`.
    pub index: u8,
    /// Process koid.
    pub process: u64,
    /// Thread koid.
    pub thread: u64,
}

impl Encode for ThreadRecord {
    fn word_len(&self) -> Result<usize, EncodeError> {
        Ok(3)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        if self.index == 0 {
            return Err(EncodeError::InvalidThreadIndex);
        }
        let mut w = WordWriter::new(out, 3)?;
        w.word(header::record(record_type::THREAD, 3) | ((self.index as u64) << 16))?;
        w.word(self.process)?;
        w.word(self.thread)?;
        Ok(3)
    }
}
