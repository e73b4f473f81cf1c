//! Allocation-free encoders for every FXT record and argument type.
//!
//! Every record type is a plain struct with public fields that implements
//! [`Encode`]: [`Encode::word_len`] gives the exact size in 64-bit words
//! before anything is written, and [`Encode::encode`] writes exactly that many
//! words into the front of a caller-provided slice. Neither allocates, and no
//! input makes either panic: limits of the format are reported as
//! [`EncodeError`].
//!
//! | module | records |
//! |---|---|
//! | [`metadata`] | magic number, provider info / section / event, initialization |
//! | [`tables`] | string and thread records (the string and thread tables) |
//! | [`event`] | the eleven event types |
//! | [`blob`] | blob records and large blob records (both formats) |
//! | [`split_blob`] | a blob of any size as an instant and normal blob records |
//! | [`object`] | userspace and kernel object records |
//! | [`scheduling`] | context switch, thread wakeup, legacy context switch |
//! | [`log`] | log records |
//! | [`args`] | the eleven argument types |
//! | [`header`] | `const fn` header builders for precomputed hot-path headers |
//!
//! ```
//! use fxt_format::encode::*;
//!
//! let event = Event {
//!     kind: EventKind::Instant,
//!     timestamp: 1000,
//!     thread: ThreadRef::Index(1),
//!     category: StringRef::Index(1),
//!     name: StringRef::Index(2),
//!     args: &[],
//! };
//! let mut words = [0u64; 8];
//! let n = event.encode(&mut words).unwrap();
//! assert_eq!(n, 2); // header + timestamp: 16 bytes
//! assert_eq!(words[0], 0x0002_0001_0100_0024);
//! assert_eq!(words[1], 1000);
//! ```

pub mod args;
pub mod blob;
pub mod event;
pub mod header;
pub mod log;
pub mod metadata;
pub mod object;
pub mod refs;
pub mod scheduling;
pub mod split_blob;
pub mod stream;
pub mod tables;

pub use args::{Arg, ArgValue};
pub use blob::{Blob, BlobType, LargeBlobNoMetadata, LargeBlobWithMetadata};
pub use event::{Event, EventKind};
pub use log::Log;
pub use metadata::{Initialization, MagicNumber, ProviderEvent, ProviderInfo, ProviderSection};
pub use object::{KernelObject, UserspaceObject};
pub use object::{OBJ_TYPE_PROCESS, OBJ_TYPE_THREAD};
pub use refs::{ProcessRef, StringRef, ThreadRef};
pub use scheduling::{ContextSwitch, LegacyContextSwitch, ThreadState, ThreadWakeup};
pub use split_blob::SplitBlob;
pub use stream::{truncate_str, WordWriter, MAX_STRING_LEN};
pub use tables::{StringRecord, ThreadRecord};

use core::fmt;

/// Largest size of a normal record, in words (the 12-bit size field).
pub const MAX_RECORD_WORDS: usize = 0xfff;
/// Largest size of a large record, in words (the 32-bit size field).
pub const MAX_LARGE_RECORD_WORDS: usize = 0xffff_ffff;
/// Most arguments a record may carry (the 4-bit argument count field).
pub const MAX_ARGS: usize = 15;
/// Largest size of one argument, in words (the 12-bit argument size field).
pub const MAX_ARG_WORDS: usize = 0xfff;

/// Why a record could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// More than [`MAX_ARGS`] arguments.
    TooManyArgs {
        /// How many were given.
        count: usize,
    },
    /// The record would exceed its size field ([`MAX_RECORD_WORDS`], or
    /// [`MAX_LARGE_RECORD_WORDS`] for large records).
    RecordTooLarge {
        /// The size the record would need, in words.
        words: usize,
    },
    /// One argument would exceed [`MAX_ARG_WORDS`].
    ArgTooLarge {
        /// The size the argument would need, in words.
        words: usize,
    },
    /// A string index outside `1..=0x7fff`.
    InvalidStringIndex(u16),
    /// A thread index of 0 (reserved for inline threads).
    InvalidThreadIndex,
    /// A field value that does not fit its bit field (named).
    FieldOverflow(&'static str),
    /// The output slice is shorter than [`Encode::word_len`].
    BufferTooSmall {
        /// Words needed.
        needed: usize,
        /// Words available.
        available: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyArgs { count } => {
                write!(
                    f,
                    "{count} arguments given, a record holds at most {MAX_ARGS}"
                )
            }
            Self::RecordTooLarge { words } => {
                write!(f, "record of {words} words exceeds its size field")
            }
            Self::ArgTooLarge { words } => write!(
                f,
                "argument of {words} words exceeds the {MAX_ARG_WORDS}-word limit"
            ),
            Self::InvalidStringIndex(i) => {
                write!(f, "string index {i:#x} is outside 0x0001..=0x7fff")
            }
            Self::InvalidThreadIndex => write!(f, "thread index 0 is reserved for inline threads"),
            Self::FieldOverflow(field) => write!(f, "value does not fit the {field} field"),
            Self::BufferTooSmall { needed, available } => write!(
                f,
                "output holds {available} words, the record needs {needed}"
            ),
        }
    }
}

