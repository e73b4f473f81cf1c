//! Reading and writing the words and padded byte strings of a payload.

use super::SamplesError;

/// Reads a payload front to back; every read is bounds-checked and names
/// the field it was for.
pub(crate) struct PayloadReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> PayloadReader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Bytes left from the current position.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    fn take(&mut self, field: &'static str, len: usize) -> Result<&'a [u8], SamplesError> {
        let truncated = SamplesError::Truncated {
            field,
            offset: self.pos,
            needed: len,
            available: self.remaining(),
        };
        let end = self.pos.checked_add(len).ok_or(truncated.clone())?;
        let bytes = self.bytes.get(self.pos..end).ok_or(truncated)?;
        self.pos = end;
        Ok(bytes)
    }

    pub(crate) fn word(&mut self, field: &'static str) -> Result<u64, SamplesError> {
        let bytes = self.take(field, 8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(word))
    }

    /// `len` bytes of a string padded with zeros to 8 bytes.
    pub(crate) fn padded(
        &mut self,
        field: &'static str,
        len: usize,
    ) -> Result<&'a [u8], SamplesError> {
        let padded = self.take(field, len.div_ceil(8) * 8)?;
        Ok(padded.get(..len).unwrap_or_default())
    }

    /// Like [`Self::padded`], as UTF-8.
    pub(crate) fn text(&mut self, field: &'static str, len: usize) -> Result<String, SamplesError> {
        let offset = self.pos;
        let bytes = self.padded(field, len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| SamplesError::InvalidUtf8 { field, offset })
    }
}

/// Appends `word` little-endian.
pub(crate) fn put_word(out: &mut Vec<u8>, word: u64) {
    out.extend_from_slice(&word.to_le_bytes());
}

/// Appends `bytes` padded with zeros to 8 bytes.
pub(crate) fn put_padded(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(bytes);
    out.resize(out.len() + (8 - bytes.len() % 8) % 8, 0);
}

/// Bytes `len` bytes take once padded.
pub(crate) const fn padded_len(len: usize) -> usize {
    len.div_ceil(8) * 8
}
