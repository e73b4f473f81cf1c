//! Why a sample, modules or symbols payload could not be decoded.

use std::fmt;

/// A malformed payload, located by byte offset from the payload's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SamplesError {
    /// The payload ends inside a field.
    Truncated {
        /// The field that is cut short.
        field: &'static str,
        /// Its offset in the payload.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes the payload still holds from `offset`.
        available: usize,
    },
    /// A sample with more than [`super::MAX_FRAMES`] frames.
    TooManyFrames {
        /// The frame count found.
        count: usize,
    },
    /// Bits the layout keeps at zero are set.
    ReservedBits {
        /// The field holding them.
        field: &'static str,
        /// Its offset in the payload.
        offset: usize,
        /// The word found.
        word: u64,
    },
    /// A stack-walk kind other than 1 to 4.
    UnknownWalk(u8),
    /// An allocation record kind other than 1 (alloc) or 2 (free).
    UnknownAllocKind(u8),
    /// A raw stack's arch other than 1 or 2.
    UnknownArch(u8),
    /// A raw stack whose register count is not its arch's.
    RegisterCount {
        /// The arch's value (an [`Arch`](super::Arch) named by it).
        arch: u8,
        /// The count found.
        count: usize,
    },
    /// A raw stack of more than [`super::MAX_STACK_WORDS`] words.
    StackTooLarge {
        /// The word count found.
        words: usize,
    },
    /// A raw-stack sample that also lists frames, or a frame list whose
    /// walk says it is a raw stack.
    MixedSample,
    /// A run word of a raw stack in zero runs that covers no word, or
    /// words past the stack's count.
    BadRun {
        /// Its offset in the payload.
        offset: usize,
        /// The word found.
        word: u64,
    },
    /// A name or path that is not UTF-8.
    InvalidUtf8 {
        /// The field.
        field: &'static str,
        /// Its offset in the payload.
        offset: usize,
    },
}

impl fmt::Display for SamplesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated {
                field,
                offset,
                needed,
                available,
            } => write!(
                f,
                "payload ends inside the {field} at byte {offset}: it needs {needed} bytes, \
                 {available} are left"
            ),
            Self::TooManyFrames { count } => write!(
                f,
                "sample has {count} frames, at most {} are allowed",
                super::MAX_FRAMES
            ),
            Self::ReservedBits {
                field,
                offset,
                word,
            } => write!(
                f,
                "reserved bits set in the {field} at byte {offset} ({word:#018x})"
            ),
            Self::UnknownWalk(kind) => write!(f, "unknown stack walk kind {kind}"),
            Self::UnknownAllocKind(kind) => write!(f, "unknown allocation record kind {kind}"),
            Self::UnknownArch(arch) => write!(f, "unknown raw stack arch {arch}"),
            Self::RegisterCount { arch, count } => {
                write!(f, "raw stack of arch {arch} with {count} registers")
            }
            Self::StackTooLarge { words } => write!(
                f,
                "raw stack of {words} words, at most {} are allowed",
                super::MAX_STACK_WORDS
            ),
            Self::MixedSample => write!(f, "a sample with both frames and a raw stack"),
            Self::BadRun { offset, word } => write!(
                f,
                "raw stack run word at byte {offset} ({word:#018x}) covers no word or \
                 words past the stack's count"
            ),
            Self::InvalidUtf8 { field, offset } => {
                write!(f, "the {field} at byte {offset} is not UTF-8")
            }
        }
    }
}

impl std::error::Error for SamplesError {}
