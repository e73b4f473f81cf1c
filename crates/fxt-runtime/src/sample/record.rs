//! The `fxt.sample` record (`fxt_format::samples::sample`) in its raw-stack form,
//! encoded by `fxt_format::samples::RawSample` (allocation- and
//! panic-free) into a buffer on the handler's stack, then stored into the
//! reserved slots through the one store protocol (header last; filler
//! first in a crash-safe session).

use fxt_format::encode::Encode;
use fxt_format::samples::RawSample;

use crate::stack::{ARCH, MAX_STACK_WORDS};

use crate::memory::atomic::AtomicU64;
use crate::memory::filler::{filler, Store};

/// Words of the largest sample record.
const MAX_WORDS: usize = RawSample::word_len_for(ARCH, MAX_STACK_WORDS);

/// The record's size in words for `stack_words` words of stack.
pub(crate) const fn words(stack_words: usize) -> usize {
    RawSample::word_len_for(ARCH, stack_words)
}

/// Stores `sample` into `slots` (exactly [`words`] of its stack long).
/// `false`: it cannot be encoded (a stack longer than the format allows;
/// never, as the copy is bounded below it), nothing stored.
pub(crate) fn store(sample: &RawSample<'_>, slots: &[AtomicU64], crash_safe: bool) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use fxt_format::decode::{BlobType, Record};
    use fxt_format::samples::{Arch, RawStack, SampleRecord, Walk};

    /// The stored record decodes as a blob named `fxt.sample` whose payload
    /// the format's decoder reads back as written.
    #[test]
    fn stored_sample_decodes() {
        let regs = [0x1000, 0x7000, 0x7100];
        let stack = [0x2001, 0x3002, 4];
        let s = RawSample {
            timestamp: 123,
            pid: 7,
            tid: 8,
            truncated: true,
            stack: RawStack {
                arch: Arch::X86_64,
                registers: &regs,
                stack_address: 0x7000,
                stack: &stack,
            },
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
            assert_eq!(back.walk, Walk::RawStack);
            assert!(back.truncated);
            assert_eq!(back.as_raw_sample(), Some(s));
        }
        let short: Vec<AtomicU64> = (0..words(2)).map(|_| AtomicU64::new(0)).collect();
        assert!(!store(&s, &short, false), "slots of the wrong size");
    }
}
