//! Cutting a trace held in memory into ranges that decode on their own,
//! so that one file is read on several cores (`fxt stats`, `check`,
//! `flame`, `dump`, `json`). [`RecordRanges`] walks the headers (each
//! holds its record's size, so the walk touches one word per record) only
//! as far as the next cut each time it is asked, so the readers (and the
//! copies of the tables they start with) that exist at once are only
//! those the caller holds, and the walk overlaps the decoding.
//!
//! References resolve against the string and thread tables of the records
//! before them, so the walk applies the table-building records (metadata,
//! initialization, string and thread records) as it passes them, and each
//! range's reader starts with a copy of the tables in force at its first
//! record. The last range runs to the end of the input from where the
//! framing breaks (a size-0 header, a record running past the end).

use super::parse::{record_words, Decoder};
use super::reader::{header_word, prefetch_ahead, SliceReader};

/// The highest record type whose records change the reader's tables
/// (metadata 0, initialization 1, string 2, thread 3).
const LAST_TABLE_RECORD_TYPE: u64 = 3;

/// One range of a [`RecordRanges`] cut.
pub struct RecordRange<'a> {
    /// Byte offset of the range's first record.
    pub start: u64,
    /// Byte offset where the range ends: the next range's start, or the
    /// end of the input.
    pub end: u64,
    /// A reader from `start`, with the tables in force there. It reads the
    /// whole rest of the input, not only the range, so that a caller can
    /// look past `end` (for a group of records that straddles the cut);
    /// stop at `end` to read the range alone.
    pub reader: SliceReader<'a>,
}

/// Cuts a trace held in memory into consecutive ranges of about
/// `range_bytes` bytes each, lazily (see the module documentation).
///
/// Reading each range's reader from its `start` to its `end`, one range
/// after the other, yields exactly what `SliceReader::new(input)` yields.
/// Ranges are never empty, except the single range of an empty input.
///
/// ```
/// use fxt_format::decode::RecordRanges;
/// let magic = 0x0016_5478_4604_0010u64.to_le_bytes();
/// let bytes: Vec<u8> = magic.iter().copied().cycle().take(8 * 10).collect();
/// let ranges: Vec<_> = RecordRanges::new(&bytes, 24).collect();
/// assert_eq!(ranges.len(), 4); // 3 + 3 + 3 + 1 records
/// assert_eq!((ranges[1].start, ranges[1].end), (24, 48));
/// let records: usize = ranges
///     .into_iter()
///     .map(|mut r| {
///         let mut n = 0;
///         while r.reader.position() < r.end && r.reader.next().is_some() {
///             n += 1;
///         }
///         n
///     })
///     .sum();
/// assert_eq!(records, 10);
/// ```
pub struct RecordRanges<'a> {
    input: &'a [u8],
    range_bytes: usize,
    /// Where the next range starts.
    pos: usize,
    /// The tables in force at `pos`.
    decoder: Decoder,
    done: bool,
}

impl<'a> RecordRanges<'a> {
    /// Ranges of about `range_bytes` (at least one record) of `input`.
    pub fn new(input: &'a [u8], range_bytes: usize) -> Self {
        Self {
            input,
            range_bytes: range_bytes.max(1),
            pos: 0,
            decoder: Decoder::default(),
            done: false,
        }
    }
}

impl<'a> Iterator for RecordRanges<'a> {
    type Item = RecordRange<'a>;

    fn next(&mut self) -> Option<RecordRange<'a>> {
        if self.done {
            return None;
        }
        let start = self.pos;
        let reader = SliceReader::range(self.input, start, self.decoder.clone());
        let cut = start.saturating_add(self.range_bytes);
        let mut pos = start;
        while pos < cut {
            prefetch_ahead(self.input, pos);
            let rest = &self.input[pos..];
            let header = header_word(rest).unwrap_or(0);
            let size = record_words(header) * 8;
            if size == 0 || size > rest.len() as u64 {
                // The end of the input, or broken framing: the reader meets
                // it as a single reader would.
                pos = self.input.len();
                break;
            }
            // Fits in usize: it is at most `rest.len()`.
            let size = size as usize;
            if header & 0xf <= LAST_TABLE_RECORD_TYPE {
                // A malformed table record changes nothing, as in a reader.
                let _ = self.decoder.decode_record(&rest[..size], pos as u64);
            }
            pos += size;
        }
        self.done = pos >= self.input.len();
        self.pos = pos;
        Some(RecordRange {
            start: start as u64,
            end: pos as u64,
            reader,
        })
    }
}