impl std::error::Error for EncodeError {}

/// A record that can be encoded into FXT words.
pub trait Encode {
    /// The exact number of words [`Encode::encode`] writes.
    fn word_len(&self) -> Result<usize, EncodeError>;

    /// Writes the record into the front of `out` and returns the number of
    /// words written (always [`Encode::word_len`]). On error nothing useful
    /// has been written.
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError>;
}

/// Encodes a record into a new vector of words.
pub fn encode_to_vec<R: Encode + ?Sized>(record: &R) -> Result<Vec<u64>, EncodeError> {
    let mut words = vec![0u64; record.word_len()?];
    record.encode(&mut words)?;
    Ok(words)
}

/// Appends a record's words to `out`.
pub fn encode_into_vec<R: Encode + ?Sized>(
    record: &R,
    out: &mut Vec<u64>,
) -> Result<usize, EncodeError> {
    let start = out.len();
    let len = record.word_len()?;
    out.resize(start + len, 0);
    match record.encode(&mut out[start..]) {
        Ok(n) => Ok(n),
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// The bytes of `words` as they appear in a trace file (little-endian).
pub fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(words.len() * 8);
    for w in words {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    bytes
}

/// Writes `words` to `w` as trace-file bytes (little-endian).
pub fn write_words<W: std::io::Write + ?Sized>(w: &mut W, words: &[u64]) -> std::io::Result<()> {
    // Stage through a fixed stack buffer so large slices go out in big writes.
    let mut staging = [0u8; 8192];
    for chunk in words.chunks(staging.len() / 8) {
        for (dst, word) in staging.chunks_exact_mut(8).zip(chunk) {
            dst.copy_from_slice(&word.to_le_bytes());
        }
        w.write_all(&staging[..chunk.len() * 8])?;
    }
    Ok(())
}

/// Writes one record to `w` as trace-file bytes, without allocating for
/// records of up to 512 words.
pub fn write_record<W: std::io::Write + ?Sized, R: Encode + ?Sized>(
    w: &mut W,
    record: &R,
) -> std::io::Result<()> {
    let len = record.word_len().map_err(std::io::Error::other)?;
    let mut small = [0u64; 512];
    if len <= small.len() {
        record.encode(&mut small).map_err(std::io::Error::other)?;
        write_words(w, &small[..len])
    } else {
        let words = encode_to_vec(record).map_err(std::io::Error::other)?;
        write_words(w, &words)
    }
}

/// Checks that `out` can hold `needed` words.
#[inline]
pub(crate) fn check_room(out: &[u64], needed: usize) -> Result<(), EncodeError> {
    if out.len() < needed {
        Err(EncodeError::BufferTooSmall {
            needed,
            available: out.len(),
        })
    } else {
        Ok(())
    }
}

/// Checks a normal record's size against the 12-bit size field.
#[inline]
pub(crate) fn check_record_words(words: usize) -> Result<usize, EncodeError> {
    if words > MAX_RECORD_WORDS {
        Err(EncodeError::RecordTooLarge { words })
    } else {
        Ok(words)
    }
}

/// Total words of `args`, checking the count and each argument's size.
pub(crate) fn args_words(args: &[Arg<'_>]) -> Result<usize, EncodeError> {
    if args.len() > MAX_ARGS {
        return Err(EncodeError::TooManyArgs { count: args.len() });
    }
    let mut total = 0;
    for arg in args {
        total += arg.word_len()?;
    }
    Ok(total)
}

/// Writes `args` in order.
pub(crate) fn write_args(w: &mut WordWriter<'_>, args: &[Arg<'_>]) -> Result<(), EncodeError> {
    for arg in args {
        arg.write(w)?;
    }
    Ok(())
}
