//! A robust decoder for every record of the Fuchsia Trace Format.
//!
//! Read a trace held in memory with [`SliceReader`], or any
//! [`std::io::Read`] with [`StreamReader`]; both iterate over
//! `Result<`[`Record`]`, `[`DecodeError`]`>`. The convenience functions
//! [`decode_all`], [`decode_all_lossy`] and [`read_all_lossy`] collect them.
//!
//! ```
//! use fxt_format::decode::{decode_all_lossy, Record};
//!
//! let mut bytes = Vec::new();
//! bytes.extend_from_slice(&0x0016_5478_4604_0010u64.to_le_bytes()); // magic
//! bytes.extend_from_slice(&[0x21, 0, 0, 0]); // half a record: the trace was cut
//! let (records, error) = decode_all_lossy(&bytes);
//! assert_eq!(records, [Record::Magic]);
//! assert_eq!(error.unwrap().offset(), 8);
//! ```
//!
//! # What the reader does
//!
//! * **Resolves references.** String and thread refs are resolved against
//!   the string and thread tables of the current provider; indexed strings
//!   are shared `Arc<str>`, so resolving one does not copy it. Each
//!   provider has its own tables and ticks per second: provider info
//!   metadata starts a provider with fresh tables, provider section metadata
//!   switches back to one (see [`SliceReader::provider_id`],
//!   [`SliceReader::ticks_per_second`]). Timestamps are left in ticks.
//! * **Keeps dangling references.** A ref to an index no earlier record
//!   defined is not an error: it decodes to an undefined [`Text`],
//!   [`Thread::Undefined`] or [`Process::Undefined`] with the index, so the
//!   record survives and a checker can report it.
//! * **Yields table records too.** String, thread, initialization and
//!   metadata records come out as [`Record`]s after being applied. String
//!   and thread records for the reserved index 0 are yielded but, as the
//!   specification requires, do not change the tables.
//! * **Skips what it does not know.** Unknown record types, metadata types,
//!   trace info types, event types, scheduling record types, large record
//!   types and large blob formats become [`Record::Unknown`] (with offset,
//!   header and size); unknown argument types become
//!   [`ArgValue::Unknown`]. Both are skipped by their size. Records and
//!   arguments longer than their fields need are accepted (the format grows
//!   by appending) and reserved bits are ignored.
//! * **Recovers partial traces.** Malformed input gives a [`DecodeError`]
//!   naming the byte offset. A malformed record whose size is intact is
//!   reported and skipped (its strings or threads are not registered); a
//!   fatal error (the input ends inside a record, a record of size 0, an
//!   I/O failure) ends the iteration. Everything before the damage has been
//!   yielded.
//! * **Joins split blobs on request.** [`join_split_blobs`] (or
//!   [`JoinSplitBlobs`] over any reader, or the push-style [`BlobJoiner`])
//!   turns a split blob group (an instant and its blob records, see
//!   [`crate::encode::split_blob`]) into the instant and one blob with the
//!   whole payload; the plain readers yield the group's records as written.
//! * **Reads events without copying them, on request.**
//!   [`SliceReader::next_view`] and [`StreamReader::next_view`] yield an
//!   event as an [`EventView`] that borrows the input and leaves its
//!   category and name unresolved ([`StrRef`]: an index or the inline
//!   text), for readers that tally many events by a few names; the
//!   [`Context`] beside it resolves them, or decodes the whole event. Other
//!   records come out decoded. The records and errors met are those of
//!   iterating.
//! * **Reads an event by its head, on request.**
//!   [`SliceReader::heads_until`] hands an event of the usual shape as an
//!   [`EventHead`]: its framing and arguments' sizes checked, every field
//!   read from its word only when asked (string and thread indices, not
//!   looked up; [`Context::threads_epoch`] says when a thread index may
//!   read otherwise), for readers that tally every event by a few fields.
//!   Any other record comes as its view; the records and errors met are
//!   those of the view walk.
//! * **Is safe on any bytes.** It never panics, always terminates (each step
//!   consumes at least one word), and allocates in proportion to the input
//!   actually present: sizes from headers are checked against the slice, or
//!   read incrementally from a stream, never used to pre-allocate.

mod args;
mod cursor;
mod error;
mod head;
mod headwalk;
mod join;
mod parse;
mod ranges;
mod reader;
mod record;
mod resolve;
mod tables;
mod values;
mod view;

use std::io::Read;

pub use error::DecodeError;
pub use head::{EventHead, ThreadRef};
pub use headwalk::{Head, HeadAt};
pub use join::{join_split_blobs, BlobJoiner, JoinSplitBlobs, Joined, LocatedRecords};
pub(crate) use parse::record_words;
pub use ranges::{RecordRange, RecordRanges};
pub use reader::{SliceReader, StreamReader};
pub use record::{
    Arg, ArgValue, Blob, BlobType, ContextSwitch, Event, EventKind, KernelObject,
    LargeBlobNoMetadata, LargeBlobWithMetadata, LegacyContextSwitch, Log, Process, Record,
    SkippedArg, Text, Thread, ThreadState, ThreadWakeup, UnknownRecord, UserspaceObject,
};
pub use values::{ArgValueView, ArgView, IntArg, IntParts, StrOrF64, StrRef};
pub use view::{ArgRefs, ArgViews, ArgWordIter, ArgWords, Context, EventView, View};

/// Decodes a whole trace, failing at the first malformed record.
pub fn decode_all(bytes: &[u8]) -> Result<Vec<Record>, DecodeError> {
    SliceReader::new(bytes).collect()
}

/// Decodes a trace up to its first malformed record: the records before
/// the damage, and the error (if any) that stopped decoding.
pub fn decode_all_lossy(bytes: &[u8]) -> (Vec<Record>, Option<DecodeError>) {
    collect_until_error(SliceReader::new(bytes))
}

/// Like [`decode_all_lossy`], reading from any [`std::io::Read`].
pub fn read_all_lossy<R: Read>(input: R) -> (Vec<Record>, Option<DecodeError>) {
    collect_until_error(StreamReader::new(input))
}

fn collect_until_error(
    records: impl Iterator<Item = Result<Record, DecodeError>>,
) -> (Vec<Record>, Option<DecodeError>) {
    let mut out = Vec::new();
    for record in records {
        match record {
            Ok(record) => out.push(record),
            Err(error) => return (out, Some(error)),
        }
    }
    (out, None)
}
