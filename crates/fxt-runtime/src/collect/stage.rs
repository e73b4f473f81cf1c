//! [`Stager`]: words staged into big writes (collection runs at memory
//! speed), with the count of bytes and records that went out.

use std::io::{self, Write};

use crate::memory::atomic::{AtomicU64, Ordering};

pub(crate) const STAGE_BYTES: usize = 4 << 20;

/// Stages words into big writes and counts what went out.
pub(crate) struct Stager<W: Write> {
    out: W,
    buf: Vec<u8>,
    pub(crate) bytes: u64,
    pub(crate) records: u64,
}

impl<W: Write> Stager<W> {
    pub(crate) fn new(out: W) -> Stager<W> {
        Stager {
            out,
            buf: Vec::with_capacity(STAGE_BYTES),
            bytes: 0,
            records: 0,
        }
    }

    /// Stages one record (or several) given as words.
    pub(crate) fn words(&mut self, words: &[u64], records: u64) -> io::Result<()> {
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

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.out.write_all(&self.buf)?;
            self.bytes += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    pub(crate) fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.flush()?;
        self.out.flush()?;
        Ok((self.out, self.bytes, self.records))
    }
}
