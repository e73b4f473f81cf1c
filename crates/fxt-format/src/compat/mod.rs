//! Viewer compatibility: what Perfetto (and Tracy) would misread, drop or
//! refuse in a trace that this crate's decoder reads whole.
//!
//! | check | module | what it finds |
//! |---|---|---|
//! | framing | [`framing`] | records sized by header bits `[4 .. 15]` (large records included) landing elsewhere than our decoder's records; size-0 headers |
//! | slices | [`slices`] | duration events Perfetto's slice import drops (overlapping complete events, negative durations, ends without a begin) or cuts |
//! | references | [`refs`] | string and thread refs used before their definition in file order |
//!
//! [`check_perfetto`] runs all three on a trace held in memory;
//! [`convert_for_viewers`] rewrites a trace so that they find nothing.
//!
//! ```
//! use fxt_format::compat::check_perfetto;
//! use fxt_format::encode::{encode_to_vec, words_to_bytes, MagicNumber};
//! let bytes = words_to_bytes(&encode_to_vec(&MagicNumber).unwrap());
//! assert!(check_perfetto(&bytes).is_clean());
//! ```

pub mod convert;
pub mod framing;
pub mod refs;
pub mod slices;

use std::fmt;

pub use convert::{convert_for_viewers, ConvertSummary, Converted};
pub use framing::{framing_issues, FramingIssue, WalkEnd};
pub use refs::{undefined_refs, RefKind, UndefinedRef};
pub use slices::{perfetto_slice_drops, SliceDrop, SliceDropKind, SliceEvent};

use crate::decode::{Record, SliceReader};
use crate::time::ticks_per_second_or_default;

/// Everything [`check_perfetto`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Places where Perfetto's and Tracy's walk differs from the decoder's.
    pub framing: Vec<FramingIssue>,
    /// Slices Perfetto would drop or cut, in the order it imports them.
    pub slices: Vec<SliceDrop>,
    /// References used before their definition, in file order.
    pub refs: Vec<UndefinedRef>,
}

impl Report {
    /// Whether nothing was found that Perfetto or Tracy would misread or
    /// drop (slices Perfetto merely cuts short are warnings, not counted).
    pub fn is_clean(&self) -> bool {
        self.framing.is_empty()
            && self.refs.is_empty()
            && self.slices.iter().all(|s| !s.is_dropped())
    }

    /// Number of findings, warnings not counted.
    pub fn len(&self) -> usize {
        self.framing.len() + self.slices.iter().filter(|s| s.is_dropped()).count() + self.refs.len()
    }

    /// Whether there are no findings (as [`Report::is_clean`]).
    pub fn is_empty(&self) -> bool {
        self.is_clean()
    }
}

/// One line per finding.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for issue in &self.framing {
            writeln!(f, "{issue}")?;
        }
        for drop in &self.slices {
            writeln!(f, "{drop}")?;
        }
        for r in &self.refs {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Runs every check on `bytes`. Slices and references are checked on the
/// records our decoder reads (so a framing issue is reported once, by the
/// framing check, not again as its consequences).
pub fn check_perfetto(bytes: &[u8]) -> Report {
    let mut events = Vec::new();
    let mut refs = refs::RefTracker::default();
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next() {
        let Ok(record) = item else {
            continue;
        };
        let offset = reader.record_offset();
        refs.record(reader.provider_id(), offset, &record);
        if let Record::Event(e) = record {
            if !slices::is_slice_kind(&e.kind) {
                continue;
            }
            events.push(SliceEvent {
                offset,
                thread: e.thread,
                category: e.category,
                name: e.name,
                timestamp: e.timestamp,
                kind: e.kind,
                ticks_per_second: ticks_per_second_or_default(reader.ticks_per_second()),
            });
        }
    }
    Report {
        framing: framing_issues(bytes),
        slices: perfetto_slice_drops(&events),
        refs: refs.finish(),
    }
}
