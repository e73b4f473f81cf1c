//! The usual event (an event of the usual shape: strings and argument
//! names by index, no blob) as `fxt dump` and `fxt json` print it in
//! blocks, read alike from its view ([`EventView`]: a stream's, or any
//! event of a file that is not of that shape) and from its head
//! ([`EventHead`]: a file's, no view made, its thread lent from the
//! tables).

use fxt_format::decode::{ArgWordIter, Context, EventHead, EventView, StrRef, Thread, ThreadRef};

/// What the usual event's line is made of, read from its view or from
/// its head (no view made), each field where it is used: a head's fields
/// are read from the caller's copy, never moved (a move copies them in
/// 16-byte halves across words stored apart, which waits for the stores
/// to reach the cache).
pub trait Usual<'a> {
    /// The event type (0..=10).
    fn event_type(&self) -> u8;
    /// The word after the arguments (a complete event's end, an id; 0 for
    /// the types without one).
    fn trailing(&self) -> u64;
    fn timestamp(&self) -> u64;
    /// The thread, where it lies (the view, or the tables at the record:
    /// `ctx`); `None` for a head whose thread is not in them.
    fn thread<'c>(&'c self, ctx: &Context<'c>) -> Option<&'c Thread>;
    fn category(&self) -> StrRef<'a>;
    fn name(&self) -> StrRef<'a>;
    fn arg_count(&self) -> u8;
    fn arg_words(&self) -> ArgWordIter<'a>;
    /// The event's header word where the record's framing is at hand (a
    /// head's), to key what its line is made of; `None` for a view.
    fn header_word(&self) -> Option<u64>;
}

impl<'a> Usual<'a> for EventView<'a> {
    #[inline(always)]
    fn event_type(&self) -> u8 {
        self.kind.event_type() as u8
    }

    #[inline(always)]
    fn trailing(&self) -> u64 {
        self.kind.trailing_word().unwrap_or(0)
    }

    #[inline(always)]
    fn timestamp(&self) -> u64 {
        self.timestamp
    }

    #[inline(always)]
    fn thread<'c>(&'c self, _: &Context<'c>) -> Option<&'c Thread> {
        Some(&self.thread)
    }

    #[inline(always)]
    fn category(&self) -> StrRef<'a> {
        self.category
    }

    #[inline(always)]
    fn name(&self) -> StrRef<'a> {
        self.name
    }

    #[inline(always)]
    fn arg_count(&self) -> u8 {
        self.arg_count
    }

    #[inline(always)]
    fn arg_words(&self) -> ArgWordIter<'a> {
        EventView::arg_words(self)
    }

    #[inline(always)]
    fn header_word(&self) -> Option<u64> {
        None
    }
}

impl<'a> Usual<'a> for EventHead<'a> {
    #[inline(always)]
    fn event_type(&self) -> u8 {
        EventHead::event_type(self)
    }

    #[inline(always)]
    fn trailing(&self) -> u64 {
        EventHead::trailing(self)
    }

    #[inline(always)]
    fn timestamp(&self) -> u64 {
        EventHead::timestamp(self)
    }

    #[inline(always)]
    fn thread<'c>(&'c self, ctx: &Context<'c>) -> Option<&'c Thread> {
        match self.thread_ref() {
            ThreadRef::Indexed(index) => ctx.resolved_thread(index),
            ThreadRef::Inline { .. } => None,
        }
    }

    #[inline(always)]
    fn category(&self) -> StrRef<'a> {
        EventHead::category(self)
    }

    #[inline(always)]
    fn name(&self) -> StrRef<'a> {
        EventHead::name(self)
    }

    #[inline(always)]
    fn arg_count(&self) -> u8 {
        EventHead::arg_count(self)
    }

    #[inline(always)]
    fn arg_words(&self) -> ArgWordIter<'a> {
        EventHead::arg_words(self)
    }

    #[inline(always)]
    fn header_word(&self) -> Option<u64> {
        Some(self.header())
    }
}
