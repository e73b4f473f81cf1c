//! Reading words and streams out of one record (or one argument) whose size
//! is already known, with every read checked against that size.

use super::error::DecodeError;

/// What a cursor walks over, which decides the error a short read gives.
#[derive(Clone, Copy)]
pub(crate) enum Region {
    /// A whole record of the given record type.
    Record(u8),
    /// One argument.
    Argument,
}

/// A read position inside the bytes of one record or argument.
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes[0]` in the input.
    base: u64,
    region: Region,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`, which begin at input offset `base`.
    #[inline]
    pub(crate) fn new(bytes: &'a [u8], base: u64, region: Region) -> Self {
        Self {
            bytes,
            pos: 0,
            base,
            region,
        }
    }

    /// Input offset of the next unread byte.
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not read yet.
    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The error for a field that would need `needed` more bytes.
    #[cold]
    fn too_short(&self, needed: u64) -> DecodeError {
        let size_bytes = self.bytes.len() as u64;
        let needed_bytes = (self.pos as u64).saturating_add(needed);
        match self.region {
            Region::Record(record_type) => DecodeError::RecordTooShort {
                offset: self.base,
                record_type,
                size_bytes,
                needed_bytes,
            },
            Region::Argument => DecodeError::ArgumentTooShort {
                offset: self.base,
                size_bytes,
                needed_bytes,
            },
        }
    }

    /// Reads one little-endian word.
    #[inline]
    pub(crate) fn word(&mut self) -> Result<u64, DecodeError> {
        let end = self.pos + 8;
        match self.bytes.get(self.pos..end).map(<[u8; 8]>::try_from) {
            Some(Ok(b)) => {
                self.pos = end;
                Ok(u64::from_le_bytes(b))
            }
            _ => Err(self.too_short(8)),
        }
    }

    /// Reads a stream of `len` bytes and skips its padding to the next word.
    #[inline]
    pub(crate) fn stream(&mut self, len: u64) -> Result<&'a [u8], DecodeError> {
        let padded = len.div_ceil(8).saturating_mul(8);
        if padded > self.remaining() as u64 {
            return Err(self.too_short(padded));
        }
        // Both fit in usize: they are at most `remaining()`.
        let start = self.pos;
        self.pos += padded as usize;
        Ok(&self.bytes[start..start + len as usize])
    }

    /// Reads a stream of `len` bytes that must be UTF-8.
    #[inline]
    pub(crate) fn utf8(&mut self, len: u64) -> Result<&'a str, DecodeError> {
        let offset = self.offset();
        let bytes = self.stream(len)?;
        std::str::from_utf8(bytes).map_err(|_| DecodeError::InvalidUtf8 { offset })
    }

    /// Takes the next `len` bytes as a region of their own (an argument).
    /// `None` if fewer remain.
    #[inline]
    pub(crate) fn take(&mut self, len: usize) -> Option<(&'a [u8], u64)> {
        let offset = self.offset();
        let end = self.pos.checked_add(len)?;
        let bytes = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some((bytes, offset))
    }

    /// Looks at the next word without consuming it.
    #[inline]
    pub(crate) fn peek_word(&self) -> Result<u64, DecodeError> {
        match self
            .bytes
            .get(self.pos..self.pos + 8)
            .map(<[u8; 8]>::try_from)
        {
            Some(Ok(b)) => Ok(u64::from_le_bytes(b)),
            _ => Err(self.too_short(8)),
        }
    }
}
