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

use fxt_format::decode::{BlobJoiner, Context, Record, View};
use fxt_format::samples::{
    FrameEntry, ModuleEntry, ModulesRecord, SampleBlob, SampleRecord, SymbolsRecord, MODULES_NAME,
    SAMPLE_NAME, SYMBOLS_NAME,
};
use fxt_symbols::scan::TraceSamples;
use fxt_symbols::{stack_key, Request, StackKey, Symbolizer, Unwound};

use crate::error::Error;

/// Frames of each (process, address), the addresses unwound from each
/// raw stack, and each process's modules (which name an address without
/// symbols by its file and offset).
#[derive(Debug, Default)]
pub struct Names {
    frames: HashMap<(u64, u64), Vec<FrameEntry>>,
    unwound: HashMap<StackKey, Unwound>,
    modules: HashMap<u64, Vec<ModuleEntry>>,
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
        for record in request.modules {
            let modules = names.modules.entry(record.pid).or_default();
            modules.extend(record.modules.iter().cloned());
        }
        names
    }

    /// What `address` of process `pid` is called when it has no name:
    /// its file and offset in it, the same in every run (its address
    /// moves with the module's randomized base), else `0x…`.
    fn unnamed(&self, pid: u64, address: u64) -> String {
        let module = self
            .modules
            .get(&pid)
            .and_then(|ms| ms.iter().find(|m| m.contains(address)));
        fxt_symbols::unresolved_name(module, address)
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
    /// included; an address without a name shows as its file and offset
    /// (`libc.so.6+0x2724a`), or `0x…` outside any module.
    pub fn stack(&self, sample: &SampleRecord) -> Vec<String> {
        let addresses = self.addresses(sample);
        let mut out = Vec::with_capacity(addresses.len());
        for &address in addresses.iter() {
            match self.frames(sample.pid, address) {
                Some(frames) => out.extend(frames.iter().map(|f| f.function.clone())),
                None => out.push(self.unnamed(sample.pid, address)),
            }
        }
        out
    }

    /// The innermost function of a sample (as [`Names::stack`] names an
    /// address without a name, `?` if the sample has no frames).
    pub fn leaf(&self, sample: &SampleRecord) -> String {
        match self.addresses(sample).first() {
            Some(&address) => match self.frames(sample.pid, address) {
                Some(frames) => frames[0].function.clone(),
                None => self.unnamed(sample.pid, address),
            },
            None => "?".into(),
        }
    }
}

/// Gathers what names a walk's samples: the samples themselves (each
/// distinct raw stack once) and the `fxt.symbols` and `fxt.modules`
/// records, split groups joined once the walk is through (a group may
/// straddle the ranges of a walk on several threads). Only records so
/// named are kept, so the walk's other records are neither copied nor
/// delayed.
///
/// An event is read as the walk of views hands it ([`Gather::see_view`]):
/// only one named as the symbols or modules is decoded whole, for the
/// joiner.
#[derive(Default)]
pub struct Gather {
    /// The symbols and modules records and the events that may lead their
    /// split groups, with their offsets, in file order.
    named: Vec<(u64, Record)>,
    samples: Vec<SampleRecord>,
    raw: HashMap<StackKey, SampleRecord>,
}

impl Gather {
    /// Whether an event named `name` may lead a split group that the
    /// gatherer wants to see (for a walk that decodes whole only the
    /// events it needs).
    pub fn wants(name: &str) -> bool {
        name == SYMBOLS_NAME || name == MODULES_NAME
    }

    /// Takes a record of a view walk if it is a sample, or part of a
    /// symbols or modules record. Fails only if a view does not decode
    /// whole, which the decoder rules out.
    #[inline]
    pub fn see_view(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        match view {
            View::Record(record) => self.see_record(ctx.record_offset(), record),
            View::Event(e) if ctx.str(e.name).is_some_and(Self::wants) => {
                let event = ctx.event(e).map_err(|err| {
                    Error::msg(format!("internal error: a view does not decode: {err}"))
                })?;
                self.named.push((e.offset(), Record::Event(event)));
            }
            View::Event(_) => {}
        }
        Ok(())
    }

    /// Takes a record that is not an event if it is a sample, or part of
    /// a symbols or modules record.
    fn see_record(&mut self, offset: u64, record: &Record) {
        let Record::Blob(b) = record else {
            return;
        };
        match b.name.as_str() {
            Some(SAMPLE_NAME) => {
                if let Some(Ok(s)) = super::sample_of(record) {
                    self.add(s);
                }
            }
            Some(name) if Self::wants(name) => self.named.push((offset, record.clone())),
            _ => {}
        }
    }

    /// Folds in what the next range of a walk gathered (ranges in file
    /// order).
    pub fn merge(&mut self, later: Gather) {
        self.named.extend(later.named);
        self.samples.extend(later.samples);
        for (key, sample) in later.raw {
            self.raw.entry(key).or_insert(sample);
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

    /// The names of the samples gathered (raw stacks unwound first):
    /// recorded, or resolved now.
    pub fn finish(mut self) -> Names {
        if self.samples.is_empty() && self.raw.is_empty() {
            return Names::default();
        }
        let (modules, symbols) = joined(self.named);
        let mut raw: Vec<SampleRecord> = self.raw.into_values().collect();
        let unwound = fxt_symbols::unwind_samples(&mut raw, &modules);
        self.samples.extend(raw);
        let mut names = Names::of(&Request {
            samples: &self.samples,
            // Allocations' stacks come shaped as samples.
            allocs: &[],
            // Names do not depend on when the samples were taken.
            ticks_per_second: 1_000_000_000,
            modules: &modules,
            symbols: &symbols,
        });
        names.unwound = unwound;
        names
    }
}

/// The modules and symbols records of `named` (records in file order, split
/// groups joined).
fn joined(named: Vec<(u64, Record)>) -> (Vec<ModulesRecord>, Vec<SymbolsRecord>) {
    let (mut modules, mut symbols) = (Vec::new(), Vec::new());
    let mut joiner = BlobJoiner::new();
    let mut take = |joiner: &mut BlobJoiner| {
        while let Some(joined) = joiner.pop() {
            if let Ok(Record::Blob(blob)) = joined.item {
                match SampleBlob::from_blob(&blob) {
                    Some(Ok(SampleBlob::Symbols(s))) => symbols.push(s),
                    Some(Ok(SampleBlob::Modules(m))) => modules.push(m),
                    _ => {}
                }
            }
        }
    };
    for (offset, record) in named {
        joiner.push(offset, Ok(record));
        take(&mut joiner);
    }
    joiner.finish();
    take(&mut joiner);
    (modules, symbols)
}
