//! The names of sampled addresses: a trace's `fxt.symbols` records, and
//! for the addresses they lack (a program that does not symbolize itself
//! writes only `fxt.modules`), names resolved now from its `fxt.modules`
//! with the binaries on this machine ([`fxt_symbols::names`]).
//!
//! The symbols and modules are appended at collection, after the samples:
//! a command that needs them at the end of its walk gathers them on the
//! way ([`Gather`]); one that needs them before its first sample (`fxt
//! dump`) reads them first in a pass of their own ([`Names::from_trace`]),
//! skipped when the trace holds no sample.

use std::collections::HashMap;

use fxt_format::decode::{BlobJoiner, Record};
use fxt_format::samples::{
    FrameEntry, ModulesRecord, SampleBlob, SampleRecord, SymbolsRecord, MODULES_NAME, SAMPLE_NAME,
    SYMBOLS_NAME,
};
use fxt_symbols::scan::TraceSamples;
use fxt_symbols::{Request, Symbolizer};

/// Frames of each (process, address).
#[derive(Debug, Default)]
pub struct Names {
    frames: HashMap<(u64, u64), Vec<FrameEntry>>,
}

impl Names {
    /// The names of `trace`'s sampled addresses (none if it has no
    /// sample).
    pub fn from_trace(trace: &[u8]) -> Names {
        if !super::may_hold(trace, SAMPLE_NAME) {
            return Names::default();
        }
        Names::from_scan(&TraceSamples::read(trace))
    }

    /// The names of the sampled addresses of an already read trace.
    pub fn from_scan(scan: &TraceSamples) -> Names {
        Names::of(&scan.request())
    }

    /// The names of `request`'s sampled addresses: recorded, or resolved
    /// now.
    fn of(request: &Request<'_>) -> Names {
        let mut names = Names::default();
        for record in fxt_symbols::names(request, &mut Symbolizer::new()) {
            names.add(&record);
        }
        names
    }

    /// Adds the entries of a symbols record.
    pub fn add(&mut self, record: &SymbolsRecord) {
        for s in &record.symbols {
            self.frames
                .insert((record.pid, s.address), s.frames.clone());
        }
    }

    /// Whether no address has a name.
    pub fn is_empty(&self) -> bool {
        self.frames.values().all(Vec::is_empty)
    }

    /// The frames of `address` in process `pid` (innermost inlined first),
    /// if the trace resolved it.
    pub fn frames(&self, pid: u64, address: u64) -> Option<&[FrameEntry]> {
        self.frames
            .get(&(pid, address))
            .map(Vec::as_slice)
            .filter(|f| !f.is_empty())
    }

    /// A sample's function names, innermost first, inlined frames
    /// included; an address without a name shows as `0x…`.
    pub fn stack(&self, sample: &SampleRecord) -> Vec<String> {
        let mut out = Vec::with_capacity(sample.frames.len());
        for &address in &sample.frames {
            match self.frames(sample.pid, address) {
                Some(frames) => out.extend(frames.iter().map(|f| f.function.clone())),
                None => out.push(format!("{address:#x}")),
            }
        }
        out
    }

    /// The innermost function of a sample (`0x…` if unnamed, `?` if the
    /// sample has no frames).
    pub fn leaf(&self, sample: &SampleRecord) -> String {
        match sample.frames.first() {
            Some(&address) => match self.frames(sample.pid, address) {
                Some(frames) => frames[0].function.clone(),
                None => format!("{address:#x}"),
            },
            None => "?".into(),
        }
    }
}

/// Gathers what names a walk's samples: the samples themselves and the
/// `fxt.symbols` and `fxt.modules` records (joining split groups). Only
/// records so named go through the joiner, so the walk's other records are
/// neither copied nor delayed.
#[derive(Default)]
pub struct Gather {
    joiner: BlobJoiner,
    samples: Vec<SampleRecord>,
    modules: Vec<ModulesRecord>,
    symbols: Vec<SymbolsRecord>,
}

impl Gather {
    /// Whether an event named `name` may lead a split group that the
    /// gatherer wants to see (a walk of event views decodes only those).
    pub fn wants(name: &str) -> bool {
        name == SYMBOLS_NAME || name == MODULES_NAME
    }

    /// Takes the record (at byte `offset`) if it is a sample, or part of a
    /// symbols or modules record.
    pub fn see(&mut self, offset: u64, record: &Record) {
        let named = match record {
            Record::Event(e) => e.name.as_str().is_some_and(Self::wants),
            Record::Blob(b) => match b.name.as_str() {
                Some(SAMPLE_NAME) => {
                    if let Some(Ok(s)) = super::sample_of(record) {
                        self.samples.push(s);
                    }
                    false
                }
                Some(name) => Self::wants(name),
                None => false,
            },
            _ => false,
        };
        if named {
            self.joiner.push(offset, Ok(record.clone()));
            self.drain();
        }
    }

    /// Adds a sample-shaped record to name (an allocation's stack:
    /// [`super::allocs::Allocated::as_sample`]).
    pub fn add(&mut self, sample: SampleRecord) {
        self.samples.push(sample);
    }

    fn drain(&mut self) {
        while let Some(joined) = self.joiner.pop() {
            if let Ok(Record::Blob(blob)) = joined.item {
                match SampleBlob::from_blob(&blob) {
                    Some(Ok(SampleBlob::Symbols(s))) => self.symbols.push(s),
                    Some(Ok(SampleBlob::Modules(m))) => self.modules.push(m),
                    _ => {}
                }
            }
        }
    }

    /// The names of the samples gathered: recorded, or resolved now.
    pub fn finish(mut self) -> Names {
        self.joiner.finish();
        self.drain();
        if self.samples.is_empty() {
            return Names::default();
        }
        Names::of(&Request {
            samples: &self.samples,
            // Names do not depend on when the samples were taken.
            ticks_per_second: 1_000_000_000,
            modules: &self.modules,
            symbols: &self.symbols,
        })
    }
}
