//! [`Stager`]: words staged into big writes (collection runs at memory
//! speed), with the count of bytes and records that went out; for a
//! drained session, chunks queued to go out straight from the ring
//! ([`super::direct`]).

use std::io::{self, Write};

use super::direct::{pad_chunk, DirectFile};
use crate::memory::atomic::{AtomicU64, Ordering};

pub(crate) const STAGE_BYTES: usize = 4 << 20;

/// Stages words into big writes and counts what went out.
pub(crate) struct Stager<'r, W: Write> {
    out: W,
    /// A drained session's file: staged bytes and queued chunks go there
    /// (and `out` is unused).
    direct: Option<DirectFile>,
    /// Chunks of the ring queued to be written after `buf`, padded to
    /// whole blocks ([`Stager::queue_chunk`]).
    queued: Vec<&'r [AtomicU64]>,
    buf: Vec<u8>,
    pub(crate) bytes: u64,
    pub(crate) records: u64,
    /// Of `records`, fillers padding a drained session's file to blocks.
    pub(crate) fillers: u64,
}

impl<W: Write> Stager<'_, W> {
    pub(crate) fn new(out: W) -> Self {
        Stager {
            out,
            direct: None,
            queued: Vec::new(),
            buf: Vec::with_capacity(STAGE_BYTES),
            bytes: 0,
            records: 0,
            fillers: 0,
        }
    }
}

impl<'r> Stager<'r, super::Out<'static>> {
    /// A stager writing to a drained session's file.
    pub(crate) fn direct(file: DirectFile) -> Self {
        // A zero-sized writer: boxing it allocates nothing.
        let mut s = Stager::new(Box::new(io::sink()) as super::Out<'static>);
        s.direct = Some(file);
        s
    }
}

impl<'r, W: Write> Stager<'r, W> {
    /// The drained session's file, if this stager writes one.
    pub(crate) fn direct_file(&mut self) -> Option<&mut DirectFile> {
        self.direct.as_mut()
    }

    /// Continues counting from what an earlier stager wrote (a snapshot
    /// that copied a drained session's file so far).
    pub(crate) fn counted(mut self, bytes: u64, records: u64, fillers: u64) -> Self {
        (self.bytes, self.records, self.fillers) = (bytes, records, fillers);
        self
    }

    /// Queues the released chunk `chunk` (its first `words` words hold
    /// `records` records) to be written straight from the ring after what
    /// is staged, when the output is a drained session's file; `false`
    /// otherwise (stage its words instead). The caller owns the chunk until
    /// the next [`Stager::flush`] returns (see [`pad_chunk`]).
    pub(crate) fn queue_chunk(
        &mut self,
        chunk: &'r [AtomicU64],
        words: usize,
        records: u64,
    ) -> bool {
        if self.direct.is_none() {
            return false;
        }
        let (blocks, padded) = pad_chunk(chunk, words);
        self.queued.push(blocks);
        self.records += records + padded as u64;
        self.fillers += padded as u64;
        true
    }

    /// Stages one record (or several) given as words.
    ///
    /// A call may span several flushes, which for a drained session's file
    /// pad what is staged to a block with a filler: only the first can hold
    /// anything else (whole records staged before); every later one holds
    /// exactly [`STAGE_BYTES`], whole blocks, so no filler ever lands inside
    /// a record (`tests/drain.rs` writes 6 and 9 MB blobs).
    pub(crate) fn words(&mut self, words: &[u64], records: u64) -> io::Result<()> {
        if !self.queued.is_empty() {
            // Queued chunks go out before anything staged after them.
            self.flush()?;
        }
        for part in words.chunks(STAGE_BYTES / 8) {
            if self.buf.len() + part.len() * 8 > STAGE_BYTES {
                self.flush()?;
            }
            for w in part {
                self.buf.extend_from_slice(&w.to_le_bytes());
            }
        }
        self.records += records;
        Ok(())
    }

    /// Stages atomic words (Relaxed loads: the caller established
    /// visibility with an Acquire load of the committed length).
    pub(crate) fn atomic_words(&mut self, words: &[AtomicU64], records: u64) -> io::Result<()> {
        if !self.queued.is_empty() {
            self.flush()?;
        }
        for part in words.chunks(STAGE_BYTES / 8) {
            if self.buf.len() + part.len() * 8 > STAGE_BYTES {
                self.flush()?;
            }
            let start = self.buf.len();
            self.buf.resize(start + part.len() * 8, 0);
            for (dst, w) in self.buf[start..].chunks_exact_mut(8).zip(part) {
                dst.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
        }
        self.records += records;
        Ok(())
    }

    /// Writes what is staged and queued. A drained session's file gets
    /// whole blocks (staged bytes padded with a filler).
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        match &mut self.direct {
            Some(file) => {
                if self.queued.is_empty() && self.buf.is_empty() {
                    return Ok(());
                }
                let r = file.write(&mut self.buf, &self.queued, false);
                self.queued.clear();
                let (bytes, padded) = r?;
                self.bytes += bytes;
                self.records += padded as u64;
                self.fillers += padded as u64;
            }
            None => {
                if !self.buf.is_empty() {
                    self.out.write_all(&self.buf)?;
                    self.bytes += self.buf.len() as u64;
                    self.buf.clear();
                }
            }
        }
        Ok(())
    }

    /// Writes everything left (a drained session's file: unpadded, so it
    /// ends with its last record) and returns the output with the bytes
    /// and records written.
    pub(crate) fn finish(mut self) -> io::Result<(W, u64, u64)> {
        match &mut self.direct {
            Some(file) => {
                let r = file.write(&mut self.buf, &self.queued, true);
                self.queued.clear();
                self.bytes += r?.0;
            }
            None => self.flush()?,
        }
        self.out.flush()?;
        Ok((self.out, self.bytes, self.records))
    }
}
