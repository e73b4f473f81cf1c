//! CPU samples (issue 31) for the commands that read them: the samples of
//! a trace with the names of their frames ([`names`]), the slices open on
//! a sample's thread when it was taken ([`timeline`]), and one line per
//! sample, module list or symbol table for `fxt dump` ([`lines`]), and the
//! Perfetto packets of samples moved to another clock ([`perfetto`]).
//!
//! The records themselves (`fxt.sample`, `fxt.modules`, `fxt.symbols`) are
//! `fxt_format::samples`; what they become at collection is `fxt_symbols`.

pub mod fold;
pub mod lines;
pub mod names;
pub mod perfetto;
pub mod timeline;

use fxt_format::decode::Record;
use fxt_format::samples::{SampleBlob, SampleRecord, MAX_SAMPLE_HZ};

pub use names::{Gather, Names};
pub use timeline::Timeline;

/// Whether `trace` may hold a record named `name`: whether its bytes
/// hold the name anywhere (a string record or an inline name holds it
/// whole). A SIMD search (`memchr`), so that a trace without samples is
/// not walked a second time at the cost of a first.
pub fn may_hold(trace: &[u8], name: &str) -> bool {
    memchr::memmem::find(trace, name.as_bytes()).is_some()
}

/// The values of a sampling rate option (`--sample HZ`): 0 (off) to
/// [`MAX_SAMPLE_HZ`]. clap refuses any other with exit status 2 before
/// anything runs.
pub fn rate_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(0..=i64::from(MAX_SAMPLE_HZ))
}

/// A sample and where it was read.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// The provider whose records it was among.
    pub provider: Option<u32>,
    /// Its timestamp in nanoseconds.
    pub ns: u64,
    /// The sample.
    pub sample: SampleRecord,
}

/// The sample a record holds, if it is an `fxt.sample` blob that decodes
/// (`Some(Err)` for one that does not).
pub fn sample_of(record: &Record) -> Option<Result<SampleRecord, String>> {
    let Record::Blob(blob) = record else {
        return None;
    };
    match SampleBlob::from_blob(blob)? {
        Ok(SampleBlob::Sample(s)) => Some(Ok(s)),
        Ok(_) => None,
        Err(e) => Some(Err(e.to_string())),
    }
}

/// Collects a trace's samples during a walk, with their providers and
/// timestamps in nanoseconds.
#[derive(Default)]
pub struct Collector {
    /// The samples, in file order.
    pub samples: Vec<Sampled>,
    /// `fxt.sample` blobs whose payload did not decode.
    pub malformed: u64,
}

impl Collector {
    /// Takes the record if it is a sample.
    pub fn see(&mut self, provider: Option<u32>, ticks_per_second: u64, record: &Record) {
        match sample_of(record) {
            Some(Ok(sample)) => self.samples.push(Sampled {
                provider,
                ns: fxt_format::time::ticks_to_ns(sample.timestamp, ticks_per_second),
                sample,
            }),
            Some(Err(_)) => self.malformed += 1,
            None => {}
        }
    }
}
