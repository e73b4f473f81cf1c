//! Metadata records (record type 0) and the initialization record (type 1).
//!
//! _metadata header word_
//!
//! | bits | provider info (1) | provider section (2) | provider event (3) | trace info (4), magic |
//! |---|---|---|---|---|
//! | `[0 .. 3]` | 0 | 0 | 0 | 0 |
//! | `[4 .. 15]` | size | size | size | size (1) |
//! | `[16 .. 19]` | 1 | 2 | 3 | 4 |
//! | `[20 .. 51]` | provider id | provider id | provider id | `[20 .. 23]` trace info type 0, `[24 .. 55]` magic `0x16547846` |
//! | `[52 .. 59]` | name length | 0 | `[52 .. 55]` event id | |
//! | `[60 .. 63]` | 0 | 0 | 0 | 0 |
//!
//! Provider info is followed by the provider name stream.
//!
//! _initialization record_: header (type 1, size 2, rest zero), then a word
//! holding the number of ticks per second.

use super::header::{self, metadata_type, record_type};
use super::stream::{stream_words, truncate_str_to};
use super::{check_record_words, Encode, EncodeError, WordWriter};

/// The magic number record that starts every trace: `0x0016547846040010`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MagicNumber;

impl Encode for MagicNumber {
    fn word_len(&self) -> Result<usize, EncodeError> {
        Ok(1)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let mut w = WordWriter::new(out, 1)?;
        w.word(header::MAGIC_RECORD)?;
        Ok(1)
    }
}

/// Identifies a trace provider; everything up to the next provider info or
/// provider section record comes from it. The name is cut to 255 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderInfo<'a> {
    /// Provider id (token identifying the provider in the trace).
    pub provider_id: u32,
    /// Provider name.
    pub name: &'a str,
}

impl ProviderInfo<'_> {
    fn name_bytes(&self) -> &[u8] {
        truncate_str_to(self.name, 0xff).as_bytes()
    }
}

impl Encode for ProviderInfo<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        Ok(1 + stream_words(self.name_bytes().len()))
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let name = self.name_bytes();
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::METADATA, words)
                | (metadata_type::PROVIDER_INFO << 16)
                | ((self.provider_id as u64) << 20)
                | ((name.len() as u64) << 52),
        )?;
        w.stream(name)?;
        Ok(words)
    }
}

/// Starts the section of a provider described earlier by [`ProviderInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderSection {
    /// Provider id.
    pub provider_id: u32,
}

impl Encode for ProviderSection {
    fn word_len(&self) -> Result<usize, EncodeError> {
        Ok(1)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let mut w = WordWriter::new(out, 1)?;
        w.word(
            header::record(record_type::METADATA, 1)
                | (metadata_type::PROVIDER_SECTION << 16)
                | ((self.provider_id as u64) << 20),
        )?;
        Ok(1)
    }
}

/// A running notification from a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderEvent {
    /// Provider id.
    pub provider_id: u32,
    /// Event id (4 bits); [`ProviderEvent::BUFFER_FILLED`] is the one defined.
    pub event: u8,
}

impl ProviderEvent {
    /// Event id 0: "a buffer filled up, records were likely dropped".
    pub const BUFFER_FILLED: u8 = 0;
}

impl Encode for ProviderEvent {
    fn word_len(&self) -> Result<usize, EncodeError> {
        Ok(1)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        if self.event > 0xf {
            return Err(EncodeError::FieldOverflow("provider event id"));
        }
        let mut w = WordWriter::new(out, 1)?;
        w.word(
            header::record(record_type::METADATA, 1)
                | (metadata_type::PROVIDER_EVENT << 16)
                | ((self.provider_id as u64) << 20)
                | ((self.event as u64) << 52),
        )?;
        Ok(1)
    }
}

/// Tells readers how many timestamp ticks make one second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Initialization {
    /// Ticks per second of the timestamps that follow.
    pub ticks_per_second: u64,
}

impl Encode for Initialization {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_record_words(2)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let mut w = WordWriter::new(out, 2)?;
        w.word(header::record(record_type::INITIALIZATION, 2))?;
        w.word(self.ticks_per_second)?;
        Ok(2)
    }
}
