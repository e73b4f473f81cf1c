//! Framing as viewers see it: every record sized by header bits `[4 .. 15]`.
//!
//! Perfetto's FXT tokenizer and Tracy's `import-fuchsia` take every
//! record's size from bits `[4 .. 15]` of its header, large records (type
//! 15, whose size is bits `[4 .. 35]`) included. Where a large record's
//! size does not fit 12 bits, such a viewer lands inside the record and
//! reads its payload as records until it finds its way back to a record
//! boundary, or stops. A header whose bits `[4 .. 15]` are zero fails
//! Perfetto's whole import ("Unexpected record of size 0"); Tracy stops
//! there without a word; a size running past the end of the input stops
//! both.
//!
//! [`framing_issues`] walks the input both ways (the viewers' rule and our
//! decoder's) and reports every place where the walks differ.

use std::fmt;

use crate::decode::record_words;

/// Why a walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkEnd {
    /// At the end of the input, on a record boundary.
    Complete,
    /// At a header whose size is 0 (fatal for Perfetto's whole import).
    ZeroSize,
    /// At a record that runs past the end of the input (or fewer than 8
    /// bytes left).
    Truncated,
}

/// One walk: the offsets of the records it visits and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    /// Byte offsets of the records visited, in order.
    pub starts: Vec<u64>,
    /// Where the walk ended (the offset of the first byte not walked).
    pub end: u64,
    /// Why it ended.
    pub ended: WalkEnd,
}

/// Walks `bytes` sizing each record with `size_words(header)`.
fn walk(bytes: &[u8], size_words: impl Fn(u64) -> u64) -> Walk {
    let mut starts = Vec::new();
    let mut pos = 0usize;
    let ended = loop {
        let rest = &bytes[pos..];
        if rest.is_empty() {
            break WalkEnd::Complete;
        }
        let Some(header) = rest.get(..8).and_then(|b| b.try_into().ok()) else {
            break WalkEnd::Truncated;
        };
        let size_bytes = size_words(u64::from_le_bytes(header)).saturating_mul(8);
        if size_bytes == 0 {
            break WalkEnd::ZeroSize;
        }
        if size_bytes > rest.len() as u64 {
            break WalkEnd::Truncated;
        }
        starts.push(pos as u64);
        // Fits: at most `rest.len()`.
        pos += size_bytes as usize;
    };
    Walk {
        starts,
        end: pos as u64,
        ended,
    }
}

/// The walk of a reader that sizes every record by bits `[4 .. 15]`
/// (Perfetto, Tracy).
pub fn viewer_walk(bytes: &[u8]) -> Walk {
    walk(bytes, |header| (header >> 4) & 0xfff)
}

/// The walk of this crate's decoder (large records sized by bits `[4 .. 35]`).
pub fn decoder_walk(bytes: &[u8]) -> Walk {
    walk(bytes, record_words)
}

/// A place where a viewer's walk differs from the decoder's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingIssue {
    /// The record at `offset` is sized differently by the viewer (a large
    /// record whose size does not fit 12 bits): from there the viewer reads
    /// `viewer_records` records that are not records (pieces of payload)
    /// and misses `missed_records` of the decoder's, until both walks meet
    /// again at `rejoin` (`None`: they never do).
    Misframed {
        /// Byte offset of the record sized differently.
        offset: u64,
        /// Its size for the decoder, in words.
        decoder_words: u64,
        /// Its size for the viewer, in words.
        viewer_words: u64,
        /// Records only the viewer visits (misread bytes).
        viewer_records: u64,
        /// Records only the decoder visits (lost to the viewer).
        missed_records: u64,
        /// Byte offset where both walks meet again.
        rejoin: Option<u64>,
    },
    /// The viewer stops at `offset` while the decoder reads on (or the
    /// viewer meets a size-0 header, which fails Perfetto's whole import
    /// even where the decoder also stops): `lost_records` of the decoder's
    /// records are at or after it.
    ViewerStops {
        /// Byte offset where the viewer stops.
        offset: u64,
        /// Why it stops.
        reason: WalkEnd,
        /// Records the decoder reads at or after `offset`.
        lost_records: u64,
    },
}

impl FramingIssue {
    /// The byte offset the issue is about.
    pub fn offset(&self) -> u64 {
        match self {
            Self::Misframed { offset, .. } | Self::ViewerStops { offset, .. } => *offset,
        }
    }
}

