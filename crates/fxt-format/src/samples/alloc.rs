//! `fxt.alloc`: one sampled allocation, or the free of a sampled block,
//! written by the allocating (freeing) thread into its own ring chunk
//! (issue 45).
//!
//! Allocations are sampled by bytes: the allocator wrapper draws the bytes
//! to the next sample from an exponential distribution of mean `mean`, so
//! an allocation of `size` bytes is sampled with probability
//! `1 - exp(-size / mean)` and a sample stands for
//! `size / (1 - exp(-size / mean))` bytes ([`AllocRecord::estimated_bytes`]),
//! whatever the sizes (tcmalloc's and heapprofd's estimator). A thread
//! that samples faster than the runtime's cap raises its own mean: each
//! record carries the mean it was sampled at, and readers weight each by
//! its own.
//!
//! A blob record (type 5, blob type 1) named inline `fxt.alloc` (inline:
//! the allocator hook never touches the string table). Payload words:
//!
//! | word | content |
//! |---|---|
//! | 0 | timestamp in trace ticks (the trace's clock, as events) |
//! | 1 | process koid (pid) |
//! | 2 | thread koid (tid) |
//! | 3 | the block's address |
//! | 4 | the block's size in bytes (as the program asked: `Layout::size`) |
//! | 5 | the sampling mean in bytes the allocation was sampled at: the session's (`Config::alloc_sample_bytes`), or a multiple of it where the thread's sampling rate raised its own (a free: the session's) |
//! | 6 | bits `[0 .. 15]` frame count N (at most [`MAX_FRAMES`]); `[16 .. 23]` the [`Walk`]; `[24]` truncated; `[32 .. 39]` the [`AllocKind`]; `[40]` untracked; the rest 0 |
//! | 7 .. 7+N | code addresses, innermost first (as in `fxt.sample`) |
//! | 7 .. | walk [`Walk::RawStack`] only (N is 0): a [raw stack](super::raw_stack), the registers and a copy of the stack, for the reader to unwind (as in `fxt.sample`) |
//!
//! A free has no frames (N = 0, walk 3) and names the block by address: a
//! reader pairs it with the latest allocation of that address in the same
//! process. *Untracked* (bit 40) marks an allocation whose free will not
//! be recorded: the wrapper's table of live sampled blocks was full (it
//! counts these too), so a reader cannot tell whether it is still live.

use super::payload::PayloadReader;
use super::raw_stack::{RawStack, RawStackRecord};
use super::sample::{Walk, MAX_FRAMES};
use super::stack::Stack;
use super::{SamplesError, ALLOC_NAME};
use crate::encode::header::{self, record_type};
use crate::encode::stream::stream_words;
use crate::encode::{check_record_words, Encode, EncodeError, StringRef, WordWriter};

/// Payload word holding the timestamp (what a retiming pass rewrites).
#[cfg(feature = "decode")]
pub(crate) const TIMESTAMP_WORD: u64 = 0;

/// Words of the payload before the addresses.
const FIXED_WORDS: usize = 7;

/// Bits of the shape word a decoder accepts set (the stack's, the kind,
/// untracked).
const SHAPE_BITS: u64 = Stack::SHAPE_BITS | 0x1ff_0000_0000;

/// What an `fxt.alloc` record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AllocKind {
    /// A sampled allocation (or the new block of a sampled `realloc`).
    Alloc,
    /// The free of a sampled block (or the old block of a `realloc`).
    Free,
}

impl AllocKind {
    /// The 8-bit value of the field.
    pub const fn value(self) -> u8 {
        match self {
            Self::Alloc => 1,
            Self::Free => 2,
        }
    }

    /// The kind for a field value.
    pub const fn from_value(value: u8) -> Option<Self> {
        match value {
            1 => Some(Self::Alloc),
            2 => Some(Self::Free),
            _ => None,
        }
    }
}

/// One sampled allocation or free, ready to encode: allocation-free and
/// panic-free, so an allocator hook can write it into the words it
/// reserved ([`Alloc::word_len_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alloc<'a> {
    /// Timestamp in trace ticks.
    pub timestamp: u64,
    /// Process koid.
    pub pid: u64,
    /// Thread koid.
    pub tid: u64,
    /// The block's address.
    pub address: u64,
    /// The block's size in bytes.
    pub size: u64,
    /// The sampling mean in bytes (an allocation's: the one it was
    /// sampled at).
    pub mean: u64,
    /// Allocation or free.
    pub kind: AllocKind,
    /// The free of this block will not be recorded.
    pub untracked: bool,
    /// How the stack was walked.
    pub walk: Walk,
    /// Whether the walk stopped before the outermost frame.
    pub truncated: bool,
    /// Code addresses, innermost first (at most [`MAX_FRAMES`]; empty
    /// with a raw stack).
    pub frames: &'a [u64],
    /// The registers and a copy of the stack, for the reader to unwind
    /// (then `walk` is [`Walk::RawStack`] and `frames` empty).
    pub raw_stack: Option<RawStack<'a>>,
}

