//! Reading an event by its head: what a reader that tallies every event
//! by a few fields needs, with nothing else made.
//!
//! [`SliceReader::heads_until`](super::SliceReader::heads_until) hands an
//! event record of the usual shape (category, name and argument names by
//! index or empty, no blob argument) as an [`EventHead`]: the header word,
//! the record's bytes and where its arguments end, checked as its
//! [`EventView`] would be, with every field read only when asked (the
//! thread's index or inline koids, the string indices, the trailing
//! word, the arguments' words). No thread is looked up, no argument
//! decoded and no view stored for the reader to read back. Every other
//! record comes as a [`View`], as
//! [`SliceReader::views_until`](super::SliceReader::views_until) lends it.
//! What a head says is what the view of the same record says
//! ([`EventHead::view`]).

use super::parse::bits;
use super::record::{EventKind, Thread};
use super::values::StrRef;
use super::view::{plain_args_end, word_at, ArgViews, ArgWordIter, Context, EventView};
use crate::encode::header::record_type;

/// An event record read no further than its framing and its arguments'
/// sizes; each field is read from its word when asked.
#[derive(Debug, Clone, Copy)]
pub struct EventHead<'a> {
    header: u64,
    /// The record's bytes.
    bytes: &'a [u8],
    offset: u64,
    /// Its timestamp, read when its words were checked, as is
    /// `trailing`: an accessor then checks nothing again.
    timestamp: u64,
    /// The word after its arguments for the types that carry one (a
    /// counter's, async or flow event's id, a complete duration's end); 0
    /// for the others.
    trailing: u64,
}

/// A thread field as the record holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadRef {
    /// An index into the provider's thread table (1..=255).
    Indexed(u8),
    /// The koids, inline in the record.
    Inline {
        /// Process koid.
        process: u64,
        /// Thread koid.
        thread: u64,
    },
}

impl<'a> EventHead<'a> {
    /// The record's header word.
    #[inline(always)]
    pub fn header(&self) -> u64 {
        self.header
    }

    /// The event type (0..=10).
    #[inline(always)]
    pub fn event_type(&self) -> u8 {
        bits(self.header, 16, 4) as u8
    }

    /// When, in ticks of the provider's clock.
    #[inline(always)]
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// The thread's index in the provider's table; 0 when its koids are
    /// inline ([`EventHead::thread_ref`]).
    #[inline(always)]
    pub fn thread_index(&self) -> u8 {
        bits(self.header, 24, 8) as u8
    }

    /// The thread field as the record holds it.
    #[inline(always)]
    pub fn thread_ref(&self) -> ThreadRef {
        match self.thread_index() {
            0 => ThreadRef::Inline {
                process: self.word(2),
                thread: self.word(3),
            },
            index => ThreadRef::Indexed(index),
        }
    }

    /// The category's string index (0: the empty string).
    #[inline(always)]
    pub fn category_index(&self) -> u16 {
        bits(self.header, 32, 16) as u16
    }

    /// The name's string index (0: the empty string).
    #[inline(always)]
    pub fn name_index(&self) -> u16 {
        bits(self.header, 48, 16) as u16
    }

