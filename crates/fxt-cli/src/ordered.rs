//! Reading one input on every core for a command whose output follows the
//! file (`fxt dump`, `fxt json`): the output, the warnings and the exit
//! status are those of one thread, byte for byte, and memory is bounded by
//! the number of threads, not by the trace or its output.
//!
//! A file in memory is cut lazily into ranges of about a megabyte at record
//! boundaries ([`RecordRanges`]: each range's reader starts with the string
//! and thread tables in force there). A pool of `FXT_THREADS` workers takes
//! the ranges in file order and formats each into a buffer of its own; the
//! calling thread hands the buffers to the command's `merge` in file order,
//! which writes them out (fixing up what crosses a cut), and warns about the
//! range's damage. Buffers are the tokens of a bounded window: a worker takes
//! a free buffer before it takes a range, and a buffer is free again only once
//! written, so at most [`WINDOW_PER_THREAD`] ranges per thread are in flight
//! or waiting to be written, however far ahead the fast workers get.
//!
//! A stream, one thread (`FXT_THREADS=1`) or a small file is one range read
//! on the calling thread, its output going straight to the sink.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Write};
use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Mutex, PoisonError};

use fxt_format::decode::{Context, DecodeError, Record, RecordRange, RecordRanges, View};

use crate::error::Error;
use crate::input::{damaged, range_bytes, reading_threads, Input, Reader, Walk};
use crate::piece::{Blocks, LINE};
use crate::progress::Progress;

/// Input bytes per range: small enough that the window of output buffers
/// stays a few megabytes per thread (`fxt dump` prints about three times
/// its input), large enough that the cost of a cut (a copy of the tables,
/// a hand-off between threads) is lost in the decoding.
const RANGE_BYTES: usize = 1 << 20;

/// Ranges in flight or waiting to be written, per thread: two keeps every
/// worker busy while the writer waits for the slowest range.
const WINDOW_PER_THREAD: usize = 2;

/// Where a range's output goes: a buffer of its own on several threads,
/// straight to the (buffered) sink when one thread reads the whole input,
/// so that its output and warnings interleave as they always did.
pub struct Out<'s> {
    /// The output held (`end` bytes), then room for a line to be built in
    /// place ([`Out::line`]): bytes kept initialized, so that a line is
    /// written there with plain slice copies and no copy of its own.
    buf: Vec<u8>,
    end: usize,
    sink: Option<&'s mut Sink>,
}

/// The output of a command that walks in order: buffered as the command
/// always buffered it (a concrete type, so that the many small writes of
/// one thread are inlined).
pub type Sink = BufWriter<Box<dyn Write>>;

/// Bytes one thread reading the whole input holds before it passes them
/// on to the sink.
const SINK_CHUNK: usize = 1 << 16;

impl<'s> Out<'s> {
    /// An empty output in `buf` (whose bytes are reused as room).
    fn new(buf: Vec<u8>, sink: Option<&'s mut Sink>) -> Self {
        Out { buf, end: 0, sink }
    }

    /// Bytes held: on several threads, everything the range wrote so far.
    pub fn len(&self) -> usize {
        self.end
    }

    /// Builds a line in place after what is held, with `f`: kept if `f`
    /// returns `Some` (pass it on with [`Out::settle`]), dropped if `None`.
    #[inline(always)]
    pub fn line<R>(&mut self, f: impl FnOnce(&mut Blocks<'_>) -> Option<R>) -> Option<R> {
        if self.buf.len() - self.end < LINE {
            self.grow(LINE);
        }
        let room = self.buf.get_mut(self.end..self.end + LINE)?;
        let mut line = Blocks::new(room.try_into().ok()?);
        let kept = f(&mut line)?;
        self.end += line.len();
        Some(kept)
    }

    /// Makes room for `bytes` more bytes after what is held.
    #[cold]
    fn grow(&mut self, bytes: usize) {
        let len = (self.end + bytes).max(2 * self.buf.len());
        self.buf.resize(len, 0);
    }

    /// Passes what one thread holds on to the sink once it is a chunk (on
    /// several threads a range's output goes to the writer whole).
    #[inline]
    pub fn settle(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Some(sink) if self.end >= SINK_CHUNK => {
                sink.write_all(&self.buf[..self.end])?;
                self.end = 0;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl Write for Out<'_> {
    #[inline]
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    #[inline]
    fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        if self.buf.len() - self.end < data.len() {
            self.grow(data.len());
        }
        let end = self.end + data.len();
        self.buf[self.end..end].copy_from_slice(data);
        self.end = end;
        self.settle()
    }

    /// Nothing: what is held goes to `merge` at the end of the range.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The walk reporting damage as it goes (one thread).
struct Live<'r> {
    name: &'r str,
    quiet: bool,
    walk: &'r mut Walk,
    progress: &'r mut Progress,
}

/// Reports (one thread: `live`) or keeps for the writer (several) a
/// decode error.
fn report(live: &mut Option<Live<'_>>, errors: &mut Vec<DecodeError>, error: DecodeError) {
    match live {
        Some(live) => damaged(live.name, live.quiet, live.walk, error, |m| {
            live.progress.warn(m)
        }),
        None => errors.push(error),
    }
}

/// The records of one range, for the command's `work`.
pub struct Records<'r, 'a> {
    reader: Reader<'a>,
    start: u64,
    end: u64,
    records: u64,
    /// Decode errors, in file order, for the writer to report (several
    /// threads).
    errors: Vec<DecodeError>,
    live: Option<Live<'r>>,
}

impl<'a> Records<'_, 'a> {
    /// Byte offset of the range's first record (0 for the whole input).
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The reader, for the offsets and provider state of the record most
    /// recently yielded.
    pub fn reader(&self) -> &Reader<'a> {
        &self.reader
    }

