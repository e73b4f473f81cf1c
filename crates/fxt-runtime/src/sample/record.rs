//! The `fxt.sample` record (the layout of `SAMPLES-FORMAT.md` §1): a blob
//! record (type 5, blob type 1 = data) named inline `fxt.sample`, payload
//! `ts, pid, tid, flags, frames...`. Written by the signal handler: no
//! allocation, stored through the one store protocol.

use fxt_format::encode::header::{self, record_type};

use crate::memory::atomic::AtomicU64;
use crate::memory::filler::Store;

/// The record's inline name.
pub(crate) const NAME: &[u8; 10] = b"fxt.sample";
/// Words of the inline name (10 bytes, padded to 16).
const NAME_WORDS: usize = 2;
/// Payload words before the frames.
const FIXED: usize = 4;

/// One sample to write.
pub(crate) struct Sample<'a> {
    pub(crate) ts: u64,
    pub(crate) pid: u64,
    pub(crate) tid: u64,
    /// How the stack was walked (`unwind::Method`).
    pub(crate) method: u64,
    pub(crate) truncated: bool,
    /// Innermost first (at most 256).
    pub(crate) frames: &'a [u64],
}

impl Sample<'_> {
    /// The record's size in words.
    pub(crate) fn words(&self) -> usize {
        1 + NAME_WORDS + FIXED + self.frames.len()
    }

    /// The header word.
    fn header(&self) -> u64 {
        let payload = (FIXED + self.frames.len()) * 8;
        header::record(record_type::BLOB, self.words())
            | ((0x8000 | NAME.len() as u64) << 16)
            | ((payload as u64) << 32)
            | (1u64 << 48)
    }

    /// The payload's flags word: frame count, method, truncated.
    fn flags(&self) -> u64 {
        self.frames.len() as u64 | (self.method << 16) | ((self.truncated as u64) << 24)
    }

    /// Stores the record into `slots` (exactly [`Sample::words`] long).
    pub(crate) fn store(&self, slots: &[AtomicU64], crash_safe: bool) {
        let store = Store::begin(slots, self.words(), crash_safe);
        let mut name = [0u8; 16];
        name[..NAME.len()].copy_from_slice(NAME);
        let name_lo = u64::from_le_bytes(name[..8].try_into().unwrap_or_default());
        let name_hi = u64::from_le_bytes(name[8..].try_into().unwrap_or_default());
        store.put(1, name_lo);
        store.put(2, name_hi);
        let fixed = [self.ts, self.pid, self.tid, self.flags()];
        for (i, &w) in fixed.iter().chain(self.frames).enumerate() {
            store.put(3 + i, w);
        }
        store.end(self.header());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxt_format::decode::{BlobType, Record};

    /// The record decodes as a blob named `fxt.sample` with the payload
    /// words in order.
    #[test]
    fn sample_record_is_a_named_data_blob() {
        let frames = [0x1000, 0x2001, 0x3002];
        let s = Sample {
            ts: 123,
            pid: 7,
            tid: 8,
            method: 1,
            truncated: true,
            frames: &frames,
        };
        let slots: Vec<AtomicU64> = (0..s.words()).map(|_| AtomicU64::new(0)).collect();
        s.store(&slots, false);
        let words: Vec<u64> = slots
            .iter()
            .map(|w| w.load(crate::memory::atomic::Ordering::Relaxed))
            .collect();
        let mut bytes = Vec::new();
        for w in &words {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        let records = fxt_format::decode::decode_all(&bytes).unwrap();
        let [Record::Blob(blob)] = records.as_slice() else {
            panic!("not one blob: {records:?}");
        };
        assert_eq!(blob.name.as_str(), Some("fxt.sample"));
        assert_eq!(blob.blob_type, BlobType::Data);
        let payload: Vec<u64> = blob
            .payload
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            payload,
            vec![123, 7, 8, 3 | (1 << 16) | (1 << 24), 0x1000, 0x2001, 0x3002]
        );
    }
}
