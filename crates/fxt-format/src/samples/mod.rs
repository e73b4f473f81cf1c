//! CPU samples in a trace: the `fxt.sample`, `fxt.modules` and
//! `fxt.symbols` blob records (issue 31; the layout is fixed in the
//! project's `SAMPLES-FORMAT.md`, repeated in each submodule).
//!
//! FXT has no record for a CPU sample, so fxt writes *blob records* (record
//! type 5, blob type 1 = data) that every reader already sizes and skips:
//!
//! | name | written | holds |
//! |---|---|---|
//! | [`SAMPLE_NAME`] | by the sampled thread, one per sample | timestamp, koids, the stack's code addresses or its registers and a copy of the stack ([`sample`], [`raw_stack`]) |
//! | [`MODULES_NAME`] | at session start and at collection | the executable mappings of a process ([`modules`]) |
//! | [`SYMBOLS_NAME`] | at collection | names, files and lines of the sampled addresses ([`symbols`]) |
//! | [`SAMPLING_NAME`] | at collection | the rate and the sources that timed the samples ([`sampling`]) |
//! | [`PERFETTO_NAME`] | at collection, blob type 3 | Perfetto packets for the samples (written by `fxt-symbols`) |
//! | [`ALLOC_NAME`] | by the allocating or freeing thread, one per sampled allocation or free of a sampled block | timestamp, koids, address, size, sampling mean, the stack ([`alloc`]) |
//!
//! Every payload is a sequence of little-endian `u64` words; byte strings
//! inside a payload are padded with zeros to 8 bytes. The sample encoder
//! writes words into a caller's slice without allocating (a signal handler
//! can use it); modules and symbols, written at collection, build a byte
//! payload and become one blob record or, past [`part_capacity`], a split
//! blob group ([`encode_named_blob`]).
//!
//! The decoders take a blob's payload (after [`crate::decode::BlobJoiner`]
//! for split groups) and return owned values or a [`SamplesError`]; they
//! never panic and allocate in proportion to the payload, whatever counts
//! its words claim.
//!
//! ```
//! use fxt_format::encode::{encode_to_vec, Encode};
//! use fxt_format::samples::{Sample, SampleRecord, Walk};
//! let frames = [0x5555_0000_1234, 0x5555_0000_5678];
//! let sample = Sample { timestamp: 1000, pid: 7, tid: 8, walk: Walk::FramePointers, truncated: false, frames: &frames };
//! let words = encode_to_vec(&sample).unwrap();
//! assert_eq!(words.len(), Sample::word_len_for(2));
//! // Decode the payload: the words after the header and the inline name.
//! let payload: Vec<u8> = words[3..].iter().flat_map(|w| w.to_le_bytes()).collect();
//! let back = SampleRecord::decode(&payload).unwrap();
//! assert_eq!(back.frames, frames);
//! ```

pub mod alloc;
mod error;
pub mod modules;
mod payload;
pub mod raw_stack;
pub mod sample;
pub mod sampling;
pub mod stack;
pub mod symbols;
mod walk;

pub use alloc::{estimated_bytes, Alloc, AllocKind, AllocRecord};
pub use error::SamplesError;
pub use modules::{Module, ModuleEntry, Modules, ModulesRecord};
pub use raw_stack::{Arch, RawStack, RawStackRecord, Run, MAX_REGISTERS};
pub use sample::{RawSample, Sample, SampleRecord};
pub use sampling::Sampling;
pub use stack::Stack;
pub use symbols::{Frame, FrameEntry, Symbol, SymbolEntry, Symbols, SymbolsRecord};
pub use walk::Walk;

/// Most frames a sample holds (here, not in `sample`, so that the error
/// that names it stays below the records).
pub const MAX_FRAMES: usize = 256;

/// Most stack words a raw stack holds: what fits an FXT record (at most
/// 4095 words) after a sample's own words (here, not in `raw_stack`, for
/// the same reason as [`MAX_FRAMES`]).
pub const MAX_STACK_WORDS: usize = 4000;

#[cfg(feature = "decode")]
use crate::decode::Blob as DecodedBlob;
use crate::encode::split_blob::part_capacity;
use crate::encode::{
    encode_into_vec, Blob, BlobType, EncodeError, SplitBlob, StringRef, ThreadRef,
};

