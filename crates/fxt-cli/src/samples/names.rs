//! The names of sampled addresses, from a trace's `fxt.symbols` records.
//!
//! The symbols are appended at collection, after the samples: a command
//! that needs them at the end of its walk gathers them on the way
//! ([`Gather`]); one that needs them before its first sample (`fxt dump`)
//! reads them first in a pass of their own ([`Names::from_trace`]), skipped
//! when the trace holds none.

use std::collections::HashMap;

use fxt_format::decode::{BlobJoiner, Record};
use fxt_format::samples::{FrameEntry, SampleBlob, SampleRecord, SymbolsRecord, SYMBOLS_NAME};
use fxt_symbols::scan::TraceSamples;

/// Frames of each (process, address).
#[derive(Debug, Default)]
pub struct Names {
    frames: HashMap<(u64, u64), Vec<FrameEntry>>,
}

impl Names {
    /// The names `trace` holds (none if it has no `fxt.symbols` record).
    pub fn from_trace(trace: &[u8]) -> Names {
        if !super::may_hold(trace, SYMBOLS_NAME) {
            return Names::default();
        }
        Names::from_scan(&TraceSamples::read(trace))
    }

    /// The names in an already read trace.
    pub fn from_scan(scan: &TraceSamples) -> Names {
        let mut names = Names::default();
        for record in &scan.symbols {
            names.add(record);
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

    /// Whether there are any names.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
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

/// Gathers the `fxt.symbols` records of a walk (joining split groups) into
/// [`Names`]. Only records named `fxt.symbols` go through the joiner, so
/// the walk's other records are neither copied nor delayed.
#[derive(Default)]
pub struct Gather {
    joiner: BlobJoiner,
    names: Names,
}

impl Gather {
    /// Takes the record (at byte `offset`) if it is part of a symbols record.
    pub fn see(&mut self, offset: u64, record: &Record) {
        let named = match record {
            Record::Event(e) => e.name == SYMBOLS_NAME,
            Record::Blob(b) => b.name == SYMBOLS_NAME,
            _ => false,
        };
        if named {
            self.joiner.push(offset, Ok(record.clone()));
            self.drain();
        }
    }

    fn drain(&mut self) {
        while let Some(joined) = self.joiner.pop() {
            if let Ok(Record::Blob(blob)) = joined.item {
                if let Some(Ok(SampleBlob::Symbols(s))) = SampleBlob::from_blob(&blob) {
                    self.names.add(&s);
                }
            }
        }
    }

    /// The names gathered.
    pub fn finish(mut self) -> Names {
        self.joiner.finish();
        self.drain();
        self.names
    }
}
