//! `fxt.symbols`: the sampled addresses of a process resolved at
//! collection, so any machine reads names without the binaries.
//!
//! Payload words:
//!
//! | word | content |
//! |---|---|
//! | 0 | process koid |
//! | 1 | entry count K |
//! | then K entries | the address (exactly as in samples), frame count F (0 = unresolved), F frames |
//!
//! A frame, innermost inlined frame first (the last is the function that
//! contains the address): a word with bits `[0 .. 31]` line (0 = unknown),
//! `[32 .. 47]` function-name length L, `[48 .. 63]` file-path length P;
//! L bytes of demangled name (without the hash suffix) padded to 8; P bytes
//! of file path padded to 8. Names and paths longer than 65535 bytes are cut
//! at a character boundary.

use super::payload::{padded_len, put_padded, put_word, PayloadReader};
use super::{encode_named_blob, SamplesError, SYMBOLS_NAME};
use crate::encode::stream::truncate_str_to;
use crate::encode::{EncodeError, ThreadRef};

/// Longest name or path a frame holds (its 16-bit length field).
const MAX_TEXT: usize = 0xffff;

/// One frame of an address, borrowed for encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Demangled function name.
    pub function: &'a str,
    /// Source file ("" if unknown).
    pub file: &'a str,
    /// Line (0 if unknown).
    pub line: u32,
}

/// One address and its frames, borrowed for encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// The address as it appears in samples.
    pub address: u64,
    /// Innermost inlined frame first; empty if unresolved.
    pub frames: &'a [Frame<'a>],
}

/// The symbols of one process, ready to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbols<'a> {
    /// Process koid.
    pub pid: u64,
    /// Its resolved addresses.
    pub symbols: &'a [Symbol<'a>],
}

impl Symbols<'_> {
    /// Bytes of the payload.
    pub fn payload_len(&self) -> usize {
        16 + self
            .symbols
            .iter()
            .map(|s| {
                16 + s
                    .frames
                    .iter()
                    .map(|f| {
                        8 + padded_len(truncate_str_to(f.function, MAX_TEXT).len())
                            + padded_len(truncate_str_to(f.file, MAX_TEXT).len())
                    })
                    .sum::<usize>()
            })
            .sum::<usize>()
    }

    /// The payload bytes.
    pub fn payload(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.payload_len());
        put_word(&mut out, self.pid);
        put_word(&mut out, self.symbols.len() as u64);
        for s in self.symbols {
            put_word(&mut out, s.address);
            put_word(&mut out, s.frames.len() as u64);
            for f in s.frames {
                let function = truncate_str_to(f.function, MAX_TEXT);
                let file = truncate_str_to(f.file, MAX_TEXT);
                put_word(
                    &mut out,
                    u64::from(f.line) | (function.len() as u64) << 32 | (file.len() as u64) << 48,
                );
                put_padded(&mut out, function.as_bytes());
                put_padded(&mut out, file.as_bytes());
            }
        }
        out
    }

    /// Appends the `fxt.symbols` blob record (or split blob group, stamped
    /// `timestamp` on `thread`) to `out`; returns the words appended.
    pub fn encode_records(
        &self,
        timestamp: u64,
        thread: ThreadRef,
        out: &mut Vec<u64>,
    ) -> Result<usize, EncodeError> {
        encode_named_blob(SYMBOLS_NAME, &self.payload(), timestamp, thread, out)
    }
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameEntry {
    /// Demangled function name.
    pub function: String,
    /// Source file ("" if unknown).
    pub file: String,
    /// Line (0 if unknown).
    pub line: u32,
}

impl FrameEntry {
    /// The borrowed form, for encoding.
    pub fn as_frame(&self) -> Frame<'_> {
        Frame {
            function: &self.function,
            file: &self.file,
            line: self.line,
        }
    }
}

/// One decoded address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SymbolEntry {
    /// The address as it appears in samples.
    pub address: u64,
    /// Innermost inlined frame first; empty if unresolved.
    pub frames: Vec<FrameEntry>,
}

/// A decoded `fxt.symbols` payload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SymbolsRecord {
    /// Process koid.
    pub pid: u64,
    /// Its resolved addresses.
    pub symbols: Vec<SymbolEntry>,
}

impl SymbolsRecord {
    /// Decodes an `fxt.symbols` payload (joined, if it was split). Bytes
    /// after the last entry are ignored.
    pub fn decode(payload: &[u8]) -> Result<Self, SamplesError> {
        let mut r = PayloadReader::new(payload);
        let pid = r.word("symbols process koid")?;
        let count = r.word("symbols entry count")?;
        // Counts bound no allocation: each entry takes at least 16 bytes,
        // each frame at least 8.
        let fits = r.remaining() / 16;
        let mut symbols = Vec::with_capacity(usize::try_from(count).unwrap_or(fits).min(fits));
        for _ in 0..count {
            let address = r.word("symbol address")?;
            let frame_count = r.word("symbol frame count")?;
            let fits = r.remaining() / 8;
            let mut frames =
                Vec::with_capacity(usize::try_from(frame_count).unwrap_or(fits).min(fits));
            for _ in 0..frame_count {
                let shape = r.word("symbol frame")?;
                let function = r.text("function name", (shape >> 32 & 0xffff) as usize)?;
                let file = r.text("file path", (shape >> 48) as usize)?;
                frames.push(FrameEntry {
                    function,
                    file,
                    line: shape as u32,
                });
            }
            symbols.push(SymbolEntry { address, frames });
        }
        Ok(Self { pid, symbols })
    }
}
