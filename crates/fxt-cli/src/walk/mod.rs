//! The one walk of an input's records, for every command that reads a
//! trace: as views ([`Views`]: events borrowed from the input, their
//! strings unresolved; every other record decoded) in file order on this
//! thread ([`Input::walk_views_in_order`]), on every core with a state per
//! range merged by the command ([`Input::walk_view_ranges`]), or on every
//! core with output that follows the file ([`walk_ordered`]); the two
//! last cut a file through the one range pool ([`pool`]). Damage is
//! reported on stderr the same way by each, named by file and byte offset
//! in file order: a malformed record is skipped, the first fatal error
//! ends the walk. A range's views come one by one ([`Views::each`]) or,
//! for a command that tallies events by a few fields, with events of the
//! usual shape as their heads ([`Views::heads`]: `stats`, `check`,
//! `flame`).
//!
//! A stream, one thread (`FXT_THREADS=1`) or a small file is one range,
//! walked on the calling thread with a progress bar.

mod out;
mod outcome;
mod pool;
mod views;

use fxt_format::decode::{Context, DecodeError, Head, SliceReader, View};

use crate::error::Error;
use crate::input::{Input, Reader};
use crate::progress::Progress;
use pool::{on_ranges, Cut, Finished};

pub use out::{Out, Sink};
pub use outcome::{damaged, range_bytes, reading_threads, Walk};
pub use views::Views;

/// Input bytes per range of [`Input::walk_view_ranges`]: few enough
/// ranges that their states (and the copies of the tables each starts
/// with) cost little to make and merge, small enough that every thread has
/// one to walk after a fraction of the cut.
const VIEW_RANGE_BYTES: usize = 4 << 20;

/// Input bytes per range of [`walk_ordered`]: small enough that the window
/// of output buffers stays a few megabytes per thread (`fxt dump` prints
/// about three times its input), large enough that the cost of a cut (a
/// copy of the tables, a hand-off between threads) is lost in the
/// decoding.
const ORDERED_RANGE_BYTES: usize = 1 << 20;