    /// Hands every record of the range to `f` as a view, with the
    /// reader's tables at it, until `f`'s first error. Events come
    /// unresolved and unbuilt, for a command that formats them straight
    /// from the record's bytes; every other record comes decoded. A view is
    /// lent where it is made ([`SliceReader::views_until`] for a file), not
    /// moved out per record. Decode errors are reported (by file and
    /// offset, in file order) and skipped, as [`Input::walk`] does.
    ///
    /// [`SliceReader::views_until`]: fxt_format::decode::SliceReader::views_until
    /// [`Input::walk`]: crate::input::Input::walk
    #[inline]
    pub fn each_view<E>(
        &mut self,
        mut f: impl FnMut(&Context<'_>, &View<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Records {
            reader,
            end,
            records,
            errors,
            live,
            ..
        } = self;
        let mut take = |item: Result<&View<'_>, DecodeError>, ctx: &Context<'_>| {
            if let Some(live) = live.as_mut() {
                let position = ctx.record_offset() + ctx.record_bytes().len() as u64;
                live.progress.tick(position);
            }
            match item {
                Ok(view) => {
                    *records += 1;
                    if let Some(live) = live.as_mut() {
                        live.walk.records += 1;
                    }
                    f(ctx, view)
                }
                Err(error) => {
                    report(live, errors, error);
                    Ok(())
                }
            }
        };
        match reader {
            Reader::Slice(reader, _) => reader.views_until(*end, take),
            reader => {
                while Reader::position(reader) < *end {
                    let Some((item, ctx)) = reader.next_view() else {
                        break;
                    };
                    take(item.as_ref().map_err(Clone::clone), &ctx)?;
                }
                Ok(())
            }
        }
    }

    /// Once [`Records::each_view`] is done, the next item past the
    /// range's end (for a group of records that straddles the cut; the
    /// range after this one reads and reports it as its own). `None` at
    /// the end of the input.
    pub fn next_beyond(&mut self) -> Option<Result<Record, DecodeError>> {
        if self.live.is_some() || self.reader.position() < self.end {
            return None; // the whole input, or the range is not done
        }
        self.reader.next()
    }
}

/// Walks every record of `input` with `work`, on every core for a file in
/// memory (see the module documentation), and hands each range's output
/// and the state `work` returned for it to `merge`, in file order, to
/// write to `sink`. Damage is reported as [`Input::walk`] reports it.
pub fn walk_ordered<T, F, M>(
    input: &mut Input,
    what: &str,
    sink: &mut Sink,
    work: F,
    merge: M,
) -> Result<Walk, Error>
where
    T: Send,
    F: Fn(&mut Records<'_, '_>, &mut Out<'_>) -> Result<T, Error> + Sync,
    M: FnMut(&mut Sink, &[u8], T) -> Result<(), Error>,
{
    let threads = reading_threads();
    let range_bytes = range_bytes(RANGE_BYTES);
    let name = input.name.clone();
    let quiet = input.quiet;
    match input.bytes() {
        Some(bytes) if threads > 1 && bytes.len() >= 2 * range_bytes => {
            let ranges = RecordRanges::new(bytes, range_bytes);
            let threads = threads.min(bytes.len() / range_bytes);
            let report = Report {
                name: &name,
                quiet,
                what,
                total: bytes.len() as u64,
            };
            on_threads(ranges, bytes, threads, report, sink, &work, merge)
        }
        _ => one_thread(input, what, sink, work, merge),
    }
}

/// [`walk_ordered`] on the calling thread, as one range.
fn one_thread<T, F, M>(
    input: &mut Input,
    what: &str,
    sink: &mut Sink,
    work: F,
    mut merge: M,
) -> Result<Walk, Error>
where
    F: Fn(&mut Records<'_, '_>, &mut Out<'_>) -> Result<T, Error>,
    M: FnMut(&mut Sink, &[u8], T) -> Result<(), Error>,
{
    let name = input.name.clone();
    let quiet = input.quiet;
    let (reader, total) = input.reader();
    let mut progress = Progress::new(what, total);
    let mut walk = Walk::default();
    let mut out = Out::new(Vec::new(), Some(&mut *sink));
    let mut records = Records {
        reader,
        start: 0,
        end: u64::MAX,
        records: 0,
        errors: Vec::new(),
        live: Some(Live {
            name: &name,
            quiet,
            walk: &mut walk,
            progress: &mut progress,
        }),
    };
    let state = work(&mut records, &mut out)?;
    let bytes = records.reader.position();
    drop(records);
    let (held, len) = (out.buf, out.end);
    merge(sink, &held[..len], state)?;
    walk.bytes = bytes;
    progress.finish();
    Ok(walk)
}

/// How the writer names the input and shows progress.
struct Report<'n> {
    name: &'n str,
    quiet: bool,
    what: &'n str,
    total: u64,
}

/// What a worker hands the writer for one range.
struct Finished<T> {
    /// The range's output: the first `len` bytes of `buf`.
    buf: Vec<u8>,
    len: usize,
    state: Result<T, Error>,
    records: u64,
    errors: Vec<DecodeError>,
    end: u64,
}

/// [`walk_ordered`] on `threads` workers and the calling thread, which
/// writes.
fn on_threads<T, F, M>(
    ranges: RecordRanges<'_>,
    bytes: &[u8],
    threads: usize,
    report: Report<'_>,
    sink: &mut Sink,
    work: &F,
    merge: M,
) -> Result<Walk, Error>
where
    T: Send,
    F: Fn(&mut Records<'_, '_>, &mut Out<'_>) -> Result<T, Error> + Sync,
    M: FnMut(&mut Sink, &[u8], T) -> Result<(), Error>,
{
    let ranges = Mutex::new(ranges.enumerate());
    let window = threads * WINDOW_PER_THREAD;
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(window);
    for _ in 0..window {
        // Never blocks: the channel holds the whole window.
        let _ = free_tx.send(Vec::new());
    }
    let free_rx = Mutex::new(free_rx);
    let (done_tx, done_rx) = channel();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let (ranges, free_rx) = (&ranges, &free_rx);
            scope.spawn(move || worker(ranges, free_rx, done_tx, bytes, work));
        }
        drop(done_tx);
        // Returning drops `free_tx` and `done_rx`, which stops the workers
        // (a worker's panic is raised again when the scope ends).
        write_in_order(done_rx, free_tx, report, sink, merge)
    })
}

