//! The records of one range of a walk, which a command reads with
//! [`Views::each`]: every record as a [`View`] (events borrowed from the
//! input, their strings unresolved; every other record decoded), lent
//! where the reader makes it, so that the command's work per record is
//! compiled into the reader's loop and nothing copies a view; or with
//! [`Views::heads`], an event of the usual shape as its head (its fields
//! read from its words when asked: no view made), for a command that
//! tallies every event by a few fields.

use fxt_format::decode::{Context, DecodeError, Head, Record, SliceReader, View};

use crate::input::Reader;
use crate::progress::Progress;

/// The records of one range (the whole input, for a walk on one thread).
pub struct Views<'i> {
    reader: Reader<'i>,
    /// Where the range starts and ends.
    start: u64,
    end: u64,
    /// Records read.
    records: u64,
    /// Decode errors, in file order (reported by the walk).
    errors: Vec<DecodeError>,
    /// The progress bar of a walk in one range.
    progress: Option<Progress>,
    /// Let go of the mapped pages behind the walk (see [`let_go`]).
    bounded: bool,
}

/// What a range's walk saw, once through.
pub struct Seen<'i> {
    pub reader: Reader<'i>,
    pub records: u64,
    /// Decode errors, in file order.
    pub errors: Vec<DecodeError>,
    pub progress: Option<Progress>,
}

/// The step of [`Views::each`] and [`Views::heads`] for one item of the
/// reader's loop (`$item`: a view or a head): counts a record and hands it
/// to `$f`, or keeps an error. A closure made at each call of the loop
/// rather than one lent to each: compiled into the loop with `$f` (through
/// a `&mut`, it is called once per record, which shows).
macro_rules! counted {
    ($records:ident, $errors:ident, $f:ident, $item:ty) => {
        #[inline(always)]
        |item: Result<$item, DecodeError>, ctx: &Context<'_>| match item {
            Ok(item) => {
                *$records += 1;
                $f(ctx, item)
            }
            Err(error) => {
                $errors.push(error);
                Ok(())
            }
        }
    };
}

impl<'i> Views<'i> {
    /// The records of `reader` from its position (`start`) to `end`,
    /// with the progress bar of a walk in one range.
    pub(super) fn new(
        reader: Reader<'i>,
        start: u64,
        end: u64,
        progress: Option<Progress>,
    ) -> Self {
        Views {
            reader,
            start,
            end,
            records: 0,
            errors: Vec::new(),
            progress,
            bounded: false,
        }
    }

    /// Lets go of the mapped pages behind the walk of a whole file.
    pub(super) fn bounded(mut self, bounded: bool) -> Self {
        self.bounded = bounded;
        self
    }

