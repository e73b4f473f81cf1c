//! `fxt.sampling`: how a process's samples were taken — the rate and the
//! sources that timed them — so that a reader turns sample counts into CPU
//! time (each sample stands for one period, `1 / rate` seconds, of its
//! thread's CPU time).
//!
//! Written once per sampling session, at collection, before the modules
//! and symbols. A trace without it (written before it existed, or killed
//! before collection) has samples whose rate is unknown. Payload words:
//!
//! | word | content |
//! |---|---|
//! | 0 | process koid |
//! | 1 | rate: samples per second of a thread's CPU time |
//! | 2 | threads timed by a `perf_event` task clock |
//! | 3 | threads timed by a POSIX CPU-time timer (`SIGPROF`) |
//!
//! Bytes after word 3 are ignored (the layout may grow by appending).

use super::payload::{put_word, PayloadReader};
use super::{encode_named_blob, SamplesError, SAMPLING_NAME};
#[cfg(feature = "decode")]
use crate::decode::Blob as DecodedBlob;
#[cfg(feature = "decode")]
use crate::encode::BlobType;
use crate::encode::{EncodeError, ThreadRef};

/// How a process's samples were taken (encoded and decoded alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sampling {
    /// Process koid.
    pub pid: u64,
    /// Samples per second of a thread's CPU time.
    pub hz: u64,
    /// Threads whose samples a `perf_event` task clock timed.
    pub perf_threads: u64,
    /// Threads whose samples a CPU-time timer timed.
    pub timer_threads: u64,
}

impl Sampling {
    /// The CPU time one sample stands for, in nanoseconds (`None` for a
    /// rate of 0).
    pub fn period_ns(&self) -> Option<u64> {
        1_000_000_000u64.checked_div(self.hz)
    }

    /// The sources that timed the samples, as a reader names them:
    /// `perf_event`, `timer`, both, or `none`.
    pub fn source(&self) -> &'static str {
        match (self.perf_threads > 0, self.timer_threads > 0) {
            (true, false) => "perf_event",
            (false, true) => "timer",
            (true, true) => "perf_event and timer",
            (false, false) => "none",
        }
    }

    /// The payload bytes.
    pub fn payload(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        for w in [self.pid, self.hz, self.perf_threads, self.timer_threads] {
            put_word(&mut out, w);
        }
        out
    }

    /// Appends the `fxt.sampling` blob record to `out`; returns the words
    /// appended.
    pub fn encode_records(&self, out: &mut Vec<u64>) -> Result<usize, EncodeError> {
        // Four words always fit one blob record: never a split group, so
        // the timestamp and thread are never written.
        let thread = ThreadRef::Inline {
            process: self.pid,
            thread: 0,
        };
        encode_named_blob(SAMPLING_NAME, &self.payload(), 0, thread, out)
    }

    /// Decodes an `fxt.sampling` payload.
    pub fn decode(payload: &[u8]) -> Result<Self, SamplesError> {
        let mut r = PayloadReader::new(payload);
        Ok(Self {
            pid: r.word("sampling process koid")?,
            hz: r.word("sampling rate")?,
            perf_threads: r.word("sampling perf_event threads")?,
            timer_threads: r.word("sampling timer threads")?,
        })
    }

    #[cfg(feature = "decode")]
    /// Decodes `blob` if it is a data blob named [`SAMPLING_NAME`]; `None`
    /// for any other blob.
    pub fn from_blob(blob: &DecodedBlob) -> Option<Result<Self, SamplesError>> {
        (blob.blob_type == BlobType::Data && blob.name.as_str() == Some(SAMPLING_NAME))
            .then(|| Self::decode(&blob.payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode_all, Record};

    #[test]
    fn round_trip_and_errors() {
        let s = Sampling {
            pid: 7,
            hz: 997,
            perf_threads: 2,
            timer_threads: 1,
        };
        let mut words = Vec::new();
        s.encode_records(&mut words).unwrap();
        let bytes = crate::encode::words_to_bytes(&words);
        let records = decode_all(&bytes).unwrap();
        let [Record::Blob(blob)] = records.as_slice() else {
            panic!("{records:?}")
        };
        assert_eq!(Sampling::from_blob(blob), Some(Ok(s)));
        assert_eq!(s.source(), "perf_event and timer");
        assert_eq!(s.period_ns(), Some(1_003_009));
        assert_eq!(Sampling { hz: 0, ..s }.period_ns(), None);
        // Appended words are ignored; a cut payload is an error.
        let mut longer = s.payload();
        longer.extend_from_slice(&[0; 8]);
        assert_eq!(Sampling::decode(&longer), Ok(s));
        assert!(matches!(
            Sampling::decode(&s.payload()[..24]),
            Err(SamplesError::Truncated { .. })
        ));
    }
}
