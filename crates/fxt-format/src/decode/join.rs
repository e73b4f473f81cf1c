//! Joining split blobs (see [`crate::encode::split_blob`]) back into one
//! blob record.
//!
//! A group matches when an instant event whose arguments are exactly
//! `fxt.blob.size` (uint64) and `fxt.blob.parts` (uint64, ≥ 1), in that
//! order, is followed directly by `parts` blob records of type data, each
//! named like the event, whose payloads add up to `fxt.blob.size` bytes. A
//! matching group comes out as the event (unchanged) and one
//! [`Record::Blob`] holding the whole payload, at the offset of the first
//! part. Anything else, including a group cut short by a decode error or the
//! end of the input, comes out unchanged: joining never fails.
//!
//! Memory: the parts of a group are held until it is complete or fails to
//! match, and the joined payload is allocated only once the parts' sizes
//! are known to add up, so both are bounded by the bytes actually read, never
//! by the size a header claims.

use std::collections::VecDeque;
use std::iter::FusedIterator;

use super::error::DecodeError;
use super::reader::{SliceReader, StreamReader};
use super::record::{ArgValue, Blob, BlobType, Event, EventKind, Record};
use crate::encode::split_blob::{PARTS_KEY, SIZE_KEY};

/// One item out of a [`BlobJoiner`]: a decoded record (or decode error)
/// with its byte offset, and how many blob records it was joined from.
#[derive(Debug, Clone, PartialEq)]
pub struct Joined {
    /// Byte offset of the record (of the first part, for a joined blob).
    pub offset: u64,
    /// The record, or the decode error, as the reader gave it (a joined
    /// blob is a [`Record::Blob`] with the whole payload).
    pub item: Result<Record, DecodeError>,
    /// For a blob joined from a split group, the number of blob records it
    /// was joined from; 0 for everything passed through.
    pub joined_parts: u64,
}

impl Joined {
    fn pass(offset: u64, item: Result<Record, DecodeError>) -> Self {
        Self {
            offset,
            item,
            joined_parts: 0,
        }
    }
}

/// The group being collected: its event and the parts seen so far.
struct Group {
    event_offset: u64,
    event: Event,
    size: u64,
    parts: u64,
    /// Offsets and decoded parts, in file order.
    seen: Vec<(u64, Blob)>,
    /// Sum of the payloads in `seen`.
    bytes: u64,
}

impl Group {
    /// Whether `blob` can be the group's next part: data, named like the
    /// event, and not taking the payload past the announced size.
    fn accepts(&self, blob: &Blob) -> bool {
        blob.blob_type == BlobType::Data
            && blob.name == self.event.name
            && self
                .bytes
                .checked_add(blob.payload.len() as u64)
                .is_some_and(|total| total <= self.size)
    }
}

/// Joins split blob groups in a sequence of decoded records, push style:
/// feed records with [`push`](Self::push) in file order, take results with
/// [`pop`](Self::pop), and call [`finish`](Self::finish) at the end of the
/// input to release a group that was cut short. Results come out in file
/// order, delayed while a group is being collected.
///
/// For an iterator, see [`JoinSplitBlobs`] and [`join_split_blobs`].
#[derive(Default)]
pub struct BlobJoiner {
    group: Option<Group>,
    ready: VecDeque<Joined>,
}

impl BlobJoiner {
    /// A joiner with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next record (or decode error) of the input, at `offset`.
    pub fn push(&mut self, offset: u64, item: Result<Record, DecodeError>) {
        let item = match (&mut self.group, item) {
            (Some(group), Ok(Record::Blob(blob))) if group.accepts(&blob) => {
                group.bytes += blob.payload.len() as u64;
                group.seen.push((offset, blob));
                if group.seen.len() as u64 == group.parts {
                    self.complete();
                }
                return;
            }
            (Some(_), item) => {
                // Anything else breaks the group: release it unchanged, then
                // treat this record afresh (it may start a group of its own).
                self.release();
                item
            }
            (None, item) => item,
        };
        match item {
            Ok(Record::Event(event)) => match group_header(&event) {
                Some((size, parts)) => {
                    self.group = Some(Group {
                        event_offset: offset,
                        event,
                        size,
                        parts,
                        seen: Vec::new(),
                        bytes: 0,
                    });
                }
                None => self
                    .ready
                    .push_back(Joined::pass(offset, Ok(Record::Event(event)))),
            },
            item => self.ready.push_back(Joined::pass(offset, item)),
        }
    }

    /// [`push`](Self::push), handing the result straight back when it is
    /// ready at once: nothing is pending and the record neither starts
    /// nor continues a group (most records: no queue, no copy into it).
    /// `None`: the record was taken in; [`pop`](Self::pop) the results.
    #[inline]
    pub fn push_direct(
        &mut self,
        offset: u64,
        item: Result<Record, DecodeError>,
    ) -> Option<Joined> {
        if self.group.is_none() && self.ready.is_empty() {
            let starts = matches!(&item, Ok(Record::Event(e)) if group_header(e).is_some());
            if !starts {
                return Some(Joined::pass(offset, item));
            }
        }
        self.push(offset, item);
        None
    }

    /// Marks the end of the input: a group still being collected is
    /// released unchanged.
    pub fn finish(&mut self) {
        self.release();
    }