    /// The category as a string ref.
    #[inline(always)]
    pub fn category(&self) -> StrRef<'a> {
        index_ref(self.category_index())
    }

    /// The event's name as a string ref.
    #[inline(always)]
    pub fn name(&self) -> StrRef<'a> {
        index_ref(self.name_index())
    }

    /// How many arguments the record carries.
    #[inline(always)]
    pub fn arg_count(&self) -> u8 {
        bits(self.header, 20, 4) as u8
    }

    /// The event type and its trailing word.
    #[inline(always)]
    pub fn kind(&self) -> EventKind {
        EventKind::with_type(u64::from(self.event_type()), self.trailing)
    }

    /// The word after the arguments: a complete event's end, a counter's,
    /// async or flow event's id; 0 for the types without one.
    #[inline(always)]
    pub fn trailing(&self) -> u64 {
        self.trailing
    }

    /// A duration complete event's end ticks; `None` for any other type.
    #[inline(always)]
    pub fn end_ts(&self) -> Option<u64> {
        (self.event_type() == 4).then_some(self.trailing)
    }

    /// The id of a counter, async or flow event ([`EventKind::id`]);
    /// `None` for any other type.
    #[inline(always)]
    pub fn id(&self) -> Option<u64> {
        match self.event_type() {
            0 | 2..=4 => None,
            _ => Some(self.trailing),
        }
    }

    /// The arguments' words, each argument's header first.
    #[inline(always)]
    pub fn arg_words(&self) -> ArgWordIter<'a> {
        ArgWordIter::new(&self.bytes[self.args_at()..], self.arg_count())
    }

    /// The arguments, their values read but their strings unresolved.
    #[inline]
    pub fn args(&self) -> ArgViews<'a> {
        ArgViews::new(self.arg_words())
    }

    /// The record's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The record's byte offset in the input.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The view of the same record, with the reader's tables at it
    /// (`ctx`): what [`SliceReader::views_until`](super::SliceReader::views_until)
    /// lends for it.
    pub fn view(&self, ctx: &Context<'_>) -> EventView<'a> {
        let thread = match self.thread_ref() {
            ThreadRef::Indexed(index) => ctx.decoder.providers.current.thread(index),
            ThreadRef::Inline { process, thread } => Thread::Known { process, thread },
        };
        EventView::new(
            self.kind(),
            self.timestamp(),
            thread,
            (self.category(), self.name()),
            self.bytes,
            self.offset,
            (self.arg_count(), self.args_at() as u16),
        )
    }

    /// The first argument's byte offset in the record.
    #[inline(always)]
    fn args_at(&self) -> usize {
        if self.thread_index() == 0 {
            32
        } else {
            16
        }
    }

    /// Word `at` of the record (checked there when the head was made).
    #[inline(always)]
    fn word(&self, at: usize) -> u64 {
        word_at(self.bytes, at).unwrap_or(0)
    }
}

/// A string ref read from a head's index (never inline).
#[inline(always)]
fn index_ref<'a>(index: u16) -> StrRef<'a> {
    match index {
        0 => StrRef::Empty,
        index => StrRef::Indexed(index),
    }
}

/// The head of the record at byte `pos` of `input` if it is an event of
/// the usual shape whose bytes the input holds, and its size in bytes;
/// `None` for anything else, which the reader frames and reads as a
/// view (a record cut short, of size 0 or of another type included).
/// Framed and read in one step: the header's type and inline refs are
/// checked before its size is read, so the size is an event's, never a
/// large record's.
#[inline(always)]
pub(crate) fn framed_head(input: &[u8], pos: usize) -> Option<(EventHead<'_>, usize)> {
    let rest = input.get(pos..)?;
    let header = word_at(rest, 0)?;
    if header & (0xf | INLINE_REFS) != record_type::EVENT {
        return None;
    }
    let size = bits(header, 4, 12) as usize * 8;
    let bytes = rest.get(..size)?;
    Some((head(header, bytes, pos as u64)?, size))
}

/// Bit 15 of the category's or the name's ref: an inline text, which
/// `plain_ref` refuses (an index, or 0 for the empty string, is taken).
const INLINE_REFS: u64 = 1 << 47 | 1 << 63;

/// The head of a framed event record (`bytes`, at input offset `offset`,
/// its first word `header`, whose type and refs [`framed_head`] checked)
/// that is of the usual shape: what [`super::view::plain`] accepts, read
/// with the same checks, in one pass with a bounds check per word; `None`
/// for any other, which the view walk reads.
#[inline(always)]
fn head(header: u64, bytes: &[u8], offset: u64) -> Option<EventHead<'_>> {
    let event_type = bits(header, 16, 4);
    if event_type > 10 {
        return None;
    }
    // The timestamp and the inline koids.
    let at = if bits(header, 24, 8) == 0 { 4 } else { 2 };
    if bytes.len() < at * 8 {
        return None;
    }
    let timestamp = word_at(bytes, 1)?;
    let at = plain_args_end(bytes, header, at)?;
    // The trailing word of the types that carry one.
    let trailing = if matches!(event_type, 0 | 2 | 3) {
        if bytes.len() < at * 8 {
            return None;
        }
        0
    } else {
        word_at(bytes, at)?
    };
    Some(EventHead {
        header,
        bytes,
        offset,
        timestamp,
        trailing,
    })
}
