//! The names of sampled addresses, from a trace's `fxt.symbols` records.
//!
//! The symbols are appended at collection, after the samples, so a command
//! that streams a trace reads them first in a pass of their own
//! ([`Names::from_trace`]), skipped when the trace holds none (a byte
//! search for the record name).

use std::collections::HashMap;

use fxt_format::samples::{FrameEntry, SampleRecord, SYMBOLS_NAME};
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
        let mut frames = HashMap::new();
        for record in &scan.symbols {
            for s in &record.symbols {
                frames.insert((record.pid, s.address), s.frames.clone());
            }
        }
        Names { frames }
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
