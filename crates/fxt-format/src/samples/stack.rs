//! The stack a CPU sample (`fxt.sample`) and a sampled allocation
//! (`fxt.alloc`) carry, written and read the same way in both: bits
//! `[0 .. 15]` of the record's shape word the frame count N (at most
//! [`MAX_FRAMES`]), `[16 .. 23]` the [`Walk`], `[24]` truncated; after the
//! record's fixed words, N code addresses (innermost first) or, for walk
//! [`Walk::RawStack`] (N is 0), a [raw stack](super::raw_stack).

use super::payload::PayloadReader;
use super::raw_stack::RawStackRecord;
use super::walk::Walk;
use super::{SamplesError, MAX_FRAMES};

/// A decoded stack: a frame list, or a raw stack for the reader to unwind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Stack {
    /// How the stack was walked.
    pub walk: Walk,
    /// Whether the walk stopped before the outermost frame.
    pub truncated: bool,
    /// Code addresses, innermost first (empty for a raw stack).
    pub frames: Vec<u64>,
    /// The registers and stack copy of a [`Walk::RawStack`] stack.
    pub raw_stack: Option<RawStackRecord>,
}

impl Stack {
    /// The bits of a shape word the stack takes.
    pub(crate) const SHAPE_BITS: u64 = 0x1ff_ffff;

    /// The stack's bits of a shape word, for `frames` addresses.
    pub(crate) fn shape(frames: usize, walk: Walk, truncated: bool) -> u64 {
        frames as u64 | (u64::from(walk.value()) << 16) | (u64::from(truncated) << 24)
    }

    /// Reads the stack that `shape` (a record's shape word, its other bits
    /// checked by the caller) describes from `r`; `address_field` names
    /// an address in errors.
    pub(crate) fn read(
        r: &mut PayloadReader<'_>,
        shape: u64,
        address_field: &'static str,
    ) -> Result<Stack, SamplesError> {
        let count = (shape & 0xffff) as usize;
        if count > MAX_FRAMES {
            return Err(SamplesError::TooManyFrames { count });
        }
        let value = ((shape >> 16) & 0xff) as u8;
        let walk = Walk::from_value(value).ok_or(SamplesError::UnknownWalk(value))?;
        let raw = walk == Walk::RawStack;
        if raw && count != 0 {
            return Err(SamplesError::MixedSample);
        }
        let mut frames = Vec::with_capacity(count.min(r.remaining() / 8));
        for _ in 0..count {
            frames.push(r.word(address_field)?);
        }
        let raw_stack = if raw {
            Some(RawStackRecord::read(r)?)
        } else {
            None
        };
        Ok(Stack {
            walk,
            truncated: shape >> 24 & 1 == 1,
            frames,
            raw_stack,
        })
    }

    /// The stack with the frames a reader unwound from its raw stack (the
    /// raw stack dropped, `walk` now [`Walk::UnwindTables`], `truncated`
    /// as the unwinding ended, at most [`MAX_FRAMES`] frames kept).
    pub fn with_frames(mut self, frames: Vec<u64>, truncated: bool) -> Stack {
        self.frames = frames;
        self.frames.truncate(MAX_FRAMES);
        self.walk = Walk::UnwindTables;
        self.truncated = truncated;
        self.raw_stack = None;
        self
    }
}