/// The next ranges of the cut, numbered in file order.
type Ranges<'a> = Mutex<std::iter::Enumerate<RecordRanges<'a>>>;

/// One worker of [`on_threads`]: takes a free buffer, then the next range,
/// formats the range into the buffer and hands both to the writer, until
/// the ranges run out or the writer stops.
fn worker<'a, T, F>(
    ranges: &Ranges<'a>,
    free: &Mutex<Receiver<Vec<u8>>>,
    done: Sender<(usize, Finished<T>)>,
    bytes: &'a [u8],
    work: &F,
) where
    F: Fn(&mut Records<'_, '_>, &mut Out<'_>) -> Result<T, Error>,
{
    loop {
        let buffer = free.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(buf) = buffer else {
            return; // the writer stopped
        };
        let next = ranges.lock().unwrap_or_else(PoisonError::into_inner).next();
        let Some((seq, RecordRange { start, end, reader })) = next else {
            return;
        };
        let mut records = Records {
            reader: Reader::Slice(reader, bytes),
            start,
            end,
            records: 0,
            errors: Vec::new(),
            live: None,
        };
        let mut out = Out::new(buf, None);
        // A panic must reach the writer, which would otherwise wait for
        // this range forever (the default hook has printed it).
        let state = std::panic::catch_unwind(AssertUnwindSafe(|| work(&mut records, &mut out)))
            .unwrap_or_else(|_| Err(Error::msg("a reading thread panicked")));
        let finished = Finished {
            len: out.len(),
            buf: out.buf,
            state,
            records: records.records,
            errors: records.errors,
            end,
        };
        if done.send((seq, finished)).is_err() {
            return;
        }
    }
}

/// The writer of [`on_threads`]: hands finished ranges to `merge` in file
/// order, reports their damage, and frees their buffers.
fn write_in_order<T, M>(
    done: Receiver<(usize, Finished<T>)>,
    free: SyncSender<Vec<u8>>,
    report: Report<'_>,
    sink: &mut Sink,
    mut merge: M,
) -> Result<Walk, Error>
where
    M: FnMut(&mut Sink, &[u8], T) -> Result<(), Error>,
{
    let mut progress = Progress::new(report.what, Some(report.total));
    let mut walk = Walk::default();
    // At most the window: a range is taken only with a free buffer.
    let mut waiting = BTreeMap::new();
    let mut next = 0usize;
    for (seq, finished) in done {
        waiting.insert(seq, finished);
        while let Some(range) = waiting.remove(&next) {
            next += 1;
            walk.records += range.records;
            walk.bytes = range.end;
            for error in range.errors {
                damaged(report.name, report.quiet, &mut walk, error, |m| {
                    progress.warn(m)
                });
            }
            merge(sink, &range.buf[..range.len], range.state?)?;
            progress.update(range.end);
            // Fails only once the workers are gone.
            let _ = free.send(range.buf);
        }
    }
    progress.finish();
    Ok(walk)
}