impl Input {
    /// Walks every record as views on every core: a file in memory is cut
    /// into ranges ([`pool`]), each range is walked with its own state
    /// from `init`, and the states come back in file order for the caller
    /// to merge. Events borrow the input and leave their strings
    /// unresolved (the [`Context`] beside each view resolves them), so a
    /// command that tallies by string index copies nothing per event. If
    /// `f` fails for a range, that is the walk's result and nothing is
    /// reported (a command may walk again in file order).
    pub fn walk_view_ranges<S, I, F>(
        &mut self,
        what: &str,
        init: I,
        f: F,
    ) -> Result<(Walk, Vec<S>), Error>
    where
        S: Send,
        I: Fn() -> S + Sync,
        F: Fn(&mut S, &mut Views<'_>) -> Result<(), Error> + Sync,
    {
        let work = |views: &mut Views<'_>, _: &mut Out<'_>| {
            let mut state = init();
            f(&mut state, views)?;
            Ok(state)
        };
        let Some(cut) = self.cut(VIEW_RANGE_BYTES) else {
            let no_output = &mut Out::new(Vec::new(), None);
            let (walk, state) = self.walk_views(what, |views| work(views, no_output))?;
            return Ok((walk, vec![state]));
        };
        let mut ranges = Vec::new();
        on_ranges(cut, &work, |finished| {
            ranges.push(finished);
            Ok(Vec::new())
        })?;
        // Every range first, so that a failed one has nothing reported.
        let mut ranges = ranges
            .into_iter()
            .map(|r| Ok((r.state?, r.records, r.errors, r.end)))
            .collect::<Result<Vec<_>, Error>>()?;
        let mut walk = Walk::default();
        let mut states = Vec::with_capacity(ranges.len());
        for (state, records, errors, end) in ranges.drain(..) {
            walk.records += records;
            walk.bytes = end;
            for error in errors {
                damaged(&self.name, self.quiet, &mut walk, error, |message| {
                    eprintln!("fxt: warning: {message}")
                });
            }
            states.push(state);
        }
        Ok((walk, states))
    }

    /// Like [`Input::walk_view_ranges`], record by record, in file order
    /// on this thread (for a command whose state runs through the whole
    /// input). A file in memory is walked by a loop compiled into the
    /// caller's frame ([`views::views_in_order`]: the reader and the counts
    /// there, not behind the walk's setup), a stream as its views.
    #[inline(always)]
    pub fn walk_views_in_order<F>(&mut self, what: &str, mut f: F) -> Result<Walk, Error>
    where
        F: FnMut(&Context<'_>, &View<'_>) -> Result<(), Error>,
    {
        if self.bytes().is_none() {
            let (walk, ()) = self.walk_views(what, |views| views.each(&mut f))?;
            return Ok(walk);
        }
        self.walk_file_in_own_frame(what, |reader, file, progress| {
            views::views_in_order(reader, file, progress, &mut f)
        })
    }

    /// Walks every record in file order on this thread, as
    /// [`Input::walk_views_in_order`] does, with events of the usual shape
    /// as their heads ([`Views::heads`]: no view made, no thread looked
    /// up), for a pass that reads of most events only a few words.
    #[inline(always)]
    pub fn walk_heads_in_order<F>(&mut self, what: &str, mut f: F) -> Result<Walk, Error>
    where
        F: FnMut(&Context<'_>, Head<'_, '_>) -> Result<(), Error>,
    {
        if self.bytes().is_none() {
            return self.walk_views_in_order(what, |ctx, view| f(ctx, Head::Other(view)));
        }
        self.walk_file_in_own_frame(what, |reader, file, progress| {
            views::heads_in_order(reader, file, progress, f)
        })
    }

    /// The walk of a file in memory by `walk`, a loop compiled into the
    /// caller's frame (its reader, the file's bytes and whether to let go
    /// of the pages behind, the progress bar) that gives the records read
    /// and the decode errors kept: [`Input::walk_views_in_order`] and
    /// [`Input::walk_heads_in_order`].
    #[inline(always)]
    fn walk_file_in_own_frame(
        &mut self,
        what: &str,
        walk: impl FnOnce(
            &mut SliceReader<'_>,
            (&[u8], bool),
            &mut Progress,
        ) -> Result<(u64, Vec<DecodeError>), Error>,
    ) -> Result<Walk, Error> {
        let (name, quiet, bounded) = (self.name.clone(), self.quiet, self.bounded());
        let (Reader::Slice(mut reader, bytes), total) = self.reader() else {
            return Err(Error::msg("an input in memory not read from memory"));
        };
        let mut progress = Progress::new(what, total);
        let (records, errors) = walk(&mut reader, (bytes, bounded), &mut progress)?;
        let bytes = SliceReader::position(&reader);
        Ok(reported(&name, quiet, (records, bytes), errors, progress))
    }

    /// The cut of an input in memory into ranges of about `default` bytes
    /// (`FXT_RANGE_BYTES`) on `FXT_THREADS` threads; `None` for a stream,
    /// one thread, or an input too small to be worth cutting.
    fn cut(&self, default: usize) -> Option<Cut<'_>> {
        let bytes = self.bytes()?;
        let (threads, range_bytes) = (reading_threads(), range_bytes(default));
        if threads <= 1 || bytes.len() < 2 * range_bytes {
            return None;
        }
        Some(Cut {
            bytes,
            range_bytes,
            threads: threads.min(bytes.len() / range_bytes),
        })
    }

    /// The whole input walked as one range on this thread by `f`, with a
    /// progress bar; damage is reported once the walk is through, as a
    /// walk of several ranges reports it, so that an `f` that ends early
    /// ([`Error::in_file_order`]) has reported nothing.
    fn walk_views<S>(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut Views<'_>) -> Result<S, Error>,
    ) -> Result<(Walk, S), Error> {
        let name = self.name.clone();
        let quiet = self.quiet;
        let bounded = self.bounded();
        let (reader, total) = self.reader();
        let progress = Progress::new(what, total);
        let mut views = Views::new(reader, 0, u64::MAX, Some(progress)).bounded(bounded);
        let state = f(&mut views)?;
        let seen = views.finish();
        let progress = seen.progress.unwrap_or_else(|| Progress::new(what, total));
        let read = (seen.records, seen.reader.position());
        Ok((reported(&name, quiet, read, seen.errors, progress), state))
    }
}

/// The walk of one range through (`read`: its records and the bytes it
/// read), its damage reported once in file order and its progress bar
/// finished.
fn reported(
    name: &str,
    quiet: bool,
    (records, bytes): (u64, u64),
    errors: Vec<DecodeError>,
    progress: Progress,
) -> Walk {
    let mut walk = Walk {
        records,
        bytes,
        ..Walk::default()
    };
    for error in errors {
        damaged(name, quiet, &mut walk, error, |m| progress.warn(m));
    }
    progress.finish();
    walk
}

/// Walks every record of `input` with `work`, on every core for a file in
/// memory ([`pool`]), and hands each range's output and the state `work`
/// returned for it to `merge`, in file order, to write to `sink`: the
/// output, the warnings and the exit status are those of one thread, byte
/// for byte, and memory is bounded by the number of threads, not by the
/// trace or its output. On one thread, the output goes straight to the
/// sink.
pub fn walk_ordered<T, F, M>(
    input: &mut Input,
    what: &str,
    sink: &mut Sink,
    work: F,
    mut merge: M,
) -> Result<Walk, Error>
where
    T: Send,
    F: Fn(&mut Views<'_>, &mut Out<'_>) -> Result<T, Error> + Sync,
    M: FnMut(&mut Sink, &[u8], T) -> Result<(), Error>,
{
    let Some(cut) = input.cut(ORDERED_RANGE_BYTES) else {
        let (walk, (held, state)) = input.walk_views(what, |views| {
            let mut out = Out::new(Vec::new(), Some(&mut *sink));
            let state = work(views, &mut out)?;
            Ok((out.into_held(), state))
        })?;
        merge(sink, &held.0[..held.1], state)?;
        return Ok(walk);
    };
    let (name, quiet) = (input.name.as_str(), input.quiet);
    let mut progress = Progress::new(what, Some(cut.bytes.len() as u64));
    let mut walk = Walk::default();
    on_ranges(cut, &work, |range: Finished<T>| {
        walk.records += range.records;
        walk.bytes = range.end;
        for error in range.errors {
            damaged(name, quiet, &mut walk, error, |m| progress.warn(m));
        }
        merge(sink, &range.buf[..range.len], range.state?)?;
        progress.update(range.end);
        Ok(range.buf)
    })?;
    progress.finish();
    Ok(walk)
}