impl fmt::Display for FramingIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Misframed {
                offset,
                decoder_words,
                viewer_words,
                viewer_records,
                missed_records,
                rejoin,
            } => {
                write!(
                    f,
                    "offset {offset:#x}: record of {decoder_words} words is {viewer_words} words by header bits 4-15 (Perfetto, Tracy): they misread {viewer_records} records of its bytes and miss {missed_records} records"
                )?;
                match rejoin {
                    Some(r) => write!(f, " until offset {r:#x}"),
                    None => write!(f, " to the end"),
                }
            }
            Self::ViewerStops {
                offset,
                reason,
                lost_records,
            } => match reason {
                WalkEnd::ZeroSize => write!(
                    f,
                    "offset {offset:#x}: header of size 0 by bits 4-15: Perfetto fails the whole import (\"Unexpected record of size 0\"), Tracy stops silently; {lost_records} records at or after it"
                ),
                _ => write!(
                    f,
                    "offset {offset:#x}: record runs past the end by bits 4-15: Perfetto and Tracy stop, losing {lost_records} records"
                ),
            },
        }
    }
}

/// Every place where the bits-4–15 walk of `bytes` differs from the
/// decoder's walk, in file order.
///
/// ```
/// use fxt_format::compat::framing_issues;
/// use fxt_format::encode::{encode_to_vec, words_to_bytes, LargeBlobNoMetadata, MagicNumber, StringRef};
/// let payload = vec![0u8; 40_000]; // over 4095 words: a misframed large record
/// let mut words = encode_to_vec(&MagicNumber).unwrap();
/// words.extend(encode_to_vec(&LargeBlobNoMetadata {
///     category: StringRef::Empty,
///     name: StringRef::Empty,
///     payload: &payload,
/// }).unwrap());
/// let issues = framing_issues(&words_to_bytes(&words));
/// assert_eq!(issues[0].offset(), 8); // misframed: 5003 words, 907 by bits 4-15
/// assert_eq!(issues[1].offset(), 8 + 907 * 8); // a zero payload word: size 0
/// ```
pub fn framing_issues(bytes: &[u8]) -> Vec<FramingIssue> {
    let ours = decoder_walk(bytes);
    let theirs = viewer_walk(bytes);
    let header_at = |offset: u64| -> u64 {
        let at = offset as usize;
        bytes
            .get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes)
    };
    let mut issues = Vec::new();
    let (d, v) = (&ours.starts, &theirs.starts);
    let (mut i, mut j) = (0, 0);
    // Both walks start at offset 0 and size a record the same way unless
    // it is a large record: they can only part after a record they share
    // and size differently.
    while i < d.len() && j < v.len() && d[i] == v[j] {
        let offset = d[i];
        i += 1;
        j += 1;
        let header = header_at(offset);
        let decoder_words = record_words(header);
        let viewer_words = (header >> 4) & 0xfff;
        if decoder_words == viewer_words {
            continue;
        }
        let (mut viewer_records, mut missed_records) = (0, 0);
        let mut rejoin = None;
        loop {
            match (d.get(i), v.get(j)) {
                (Some(a), Some(b)) if a == b => {
                    rejoin = Some(*a);
                    break;
                }
                (Some(a), Some(b)) if a < b => {
                    missed_records += 1;
                    i += 1;
                }
                (Some(_), None) => {
                    missed_records += 1;
                    i += 1;
                }
                (_, Some(_)) => {
                    viewer_records += 1;
                    j += 1;
                }
                (None, None) => break,
            }
        }
        issues.push(FramingIssue::Misframed {
            offset,
            decoder_words,
            viewer_words,
            viewer_records,
            missed_records,
            rejoin,
        });
    }
    if i == d.len() && j < v.len() {
        // The viewer reads on where the decoder stopped (cut short).
        issues.push(FramingIssue::Misframed {
            offset: ours.end,
            decoder_words: 0,
            viewer_words: (header_at(ours.end) >> 4) & 0xfff,
            viewer_records: (v.len() - j) as u64,
            missed_records: 0,
            rejoin: None,
        });
    }
    let stops_early = theirs.end < ours.end && theirs.ended != WalkEnd::Complete;
    if theirs.ended == WalkEnd::ZeroSize || stops_early {
        let lost = d.iter().filter(|&&s| s >= theirs.end).count() as u64;
        issues.push(FramingIssue::ViewerStops {
            offset: theirs.end,
            reason: theirs.ended,
            lost_records: lost,
        });
    }
    issues
}
