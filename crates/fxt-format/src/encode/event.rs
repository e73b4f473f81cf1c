//! Event records (record type 4): the eleven event types.
//!
//! _header word_
//!
//! | bits | field |
//! |---|---|
//! | `[0 .. 3]` | 4 |
//! | `[4 .. 15]` | size in words |
//! | `[16 .. 19]` | event type |
//! | `[20 .. 23]` | number of arguments |
//! | `[24 .. 31]` | thread (thread ref) |
//! | `[32 .. 47]` | category (string ref) |
//! | `[48 .. 63]` | name (string ref) |
//!
//! then, in order: the timestamp word; process and thread koid words (inline
//! thread only); the category stream and the name stream (inline refs only);
//! the arguments; the event-type word:
//!
//! | event type | trailing word |
//! |---|---|
//! | 0 instant, 2 duration begin, 3 duration end | none |
//! | 1 counter | counter id |
//! | 4 duration complete | end timestamp |
//! | 5, 6, 7 async begin / instant / end | async correlation id |
//! | 8, 9, 10 flow begin / step / end | flow correlation id |

use super::args::Arg;
use super::header::{self, event_type};
use super::refs::{StringRef, ThreadRef};
use super::{args_words, check_record_words, write_args, Encode, EncodeError, WordWriter};

/// The type of an event and its type-specific data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A moment on one thread.
    Instant,
    /// Samples of the numeric arguments in the series `(name, id)`.
    Counter {
        /// Counter id.
        id: u64,
    },
    /// Start of an operation on one thread.
    DurationBegin,
    /// End of the most recent open operation on the thread.
    DurationEnd,
    /// An operation on one thread with its end time.
    DurationComplete {
        /// End timestamp in ticks.
        end: u64,
    },
    /// Start of an operation that may span threads.
    AsyncBegin {
        /// Async correlation id.
        id: u64,
    },
    /// A moment within an async operation.
    AsyncInstant {
        /// Async correlation id.
        id: u64,
    },
    /// End of an async operation.
    AsyncEnd {
        /// Async correlation id.
        id: u64,
    },
    /// Start of a flow (an arrow between durations).
    FlowBegin {
        /// Flow correlation id.
        id: u64,
    },
    /// A step of a flow.
    FlowStep {
        /// Flow correlation id.
        id: u64,
    },
    /// End of a flow.
    FlowEnd {
        /// Flow correlation id.
        id: u64,
    },
}

impl EventKind {
    /// One kind of each event type, in type order (its ids and ends 0):
    /// `EACH_TYPE[t].event_type() == t`, so a table indexed by type
    /// number can be named by kind.
    ///
    /// ```
    /// use fxt_format::encode::EventKind;
    /// for (t, kind) in EventKind::EACH_TYPE.iter().enumerate() {
    ///     assert_eq!(kind.event_type(), t as u64);
    /// }
    /// ```
    pub const EACH_TYPE: [EventKind; 11] = {
        let mut each = [Self::Instant; 11];
        let mut t = 0;
        while t < each.len() {
            each[t] = Self::with_type(t as u64, 0);
            t += 1;
        }
        each
    };

    /// The kind of event type `event_type` whose trailing word (after the
    /// arguments) is `word`; `word` is ignored by the types without one
    /// (instants, duration begins and ends). A type past the last (10),
    /// which a decoder refuses before asking, reads as a flow end.
    ///
    /// ```
    /// use fxt_format::encode::EventKind;
    /// assert_eq!(EventKind::with_type(4, 9), EventKind::DurationComplete { end: 9 });
    /// assert_eq!(EventKind::with_type(2, 9), EventKind::DurationBegin);
    /// ```
    #[inline(always)]
    pub const fn with_type(event_type: u64, word: u64) -> EventKind {
        let id = word;
        match event_type {
            event_type::INSTANT => Self::Instant,
            event_type::COUNTER => Self::Counter { id },
            event_type::DURATION_BEGIN => Self::DurationBegin,
            event_type::DURATION_END => Self::DurationEnd,
            event_type::DURATION_COMPLETE => Self::DurationComplete { end: word },
            event_type::ASYNC_BEGIN => Self::AsyncBegin { id },
            event_type::ASYNC_INSTANT => Self::AsyncInstant { id },
            event_type::ASYNC_END => Self::AsyncEnd { id },
            event_type::FLOW_BEGIN => Self::FlowBegin { id },
            event_type::FLOW_STEP => Self::FlowStep { id },
            _ => Self::FlowEnd { id },
        }
    }

    /// The event type number (bits `[16 .. 19]`).
    #[inline]
    pub const fn event_type(&self) -> u64 {
        match self {
            Self::Instant => event_type::INSTANT,
            Self::Counter { .. } => event_type::COUNTER,
            Self::DurationBegin => event_type::DURATION_BEGIN,
            Self::DurationEnd => event_type::DURATION_END,
            Self::DurationComplete { .. } => event_type::DURATION_COMPLETE,
            Self::AsyncBegin { .. } => event_type::ASYNC_BEGIN,
            Self::AsyncInstant { .. } => event_type::ASYNC_INSTANT,
            Self::AsyncEnd { .. } => event_type::ASYNC_END,
            Self::FlowBegin { .. } => event_type::FLOW_BEGIN,
            Self::FlowStep { .. } => event_type::FLOW_STEP,
            Self::FlowEnd { .. } => event_type::FLOW_END,
        }
    }

    /// The id of a counter, async span or flow (its trailing word; a
    /// complete event's is its end, not an id).
    ///
    /// ```
    /// use fxt_format::encode::EventKind;
    /// assert_eq!(EventKind::FlowStep { id: 7 }.id(), Some(7));
    /// assert_eq!(EventKind::DurationComplete { end: 7 }.id(), None);
    /// ```
    #[inline]
    pub const fn id(&self) -> Option<u64> {
        match *self {
            Self::DurationComplete { .. } => None,
            _ => self.trailing_word(),
        }
    }

    /// The trailing type-specific word, if this type has one.
    #[inline]
    pub const fn trailing_word(&self) -> Option<u64> {
        match *self {
            Self::Instant | Self::DurationBegin | Self::DurationEnd => None,
            Self::Counter { id }
            | Self::AsyncBegin { id }
            | Self::AsyncInstant { id }
            | Self::AsyncEnd { id }
            | Self::FlowBegin { id }
            | Self::FlowStep { id }
            | Self::FlowEnd { id } => Some(id),
            Self::DurationComplete { end } => Some(end),
        }
    }
}

/// An event record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event<'a> {
    /// Event type and its data.
    pub kind: EventKind,
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// Where it happened.
    pub thread: ThreadRef,
    /// Category.
    pub category: StringRef<'a>,
    /// Name.
    pub name: StringRef<'a>,
    /// Up to 15 arguments.
    pub args: &'a [Arg<'a>],
}

impl Encode for Event<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        let trailing = self.kind.trailing_word().is_some() as usize;
        check_record_words(
            2 + self.thread.inline_words()
                + self.category.stream_words()
                + self.name.stream_words()
                + args_words(self.args)?
                + trailing,
        )
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(header::event(
            self.kind.event_type(),
            words,
            self.args.len(),
            self.thread.encoded()?,
            self.category.encoded()?,
            self.name.encoded()?,
        ))?;
        w.word(self.timestamp)?;
        self.thread.write_inline(&mut w)?;
        self.category.write_stream(&mut w)?;
        self.name.write_stream(&mut w)?;
        write_args(&mut w, self.args)?;
        if let Some(word) = self.kind.trailing_word() {
            w.word(word)?;
        }
        Ok(words)
    }
}
