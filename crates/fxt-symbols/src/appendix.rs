//! The one entry point the runtime (at collection, with its feature
//! `symbolize`) and the CLI (`fxt symbolize`, `fxt open`, archives) share:
//! from a trace's samples and modules, the `fxt.symbols` and
//! `fxt.perfetto` records to append to it (the samples' packets and the
//! heap profile of the sampled allocations).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fxt_format::encode::{encode_into_vec, Blob, BlobType, EncodeError, StringRef, ThreadRef};
use fxt_format::samples::{
    AllocRecord, FrameEntry, ModuleEntry, ModulesRecord, SampleRecord, Symbol, SymbolEntry,
    Symbols, SymbolsRecord, PERFETTO_NAME,
};

use crate::perfetto::{self, ProcessSamples};
use crate::scan::Request;
use crate::Symbolizer;

/// The records to append, and what went into them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Appendix {
    /// FXT words: `fxt.symbols` per process, then the `fxt.perfetto`
    /// blob records.
    pub words: Vec<u64>,
    /// Processes with samples.
    pub processes: usize,
    /// Samples.
    pub samples: usize,
    /// Sampled allocations and frees of sampled blocks (a heap profile).
    pub allocs: usize,
    /// Distinct sampled addresses.
    pub addresses: usize,
    /// Of those, the ones with at least one named frame (from the trace's
    /// symbols or resolved now).
    pub resolved: usize,
    /// Blob records of Perfetto packets.
    pub perfetto_records: usize,
}

/// Builds the records to append to a trace holding `request.samples` and
/// `request.allocs`,
/// resolving addresses with `symbolizer` (the binaries on this machine,
/// checked against the recorded build ids).
pub fn appendix(
    request: &Request<'_>,
    symbolizer: &mut Symbolizer,
) -> Result<Appendix, EncodeError> {
    let by_pid = by_process(request);
    let mut out = Appendix {
        processes: by_pid.len(),
        samples: request.samples.len(),
        allocs: request.allocs.len(),
        ..Appendix::default()
    };
    // Perfetto's own conversion: the packets' samples then sit where
    // Perfetto puts the FXT records of the same ticks (the slices).
    let ns =
        |ticks: u64| fxt_format::time::ticks_to_ns_as_perfetto(ticks, request.ticks_per_second);
    let mut tables = Vec::with_capacity(by_pid.len());
    for (&pid, (samples, allocs)) in &by_pid {
        let timestamps = samples
            .iter()
            .map(|s| s.timestamp)
            .chain(allocs.iter().map(|a| a.timestamp));
        let last = timestamps.max().unwrap_or(0);
        let first_tid = samples.first().map(|s| s.tid);
        let thread = ThreadRef::Inline {
            process: pid,
            thread: first_tid.or(allocs.first().map(|a| a.tid)).unwrap_or(0),
        };
        let modules: Vec<ModuleEntry> =
            recorded_modules(request.modules, pid).into_iter().collect();
        let stacks = samples
            .iter()
            .map(|s| &s.frames[..])
            .chain(allocs.iter().map(|a| &a.frames[..]));
        let (symbols, new) = resolve(request.symbols, pid, stacks, &modules, symbolizer);
        out.addresses += symbols.len();
        out.resolved += symbols.values().filter(|f| !f.is_empty()).count();
        if !new.is_empty() {
            write_symbols(pid, &new, &symbols, last, thread, &mut out.words)?;
        }
        let samples: Vec<(u64, &SampleRecord)> =
            samples.iter().map(|s| (ns(s.timestamp), *s)).collect();
        let allocs: Vec<(u64, &AllocRecord)> =
            allocs.iter().map(|a| (ns(a.timestamp), *a)).collect();
        tables.push((pid, modules, symbols, samples, allocs));
    }
    let processes: Vec<ProcessSamples> = tables
        .iter()
        .map(|(pid, modules, symbols, samples, allocs)| ProcessSamples {
            pid: *pid,
            modules,
            symbols,
            samples,
            allocs,
        })
        .collect();
    for chunk in perfetto::packets(&processes) {
        let blob = Blob {
            name: StringRef::Inline(PERFETTO_NAME),
            blob_type: BlobType::Perfetto,
            payload: &chunk,
        };
        encode_into_vec(&blob, &mut out.words)?;
        out.perfetto_records += 1;
    }
    Ok(out)
}

