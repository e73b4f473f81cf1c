//! Perfetto packets for samples (and sampled allocations) that were moved
//! to another time base.
//!
//! A process's `fxt.perfetto` records (built at collection by
//! [`fxt_symbols::appendix`]) stamp each sample in nanoseconds of the
//! process's own clock. A retiming pass (`fxt record`, `fxt trace stop`)
//! drops them and appends these instead: the same packets built again from
//! the samples on the archive's clock, so Perfetto places each sample where
//! the archive's slices are. They are built, not patched: the packets are
//! derived from the samples, modules and symbols the trace keeps, and
//! building them from the retimed samples gives exactly the sample
//! records' times (no round trip through nanoseconds) in chunks that fit
//! their records whatever the new timestamps' varint widths.

use fxt_format::decode::{Record, SliceReader};
use fxt_symbols::scan::TraceSamples;
use fxt_symbols::{appendix, Request, Symbolizer};

use crate::error::Error;

/// The rebuilt records, ready to append.
pub struct Rebuilt {
    /// The encoded records.
    pub bytes: Vec<u8>,
    /// How many records `bytes` holds.
    pub records: u64,
}

/// The records that replace the `fxt.perfetto` records of `trace` once its
/// timestamps go through `map(ticks_per_second, ticks)` to a clock of
/// `ticks_per_second`; `None` when `trace` has no `fxt.perfetto` record
/// (nothing to replace: the packets of a trace whose program did not
/// symbolize itself are added to the whole archive, see
/// [`super::append_names`]). The trace's
/// symbols name every address sampled before its packets were built, so
/// nothing is resolved again; an address they lack is resolved here with
/// the binaries on this machine, and its `fxt.symbols` record is among the
/// records returned.
pub fn rebuilt_after_retime(
    trace: &[u8],
    map: &dyn Fn(u64, u64) -> u64,
    ticks_per_second: u64,
) -> Result<Option<Rebuilt>, Error> {
    let mut scan = TraceSamples::read(trace);
    if scan.perfetto_records == 0 {
        return Ok(None);
    }
    for sample in &mut scan.samples {
        sample.timestamp = map(scan.ticks_per_second, sample.timestamp);
    }
    for alloc in &mut scan.allocs {
        alloc.timestamp = map(scan.ticks_per_second, alloc.timestamp);
    }
    let request = Request {
        samples: &scan.samples,
        allocs: &scan.allocs,
        ticks_per_second,
        modules: &scan.modules,
        symbols: &scan.symbols,
    };
    let out = appendix(&request, &mut Symbolizer::new())
        .map_err(|e| Error::msg(format!("Perfetto packets of the samples: {e}")))?;
    let bytes = fxt_format::encode::words_to_bytes(&out.words);
    let records = SliceReader::new(&bytes)
        .filter(|item| !matches!(item, Ok(Record::Magic)))
        .count() as u64;
    Ok(Some(Rebuilt { bytes, records }))
}