impl Alloc<'_> {
    /// Words of an alloc record with `frames` addresses (header, inline
    /// name, payload).
    pub const fn word_len_for(frames: usize) -> usize {
        1 + stream_words(ALLOC_NAME.len()) + FIXED_WORDS + frames
    }

    /// Words of an alloc record with a raw stack of `arch` and
    /// `stack_words` words.
    pub const fn word_len_raw(arch: super::Arch, stack_words: usize) -> usize {
        Self::word_len_for(0) + RawStack::word_len_for(arch, stack_words)
    }

    /// Words after the fixed ones: the frames, or the raw stack.
    fn tail_words(&self) -> Result<usize, EncodeError> {
        match (&self.raw_stack, self.walk) {
            (Some(raw), Walk::RawStack) if self.frames.is_empty() => raw.word_len(),
            (None, walk) if walk != Walk::RawStack => Ok(self.frames.len()),
            _ => Err(EncodeError::FieldOverflow(
                "alloc stack (frames and a raw stack, or a walk that does not match)",
            )),
        }
    }

    fn shape(&self) -> u64 {
        Stack::shape(self.frames.len(), self.walk, self.truncated)
            | (u64::from(self.kind.value()) << 32)
            | (u64::from(self.untracked) << 40)
    }
}

impl Encode for Alloc<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        if self.frames.len() > MAX_FRAMES {
            return Err(EncodeError::FieldOverflow("alloc frame count"));
        }
        check_record_words(Self::word_len_for(0) + self.tail_words()?)
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        self.write_fixed(&mut w, words, self.tail_words()?)?;
        for &frame in self.frames {
            w.word(frame)?;
        }
        if let Some(raw) = &self.raw_stack {
            raw.write(&mut w)?;
        }
        Ok(words)
    }
}

impl Alloc<'_> {
    /// Encodes a raw-stack record up to its stack words, for a stack of
    /// `stack_words` words that the caller stores right after them (an
    /// allocation hook copies the stack straight to where the record goes;
    /// `raw_stack.stack` is not written): as they are, or in zero runs
    /// taking `runs_words` words (run words and the words they carry; see
    /// [`super::raw_stack`]). Returns the words written and the whole
    /// record's length.
    pub fn encode_head(
        &self,
        stack_words: usize,
        runs_words: Option<usize>,
        out: &mut [u64],
    ) -> Result<(usize, usize), EncodeError> {
        let raw = match (&self.raw_stack, self.walk) {
            (Some(raw), Walk::RawStack) if self.frames.is_empty() => raw,
            _ => {
                return Err(EncodeError::FieldOverflow(
                    "alloc head (a raw stack record only)",
                ))
            }
        };
        let stored = runs_words.unwrap_or(stack_words);
        let tail = RawStack::word_len_for(raw.arch, stored);
        let words = check_record_words(Self::word_len_for(0) + tail)?;
        let head = words - stored;
        let mut w = WordWriter::new(out, head)?;
        self.write_fixed(&mut w, words, tail)?;
        raw.write_head(&mut w, stack_words, runs_words.is_some())?;
        Ok((head, words))
    }

    /// The record header, the inline name and the fixed payload words of
    /// a record of `words` words whose payload ends with `tail_words`.
    fn write_fixed(
        &self,
        w: &mut WordWriter<'_>,
        words: usize,
        tail_words: usize,
    ) -> Result<(), EncodeError> {
        let name = StringRef::Inline(ALLOC_NAME);
        let payload_bytes = ((FIXED_WORDS + tail_words) * 8) as u64;
        w.word(
            header::record(record_type::BLOB, words)
                | (u64::from(name.encoded()?) << 16)
                | (payload_bytes << 32)
                | (u64::from(crate::encode::BlobType::Data.value()) << 48),
        )?;
        name.write_stream(w)?;
        for word in [
            self.timestamp,
            self.pid,
            self.tid,
            self.address,
            self.size,
            self.mean,
            self.shape(),
        ] {
            w.word(word)?;
        }
        Ok(())
    }
}

