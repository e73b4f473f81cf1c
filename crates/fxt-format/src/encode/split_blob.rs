//! Split blobs: a blob of any size written as normal records only, so that
//! every reader that sizes records by header bits `[4 .. 15]` (Perfetto's
//! importer, Tracy's `import-fuchsia`) walks it record for record.
//!
//! A split blob group is contiguous in the file, nothing between its records:
//!
//! | record | content |
//! |---|---|
//! | event (type 4), instant (0) | the blob's category, name, thread and timestamp; exactly two arguments, in order: [`SIZE_KEY`] (uint64, total payload bytes) and [`PARTS_KEY`] (uint64, number of parts, ≥ 1) |
//! | `parts` × blob (type 5), blob type 1 (data) | named like the event; consecutive slices of the payload, in order |
//!
//! Each part is at most [`MAX_RECORD_WORDS`] words; every part but the last
//! is as full as a record allows ([`part_capacity`]), and the parts' sizes
//! add up to the size argument. A reader that knows nothing of this sees an
//! instant and ordinary blob records; the decoder's
//! [`BlobJoiner`](crate::decode::BlobJoiner) joins the parts back into one
//! blob.

use super::args::{Arg, ArgValue};
use super::blob::{Blob, BlobType};
use super::event::{Event, EventKind};
use super::refs::{StringRef, ThreadRef};
use super::stream::{stream_words, MAX_STRING_LEN};
use super::{check_room, Encode, EncodeError, MAX_RECORD_WORDS};

/// Name of the event argument holding the payload's total size in bytes.
pub const SIZE_KEY: &str = "fxt.blob.size";
/// Name of the event argument holding the number of blob records that follow.
pub const PARTS_KEY: &str = "fxt.blob.parts";

/// Payload bytes one part can carry when its blob records are named by
/// `name`: a full record ([`MAX_RECORD_WORDS`]) less the header word and
/// the inline name stream.
///
/// ```
/// use fxt_format::encode::{split_blob::part_capacity, StringRef};
/// assert_eq!(part_capacity(StringRef::Index(3)), 4094 * 8);
/// assert_eq!(part_capacity(StringRef::Inline("png")), 4093 * 8);
/// ```
pub fn part_capacity(name: StringRef<'_>) -> usize {
    // A name stream is at most 4000 words (strings are cut to 32000 bytes),
    // so this is at least 94 words. The blob header's 15-bit payload size
    // (at most 32767) never binds: 4094 words are 32752 bytes.
    capacity_after_name(name.stream_words())
}

/// [`part_capacity`] of a name written inline, as a constant: the payload
/// bytes one blob record named `name` (at most [`MAX_STRING_LEN`] bytes,
/// as every name is) carries.
///
/// ```
/// use fxt_format::encode::{split_blob::{inline_part_capacity, part_capacity}, StringRef};
/// const PNG: usize = inline_part_capacity("png");
/// assert_eq!(PNG, part_capacity(StringRef::Inline("png")));
/// ```
pub const fn inline_part_capacity(name: &str) -> usize {
    assert!(
        name.len() <= MAX_STRING_LEN,
        "a name longer than a string may be"
    );
    capacity_after_name(stream_words(name.len()))
}

/// A full record less its header word and a name stream of `name_words`.
const fn capacity_after_name(name_words: usize) -> usize {
    (MAX_RECORD_WORDS - 1 - name_words) * 8
}

/// A blob of any size, written as a split blob group (see the
/// [module documentation](self)).
///
/// ```
/// use fxt_format::encode::{encode_to_vec, Encode, SplitBlob, StringRef, ThreadRef};
/// let payload = vec![7u8; 100_000];
/// let blob = SplitBlob::new(
///     StringRef::Index(1),
///     StringRef::Index(2),
///     1000,
///     ThreadRef::Index(1),
///     &payload,
/// );
/// assert_eq!(blob.part_count(), 4); // 3 full parts of 32752 bytes, then 1744
/// let words = encode_to_vec(&blob).unwrap();
/// assert_eq!(words.len(), blob.word_len().unwrap());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitBlob<'a> {
    /// Category of the event.
    pub category: StringRef<'a>,
    /// Name of the event and of every part.
    pub name: StringRef<'a>,
    /// Timestamp of the event, in ticks.
    pub timestamp: u64,
    /// Thread of the event.
    pub thread: ThreadRef,
    /// A ref to the string [`SIZE_KEY`] (inline by default; an index the
    /// caller has registered for that string saves words).
    pub size_key: StringRef<'a>,
    /// A ref to the string [`PARTS_KEY`] (inline by default).
    pub parts_key: StringRef<'a>,
    /// The whole payload.
    pub payload: &'a [u8],
}

