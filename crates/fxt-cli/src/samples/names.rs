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
//!
//! A raw-stack sample (the registers and a copy of the stack, as the
//! runtime's sampler writes them) is unwound here too, with the same
//! modules and files ([`fxt_symbols::unwind`]): [`Names`] keeps the frames
//! of each distinct raw stack, and [`Names::addresses`] gives any sample's
//! frames, so the commands read both forms alike.

use std::borrow::Cow;
use std::collections::HashMap;

use fxt_format::decode::{BlobJoiner, Record};
use fxt_format::samples::{
    FrameEntry, ModulesRecord, SampleBlob, SampleRecord, SymbolsRecord, MODULES_NAME, SAMPLE_NAME,
    SYMBOLS_NAME,
};
use fxt_symbols::scan::TraceSamples;
use fxt_symbols::{stack_key, Request, StackKey, Symbolizer, Unwound};

/// Frames of each (process, address), and the addresses unwound from each
/// raw stack.
#[derive(Debug, Default)]
pub struct Names {
    frames: HashMap<(u64, u64), Vec<FrameEntry>>,
    unwound: HashMap<StackKey, Unwound>,
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

    /// The names of the sampled addresses of an already read trace (its
    /// raw stacks unwound as it was read).
    pub fn from_scan(scan: &TraceSamples) -> Names {
        let mut names = Names::of(&scan.request());
        names.unwound = scan.unwound.clone();
        names
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

    /// A sample's code addresses, innermost first: its frames, or those
    /// unwound from its raw stack (its pc alone if that was not unwound).
    pub fn addresses<'a>(&self, sample: &'a SampleRecord) -> Cow<'a, [u64]> {
        match &sample.raw_stack {
            None => Cow::Borrowed(&sample.frames),
            Some(raw) => match self.unwound.get(&stack_key(sample.pid, raw)) {
                Some(unwound) => Cow::Owned(unwound.frames.clone()),
                None => Cow::Owned(raw.pc().into_iter().collect()),
            },
        }
    }

    /// Whether a sample's stack stops before its thread's outermost frame.
    pub fn truncated(&self, sample: &SampleRecord) -> bool {
        match &sample.raw_stack {
            None => sample.truncated,
            Some(raw) => self
                .unwound
                .get(&stack_key(sample.pid, raw))
                .is_none_or(|u| u.truncated),
        }
    }

    /// A sample's function names, innermost first, inlined frames
    /// included; an address without a name shows as `0x…`.
    pub fn stack(&self, sample: &SampleRecord) -> Vec<String> {
        let addresses = self.addresses(sample);
        let mut out = Vec::with_capacity(addresses.len());
        for &address in addresses.iter() {
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
        match self.addresses(sample).first() {
            Some(&address) => match self.frames(sample.pid, address) {
                Some(frames) => frames[0].function.clone(),
                None => format!("{address:#x}"),
            },
            None => "?".into(),
        }
    }
}

/// Gathers what names a walk's samples: the samples themselves (each
/// distinct raw stack once) and the `fxt.symbols` and `fxt.modules`
/// records (joining split groups). Only records so named go through the
/// joiner, so the walk's other records are neither copied nor delayed.
#[derive(Default)]
pub struct Gather {
    joiner: BlobJoiner,
    samples: Vec<SampleRecord>,
    raw: HashMap<StackKey, SampleRecord>,
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
                        match &s.raw_stack {
                            Some(raw) => {
                                self.raw.entry(stack_key(s.pid, raw)).or_insert(s);
                            }
                            None => self.samples.push(s),
                        }
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
        match &sample.raw_stack {
            Some(raw) => {
                self.raw.entry(stack_key(sample.pid, raw)).or_insert(sample);
            }
            None => self.samples.push(sample),
        }
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

    /// The names of the samples gathered (raw stacks unwound first):
    /// recorded, or resolved now.
    pub fn finish(mut self) -> Names {
        self.joiner.finish();
        self.drain();
        if self.samples.is_empty() && self.raw.is_empty() {
            return Names::default();
        }
        let mut raw: Vec<SampleRecord> = self.raw.into_values().collect();
        let unwound = fxt_symbols::unwind_samples(&mut raw, &self.modules);
        self.samples.extend(raw);
        let mut names = Names::of(&Request {
            samples: &self.samples,
            // Allocations' stacks come shaped as samples.
            allocs: &[],
            // Names do not depend on when the samples were taken.
            ticks_per_second: 1_000_000_000,
            modules: &self.modules,
            symbols: &self.symbols,
        });
        names.unwound = unwound;
        names
    }
}