/// A decoded `fxt.alloc` record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllocRecord {
    /// Timestamp in trace ticks.
    pub timestamp: u64,
    /// Process koid.
    pub pid: u64,
    /// Thread koid.
    pub tid: u64,
    /// The block's address.
    pub address: u64,
    /// The block's size in bytes.
    pub size: u64,
    /// The sampling mean in bytes (an allocation's: the one it was
    /// sampled at).
    pub mean: u64,
    /// Allocation or free.
    pub kind: AllocKind,
    /// The free of this block will not be recorded.
    pub untracked: bool,
    /// How the stack was walked.
    pub walk: Walk,
    /// Whether the walk stopped before the outermost frame.
    pub truncated: bool,
    /// Code addresses, innermost first (empty for a raw stack).
    pub frames: Vec<u64>,
    /// The registers and stack copy of a [`Walk::RawStack`] record, for
    /// the reader to unwind into `frames`.
    pub raw_stack: Option<RawStackRecord>,
}

impl AllocRecord {
    /// Decodes an `fxt.alloc` payload. Bytes after the last address are
    /// ignored (the layout may grow by appending).
    pub fn decode(payload: &[u8]) -> Result<Self, SamplesError> {
        let mut r = PayloadReader::new(payload);
        let timestamp = r.word("alloc timestamp")?;
        let pid = r.word("alloc process koid")?;
        let tid = r.word("alloc thread koid")?;
        let address = r.word("alloc address")?;
        let size = r.word("alloc size")?;
        let mean = r.word("alloc sampling mean")?;
        let offset = r.position();
        let shape = r.word("alloc shape word")?;
        if shape & !SHAPE_BITS != 0 {
            return Err(SamplesError::ReservedBits {
                field: "alloc shape word",
                offset,
                word: shape,
            });
        }
        let kind_value = ((shape >> 32) & 0xff) as u8;
        let kind =
            AllocKind::from_value(kind_value).ok_or(SamplesError::UnknownAllocKind(kind_value))?;
        let Stack {
            walk,
            truncated,
            frames,
            raw_stack,
        } = Stack::read(&mut r, shape, "alloc address")?;
        Ok(Self {
            timestamp,
            pid,
            tid,
            address,
            size,
            mean,
            kind,
            untracked: shape >> 40 & 1 == 1,
            walk,
            truncated,
            frames,
            raw_stack,
        })
    }

    /// The record with the frames a reader unwound from its raw stack (the
    /// raw stack dropped, `walk` now [`Walk::UnwindTables`]; see
    /// [`Stack::with_frames`]).
    pub fn with_frames(mut self, frames: Vec<u64>, truncated: bool) -> Self {
        let stack = Stack {
            walk: self.walk,
            truncated: self.truncated,
            frames: Vec::new(),
            raw_stack: None,
        }
        .with_frames(frames, truncated);
        (self.walk, self.truncated, self.frames, self.raw_stack) =
            (stack.walk, stack.truncated, stack.frames, stack.raw_stack);
        self
    }

    /// The bytes this sample stands for: `size / (1 - exp(-size / mean))`
    /// (see the module docs), at least `size`; `size` itself when the
    /// mean is 0 (every allocation recorded).
    pub fn estimated_bytes(&self) -> f64 {
        estimated_bytes(self.size, self.mean)
    }
}

/// The bytes a sampled allocation of `size` bytes stands for at sampling
/// mean `mean` (see the module docs).
pub fn estimated_bytes(size: u64, mean: u64) -> f64 {
    if mean == 0 || size == 0 {
        return size as f64;
    }
    let ratio = size as f64 / mean as f64;
    // -expm1(-x) = 1 - exp(-x), exact for small x.
    let p = -(-ratio).exp_m1();
    if p > 0.0 {
        (size as f64 / p).max(size as f64)
    } else {
        mean as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_the_mean_for_small_blocks_and_the_size_for_large() {
        assert!((estimated_bytes(1, 4096) - 4096.5).abs() < 0.01);
        assert_eq!(estimated_bytes(1 << 30, 4096), (1u64 << 30) as f64);
        assert_eq!(estimated_bytes(100, 0), 100.0);
        assert_eq!(estimated_bytes(0, 4096), 0.0);
        // size = mean: size / (1 - 1/e).
        let e = estimated_bytes(4096, 4096);
        assert!((e - 4096.0 / (1.0 - (-1f64).exp())).abs() < 1e-6, "{e}");
    }
}
