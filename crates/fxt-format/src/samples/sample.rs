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
//! | 4 .. | walk [`Walk::RawStack`] only (N is 0): a [raw stack](super::raw_stack), the interrupted registers and a copy of the stack, for the reader to unwind |
//!
//! A symbolizer looks up `addr - 1` for every address but the first (a
//! return address points after its call).
//!
//! A sample is written in one of two forms: a frame list (the walk was
//! done when the sample was taken: [`Sample`]) or a raw stack (the walk is
//! left to the reader: [`RawSample`]; `truncated` then says the copy was
//! cut at its writer's bound before the stack's top). A reader that
//! unwinds a raw stack may rewrite it as a frame list
//! ([`SampleRecord::with_frames`]).

use super::payload::PayloadReader;
use super::raw_stack::{RawStack, RawStackRecord};
use super::stack::Stack;
pub use super::walk::Walk;
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
        if self.walk == Walk::RawStack {
            return Err(EncodeError::FieldOverflow("sample walk (a raw stack)"));
        }
        check_record_words(Self::word_len_for(self.frames.len()))
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        write_head(&mut w, words, FIXED_WORDS + self.frames.len())?;
        w.word(self.timestamp)?;
        w.word(self.pid)?;
        w.word(self.tid)?;
        w.word(Stack::shape(self.frames.len(), self.walk, self.truncated))?;
        for &frame in self.frames {
            w.word(frame)?;
        }
        Ok(words)
    }
}

/// The record header and inline name of a sample of `words` words whose
/// payload is `payload_words` words.
fn write_head(
    w: &mut WordWriter<'_>,
    words: usize,
    payload_words: usize,
) -> Result<(), EncodeError> {
    let name = StringRef::Inline(SAMPLE_NAME);
    w.word(
        header::record(record_type::BLOB, words)
            | (u64::from(name.encoded()?) << 16)
            | ((payload_words as u64 * 8) << 32)
            | (u64::from(crate::encode::BlobType::Data.value()) << 48),
    )?;
    name.write_stream(w)
}

/// One sample as a raw stack (walk [`Walk::RawStack`]), ready to encode:
/// allocation-free and panic-free, like [`Sample`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSample<'a> {
    /// Timestamp in trace ticks.
    pub timestamp: u64,
    /// Process koid.
    pub pid: u64,
    /// Thread koid.
    pub tid: u64,
    /// Whether the stack copy stops below the stack's top (cut at the
    /// writer's bound).
    pub truncated: bool,
    /// The registers and the stack's copy.
    pub stack: RawStack<'a>,
}

impl RawSample<'_> {
    /// Words of a raw-stack sample record of `arch` with `stack_words`
    /// words of stack.
    pub const fn word_len_for(arch: super::Arch, stack_words: usize) -> usize {
        1 + stream_words(SAMPLE_NAME.len())
            + FIXED_WORDS
            + RawStack::word_len_for(arch, stack_words)
    }
}

