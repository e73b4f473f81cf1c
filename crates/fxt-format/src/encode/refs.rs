//! String references and thread references.
//!
//! | string ref (16 bits) | meaning |
//! |---|---|
//! | `0x0000` | the empty string |
//! | `0x0001 ..= 0x7fff` | index into the string table |
//! | `0x8000 | len` | inline string of `len` bytes, stored as a stream in the record |
//!
//! | thread ref (8 bits) | meaning |
//! |---|---|
//! | `0x00` | inline: process and thread koid words follow in the record |
//! | `0x01 ..= 0xff` | index into the thread table |

use super::stream::{stream_words, truncate_str};
use super::{EncodeError, WordWriter};

/// A reference to a string: empty, an index into the string table, or the
/// string itself written inline in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringRef<'a> {
    /// The empty string (ref value 0).
    Empty,
    /// An index in `1..=0x7fff` registered earlier by a string record.
    Index(u16),
    /// A string written inline; cut to 32000 bytes at a character boundary.
    Inline(&'a str),
}

impl<'a> StringRef<'a> {
    /// The 16-bit ref value placed in a header field.
    #[inline]
    pub fn encoded(&self) -> Result<u16, EncodeError> {
        match *self {
            Self::Empty => Ok(0),
            Self::Index(i) if (1..=0x7fff).contains(&i) => Ok(i),
            Self::Index(i) => Err(EncodeError::InvalidStringIndex(i)),
            Self::Inline(s) => {
                let len = truncate_str(s).len();
                if len == 0 {
                    // An empty inline string is the empty string ref.
                    Ok(0)
                } else {
                    Ok(0x8000 | len as u16)
                }
            }
        }
    }

    /// Words the inline stream takes in the record (0 unless inline).
    #[inline]
    pub fn stream_words(&self) -> usize {
        match *self {
            Self::Inline(s) => stream_words(truncate_str(s).len()),
            _ => 0,
        }
    }

    /// Writes the inline stream, if any.
    #[inline]
    pub fn write_stream(&self, w: &mut WordWriter<'_>) -> Result<(), EncodeError> {
        match *self {
            Self::Inline(s) => w.stream(truncate_str(s).as_bytes()),
            _ => Ok(()),
        }
    }
}

/// A reference to a (process, thread) pair: an index into the thread table,
/// or the two koids written inline in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadRef {
    /// An index in `1..=255` registered earlier by a thread record.
    Index(u8),
    /// Process and thread koids written inline.
    Inline {
        /// Process koid.
        process: u64,
        /// Thread koid.
        thread: u64,
    },
}

impl ThreadRef {
    /// The 8-bit ref value placed in a header field.
    #[inline]
    pub fn encoded(&self) -> Result<u8, EncodeError> {
        match *self {
            Self::Index(0) => Err(EncodeError::InvalidThreadIndex),
            Self::Index(i) => Ok(i),
            Self::Inline { .. } => Ok(0),
        }
    }

    /// Words the inline koids take in the record (0 or 2).
    #[inline]
    pub fn inline_words(&self) -> usize {
        match self {
            Self::Index(_) => 0,
            Self::Inline { .. } => 2,
        }
    }

    /// Writes the inline process and thread koid words, if any.
    #[inline]
    pub fn write_inline(&self, w: &mut WordWriter<'_>) -> Result<(), EncodeError> {
        match *self {
            Self::Index(_) => Ok(()),
            Self::Inline { process, thread } => {
                w.word(process)?;
                w.word(thread)
            }
        }
    }
}

/// A process koid as a "thread ref" of its own: userspace object records
/// name a process with an 8-bit thread ref whose inline form is one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessRef {
    /// An index in `1..=255` registered by a thread record (its process koid is used).
    Index(u8),
    /// The process koid written inline.
    Inline(u64),
}

impl ProcessRef {
    /// The 8-bit ref value placed in a header field.
    #[inline]
    pub fn encoded(&self) -> Result<u8, EncodeError> {
        match *self {
            Self::Index(0) => Err(EncodeError::InvalidThreadIndex),
            Self::Index(i) => Ok(i),
            Self::Inline(_) => Ok(0),
        }
    }
}
