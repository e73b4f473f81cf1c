//! The head walk ([`SliceReader::heads_until`]): the records of a slice
//! with an event of the usual shape handed as its head ([`Head::Event`],
//! with where it was read: [`HeadAt`]), every other record as its view.

use super::error::DecodeError;
use super::head::{framed_head, EventHead};
use super::reader::{prefetch_ahead, SliceReader};
use super::view::{self, Context, View};

/// One record of a head walk: an event of the usual shape by its head,
/// or any other record (an event with an inline text or a blob argument
/// included) as its view.
pub enum Head<'v, 'a> {
    /// An event of the usual shape, and where the walk read it.
    Event(EventHead<'a>, HeadAt<'v, 'a>),
    /// Any other record.
    Other(&'v View<'a>),
}

/// Where a head walk read an event head: the reader and the record's
/// position, two words that a call out of the walk's loop takes in
/// registers. Such a call reads the head and its [`Context`] again from
/// them ([`HeadAt::read`]), so that the loop writes neither to memory for
/// an event it takes itself.
#[derive(Clone, Copy)]
pub struct HeadAt<'r, 'a> {
    reader: &'r SliceReader<'a>,
    pos: usize,
}

impl<'r, 'a> HeadAt<'r, 'a> {
    /// The head read at `pos` by `reader`'s walk.
    #[inline(always)]
    fn new(reader: &'r SliceReader<'a>, pos: usize) -> Self {
        HeadAt { reader, pos }
    }

    /// The head and its context, read again: what the walk handed with
    /// it. `None` never happens for a `HeadAt` a walk handed (the same
    /// bytes frame the same way).
    #[inline]
    pub fn read(&self) -> Option<(EventHead<'a>, Context<'r>)> {
        let (head, _) = framed_head(self.reader.input, self.pos)?;
        Some((head, self.context_of(head.bytes())))
    }

    /// The context of the record, without its head.
    #[inline]
    pub fn context(&self) -> Context<'r> {
        let record = framed_head(self.reader.input, self.pos).map_or(&[][..], |(h, _)| h.bytes());
        self.context_of(record)
    }

    /// The context of the record whose bytes are `record`.
    #[inline(always)]
    fn context_of(&self, record: &'r [u8]) -> Context<'r> {
        Context {
            decoder: &self.reader.decoder,
            record,
            offset: self.pos as u64,
        }
    }

    /// [`Context::strings_epoch`] at the record.
    #[inline(always)]
    pub fn strings_epoch(&self) -> u64 {
        self.reader.decoder.providers.strings_epoch()
    }

    /// [`Context::threads_epoch`] at the record.
    #[inline(always)]
    pub fn threads_epoch(&self) -> u64 {
        self.reader.decoder.providers.threads_epoch()
    }
}

impl<'a> SliceReader<'a> {
    /// Reads the records from the reader's position up to byte `end` (or
    /// the end of the input) as [`SliceReader::views_until`] does, but
    /// gives an event of the usual shape to `f` as its head
    /// ([`Head::Event`]: no thread looked up, no argument read, no view
    /// made) and every other record as its view ([`Head::Other`]); the
    /// records, errors and tables met are those of the view walk. Stops at
    /// `f`'s first error.
    #[inline(always)]
    pub fn heads_until<E>(
        &mut self,
        end: u64,
        mut f: impl FnMut(Result<Head<'_, 'a>, DecodeError>, &Context<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        // The position and the input in locals, not in `self`, which the
        // other records' step borrows: the usual event's step then reads
        // and writes no field of the reader.
        let input = self.input;
        let (mut pos, mut last) = (self.pos, self.record_offset);
        if self.finished {
            return Ok(());
        }
        while (pos as u64) < end {
            prefetch_ahead(input, pos);
            if let Some((head, size)) = framed_head(input, pos) {
                let offset = pos as u64;
                (pos, last) = (pos + size, offset);
                let context = Context {
                    decoder: &self.decoder,
                    record: head.bytes(),
                    offset,
                };
                let at = HeadAt::new(self, offset as usize);
                if let Err(e) = f(Ok(Head::Event(head, at)), &context) {
                    (self.pos, self.record_offset) = (pos, offset);
                    return Err(e);
                }
                continue;
            }
            (self.pos, self.record_offset) = (pos, last);
            let step = self.other_head(&mut f);
            (pos, last) = (self.pos, self.record_offset);
            if !self.goes_on(step)? {
                break;
            }
        }
        (self.pos, self.record_offset) = (pos, last);
        Ok(())
    }

    /// [`SliceReader::heads_until`]'s step for a record that is not an
    /// event of the usual shape (or for the end of the input, or a fatal
    /// error): `None` at the end.
    #[inline(never)]
    fn other_head<E>(
        &mut self,
        f: &mut impl FnMut(Result<Head<'_, 'a>, DecodeError>, &Context<'_>) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        let (record, offset) = match self.frame_header()? {
            Ok((_, record, offset)) => (record, offset),
            Err(error) => return Some(self.lend_other_head(Err(error), &[], f)),
        };
        let item = view::decode(&mut self.decoder, record, offset);
        Some(self.lend_other_head(item, record, f))
    }

    /// [`SliceReader::heads_until`]'s step for anything but the usual
    /// event, kept out of its loop as [`SliceReader::lend_other`] is.
    #[inline(never)]
    fn lend_other_head<E>(
        &self,
        item: Result<View<'a>, DecodeError>,
        record: &[u8],
        f: &mut impl FnMut(Result<Head<'_, 'a>, DecodeError>, &Context<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let context = self.context_of(record);
        match item {
            Ok(ref view) => f(Ok(Head::Other(view)), &context),
            Err(error) => f(Err(error), &context),
        }
    }
}
