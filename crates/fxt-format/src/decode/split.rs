//! Cutting a trace held in memory into ranges that decode on their own, so
//! that one file is read on several cores.
//!
//! A range starts at a record boundary found by walking the headers from
//! the start of the trace (each header holds its record's size, so the
//! walk touches one word per record). References resolve against the
//! string and thread tables of the records before them, so the walk also
//! applies the table-building records (metadata, initialization, string
//! and thread records) as it passes them, and each range's reader starts
//! with a copy of the tables in force at its first record. Decoding the
//! ranges one after the other therefore yields exactly what one reader
//! over the whole trace yields.

use super::parse::{record_words, Decoder};
use super::reader::{header_word, SliceReader};

/// The highest record type whose records change the reader's tables
/// (metadata 0, initialization 1, string 2, thread 3).
const LAST_TABLE_RECORD_TYPE: u64 = 3;

/// Cuts `input` into at most `parts` readers over consecutive ranges
/// (see [`SliceReader::split`]).
pub(crate) fn split(input: &[u8], parts: usize) -> Vec<SliceReader<'_>> {
    let parts = parts.max(1);
    let step = input.len() / parts;
    let mut readers = Vec::with_capacity(parts);
    let mut decoder = Decoder::default();
    let mut start = 0usize;
    let mut start_decoder = Decoder::default();
    let mut next_cut = step;
    let mut pos = 0usize;
    loop {
        if pos >= next_cut && pos > start && readers.len() + 1 < parts {
            let tables = std::mem::replace(&mut start_decoder, decoder.clone());
            readers.push(SliceReader::range(&input[..pos], start, tables));
            start = pos;
            next_cut = step.saturating_mul(readers.len() + 1).max(pos);
        }
        let rest = &input[pos..];
        let Some(header) = header_word(rest) else {
            break;
        };
        let size = record_words(header) * 8;
        if size == 0 || size > rest.len() as u64 {
            break;
        }
        // Fits in usize: it is at most `rest.len()`.
        let size = size as usize;
        if header & 0xf <= LAST_TABLE_RECORD_TYPE {
            // A malformed table record changes nothing, as in a reader.
            let _ = decoder.decode_record(&rest[..size], pos as u64);
        }
        pos += size;
    }
    readers.push(SliceReader::range(input, start, start_decoder));
    readers
}
