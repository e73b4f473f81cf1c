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
//! | 4 | samples the process wrote, from either source |
//! | 5 | periods the kernel merged into the timer's signals (their `si_overrun`, summed) |
//!
//! A timer is checked on the kernel's scheduler tick (`CONFIG_HZ`, often
//! 250), so above that rate a signal stands for several periods: the
//! process's samples stood for words 4 and 5 together, which let a reader
//! weight samples by the periods they stood for (on average over the
//! process: a sample does not say its source). Words 4 and 5 are absent
//! from traces written before them (read as 0: each sample one period). Bytes after the last word are ignored (the layout
//! may grow by appending).

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
    /// Samples the process wrote, from either source (0: not recorded).
    pub samples: u64,
    /// Periods the kernel merged into the timer's signals: the samples
    /// stood for `samples + merged_periods` periods.
    pub merged_periods: u64,
}

impl Sampling {
    /// The period of the rate asked for, in nanoseconds (`None` for a
    /// rate of 0).
    pub fn period_ns(&self) -> Option<u64> {
        1_000_000_000u64.checked_div(self.hz)
    }

    /// The periods the process's samples stood for, if recorded.
    fn periods(&self) -> Option<u64> {
        (self.samples > 0).then(|| self.samples.saturating_add(self.merged_periods))
    }

    /// The CPU time one sample stands for on average, in nanoseconds: the
    /// period, times the periods the samples stood for over their number
    /// (a timer's signal may stand for several, see the module docs).
    /// `None` for a rate of 0.
    pub fn cpu_ns_per_sample(&self) -> Option<u64> {
        let period = self.period_ns()?;
        Some(match self.periods() {
            Some(periods) => {
                let ns = u128::from(period) * u128::from(periods) / u128::from(self.samples);
                u64::try_from(ns).unwrap_or(u64::MAX)
            }
            None => period,
        })
    }

    /// The rate the samples came at: the rate asked for, or less where a
    /// timer's signals stood for several periods each.
    pub fn effective_hz(&self) -> u64 {
        match self.periods() {
            Some(periods) if periods > 0 => {
                let hz = u128::from(self.hz) * u128::from(self.samples) / u128::from(periods);
                u64::try_from(hz).unwrap_or(u64::MAX)
            }
            _ => self.hz,
        }
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
        let mut out = Vec::with_capacity(48);
        let words = [
            self.pid,
            self.hz,
            self.perf_threads,
            self.timer_threads,
            self.samples,
            self.merged_periods,
        ];
        for w in words {
            put_word(&mut out, w);
        }
        out
    }

    /// Appends the `fxt.sampling` blob record to `out`; returns the words
    /// appended.
    pub fn encode_records(&self, out: &mut Vec<u64>) -> Result<usize, EncodeError> {
        // Six words always fit one blob record: never a split group, so
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
        let pid = r.word("sampling process koid")?;
        let hz = r.word("sampling rate")?;
        let perf_threads = r.word("sampling perf_event threads")?;
        let timer_threads = r.word("sampling timer threads")?;
        // Absent from traces written before them.
        let (samples, merged_periods) = if r.remaining() == 0 {
            (0, 0)
        } else {
            (
                r.word("sampling samples")?,
                r.word("sampling merged periods")?,
            )
        };
        Ok(Self {
            pid,
            hz,
            perf_threads,
            timer_threads,
            samples,
            merged_periods,
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
            samples: 500,
            merged_periods: 300,
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
        // A trace written before words 4 and 5: each sample one period.
        let old = Sampling::decode(&s.payload()[..32]).unwrap();
        assert_eq!((old.samples, old.merged_periods), (0, 0));
        assert_eq!(old.cpu_ns_per_sample(), old.period_ns());
        assert_eq!(old.effective_hz(), 997);
        assert!(matches!(
            Sampling::decode(&s.payload()[..40]),
            Err(SamplesError::Truncated { .. })
        ));
    }

    /// 400 perf samples of one period and 100 timer signals of four (300
    /// periods merged): 800 periods in 500 samples, 1.6 periods a sample
    /// on average.
    #[test]
    fn a_timers_merged_periods_weigh_its_samples() {
        let s = Sampling {
            pid: 7,
            hz: 1000,
            perf_threads: 1,
            timer_threads: 1,
            samples: 500,
            merged_periods: 300,
        };
        assert_eq!(s.period_ns(), Some(1_000_000));
        assert_eq!(s.cpu_ns_per_sample(), Some(1_600_000));
        assert_eq!(s.effective_hz(), 625);
        // A timer alone at a 250 Hz tick: four periods a signal.
        let timer = Sampling {
            perf_threads: 0,
            samples: 175,
            merged_periods: 525,
            ..s
        };
        assert_eq!(timer.cpu_ns_per_sample(), Some(4_000_000));
        assert_eq!(timer.effective_hz(), 250);
        // Counts from a damaged record saturate, never wrap.
        let bad = Sampling {
            merged_periods: u64::MAX,
            ..s
        };
        assert_eq!(bad.effective_hz(), 0);
    }
}