    /// The next result, in file order, if one is ready.
    #[inline]
    pub fn pop(&mut self) -> Option<Joined> {
        self.ready.pop_front()
    }

    /// Whether records are held back (a group is being collected).
    #[inline]
    pub fn is_collecting(&self) -> bool {
        self.group.is_some()
    }

    /// Passes the pending group's records through unchanged.
    fn release(&mut self) {
        if let Some(group) = self.group.take() {
            self.ready.push_back(Joined::pass(
                group.event_offset,
                Ok(Record::Event(group.event)),
            ));
            for (offset, blob) in group.seen {
                self.ready
                    .push_back(Joined::pass(offset, Ok(Record::Blob(blob))));
            }
        }
    }

    /// Emits the event and the joined blob of a group whose parts are all in.
    fn complete(&mut self) {
        let Some(group) = self.group.take() else {
            return;
        };
        if group.bytes != group.size {
            self.group = Some(group);
            self.release();
            return;
        }
        let first_offset = group.seen.first().map_or(group.event_offset, |p| p.0);
        // `bytes` is the sum of payloads actually decoded, so this
        // allocation is bounded by the input read.
        let mut payload = Vec::with_capacity(usize::try_from(group.bytes).unwrap_or(0));
        let mut name = group.event.name.clone();
        for (_, blob) in group.seen {
            payload.extend_from_slice(&blob.payload);
            name = blob.name;
        }
        self.ready.push_back(Joined::pass(
            group.event_offset,
            Ok(Record::Event(group.event)),
        ));
        self.ready.push_back(Joined {
            offset: first_offset,
            item: Ok(Record::Blob(Blob {
                name,
                blob_type: BlobType::Data,
                payload,
            })),
            joined_parts: group.parts,
        });
    }
}

/// The size and part count of an event that starts a split blob group.
fn group_header(event: &Event) -> Option<(u64, u64)> {
    if event.kind != EventKind::Instant {
        return None;
    }
    let [size, parts] = event.args.as_slice() else {
        return None;
    };
    match (&size.value, &parts.value) {
        (ArgValue::U64(size_value), ArgValue::U64(parts_value))
            if size.name == SIZE_KEY && parts.name == PARTS_KEY && *parts_value >= 1 =>
        {
            Some((*size_value, *parts_value))
        }
        _ => None,
    }
}

/// A source of records that knows each one's byte offset: the decoder's
/// readers.
pub trait LocatedRecords: Iterator<Item = Result<Record, DecodeError>> {
    /// Byte offset of the record most recently yielded.
    fn last_offset(&self) -> u64;
}

impl LocatedRecords for SliceReader<'_> {
    fn last_offset(&self) -> u64 {
        self.record_offset()
    }
}

impl<R: std::io::Read> LocatedRecords for StreamReader<R> {
    fn last_offset(&self) -> u64 {
        self.record_offset()
    }
}

/// An iterator adapter that joins split blob groups (see [`BlobJoiner`]).
///
/// ```
/// use fxt_format::decode::{join_split_blobs, Record};
/// use fxt_format::encode::{encode_into_vec, words_to_bytes, MagicNumber, SplitBlob, StringRef, ThreadRef};
///
/// let payload: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
/// let mut words = Vec::new();
/// encode_into_vec(&MagicNumber, &mut words).unwrap();
/// let thread = ThreadRef::Inline { process: 1, thread: 2 };
/// let blob = SplitBlob::new(StringRef::Inline("c"), StringRef::Inline("image"), 5, thread, &payload);
/// encode_into_vec(&blob, &mut words).unwrap();
/// let bytes = words_to_bytes(&words);
///
/// let joined: Vec<_> = join_split_blobs(&bytes).collect();
/// assert_eq!(joined.len(), 3); // magic, the instant, one blob
/// assert_eq!(joined[2].joined_parts, 4);
/// let Ok(Record::Blob(b)) = &joined[2].item else { panic!() };
/// assert_eq!(b.payload, payload);
/// ```
pub struct JoinSplitBlobs<I> {
    records: I,
    joiner: BlobJoiner,
    done: bool,
}

impl<I: LocatedRecords> JoinSplitBlobs<I> {
    /// Joins the split blobs of `records`.
    pub fn new(records: I) -> Self {
        Self {
            records,
            joiner: BlobJoiner::new(),
            done: false,
        }
    }

    /// The underlying reader (for its provider state).
    pub fn get_ref(&self) -> &I {
        &self.records
    }
}

impl<I: LocatedRecords> Iterator for JoinSplitBlobs<I> {
    type Item = Joined;

    fn next(&mut self) -> Option<Joined> {
        loop {
            if let Some(out) = self.joiner.pop() {
                return Some(out);
            }
            if self.done {
                return None;
            }
            match self.records.next() {
                Some(item) => {
                    let offset = self.records.last_offset();
                    if let Some(out) = self.joiner.push_direct(offset, item) {
                        return Some(out);
                    }
                }
                None => {
                    self.done = true;
                    self.joiner.finish();
                }
            }
        }
    }
}

impl<I: LocatedRecords> FusedIterator for JoinSplitBlobs<I> {}

/// Decodes `bytes` with split blobs joined.
pub fn join_split_blobs(bytes: &[u8]) -> JoinSplitBlobs<SliceReader<'_>> {
    JoinSplitBlobs::new(SliceReader::new(bytes))
}
