//! The `fxt.sample` record (SAMPLES-FORMAT.md §1), encoded by
//! `fxt_format::samples::Sample` (allocation- and panic-free) into a
//! buffer on the handler's stack, then stored into the reserved slots
//! through the one store protocol (header last; filler first in a
//! crash-safe session).

use fxt_format::encode::Encode;
use fxt_format::samples::{Sample, Walk, MAX_FRAMES};

use crate::memory::atomic::AtomicU64;
use crate::memory::filler::{filler, Store};

/// Words of the largest sample record.
const MAX_WORDS: usize = Sample::word_len_for(MAX_FRAMES);

/// The record's size in words for `frames` addresses.
pub(crate) const fn words(frames: usize) -> usize {
    Sample::word_len_for(frames)
}

/// Stores `sample` into `slots` (exactly [`words`] of its frames long).
/// `false`: it cannot be encoded (more than 256 frames; never, as the
/// walk stops there), nothing stored.
pub(crate) fn store(sample: &Sample<'_>, slots: &[AtomicU64], crash_safe: bool) -> bool {
    let mut buf = [0u64; MAX_WORDS];
    let Ok(n) = sample.encode(&mut buf) else {
        return false;
    };
    if n != slots.len() {
        return false;
    }
    let store = Store::begin(slots, n, crash_safe);
    for (i, &w) in buf[..n].iter().enumerate().skip(1) {
        store.put(i, w);
    }
    store.end(buf[0]);
    true
}

/// Stores a filler over `slots` (a record a reader skips).
pub(crate) fn store_filler(slots: &[AtomicU64]) {
    Store::begin(slots, slots.len(), false).end(filler(slots.len()));
}

/// The format's walk for the unwinder's method.
pub(crate) fn walk(method: super::unwind::Method) -> Walk {
    match method {
        super::unwind::Method::Tables => Walk::UnwindTables,
        super::unwind::Method::FramePointers => Walk::FramePointers,
        super::unwind::Method::PcOnly => Walk::PcOnly,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxt_format::decode::{BlobType, Record};
    use fxt_format::samples::SampleRecord;

    /// The stored record decodes as a blob named `fxt.sample` whose payload
    /// the format's decoder reads back as written.
    #[test]
    fn stored_sample_decodes() {
        let frames = [0x1000, 0x2001, 0x3002];
        let s = Sample {
            timestamp: 123,
            pid: 7,
            tid: 8,
            walk: Walk::UnwindTables,
            truncated: true,
            frames: &frames,
        };
        for crash_safe in [false, true] {
            let slots: Vec<AtomicU64> = (0..words(3)).map(|_| AtomicU64::new(0)).collect();
            assert!(store(&s, &slots, crash_safe));
            let mut bytes = Vec::new();
            for w in &slots {
                let w = w.load(crate::memory::atomic::Ordering::Relaxed);
                bytes.extend_from_slice(&w.to_le_bytes());
            }
            let records = fxt_format::decode::decode_all(&bytes).unwrap();
            let [Record::Blob(blob)] = records.as_slice() else {
                panic!("not one blob: {records:?}");
            };
            assert_eq!(blob.name.as_str(), Some("fxt.sample"));
            assert_eq!(blob.blob_type, BlobType::Data);
            let back = SampleRecord::decode(&blob.payload).unwrap();
            assert_eq!(back.timestamp, 123);
            assert_eq!((back.pid, back.tid), (7, 8));
            assert_eq!(back.walk, Walk::UnwindTables);
            assert!(back.truncated);
            assert_eq!(back.frames, frames);
        }
        let short: Vec<AtomicU64> = (0..words(2)).map(|_| AtomicU64::new(0)).collect();
        assert!(!store(&s, &short, false), "slots of the wrong size");
    }
}
