//! Userspace object records (type 6) and kernel object records (type 7).
//!
//! | bits | userspace object header | kernel object header |
//! |---|---|---|
//! | `[0 .. 3]` | 6 | 7 |
//! | `[4 .. 15]` | size in words | size in words |
//! | `[16 .. 23]` | process (thread ref) | kernel object type (`ZX_OBJ_TYPE_*`) |
//! | `[24 .. 39]` | name (string ref) | name (string ref) |
//! | `[40 .. 43]` | number of arguments | number of arguments |
//! | `[44 .. 63]` | 0 | 0 |
//!
//! A userspace object record continues with the pointer word, the process
//! koid word (inline process only), the name stream (inline name only) and
//! the arguments; a kernel object record with the koid word, the name stream
//! and the arguments. By convention a thread's kernel object record carries a
//! koid argument `process`.

use super::args::Arg;
use super::header::{self, record_type};
use super::refs::{ProcessRef, StringRef};
use super::{args_words, check_record_words, write_args, Encode, EncodeError, WordWriter};

/// `ZX_OBJ_TYPE_PROCESS`.
pub const OBJ_TYPE_PROCESS: u8 = 1;
/// `ZX_OBJ_TYPE_THREAD`.
pub const OBJ_TYPE_THREAD: u8 = 2;

/// Describes an object of the program identified by a pointer value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UserspaceObject<'a> {
    /// The pointer value that pointer arguments refer to.
    pub pointer: u64,
    /// The process the object lives in.
    pub process: ProcessRef,
    /// A label for the object.
    pub name: StringRef<'a>,
    /// Up to 15 arguments.
    pub args: &'a [Arg<'a>],
}

impl Encode for UserspaceObject<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        let process = matches!(self.process, ProcessRef::Inline(_)) as usize;
        check_record_words(2 + process + self.name.stream_words() + args_words(self.args)?)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::USERSPACE_OBJECT, words)
                | ((self.process.encoded()? as u64) << 16)
                | ((self.name.encoded()? as u64) << 24)
                | ((self.args.len() as u64) << 40),
        )?;
        w.word(self.pointer)?;
        if let ProcessRef::Inline(koid) = self.process {
            w.word(koid)?;
        }
        self.name.write_stream(&mut w)?;
        write_args(&mut w, self.args)?;
        Ok(words)
    }
}

/// Describes a kernel object (a process, a thread, ...) identified by a koid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelObject<'a> {
    /// The koid that koid arguments refer to.
    pub koid: u64,
    /// `ZX_OBJ_TYPE_*` ([`OBJ_TYPE_PROCESS`], [`OBJ_TYPE_THREAD`], ...).
    pub object_type: u8,
    /// A label for the object (for processes and threads: their name).
    pub name: StringRef<'a>,
    /// Up to 15 arguments.
    pub args: &'a [Arg<'a>],
}

impl Encode for KernelObject<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_record_words(2 + self.name.stream_words() + args_words(self.args)?)
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::KERNEL_OBJECT, words)
                | ((self.object_type as u64) << 16)
                | ((self.name.encoded()? as u64) << 24)
                | ((self.args.len() as u64) << 40),
        )?;
        w.word(self.koid)?;
        self.name.write_stream(&mut w)?;
        write_args(&mut w, self.args)?;
        Ok(words)
    }
}
