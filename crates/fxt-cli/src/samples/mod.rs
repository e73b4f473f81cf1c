//! CPU samples (issue 31) for the commands that read them: the samples of
//! a trace with the names of their frames ([`names`]), the slices open on
//! a sample's thread when it was taken ([`timeline`]), and one line per
//! sample, module list or symbol table for `fxt dump` ([`lines`]), the
//! Perfetto packets of samples moved to another clock ([`perfetto`]), and
//! the records that show a trace's samples in a viewer, with those drawn
//! from its compact records ([`with_appendix`], [`delivery_for`]).
//!
//! The records themselves (`fxt.sample`, `fxt.modules`, `fxt.symbols`) are
//! `fxt_format::samples`; what they become at collection is `fxt_symbols`.

pub mod allocs;
pub mod fold;
pub mod lines;
pub mod names;
pub mod perfetto;
pub mod timeline;

use fxt_format::decode::Record;
use fxt_format::samples::{SampleBlob, SampleRecord};

pub use names::{Gather, Names};
pub use timeline::Timeline;

/// Whether `trace` may hold a record named `name`: whether its bytes
/// hold the name anywhere (a string record or an inline name holds it
/// whole). A SIMD search (`memchr`), so that a trace without samples is
/// not walked a second time at the cost of a first.
pub fn may_hold(trace: &[u8], name: &str) -> bool {
    memchr::memmem::find(trace, name.as_bytes()).is_some()
}

/// The records that show `trace`'s CPU samples and sampled allocations
/// (a heap profile) by name in a viewer (`fxt.symbols` for the addresses
/// it lacks, resolved from its modules with the binaries on this machine,
/// and the `fxt.perfetto` packets), with the length of the whole records
/// they follow; `None` for a trace without either or one that has its packets already (a program built
/// with feature `symbolize`, or `fxt symbolize`d).
pub fn appendix_for(trace: &[u8]) -> Option<(usize, fxt_symbols::Appendix)> {
    if !may_hold(trace, fxt_format::samples::SAMPLE_NAME)
        && !may_hold(trace, fxt_format::samples::ALLOC_NAME)
    {
        return None;
    }
    let scan = fxt_symbols::scan::TraceSamples::read(trace);
    if (scan.samples.is_empty() && scan.allocs.is_empty()) || scan.perfetto_records > 0 {
        return None;
    }
    let appendix =
        fxt_symbols::appendix(&scan.request(), &mut fxt_symbols::Symbolizer::new()).ok()?;
    let whole = usize::try_from(scan.end).map_or(trace.len(), |e| e.min(trace.len()));
    Some((whole, appendix))
}

/// What a trace delivered to a viewer gains: the records that show its
/// samples ([`appendix_for`]) and those drawn from its compact records
/// ([`fxt_symbols::derived`], [`fxt_symbols::derived::WHAT`]).
pub struct Delivery {
    /// Bytes of whole records the words follow.
    pub whole: usize,
    /// FXT words to append.
    pub words: Vec<u64>,
    /// The samples' part, if any.
    pub appendix: Option<fxt_symbols::Appendix>,
    /// Records derived.
    pub derived: usize,
}

/// The [`Delivery`] of `trace`; `None` when it gains nothing.
pub fn delivery_for(trace: &[u8]) -> Option<Delivery> {
    let appendix = appendix_for(trace);
    let derived = fxt_symbols::derived::records(trace);
    if appendix.is_none() && derived.is_empty() {
        return None;
    }
    let whole = appendix.as_ref().map_or(trace.len(), |(whole, _)| *whole);
    let mut words = appendix
        .as_ref()
        .map_or_else(Vec::new, |(_, a)| a.words.clone());
    let derived_records = record_count(&derived);
    words.extend_from_slice(&derived);
    Some(Delivery {
        whole,
        words,
        appendix: appendix.map(|(_, a)| a),
        derived: derived_records,
    })
}

/// The records in `words` (whole records).
pub fn record_count(words: &[u64]) -> usize {
    let (mut n, mut at) = (0, 0);
    while let Some(&header) = words.get(at) {
        let size = fxt_format::encode::header::record_words(header) as usize;
        if size == 0 {
            break;
        }
        at += size;
        n += 1;
    }
    n
}

/// `trace` (its whole records) with its [`Delivery`] appended, and that
/// delivery: what `fxt open` serves.
pub fn with_appendix(trace: &[u8]) -> Option<(Vec<u8>, Delivery)> {
    let delivery = delivery_for(trace)?;
    let mut out = trace[..delivery.whole].to_vec();
    out.extend_from_slice(&fxt_format::encode::words_to_bytes(&delivery.words));
    Some((out, delivery))
}

/// Appends [`delivery_for`] to the trace file at `path`, written whole: an
/// archive of `fxt record` or `fxt trace`, named while the binaries of its
/// processes are surely on this machine.
pub fn append_names(path: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    let bytes = std::fs::read(path)?;
    if let Some(delivery) = delivery_for(&bytes) {
        let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
        file.write_all(&fxt_format::encode::words_to_bytes(&delivery.words))?;
        file.sync_all()?;
    }
    Ok(())
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

    /// Folds in the samples of the next range of a walk (ranges in file
    /// order).
    pub fn merge(&mut self, later: Collector) {
        self.samples.extend(later.samples);
        self.malformed += later.malformed;
    }
}
