//! `fxt.sample`: one CPU sample, written by the sampled thread into its own
//! ring chunk.
//!
//! A blob record (type 5, blob type 1) named inline `fxt.sample` (inline: a
//! signal handler never touches the string table). Payload words:
//!
//! | word | content |
//! |---|---|
//! | 0 | timestamp in trace ticks (the trace's clock, as events) |
//! | 1 | process koid (pid) |
//! | 2 | thread koid (tid) |
//! | 3 | bits `[0 .. 15]` frame count N (at most [`MAX_FRAMES`]); `[16 .. 23]` the [`Walk`]; `[24]` truncated; the rest 0 |
//! | 4 .. 4+N | code addresses, innermost first: the interrupted instruction pointer, then return addresses |
//!
//! A symbolizer looks up `addr - 1` for every address but the first (a
//! return address points after its call).

use super::payload::PayloadReader;
use super::{SamplesError, SAMPLE_NAME};
use crate::encode::header::{self, record_type};
use crate::encode::stream::stream_words;
use crate::encode::{check_record_words, Encode, EncodeError, StringRef, WordWriter};

pub use super::MAX_FRAMES;

/// Payload word holding the timestamp (what a retiming pass rewrites).
#[cfg(feature = "decode")]
pub(crate) const TIMESTAMP_WORD: u64 = 0;

/// Words of the payload before the addresses.
const FIXED_WORDS: usize = 4;

/// How a sample's stack was walked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Walk {
    /// Unwind tables (`.eh_frame`).
    UnwindTables,
    /// Frame pointers.
    FramePointers,
    /// Only the interrupted instruction pointer.
    PcOnly,
}

impl Walk {
    /// The 8-bit value of the field.
    pub const fn value(self) -> u8 {
        match self {
            Self::UnwindTables => 1,
            Self::FramePointers => 2,
            Self::PcOnly => 3,
        }
    }

    /// The walk for a field value.
    pub const fn from_value(value: u8) -> Option<Self> {
        match value {
            1 => Some(Self::UnwindTables),
            2 => Some(Self::FramePointers),
            3 => Some(Self::PcOnly),
            _ => None,
        }
    }
}

/// One sample, ready to encode: allocation-free and panic-free, so a signal
/// handler can write it into the words it reserved
/// ([`Sample::word_len_for`] tells how many before the stack is known to
/// the encoder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Timestamp in trace ticks.
    pub timestamp: u64,
    /// Process koid.
    pub pid: u64,
    /// Thread koid.
    pub tid: u64,
    /// How the stack was walked.
    pub walk: Walk,
    /// Whether the walk stopped before the outermost frame.
    pub truncated: bool,
    /// Code addresses, innermost first (at most [`MAX_FRAMES`]).
    pub frames: &'a [u64],
}

impl Sample<'_> {
    /// Words of a sample record with `frames` addresses (header, inline
    /// name, payload).
    pub const fn word_len_for(frames: usize) -> usize {
        1 + stream_words(SAMPLE_NAME.len()) + FIXED_WORDS + frames
    }
}

impl Encode for Sample<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        if self.frames.len() > MAX_FRAMES {
            return Err(EncodeError::FieldOverflow("sample frame count"));
        }
        check_record_words(Self::word_len_for(self.frames.len()))
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let name = StringRef::Inline(SAMPLE_NAME);
        let payload_bytes = ((FIXED_WORDS + self.frames.len()) * 8) as u64;
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::BLOB, words)
                | (u64::from(name.encoded()?) << 16)
                | (payload_bytes << 32)
                | (u64::from(crate::encode::BlobType::Data.value()) << 48),
        )?;
        name.write_stream(&mut w)?;
        w.word(self.timestamp)?;
        w.word(self.pid)?;
        w.word(self.tid)?;
        w.word(
            self.frames.len() as u64
                | (u64::from(self.walk.value()) << 16)
                | (u64::from(self.truncated) << 24),
        )?;
        for &frame in self.frames {
            w.word(frame)?;
        }
        Ok(words)
    }
}

/// A decoded sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SampleRecord {
    /// Timestamp in trace ticks.
    pub timestamp: u64,
    /// Process koid.
    pub pid: u64,
    /// Thread koid.
    pub tid: u64,
    /// How the stack was walked.
    pub walk: Walk,
    /// Whether the walk stopped before the outermost frame.
    pub truncated: bool,
    /// Code addresses, innermost first.
    pub frames: Vec<u64>,
}

impl SampleRecord {
    /// Decodes an `fxt.sample` payload. Bytes after the last address are
    /// ignored (the layout may grow by appending).
    pub fn decode(payload: &[u8]) -> Result<Self, SamplesError> {
        let mut r = PayloadReader::new(payload);
        let timestamp = r.word("sample timestamp")?;
        let pid = r.word("sample process koid")?;
        let tid = r.word("sample thread koid")?;
        let offset = r.position();
        let shape = r.word("sample frame word")?;
        if shape >> 25 != 0 {
            return Err(SamplesError::ReservedBits {
                field: "sample frame word",
                offset,
                word: shape,
            });
        }
        let count = (shape & 0xffff) as usize;
        if count > MAX_FRAMES {
            return Err(SamplesError::TooManyFrames { count });
        }
        let kind = ((shape >> 16) & 0xff) as u8;
        let walk = Walk::from_value(kind).ok_or(SamplesError::UnknownWalk(kind))?;
        let mut frames = Vec::with_capacity(count);
        for _ in 0..count {
            frames.push(r.word("sample address")?);
        }
        Ok(Self {
            timestamp,
            pid,
            tid,
            walk,
            truncated: shape >> 24 & 1 == 1,
            frames,
        })
    }

    /// The address to look up for frame `index`: the instruction pointer
    /// itself for frame 0, `address - 1` (inside the call) for the return
    /// addresses after it.
    pub fn lookup_address(&self, index: usize) -> Option<u64> {
        let address = *self.frames.get(index)?;
        Some(if index == 0 {
            address
        } else {
            address.saturating_sub(1)
        })
    }
}
