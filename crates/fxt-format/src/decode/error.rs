//! Why a record could not be decoded, and where.
//!
//! Every error names the byte offset (from the start of the input) of the
//! thing that is wrong: the record, the argument or the string stream. Errors
//! come in two classes, told apart by [`DecodeError::is_fatal`]:
//!
//! * **fatal** errors break the framing (the input ends inside a record, a
//!   record header has size 0, or the underlying reader failed). Nothing after
//!   them can be located, so a reader yields the error and then ends.
//! * **record** errors concern the content of one record whose size is
//!   intact (a field beyond the record's end, an argument that overruns the
//!   record, invalid UTF-8, a wrong magic number). A reader yields the error
//!   and continues with the next record; the damaged record is not applied
//!   to the string or thread tables.

use std::fmt;
use std::io;

/// A malformed trace, located by byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ends inside a record or inside its header word (fatal).
    Truncated {
        /// Offset of the record (or partial header) that is cut short.
        offset: u64,
        /// Bytes the record needs, header included (8 for a cut header).
        needed_bytes: u64,
        /// Bytes the input still holds from `offset`.
        available_bytes: u64,
    },
    /// A record header whose size field is 0: it cannot be skipped (fatal).
    ZeroSizeRecord {
        /// Offset of the record.
        offset: u64,
        /// The header word.
        header: u64,
    },
    /// A field the header promises lies beyond the record's size.
    RecordTooShort {
        /// Offset of the record.
        offset: u64,
        /// The record type (bits 0..=3 of the header).
        record_type: u8,
        /// The record's size from its header, in bytes.
        size_bytes: u64,
        /// Bytes the record would need to hold the promised fields.
        needed_bytes: u64,
    },
    /// An argument header whose size field is 0: it cannot be skipped.
    ZeroSizeArgument {
        /// Offset of the argument header.
        offset: u64,
    },
    /// An argument whose size runs past the end of its record.
    ArgumentOverrunsRecord {
        /// Offset of the argument header.
        offset: u64,
        /// The argument's size from its header, in bytes.
        size_bytes: u64,
        /// Bytes left in the record from `offset`.
        available_bytes: u64,
    },
    /// A field the argument header promises lies beyond the argument's size.
    ArgumentTooShort {
        /// Offset of the argument header.
        offset: u64,
        /// The argument's size from its header, in bytes.
        size_bytes: u64,
        /// Bytes the argument would need to hold the promised fields.
        needed_bytes: u64,
    },
    /// A string stream that is not valid UTF-8.
    InvalidUtf8 {
        /// Offset of the first byte of the stream.
        offset: u64,
    },
    /// A trace info record of type "magic number" with another value.
    BadMagic {
        /// Offset of the record.
        offset: u64,
        /// The header word found (the magic record is `0x0016547846040010`).
        header: u64,
    },
    /// The underlying [`std::io::Read`] failed (fatal).
    Io {
        /// Offset the reader had reached.
        offset: u64,
        /// The I/O error's kind.
        kind: io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
}

impl DecodeError {
    /// Byte offset (from the start of the input) of what is malformed.
    pub fn offset(&self) -> u64 {
        match *self {
            Self::Truncated { offset, .. }
            | Self::ZeroSizeRecord { offset, .. }
            | Self::RecordTooShort { offset, .. }
            | Self::ZeroSizeArgument { offset }
            | Self::ArgumentOverrunsRecord { offset, .. }
            | Self::ArgumentTooShort { offset, .. }
            | Self::InvalidUtf8 { offset }
            | Self::BadMagic { offset, .. }
            | Self::Io { offset, .. } => offset,
        }
    }

    /// Whether the reader must stop here: the framing is lost (or the input
    /// failed), so no later record can be located. Non-fatal errors concern
    /// one record only and reading continues after it.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Self::Truncated { .. } | Self::ZeroSizeRecord { .. } | Self::Io { .. }
        )
    }

    pub(crate) fn io(offset: u64, error: &io::Error) -> Self {
        Self::Io {
            offset,
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated {
                offset,
                needed_bytes,
                available_bytes,
            } => write!(
                f,
                "truncated record at offset {offset:#x}: needs {needed_bytes} bytes, \
                 the input holds {available_bytes}"
            ),
            Self::ZeroSizeRecord { offset, header } => write!(
                f,
                "record at offset {offset:#x} has size 0 (header {header:#018x})"
            ),
            Self::RecordTooShort {
                offset,
                record_type,
                size_bytes,
                needed_bytes,
            } => write!(
                f,
                "record of type {record_type} at offset {offset:#x} is {size_bytes} bytes \
                 but its fields need {needed_bytes}"
            ),
            Self::ZeroSizeArgument { offset } => {
                write!(f, "argument at offset {offset:#x} has size 0")
            }
            Self::ArgumentOverrunsRecord {
                offset,
                size_bytes,
                available_bytes,
            } => write!(
                f,
                "argument at offset {offset:#x} is {size_bytes} bytes but its record \
                 has {available_bytes} left"
            ),
            Self::ArgumentTooShort {
                offset,
                size_bytes,
                needed_bytes,
            } => write!(
                f,
                "argument at offset {offset:#x} is {size_bytes} bytes but its fields \
                 need {needed_bytes}"
            ),
            Self::InvalidUtf8 { offset } => {
                write!(f, "string at offset {offset:#x} is not valid UTF-8")
            }
            Self::BadMagic { offset, header } => write!(
                f,
                "magic number record at offset {offset:#x} is {header:#018x}, \
                 expected 0x0016547846040010"
            ),
            Self::Io {
                offset, message, ..
            } => write!(f, "read failed at offset {offset:#x}: {message}"),
        }
    }
}

impl std::error::Error for DecodeError {}