    /// Byte offset of the range's first record (0 for the whole input).
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The reader, for the offsets of the record most recently read and
    /// the input's bytes.
    pub fn reader(&self) -> &Reader<'i> {
        &self.reader
    }

    /// Calls `f` with each record of the range that could be read, and
    /// the reader's tables at it, until `f`'s first error (a record that
    /// could not be read is kept, and reported by the walk in file order
    /// once it is through). The view is lent, not moved, so that nothing
    /// copies it.
    #[inline(always)]
    pub fn each<E>(
        &mut self,
        mut f: impl FnMut(&Context<'_>, &View<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let (records, errors) = (&mut self.records, &mut self.errors);
        let end = self.end;
        match (&mut self.reader, &mut self.progress) {
            // A range of a file: the reader's own loop.
            (Reader::Slice(reader, _), None) => {
                reader.views_until(end, counted!(records, errors, f, &View<'_>))
            }
            // A whole file: the reader's own loop, a stretch at a time
            // between updates of the progress bar.
            (Reader::Slice(reader, bytes), Some(progress)) => {
                let file = (&**bytes, self.bounded);
                by_stretches(reader, file, progress, end, |reader, to| {
                    reader.views_until(to, counted!(records, errors, f, &View<'_>))
                })
            }
            (reader, progress) => {
                let take = { counted!(records, errors, f, &View<'_>) };
                each_with_progress(reader, progress.as_mut(), end, take)
            }
        }
    }

    /// Like [`Views::each`], but an event of the usual shape comes as its
    /// head ([`Head::Event`]: its fields read from its words when asked,
    /// no view made), every other record as its view ([`Head::Other`],
    /// which may be an event too: one with an inline text or a blob
    /// argument, or any event of a stream). The records, errors and
    /// tables met are those of [`Views::each`].
    #[inline(always)]
    pub fn heads<E>(
        &mut self,
        mut f: impl FnMut(&Context<'_>, Head<'_, '_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let (records, errors) = (&mut self.records, &mut self.errors);
        let end = self.end;
        match (&mut self.reader, &mut self.progress) {
            (Reader::Slice(reader, _), None) => {
                reader.heads_until(end, counted!(records, errors, f, Head<'_, '_>))
            }
            (Reader::Slice(reader, bytes), Some(progress)) => {
                let file = (&**bytes, self.bounded);
                by_stretches(reader, file, progress, end, |reader, to| {
                    reader.heads_until(to, counted!(records, errors, f, Head<'_, '_>))
                })
            }
            // A stream: every record as its view.
            (reader, progress) => {
                let mut take = { counted!(records, errors, f, Head<'_, '_>) };
                let as_view = |item: Result<&View<'_>, DecodeError>, ctx: &Context<'_>| {
                    take(item.map(Head::Other), ctx)
                };
                each_with_progress(reader, progress.as_mut(), end, as_view)
            }
        }
    }

    /// Once [`Views::each`] is through a range that is not the whole
    /// input, the next record past its end (for a group of records that
    /// straddles the cut; the range after this one reads and reports it as
    /// its own). `None` at the end of the input, for the whole input, or
    /// if the range is not through.
    pub fn next_beyond(&mut self) -> Option<Result<Record, DecodeError>> {
        if self.progress.is_some() || self.reader.position() < self.end {
            return None;
        }
        self.reader.next()
    }

    /// Reads what the command left of the range, so that the walk counts
    /// every record and keeps every error, and gives what it saw.
    pub(super) fn finish(mut self) -> Seen<'i> {
        // `f` never fails.
        let _ = self.each(|_, _| Ok::<(), ()>(()));
        Seen {
            reader: self.reader,
            records: self.records,
            errors: self.errors,
            progress: self.progress,
        }
    }
}

/// Bytes a walk of a whole file reads between updates of its progress bar.
const PROGRESS_BYTES: u64 = 1 << 20;

/// Walks a whole file (`file`: its bytes, and whether to let go of the
/// pages behind the walk) up to `end` a stretch of [`PROGRESS_BYTES`] at a
/// time, `stretch` reading the records up to the offset it is given, with
/// the progress bar updated between stretches.
#[inline(always)]
fn by_stretches<'i, E>(
    reader: &mut SliceReader<'i>,
    (bytes, bounded): (&[u8], bool),
    progress: &mut Progress,
    end: u64,
    mut stretch: impl FnMut(&mut SliceReader<'i>, u64) -> Result<(), E>,
) -> Result<(), E> {
    let mut kept_from = 0;
    loop {
        let from = SliceReader::position(reader);
        stretch(reader, from.saturating_add(PROGRESS_BYTES).min(end))?;
        let to = SliceReader::position(reader);
        progress.update(to);
        if bounded {
            kept_from = let_go(bytes, kept_from, to);
        }
        // A stretch that read nothing: the input is through.
        if to >= end || to == from {
            return Ok(());
        }
    }
}

/// The records of a whole file in memory (`reader` from its start;
/// `file`: its bytes, and whether to let go of the pages behind the walk)
/// in file order, as [`Views::heads`] hands them, until `f`'s first error;
/// the records read and the decode errors kept. The reader and the counts
/// live in the caller's frame, not in a [`Views`]: a pass's own loop,
/// compiled whole into it.
#[inline(always)]
pub(super) fn heads_in_order<'i, E>(
    reader: &mut SliceReader<'i>,
    file: (&[u8], bool),
    progress: &mut Progress,
    mut f: impl FnMut(&Context<'_>, Head<'_, '_>) -> Result<(), E>,
) -> Result<(u64, Vec<DecodeError>), E> {
    let (mut records, mut errors) = (0u64, Vec::new());
    {
        let (records, errors) = (&mut records, &mut errors);
        by_stretches(reader, file, progress, u64::MAX, |reader, to| {
            reader.heads_until(to, counted!(records, errors, f, Head<'_, '_>))
        })?;
    }
    Ok((records, errors))
}

/// Like [`heads_in_order`], but every record as [`Views::each`] hands it
/// (a view).
#[inline(always)]
pub(super) fn views_in_order<'i, E>(
    reader: &mut SliceReader<'i>,
    file: (&[u8], bool),
    progress: &mut Progress,
    mut f: impl FnMut(&Context<'_>, &View<'_>) -> Result<(), E>,
) -> Result<(u64, Vec<DecodeError>), E> {
    let (mut records, mut errors) = (0u64, Vec::new());
    {
        let (records, errors) = (&mut records, &mut errors);
        by_stretches(reader, file, progress, u64::MAX, |reader, to| {
            reader.views_until(to, counted!(records, errors, f, &View<'_>))
        })?;
    }
    Ok((records, errors))
}

/// Lets go of the pages of the mapped file `bytes` from `from` up to the
/// last whole [`PROGRESS_BYTES`] before `to` (a multiple of every page
/// size); returns where the kept pages now begin.
fn let_go(bytes: &[u8], from: usize, to: u64) -> usize {
    let upto = (to as usize).min(bytes.len()) & !(PROGRESS_BYTES as usize - 1);
    if upto <= from {
        return from;
    }
    #[cfg(unix)]
    {
        // SAFETY: `from..upto` lies within `bytes`, the whole of a
        // read-only shared map of a file (`Input::open`), whose start is
        // page-aligned, as `from` and `upto` are multiples of a megabyte.
        // MADV_DONTNEED on a shared file mapping only drops this process's
        // page table entries: a later access (a string the walk's tables
        // still borrow from there) reads the same bytes back from the
        // file's page cache, so nothing borrowed changes. It fails
        // harmlessly (pages kept) rather than ever changing the bytes.
        unsafe {
            libc::madvise(
                bytes.as_ptr().add(from) as *mut libc::c_void,
                upto - from,
                libc::MADV_DONTNEED,
            );
        }
    }
    upto
}

/// [`Views::each`] of a stream: a function of its own, so that the
/// compiler keeps its loop apart from the reader's loop of a file (merged,
/// every view was copied to one place first).
#[inline(never)]
fn each_with_progress<E>(
    reader: &mut Reader<'_>,
    mut progress: Option<&mut Progress>,
    end: u64,
    mut take: impl FnMut(Result<&View<'_>, DecodeError>, &Context<'_>) -> Result<(), E>,
) -> Result<(), E> {
    while Reader::position(reader) < end {
        if let Some(progress) = progress.as_mut() {
            progress.tick(Reader::position(reader));
        }
        let Some((item, ctx)) = reader.next_view() else {
            break;
        };
        take(item.as_ref().map_err(Clone::clone), &ctx)?;
    }
    Ok(())
}