impl<'a> SplitBlob<'a> {
    /// A split blob whose argument names are written inline.
    pub const fn new(
        category: StringRef<'a>,
        name: StringRef<'a>,
        timestamp: u64,
        thread: ThreadRef,
        payload: &'a [u8],
    ) -> Self {
        Self {
            category,
            name,
            timestamp,
            thread,
            size_key: StringRef::Inline(SIZE_KEY),
            parts_key: StringRef::Inline(PARTS_KEY),
            payload,
        }
    }

    /// Number of blob records after the event (at least 1: an empty
    /// payload is one empty part).
    pub fn part_count(&self) -> usize {
        self.payload.len().div_ceil(part_capacity(self.name)).max(1)
    }

    /// Part `index` (from 0) as a blob record, or `None` past the last.
    pub fn part(&self, index: usize) -> Option<Blob<'a>> {
        if index >= self.part_count() {
            return None;
        }
        let capacity = part_capacity(self.name);
        let start = index * capacity;
        let end = self.payload.len().min(start + capacity);
        Some(Blob {
            name: self.name,
            blob_type: BlobType::Data,
            payload: self.payload.get(start..end).unwrap_or_default(),
        })
    }

    /// The parts, in file order.
    pub fn parts(&self) -> impl Iterator<Item = Blob<'a>> + '_ {
        (0..self.part_count()).filter_map(move |i| self.part(i))
    }

    /// The event's two arguments.
    fn args(&self) -> [Arg<'a>; 2] {
        [
            Arg::new(self.size_key, ArgValue::U64(self.payload.len() as u64)),
            Arg::new(self.parts_key, ArgValue::U64(self.part_count() as u64)),
        ]
    }

    /// Size of the leading event record, in words.
    pub fn event_word_len(&self) -> Result<usize, EncodeError> {
        let args = self.args();
        self.event(&args).word_len()
    }

    /// Writes only the leading event record into the front of `out`
    /// (for writers that reserve room record by record); returns its size.
    pub fn encode_event(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let args = self.args();
        self.event(&args).encode(out)
    }

    fn event<'s>(&self, args: &'s [Arg<'a>; 2]) -> Event<'s>
    where
        'a: 's,
    {
        Event {
            kind: EventKind::Instant,
            timestamp: self.timestamp,
            thread: self.thread,
            category: self.category,
            name: self.name,
            args,
        }
    }

    /// Words of all parts together.
    fn parts_word_len(&self) -> Result<usize, EncodeError> {
        let count = self.part_count();
        let overflow = EncodeError::FieldOverflow("split blob size");
        let name_words = self.name.stream_words();
        let capacity = part_capacity(self.name);
        // Every part but the last is a full record.
        let full = (count - 1).checked_mul(MAX_RECORD_WORDS).ok_or(overflow)?;
        let last_bytes = self.payload.len() - (count - 1) * capacity;
        full.checked_add(1 + name_words + stream_words(last_bytes))
            .ok_or(overflow)
    }
}

impl Encode for SplitBlob<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        self.event_word_len()?
            .checked_add(self.parts_word_len()?)
            .ok_or(EncodeError::FieldOverflow("split blob size"))
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        check_room(out, words)?;
        let mut pos = self.encode_event(out)?;
        for part in self.parts() {
            let rest = out.get_mut(pos..).ok_or(EncodeError::BufferTooSmall {
                needed: words,
                available: pos,
            })?;
            pos += part.encode(rest)?;
        }
        Ok(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_fill_records_and_add_up() {
        for name in [
            StringRef::Index(9),
            StringRef::Inline("a fairly long blob name"),
        ] {
            let capacity = part_capacity(name);
            for len in [0, 1, capacity - 1, capacity, capacity + 1, 3 * capacity + 5] {
                let payload = vec![0xa5u8; len];
                let blob = SplitBlob::new(StringRef::Empty, name, 0, ThreadRef::Index(1), &payload);
                let parts: Vec<_> = blob.parts().collect();
                assert_eq!(parts.len(), blob.part_count());
                assert_eq!(parts.iter().map(|p| p.payload.len()).sum::<usize>(), len);
                for p in &parts[..parts.len() - 1] {
                    assert_eq!(p.word_len().unwrap(), MAX_RECORD_WORDS);
                }
                let total: usize = parts.iter().map(|p| p.word_len().unwrap()).sum();
                assert_eq!(
                    blob.word_len().unwrap(),
                    blob.event_word_len().unwrap() + total
                );
            }
        }
    }

    #[test]
    fn short_output_is_refused() {
        let payload = [1u8; 40_000];
        let blob = SplitBlob::new(
            StringRef::Empty,
            StringRef::Index(1),
            0,
            ThreadRef::Index(1),
            &payload,
        );
        let needed = blob.word_len().unwrap();
        let mut out = vec![0u64; needed - 1];
        assert_eq!(
            blob.encode(&mut out),
            Err(EncodeError::BufferTooSmall {
                needed,
                available: needed - 1
            })
        );
    }
}
