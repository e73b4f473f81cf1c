//! The sample, allocation, modules and symbols records of a trace, read
//! in one pass (split blob groups joined).

use fxt_format::decode::{join_split_blobs, BlobType, Record};
use fxt_format::samples::{
    AllocRecord, ModulesRecord, SampleBlob, SampleRecord, SamplesError, SymbolsRecord,
    PERFETTO_NAME,
};
use fxt_format::time::ticks_per_second_or_default;

/// What a trace holds about CPU samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceSamples {
    /// The samples, in file order; raw stacks unwound into frames
    /// ([`crate::unwind_samples`]).
    pub samples: Vec<SampleRecord>,
    /// The frames of each distinct raw stack among them
    /// ([`crate::stack_key`]).
    pub unwound: std::collections::HashMap<crate::StackKey, crate::Unwound>,
    /// Ticks per second of the samples' timestamps: the providers' common
    /// rate, or 10⁹ when they differ (the timestamps are then converted to
    /// nanoseconds).
    pub ticks_per_second: u64,
    /// The `fxt.alloc` records (sampled allocations and frees of sampled
    /// blocks), in file order, on the samples' time base; raw stacks
    /// unwound into frames.
    pub allocs: Vec<AllocRecord>,
    /// The `fxt.modules` records.
    pub modules: Vec<ModulesRecord>,
    /// The `fxt.symbols` records.
    pub symbols: Vec<SymbolsRecord>,
    /// `fxt.perfetto` blob records.
    pub perfetto_records: usize,
    /// Sample blobs whose payload did not decode, with their byte offsets.
    pub errors: Vec<(u64, SamplesError)>,
    /// Bytes of whole records from the start: the trace's length, or the
    /// offset of the damage that ends it (a record cut short, as a killed
    /// writer leaves), where records can be appended.
    pub end: u64,
}

impl TraceSamples {
    /// Reads `trace` up to its end or its first fatal decode error.
    pub fn read(trace: &[u8]) -> Self {
        let mut out = Self::default();
        let mut rates = Vec::new();
        let mut alloc_rates = Vec::new();
        out.end = trace.len() as u64;
        let mut records = join_split_blobs(trace);
        while let Some(joined) = records.next() {
            let blob = match joined.item {
                Ok(Record::Blob(blob)) => blob,
                Err(e) if e.is_fatal() => {
                    out.end = e.offset();
                    continue;
                }
                _ => continue,
            };
            if blob.blob_type == BlobType::Perfetto && blob.name == PERFETTO_NAME {
                out.perfetto_records += 1;
                continue;
            }
            let rate = || ticks_per_second_or_default(records.get_ref().ticks_per_second());
            match AllocRecord::from_blob(&blob) {
                Some(Ok(a)) => {
                    alloc_rates.push(rate());
                    out.allocs.push(a);
                    continue;
                }
                Some(Err(e)) => {
                    out.errors.push((joined.offset, e));
                    continue;
                }
                None => {}
            }
            match SampleBlob::from_blob(&blob) {
                Some(Ok(SampleBlob::Sample(s))) => {
                    rates.push(rate());
                    out.samples.push(s);
                }
                Some(Ok(SampleBlob::Modules(m))) => out.modules.push(m),
                Some(Ok(SampleBlob::Symbols(s))) => out.symbols.push(s),
                Some(Err(e)) => out.errors.push((joined.offset, e)),
                None => {}
            }
        }
        out.ticks_per_second = rates
            .first()
            .or(alloc_rates.first())
            .copied()
            .unwrap_or(1_000_000_000);
        if rates
            .iter()
            .chain(&alloc_rates)
            .any(|&r| r != out.ticks_per_second)
        {
            for (sample, rate) in out.samples.iter_mut().zip(rates) {
                sample.timestamp = fxt_format::time::ticks_to_ns(sample.timestamp, rate);
            }
            for (alloc, rate) in out.allocs.iter_mut().zip(alloc_rates) {
                alloc.timestamp = fxt_format::time::ticks_to_ns(alloc.timestamp, rate);
            }
            out.ticks_per_second = 1_000_000_000;
        }
        out.unwound = crate::unwind_samples(&mut out.samples, &out.modules);
        out.allocs = unwind_allocs(std::mem::take(&mut out.allocs), &out.modules);
        out
    }

    /// What [`crate::appendix`] and [`crate::names`] work from: this
    /// trace's samples, modules and symbols.
    pub fn request(&self) -> Request<'_> {
        Request {
            samples: &self.samples,
            allocs: &self.allocs,
            ticks_per_second: self.ticks_per_second,
            modules: &self.modules,
            symbols: &self.symbols,
        }
    }

    /// Whether every sampled address has an entry in the symbols records.
    pub fn is_symbolized(&self) -> bool {
        let known: std::collections::HashSet<(u64, u64)> = self
            .symbols
            .iter()
            .flat_map(|r| r.symbols.iter().map(move |s| (r.pid, s.address)))
            .collect();
        let samples = self.samples.iter().map(|s| (s.pid, &s.frames));
        let allocs = self.allocs.iter().map(|a| (a.pid, &a.frames));
        samples
            .chain(allocs)
            .all(|(pid, frames)| frames.iter().all(|a| known.contains(&(pid, *a))))
    }
}

/// `allocs` with their raw stacks unwound into frames (through the CPU
/// samples' unwinder, as sample-shaped records).
fn unwind_allocs(allocs: Vec<AllocRecord>, modules: &[ModulesRecord]) -> Vec<AllocRecord> {
    let mut stacks: Vec<SampleRecord> = allocs
        .iter()
        .map(|a| SampleRecord {
            timestamp: a.timestamp,
            pid: a.pid,
            tid: a.tid,
            walk: a.walk,
            truncated: a.truncated,
            frames: Vec::new(),
            raw_stack: a.raw_stack.clone(),
        })
        .collect();
    crate::unwind_samples(&mut stacks, modules);
    allocs
        .into_iter()
        .zip(stacks)
        .map(|(a, s)| match a.raw_stack {
            Some(_) => a.with_frames(s.frames, s.truncated),
            None => a,
        })
        .collect()
}

/// What [`crate::appendix`] works from.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The trace's samples.
    pub samples: &'a [SampleRecord],
    /// The trace's sampled allocations and frees, frames unwound, on the
    /// samples' time base.
    pub allocs: &'a [AllocRecord],
    /// The ticks per second of their timestamps.
    pub ticks_per_second: u64,
    /// The `fxt.modules` records of the samples' processes (a reader
    /// takes the union per process).
    pub modules: &'a [ModulesRecord],
    /// The `fxt.symbols` records the trace already holds: their addresses
    /// are not resolved again (and no `fxt.symbols` is written for a
    /// process whose sampled addresses all have symbols).
    pub symbols: &'a [SymbolsRecord],
}