/// Name of a sample's blob record (always written inline).
pub const SAMPLE_NAME: &str = "fxt.sample";
/// Name of a sampled allocation's (or free's) blob record (always
/// written inline).
pub const ALLOC_NAME: &str = "fxt.alloc";
/// Name of a process's module list blob (or split blob group).
pub const MODULES_NAME: &str = "fxt.modules";
/// Name of a process's symbol table blob (or split blob group).
pub const SYMBOLS_NAME: &str = "fxt.symbols";
/// Name of a process's sampling rate and sources blob.
pub const SAMPLING_NAME: &str = "fxt.sampling";
/// Name of the blob records (blob type 3) holding Perfetto packets.
pub const PERFETTO_NAME: &str = "fxt.perfetto";
/// Category of the instant that leads a split blob group written here.
pub const CATEGORY: &str = "fxt";

/// The highest sampling rate, in samples per second of a thread's CPU
/// time, that fxt records (the kernel's perf events take no shorter period
/// than 10 µs). The runtime caps its configuration at it; the command line
/// refuses more.
pub const MAX_SAMPLE_HZ: u32 = 10_000;

/// One of the three sample blobs, decoded.
#[cfg(feature = "decode")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleBlob {
    /// An `fxt.sample` record.
    Sample(SampleRecord),
    /// An `fxt.modules` blob.
    Modules(ModulesRecord),
    /// An `fxt.symbols` blob.
    Symbols(SymbolsRecord),
}

#[cfg(feature = "decode")]
impl SampleBlob {
    /// Decodes `blob` if it is a data blob named [`SAMPLE_NAME`],
    /// [`MODULES_NAME`] or [`SYMBOLS_NAME`]; `None` for any other blob.
    /// Split groups must have been joined first ([`crate::decode::BlobJoiner`]):
    /// a lone part of a large modules or symbols blob does not decode.
    pub fn from_blob(blob: &DecodedBlob) -> Option<Result<Self, SamplesError>> {
        if blob.blob_type != BlobType::Data {
            return None;
        }
        match blob.name.as_str()? {
            SAMPLE_NAME => Some(SampleRecord::decode(&blob.payload).map(Self::Sample)),
            MODULES_NAME => Some(ModulesRecord::decode(&blob.payload).map(Self::Modules)),
            SYMBOLS_NAME => Some(SymbolsRecord::decode(&blob.payload).map(Self::Symbols)),
            _ => None,
        }
    }
}

#[cfg(feature = "decode")]
impl AllocRecord {
    /// Decodes `blob` if it is a data blob named [`ALLOC_NAME`]; `None`
    /// for any other blob.
    pub fn from_blob(blob: &DecodedBlob) -> Option<Result<Self, SamplesError>> {
        (blob.blob_type == BlobType::Data && blob.name.as_str() == Some(ALLOC_NAME))
            .then(|| Self::decode(&blob.payload))
    }
}

/// The highest allocation sampling mean, in bytes, that fxt accepts
/// (`Config::alloc_sample_bytes`, `--alloc-sample`): 1 GiB.
pub const MAX_ALLOC_SAMPLE_BYTES: u64 = 1 << 30;

/// Appends a data blob named `name` (inline) holding `payload` to `out`:
/// one blob record if the payload fits ([`part_capacity`]), otherwise a
/// split blob group whose leading instant has category [`CATEGORY`], the
/// given timestamp and thread. Returns the words appended.
pub fn encode_named_blob(
    name: &str,
    payload: &[u8],
    timestamp: u64,
    thread: ThreadRef,
    out: &mut Vec<u64>,
) -> Result<usize, EncodeError> {
    let name = StringRef::Inline(name);
    if payload.len() <= part_capacity(name) {
        let blob = Blob {
            name,
            blob_type: BlobType::Data,
            payload,
        };
        encode_into_vec(&blob, out)
    } else {
        let split = SplitBlob::new(
            StringRef::Inline(CATEGORY),
            name,
            timestamp,
            thread,
            payload,
        );
        encode_into_vec(&split, out)
    }
}
