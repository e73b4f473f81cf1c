//! Blob records (record type 5) and large blob records (type 15, large type 0).
//!
//! _blob record header_
//!
//! | bits | field |
//! |---|---|
//! | `[0 .. 3]` | 5 |
//! | `[4 .. 15]` | size in words |
//! | `[16 .. 31]` | blob name (string ref) |
//! | `[32 .. 46]` | payload size in bytes |
//! | `[47]` | 0 |
//! | `[48 .. 55]` | blob type |
//! | `[56 .. 63]` | 0 |
//!
//! then the name stream (inline name only) and the payload stream.
//!
//! _large blob header_ (both formats)
//!
//! | bits | field |
//! |---|---|
//! | `[0 .. 3]` | 15 |
//! | `[4 .. 35]` | size in words (32 bits) |
//! | `[36 .. 39]` | large record type (0 = blob) |
//! | `[40 .. 43]` | blob format (0 with metadata, 1 without) |
//! | `[44 .. 63]` | 0 |
//!
//! _format header word_
//!
//! | bits | format 0 | format 1 |
//! |---|---|---|
//! | `[0 .. 15]` | category (string ref) | category (string ref) |
//! | `[16 .. 31]` | name (string ref) | name (string ref) |
//! | `[32 .. 35]` | number of arguments | 0 |
//! | `[36 .. 43]` | thread (thread ref) | 0 |
//! | `[44 .. 63]` | 0 | 0 |
//!
//! Format 0 continues with the category and name streams, the timestamp, the
//! inline koids, the arguments, the blob size word and the payload; format 1
//! with the category and name streams, the blob size word and the payload.

use super::args::Arg;
use super::header;
use super::refs::{StringRef, ThreadRef};
use super::stream::stream_words;
use super::{
    args_words, check_record_words, write_args, Encode, EncodeError, WordWriter,
    MAX_LARGE_RECORD_WORDS,
};

/// What a blob holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobType {
    /// `0x01`: raw untyped data.
    Data,
    /// `0x02`: Intel last branch records.
    LastBranch,
    /// `0x03`: Perfetto protobuf trace packets.
    Perfetto,
    /// Any other value.
    Other(u8),
}

impl BlobType {
    /// The 8-bit value of the blob type field.
    pub const fn value(self) -> u8 {
        match self {
            Self::Data => 1,
            Self::LastBranch => 2,
            Self::Perfetto => 3,
            Self::Other(v) => v,
        }
    }

    /// The blob type for a field value.
    pub const fn from_value(v: u8) -> Self {
        match v {
            1 => Self::Data,
            2 => Self::LastBranch,
            3 => Self::Perfetto,
            v => Self::Other(v),
        }
    }
}

/// A chunk of a named blob (at most 32767 bytes and one record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob<'a> {
    /// The blob's name; chunks with the same name append to one blob.
    pub name: StringRef<'a>,
    /// What the payload holds.
    pub blob_type: BlobType,
    /// The payload.
    pub payload: &'a [u8],
}

impl Encode for Blob<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_record_words(1 + self.name.stream_words() + stream_words(self.payload.len()))
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        if self.payload.len() > 0x7fff {
            return Err(EncodeError::FieldOverflow("blob payload size"));
        }
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(header::blob(
            words,
            self.name.encoded()?,
            self.payload.len(),
            self.blob_type.value(),
        ))?;
        self.name.write_stream(&mut w)?;
        w.stream(self.payload)?;
        Ok(words)
    }
}

fn check_large(words: usize) -> Result<usize, EncodeError> {
    if words > MAX_LARGE_RECORD_WORDS {
        Err(EncodeError::RecordTooLarge { words })
    } else {
        Ok(words)
    }
}

fn large_header(words: usize, format: u64) -> u64 {
    header::large_record(words) | (format << 40)
}

/// A large blob with a timestamp, thread and arguments (blob format 0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LargeBlobWithMetadata<'a> {
    /// Category.
    pub category: StringRef<'a>,
    /// Name (identifies the kind of data).
    pub name: StringRef<'a>,
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// Thread.
    pub thread: ThreadRef,
    /// Up to 15 arguments.
    pub args: &'a [Arg<'a>],
    /// The payload.
    pub payload: &'a [u8],
}

impl Encode for LargeBlobWithMetadata<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_large(
            2 + self.category.stream_words()
                + self.name.stream_words()
                + 1
                + self.thread.inline_words()
                + args_words(self.args)?
                + 1
                + stream_words(self.payload.len()),
        )
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(large_header(words, 0))?;
        w.word(
            (self.category.encoded()? as u64)
                | ((self.name.encoded()? as u64) << 16)
                | ((self.args.len() as u64) << 32)
                | ((self.thread.encoded()? as u64) << 36),
        )?;
        self.category.write_stream(&mut w)?;
        self.name.write_stream(&mut w)?;
        w.word(self.timestamp)?;
        self.thread.write_inline(&mut w)?;
        write_args(&mut w, self.args)?;
        w.word(self.payload.len() as u64)?;
        w.stream(self.payload)?;
        Ok(words)
    }
}

/// A large blob with only a category and name (blob format 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargeBlobNoMetadata<'a> {
    /// Category.
    pub category: StringRef<'a>,
    /// Name (identifies the kind of data).
    pub name: StringRef<'a>,
    /// The payload.
    pub payload: &'a [u8],
}

impl Encode for LargeBlobNoMetadata<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_large(
            2 + self.category.stream_words()
                + self.name.stream_words()
                + 1
                + stream_words(self.payload.len()),
        )
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(large_header(words, 1))?;
        w.word((self.category.encoded()? as u64) | ((self.name.encoded()? as u64) << 16))?;
        self.category.write_stream(&mut w)?;
        self.name.write_stream(&mut w)?;
        w.word(self.payload.len() as u64)?;
        w.stream(self.payload)?;
        Ok(words)
    }
}