impl Encode for RawSample<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        self.stack.word_len()?;
        check_record_words(Self::word_len_for(self.stack.arch, self.stack.stack.len()))
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        let raw_words = self.stack.word_len()?;
        write_head(&mut w, words, FIXED_WORDS + raw_words)?;
        w.word(self.timestamp)?;
        w.word(self.pid)?;
        w.word(self.tid)?;
        w.word(Stack::shape(0, Walk::RawStack, self.truncated))?;
        self.stack.write(&mut w)?;
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
    /// Code addresses, innermost first (empty for a raw stack).
    pub frames: Vec<u64>,
    /// The registers and stack copy of a [`Walk::RawStack`] sample, for
    /// the reader to unwind into `frames`.
    pub raw_stack: Option<RawStackRecord>,
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
        if shape & !Stack::SHAPE_BITS != 0 {
            return Err(SamplesError::ReservedBits {
                field: "sample frame word",
                offset,
                word: shape,
            });
        }
        Ok(Self::from_stack(
            timestamp,
            pid,
            tid,
            Stack::read(&mut r, shape, "sample address")?,
        ))
    }

    /// The sample of a decoded stack.
    fn from_stack(timestamp: u64, pid: u64, tid: u64, stack: Stack) -> Self {
        let Stack {
            walk,
            truncated,
            frames,
            raw_stack,
        } = stack;
        Self {
            timestamp,
            pid,
            tid,
            walk,
            truncated,
            frames,
            raw_stack,
        }
    }

    /// The sample with the frames a reader unwound from its raw stack (the
    /// raw stack dropped, `walk` now [`Walk::UnwindTables`], `truncated`
    /// as the unwinding ended): what a frame-list sample of it holds.
    pub fn with_frames(self, frames: Vec<u64>, truncated: bool) -> Self {
        let stack = Stack {
            walk: self.walk,
            truncated: self.truncated,
            frames: Vec::new(),
            raw_stack: None,
        };
        Self::from_stack(
            self.timestamp,
            self.pid,
            self.tid,
            stack.with_frames(frames, truncated),
        )
    }

    /// The same sample, borrowed to encode as a frame list (`None` for an
    /// raw stack not unwound: see [`Self::as_raw_sample`]).
    pub fn as_sample(&self) -> Option<Sample<'_>> {
        self.raw_stack.is_none().then_some(Sample {
            timestamp: self.timestamp,
            pid: self.pid,
            tid: self.tid,
            walk: self.walk,
            truncated: self.truncated,
            frames: &self.frames,
        })
    }

    /// The same raw-stack sample, borrowed to encode.
    pub fn as_raw_sample(&self) -> Option<RawSample<'_>> {
        self.raw_stack.as_ref().map(|raw| RawSample {
            timestamp: self.timestamp,
            pid: self.pid,
            tid: self.tid,
            truncated: self.truncated,
            stack: raw.as_raw_stack(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::Arch;

    /// A raw-stack sample's words, one by one against the layout tables
    /// (header, inline name, fixed words with frame count 0 and walk 4,
    /// then the raw stack), and its decoding.
    #[test]
    fn a_raw_stack_sample_follows_the_layout() {
        let regs = [0x5555_0000_1234, 0x7ffc_0000_1000, 0x7ffc_0000_1040];
        let stack = [0xaa, 0xbb];
        let sample = RawSample {
            timestamp: 1000,
            pid: 7,
            tid: 8,
            truncated: true,
            stack: RawStack {
                arch: Arch::X86_64,
                registers: &regs,
                stack_address: 0x7ffc_0000_0ff0,
                stack: &stack,
            },
        };
        let words = crate::encode::encode_to_vec(&sample).unwrap();
        assert_eq!(words.len(), RawSample::word_len_for(Arch::X86_64, 2));
        assert_eq!(words.len(), 1 + 2 + 4 + 2 + 3 + 2);
        let payload_bytes = (4 + 2 + 3 + 2) * 8u64;
        assert_eq!(
            words[0],
            5 | (14 << 4) | ((0x8000 | 10) << 16) | (payload_bytes << 32) | (1 << 48)
        );
        assert_eq!(
            &words[1..3],
            &[
                u64::from_le_bytes(*b"fxt.samp"),
                u64::from_le_bytes(*b"le\0\0\0\0\0\0")
            ]
        );
        assert_eq!(&words[3..7], &[1000, 7, 8, (4 << 16) | (1 << 24)]);
        assert_eq!(words[7], 1 | (3 << 8) | (2 << 32));
        assert_eq!(
            &words[8..],
            &[0x7ffc_0000_0ff0, regs[0], regs[1], regs[2], 0xaa, 0xbb]
        );
        let payload: Vec<u8> = words[3..].iter().flat_map(|w| w.to_le_bytes()).collect();
        let back = SampleRecord::decode(&payload).unwrap();
        assert_eq!(back.walk, Walk::RawStack);
        assert!(back.frames.is_empty() && back.truncated);
        assert_eq!(back.as_raw_sample(), Some(sample));
        assert_eq!(back.as_sample(), None);
        let unwound = back.with_frames(vec![1, 2], false);
        assert_eq!(unwound.walk, Walk::UnwindTables);
        assert_eq!(unwound.raw_stack, None);
        assert_eq!(
            unwound.as_sample().map(|s| s.frames.to_vec()),
            Some(vec![1, 2])
        );
    }

    /// A raw-stack walk with frames, or a frame list claiming the raw
    /// walk, is refused both ways.
    #[test]
    fn a_sample_is_one_form_or_the_other() {
        let frames = [1u64];
        let sample = Sample {
            timestamp: 0,
            pid: 0,
            tid: 0,
            walk: Walk::RawStack,
            truncated: false,
            frames: &frames,
        };
        assert!(crate::encode::encode_to_vec(&sample).is_err());
        let mut payload = Vec::new();
        for w in [0u64, 0, 0, 1 | (4 << 16), 0x1234] {
            payload.extend_from_slice(&w.to_le_bytes());
        }
        assert_eq!(
            SampleRecord::decode(&payload),
            Err(SamplesError::MixedSample)
        );
    }
}