/// The samples and allocation records of each process.
type ByProcess<'a> = BTreeMap<u64, (Vec<&'a SampleRecord>, Vec<&'a AllocRecord>)>;

fn by_process<'a>(request: &Request<'a>) -> ByProcess<'a> {
    let mut by_pid = ByProcess::new();
    for sample in request.samples {
        by_pid.entry(sample.pid).or_default().0.push(sample);
    }
    for alloc in request.allocs {
        by_pid.entry(alloc.pid).or_default().1.push(alloc);
    }
    by_pid
}

/// The names of every sampled address of `request`, per process: the
/// trace's own symbols, and those it lacks resolved now from its modules
/// with the binaries on this machine (checked against the recorded build
/// ids; an address nothing names has no frames). What a reader shows for
/// a trace that was not symbolized when it was written.
pub fn names(request: &Request<'_>, symbolizer: &mut Symbolizer) -> Vec<SymbolsRecord> {
    let mut by_pid: BTreeMap<u64, Vec<&SampleRecord>> = BTreeMap::new();
    for sample in request.samples {
        by_pid.entry(sample.pid).or_default().push(sample);
    }
    by_pid
        .into_iter()
        .map(|(pid, samples)| {
            let modules: Vec<ModuleEntry> =
                recorded_modules(request.modules, pid).into_iter().collect();
            let stacks = samples.iter().map(|s| &s.frames[..]);
            let (symbols, _) = resolve(request.symbols, pid, stacks, &modules, symbolizer);
            SymbolsRecord {
                pid,
                symbols: symbols
                    .into_iter()
                    .map(|(address, frames)| SymbolEntry { address, frames })
                    .collect(),
            }
        })
        .collect()
}

/// The union of the recorded modules of `pid`.
fn recorded_modules(records: &[ModulesRecord], pid: u64) -> BTreeSet<ModuleEntry> {
    records
        .iter()
        .filter(|r| r.pid == pid)
        .flat_map(|r| r.modules.iter().cloned())
        .collect()
}

/// The frames of every address of `pid`'s `stacks`: from the trace's
/// symbols where it has them, resolved now otherwise (those are also
/// returned in order, to be written).
fn resolve<'s>(
    recorded: &[SymbolsRecord],
    pid: u64,
    stacks: impl Iterator<Item = &'s [u64]>,
    modules: &[ModuleEntry],
    symbolizer: &mut Symbolizer,
) -> (HashMap<u64, Vec<FrameEntry>>, Vec<u64>) {
    let mut symbols: HashMap<u64, Vec<FrameEntry>> = recorded
        .iter()
        .filter(|r| r.pid == pid)
        .flat_map(|r| r.symbols.iter().map(|s| (s.address, s.frames.clone())))
        .collect();
    let mut new = Vec::new();
    for stack in stacks {
        for (i, &address) in stack.iter().enumerate() {
            if symbols.contains_key(&address) {
                continue;
            }
            symbols.insert(address, symbolizer.resolve(modules, address, i > 0));
            new.push(address);
        }
    }
    (symbols, new)
}

fn write_symbols(
    pid: u64,
    addresses: &[u64],
    symbols: &HashMap<u64, Vec<FrameEntry>>,
    timestamp: u64,
    thread: ThreadRef,
    out: &mut Vec<u64>,
) -> Result<(), EncodeError> {
    let frames: Vec<Vec<_>> = addresses
        .iter()
        .map(|a| {
            symbols
                .get(a)
                .map_or_else(Vec::new, |f| f.iter().map(FrameEntry::as_frame).collect())
        })
        .collect();
    let entries: Vec<Symbol> = addresses
        .iter()
        .zip(&frames)
        .map(|(&address, frames)| Symbol { address, frames })
        .collect();
    Symbols {
        pid,
        symbols: &entries,
    }
    .encode_records(timestamp, thread, out)?;
    Ok(())
}

/// [`appendix`] for a whole trace: its samples, modules and symbols read
/// from `trace` ([`crate::scan::TraceSamples`]).
pub fn appendix_of_trace(
    trace: &[u8],
    symbolizer: &mut Symbolizer,
) -> Result<Appendix, EncodeError> {
    appendix(
        &crate::scan::TraceSamples::read(trace).request(),
        symbolizer,
    )
}
