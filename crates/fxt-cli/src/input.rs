//! Opening inputs (a memory-mapped file, or stdin `-` as a stream) and
//! walking their records with progress and damage warnings, in one place
//! for every subcommand.
//!
//! Every command reads what a person names through the `open_trace*`
//! constructors, which refuse what is not an FXT trace before anything is
//! read from it (exit status 2): a directory, an empty file, anything whose
//! first eight bytes are not the magic number record (`/etc/passwd`, a
//! JSON trace). A file that starts as a trace and is damaged later is a
//! trace: it is read up to the damage, with a warning. The plain `open*`
//! constructors take whatever a file holds, for the files fxt's own
//! recorder spooled (a process killed before its first write leaves an
//! empty one, which must not cost the other processes their place in the
//! archive) and for `fxt recover --force`.

use std::fs::{File, Metadata};
use std::io::{self, Read};

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};

use fxt_format::decode::{
    Context, DecodeError, Record, RecordRanges, SliceReader, StreamReader, View,
};
use fxt_format::encode::header::MAGIC_RECORD;

use crate::error::Error;
use crate::progress::Progress;

/// Where an input's bytes are.
enum Data {
    /// A regular file, memory-mapped.
    Mmap(memmap2::Mmap),
    /// Bytes in memory (an empty file, or stdin read whole).
    Bytes(Vec<u8>),
    /// Something to stream (stdin, a pipe or device given by path).
    Stream(Box<dyn Read>),
}

/// One input trace.
pub struct Input {
    /// The name used in messages (`-` is shown as `<stdin>`).
    pub name: String,
    /// Do not print decode errors as warnings (the caller reports them).
    pub quiet: bool,
    data: Data,
    /// A mapped file whose pages a whole walk lets go of behind it, so
    /// that the process keeps no more of the file than a stretch.
    bounded: bool,
}

/// The first eight bytes of every FXT trace: the magic number record, as
/// the specification asks readers to check them.
const MAGIC: [u8; 8] = MAGIC_RECORD.to_le_bytes();

/// Opens `path`, refusing a directory (which `File::open` opens on Unix
/// and which would then read as an empty or unreadable stream).
fn open_file(path: &str) -> Result<(File, Metadata), Error> {
    let file = File::open(path).map_err(|e| Error::msg(format!("cannot open {path}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::msg(format!("cannot read {path}: {e}")))?;
    if meta.is_dir() {
        return Err(Error::msg(format!(
            "{path}: is a directory, not an FXT trace"
        )));
    }
    Ok((file, meta))
}

/// The error for an input whose first bytes are `head` (at most 8): what
/// it holds instead of a trace.
fn not_a_trace(name: &str, head: &[u8]) -> Error {
    let why = if head.is_empty() {
        "it is empty".to_owned()
    } else if head.len() < MAGIC.len() && MAGIC.starts_with(head) {
        format!("it holds only {} bytes", head.len())
    } else {
        "it does not begin with the FXT magic number record".to_owned()
    };
    Error::msg(format!("{name}: not an FXT trace ({why})"))
}

impl Input {
    /// [`Input::open`] for a file that must be an FXT trace: a file that
    /// does not begin with the magic number record is an error.
    pub fn open_trace(path: &str) -> Result<Input, Error> {
        Input::open(path)?.require_trace()
    }

    /// [`Input::open_bytes`] for a file that must be an FXT trace.
    pub fn open_trace_bytes(path: &str) -> Result<Input, Error> {
        Input::open_bytes(path)?.require_trace()
    }

    /// The input, if it begins with the magic number record; a stream
    /// gets its first bytes back in front of the rest once looked at.
    pub fn require_trace(mut self) -> Result<Input, Error> {
        let head = match &mut self.data {
            Data::Mmap(m) => m.get(..MAGIC.len()).unwrap_or(m).to_vec(),
            Data::Bytes(b) => b.get(..MAGIC.len()).unwrap_or(b).to_vec(),
            Data::Stream(s) => {
                let mut head = Vec::with_capacity(MAGIC.len());
                s.by_ref()
                    .take(MAGIC.len() as u64)
                    .read_to_end(&mut head)
                    .map_err(|e| Error::msg(format!("cannot read {}: {e}", self.name)))?;
                let rest = std::mem::replace(s, Box::new(io::empty()));
                *s = Box::new(io::Cursor::new(head.clone()).chain(rest));
                head
            }
        };
        if head != MAGIC {
            return Err(not_a_trace(&self.name, &head));
        }
        Ok(self)
    }

    /// Opens `path` (`-` for stdin) for a streaming read: files are
    /// memory-mapped, stdin and pipes are streamed.
    pub fn open(path: &str) -> Result<Input, Error> {
        if path == "-" {
            return Ok(Input {
                name: "<stdin>".into(),
                quiet: false,
                data: Data::Stream(Box::new(io::stdin().lock())),
                bounded: false,
            });
        }
        let (file, meta) = open_file(path)?;
        let data = if !meta.is_file() {
            Data::Stream(Box::new(file))
        } else if meta.len() == 0 {
            Data::Bytes(Vec::new())
        } else {
            // SAFETY: the map is read-only and private to this process. If
            // another process truncates the file while we read it, the OS
            // may signal on access (SIGBUS); that is the usual, documented
            // limit of reading through a memory map, accepted for the
            // speed it gives on large traces.
            match unsafe { memmap2::Mmap::map(&file) } {
                Ok(map) => Data::Mmap(map),
                Err(_) => Data::Stream(Box::new(file)),
            }
        };
        Ok(Input {
            name: path.to_owned(),
            quiet: false,
            data,
            bounded: false,
        })
    }

    /// Opens `path`, if it is a regular file, to be read as a stream
    /// (buffered reads, not a memory map, whose pages would count in the
    /// process's memory however large the file): for tools that read a
    /// file more than once in bounded memory. `None` if `path` is not a
    /// regular file (stdin, a pipe), which cannot be read twice.
    pub fn open_streamed(path: &str) -> Result<Option<Input>, Error> {
        if path == "-" {
            return Ok(None);
        }
        let (file, meta) = open_file(path)?;
        if !meta.is_file() {
            return Ok(None);
        }
        Ok(Some(Input {
            name: path.to_owned(),
            quiet: false,
            data: Data::Stream(Box::new(file)),
            bounded: false,
        }))
    }

    /// Opens `path`, if it is a regular file holding an FXT trace, to be
    /// walked whole in bounded memory: memory-mapped (read in place, no
    /// copy into a buffer), each stretch of pages let go once the walk is
    /// past it, so that the process's resident memory does not grow with
    /// the file. For tools that read a file more than once. `None` if
    /// `path` is not a regular file (stdin, a pipe), which cannot be read
    /// twice.
    pub fn open_trace_bounded(path: &str) -> Result<Option<Input>, Error> {
        if Input::open_streamed(path)?.is_none() {
            return Ok(None);
        }
        let mut input = Input::open_trace(path)?;
        input.bounded = matches!(input.data, Data::Mmap(_));
        Ok(Some(input))
    }

    /// Opens `path` with all its bytes at hand (stdin and pipes are read
    /// whole into memory), for tools that copy records by their byte spans.
    pub fn open_bytes(path: &str) -> Result<Input, Error> {
        let mut input = Input::open(path)?;
        if let Data::Stream(reader) = &mut input.data {
            let mut bytes = Vec::new();
            reader
                .read_to_end(&mut bytes)
                .map_err(|e| Error::msg(format!("cannot read {}: {e}", input.name)))?;
            input.data = Data::Bytes(bytes);
        }
        Ok(input)
    }

    /// An input of bytes in memory, named `name` in messages.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Input {
        Input {
            name: name.to_owned(),
            quiet: false,
            data: Data::Bytes(bytes),
            bounded: false,
        }
    }

    /// All the input's bytes, for an input opened with
    /// [`Input::open_bytes`] (`None` for a stream).
    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.data {
            Data::Mmap(m) => Some(m),
            Data::Bytes(b) => Some(b),
            Data::Stream(_) => None,
        }
    }

    /// Walks every record, calling `f` with the reader (for its offsets and
    /// provider state) and the record. Damage is reported on stderr, named
    /// by file and byte offset: a malformed record is skipped, the first
    /// fatal error ends the walk. Returns what was seen.
    pub fn walk<F>(&mut self, what: &str, mut f: F) -> Result<Walk, Error>
    where
        F: FnMut(&Reader<'_>, Record) -> Result<(), Error>,
    {
        let name = self.name.clone();
        let quiet = self.quiet;
        let (mut reader, total) = self.reader();
        let mut progress = Progress::new(what, total);
        let mut walk = Walk::default();
        while let Some(item) = reader.next() {
            progress.tick(reader.position());
            match item {
                Ok(record) => {
                    walk.records += 1;
                    f(&reader, record)?;
                }
                Err(error) => damaged(&name, quiet, &mut walk, error, |m| progress.warn(m)),
            }
        }
        walk.bytes = reader.position();
        progress.finish();
        Ok(walk)
    }

    /// A reader of the whole input, and its size if known (for progress).
    pub fn reader(&mut self) -> (Reader<'_>, Option<u64>) {
        match &mut self.data {
            Data::Mmap(m) => (Reader::Slice(SliceReader::new(m), m), Some(m.len() as u64)),
            Data::Bytes(b) => (Reader::Slice(SliceReader::new(b), b), Some(b.len() as u64)),
            Data::Stream(s) => (Reader::Stream(StreamReader::new(s.as_mut())), None),
        }
    }

    /// Like [`Input::walk`], on every core and record by record as
    /// [`fxt_format::decode::View`]s: an input in memory is cut into
    /// ranges at record boundaries ([`RecordRanges`], cut one at a time
    /// by whichever of the `FXT_THREADS` threads needs the next), each
    /// range is walked with its own state from `init`, and the states come
    /// back in file order for the caller to merge. Damage
    /// is reported as `walk` reports it, in file order. A stream, or an
    /// input too small to be worth cutting, is one range. Events borrow
    /// the input and leave their strings unresolved (the [`Context`]
    /// beside each view resolves them), so a command that tallies by
    /// string index copies nothing per event. `f` reads its range's
    /// records itself ([`Views`]), so that its work per record is
    /// compiled into the loop that reads them.
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
        let bytes: &[u8] = match &self.data {
            Data::Mmap(m) => m,
            Data::Bytes(b) => b,
            Data::Stream(_) => &[],
        };
        let (threads, range_bytes) = (reading_threads(), range_bytes(VIEW_RANGE_BYTES));
        if threads <= 1 || bytes.len() < 2 * range_bytes {
            let (walk, state) = self.walk_views(what, init(), f)?;
            return Ok((walk, vec![state]));
        }
        let threads = threads.min(bytes.len() / range_bytes);
        let ranges = Mutex::new(RecordRanges::new(bytes, range_bytes).enumerate());
        let done = Mutex::new(Vec::new());
        // Set by the first range that fails: the others stop taking ranges
        // (the result is that failure). Relaxed: only a hint to stop; the
        // ranges' results pass through `done`'s lock.
        let failed = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    // The cut is made by whichever thread asks next, a
                    // range at a time, while the others walk theirs.
                    let next = ranges.lock().unwrap_or_else(PoisonError::into_inner).next();
                    let Some((seq, range)) = next.filter(|_| !failed.load(Relaxed)) else {
                        break;
                    };
                    let reader = Reader::Slice(range.reader, bytes);
                    let walked = walk_view_range(reader, range.end, &init, &f);
                    if walked.is_err() {
                        failed.store(true, Relaxed);
                    }
                    let mut done = done.lock().unwrap_or_else(PoisonError::into_inner);
                    done.push((seq, walked));
                });
            }
        });
        let mut done = done.into_inner().unwrap_or_else(PoisonError::into_inner);
        done.sort_unstable_by_key(|(seq, _)| *seq);
        self.merge_ranges(done.into_iter().map(|(_, range)| range))
    }

    /// [`Input::walk_view_ranges`] in one range, with progress and
    /// damage warnings as [`Input::walk`] gives them.
    fn walk_views<S, F>(&mut self, what: &str, mut state: S, mut f: F) -> Result<(Walk, S), Error>
    where
        F: FnMut(&mut S, &mut Views<'_>) -> Result<(), Error>,
    {
        let name = self.name.clone();
        let quiet = self.quiet;
        let bounded = self.bounded;
        let (reader, total) = self.reader();
        let mut views = Views::new(reader, u64::MAX, Some(Progress::new(what, total)));
        views.bounded = bounded;
        f(&mut state, &mut views)?;
        views.drain();
        let Views {
            reader,
            records,
            errors,
            progress,
            ..
        } = views;
        let mut walk = Walk {
            records,
            bytes: reader.position(),
            ..Walk::default()
        };
        let progress = progress.unwrap_or_else(|| Progress::new(what, total));
        // Damage is reported once the walk is through, as a walk of
        // several ranges reports it, so that an `f` that ends early
        // ([`Error::in_file_order`]) has reported nothing.
        for error in errors {
            damaged(&name, quiet, &mut walk, error, |m| progress.warn(m));
        }
        progress.finish();
        Ok((walk, state))
    }

    /// Like [`Input::walk`], record by record as
    /// [`fxt_format::decode::View`]s (lent to `f`), in file order on this
    /// thread (for a command whose state runs through the whole input).
    pub fn walk_views_in_order<F>(&mut self, what: &str, mut f: F) -> Result<Walk, Error>
    where
        F: FnMut(&Context<'_>, &View<'_>) -> Result<(), Error>,
    {
        let (walk, ()) = self.walk_views(what, (), |_, views| views.each(&mut f))?;
        Ok(walk)
    }

    /// The walks of consecutive ranges, in file order, as one walk: their
    /// damage reported in file order, their states in order.
    fn merge_ranges<S>(
        &self,
        ranges: impl ExactSizeIterator<Item = Result<Range<S>, Error>>,
    ) -> Result<(Walk, Vec<S>), Error> {
        let mut walk = Walk::default();
        let mut states = Vec::with_capacity(ranges.len());
        // Every range first, so that a failed one has nothing reported.
        let ranges = ranges.collect::<Result<Vec<_>, Error>>()?;
        for range in ranges {
            walk.records += range.records;
            walk.bytes = range.end;
            for error in range.errors {
                damaged(&self.name, self.quiet, &mut walk, error, |message| {
                    eprintln!("fxt: warning: {message}")
                });
            }
            states.push(range.state);
        }
        Ok((walk, states))
    }
}

/// Notes a decode error of input `name` in `walk` and, unless `quiet`,
/// warns about it.
pub fn damaged(name: &str, quiet: bool, walk: &mut Walk, error: DecodeError, warn: impl Fn(&str)) {
    walk.errors += 1;
    let fatal = error.is_fatal();
    if quiet {
        // The caller reports them.
    } else if fatal {
        warn(&format!(
            "{name}: {error}; read {} records up to the damage",
            walk.records
        ));
    } else {
        warn(&format!("{name}: {error}; record skipped"));
    }
    if fatal {
        walk.damage = Some(error);
    } else {
        walk.skipped.push(error);
    }
}

/// Input bytes per range of [`Input::walk_view_ranges`]: few enough
/// ranges that their states (and the copies of the tables each starts
/// with) cost little to make and merge, small enough that every thread has
/// one to walk after a fraction of the cut.
const VIEW_RANGE_BYTES: usize = 4 << 20;

/// Input bytes per range when a command reads one file on several
/// threads: `FXT_RANGE_BYTES` (for tests, to cut small traces at many
/// places), else `default`.
pub fn range_bytes(default: usize) -> usize {
    std::env::var("FXT_RANGE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(default)
}

/// How many threads read one input: `FXT_THREADS` if set to a number,
/// else the cores this process may run on.
pub fn reading_threads() -> usize {
    match std::env::var("FXT_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// What the walk of one range saw.
struct Range<S> {
    state: S,
    records: u64,
    /// Decode errors, in file order.
    errors: Vec<DecodeError>,
    /// Where the range's last framed record ends.
    end: u64,
}

/// Walks one range of [`Input::walk_view_ranges`]: from the reader's
/// position to `end`.
fn walk_view_range<S, I, F>(
    reader: Reader<'_>,
    end: u64,
    init: &I,
    f: &F,
) -> Result<Range<S>, Error>
where
    I: Fn() -> S,
    F: Fn(&mut S, &mut Views<'_>) -> Result<(), Error>,
{
    let mut views = Views::new(reader, end, None);
    let mut state = init();
    f(&mut state, &mut views)?;
    views.drain();
    Ok(Range {
        state,
        records: views.records,
        end: views.reader.position(),
        errors: views.errors,
    })
}

/// The records of one range of [`Input::walk_view_ranges`], which the
/// command reads with [`Views::each`], so that its work per record is
/// compiled into the reader's loop.
pub struct Views<'i> {
    reader: Reader<'i>,
    /// Where the range ends.
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

impl<'i> Views<'i> {
    fn new(reader: Reader<'i>, end: u64, progress: Option<Progress>) -> Self {
        Views {
            reader,
            end,
            records: 0,
            errors: Vec::new(),
            progress,
            bounded: false,
        }
    }

    /// Calls `f` with each record of the range that could be read, and
    /// the reader's tables at it (a record that could not be read is
    /// kept, and reported by the walk in file order once it is through).
    /// The view is lent, not moved, so that nothing copies it.
    #[inline(always)]
    pub fn each(
        &mut self,
        mut f: impl FnMut(&Context<'_>, &View<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let (records, errors) = (&mut self.records, &mut self.errors);
        let take = |item: Result<&View<'_>, DecodeError>, ctx: &Context<'_>| match item {
            Ok(view) => {
                *records += 1;
                f(ctx, view)
            }
            Err(error) => {
                errors.push(error);
                Ok(())
            }
        };
        match (&mut self.reader, &mut self.progress) {
            // A range of a file: the reader's own loop.
            (Reader::Slice(reader, _), None) => reader.views_until(self.end, take),
            // A whole file: the reader's own loop, a stretch at a time
            // between updates of the progress bar.
            (Reader::Slice(reader, bytes), Some(progress)) => {
                let mut take = take;
                let mut kept_from = 0;
                loop {
                    let from = SliceReader::position(reader);
                    let stretch = from.saturating_add(PROGRESS_BYTES).min(self.end);
                    reader.views_until(stretch, &mut take)?;
                    let to = SliceReader::position(reader);
                    progress.update(to);
                    if self.bounded {
                        kept_from = let_go(bytes, kept_from, to);
                    }
                    // A stretch that read nothing: the input is through.
                    if to >= self.end || to == from {
                        break;
                    }
                }
                Ok(())
            }
            (reader, progress) => each_with_progress(reader, progress.as_mut(), self.end, take),
        }
    }

    /// Reads what the command left of the range, so that the walk counts
    /// every record and keeps every error.
    fn drain(&mut self) {
        // `f` never fails.
        let _ = self.each(|_, _| Ok(()));
    }
}

/// Bytes a walk of a whole file reads between updates of its progress bar.
const PROGRESS_BYTES: u64 = 1 << 20;

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
fn each_with_progress(
    reader: &mut Reader<'_>,
    mut progress: Option<&mut Progress>,
    end: u64,
    mut take: impl FnMut(Result<&View<'_>, DecodeError>, &Context<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
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

/// What a walk saw.
#[derive(Default)]
pub struct Walk {
    /// Records decoded.
    pub records: u64,
    /// Decode errors (skipped records and the fatal one).
    pub errors: u64,
    /// Malformed records that were skipped.
    pub skipped: Vec<DecodeError>,
    /// The fatal error that ended the walk, if any.
    pub damage: Option<DecodeError>,
    /// Bytes of well-framed records read.
    pub bytes: u64,
}

/// A record reader over a slice or a stream, with the accessors both share.
pub enum Reader<'a> {
    /// Over bytes in memory (the reader, and the bytes).
    Slice(SliceReader<'a>, &'a [u8]),
    /// Over a stream.
    Stream(StreamReader<&'a mut dyn Read>),
}

impl Reader<'_> {
    /// The bytes of the record most recently yielded (`None` when streaming).
    pub fn record_bytes(&self) -> Option<&[u8]> {
        match self {
            Reader::Slice(r, bytes) => bytes.get(r.record_offset() as usize..r.position() as usize),
            Reader::Stream(_) => None,
        }
    }

    /// Byte offset of the record most recently yielded.
    pub fn record_offset(&self) -> u64 {
        match self {
            Reader::Slice(r, _) => r.record_offset(),
            Reader::Stream(r) => r.record_offset(),
        }
    }

    /// Byte offset of the next record.
    pub fn position(&self) -> u64 {
        match self {
            Reader::Slice(r, _) => r.position(),
            Reader::Stream(r) => r.position(),
        }
    }

    /// The current provider's id.
    pub fn provider_id(&self) -> Option<u32> {
        match self {
            Reader::Slice(r, _) => r.provider_id(),
            Reader::Stream(r) => r.provider_id(),
        }
    }

    /// The next record as a view, with the reader's tables at it (see
    /// [`Input::walk_view_ranges`]).
    #[inline]
    pub fn next_view(&mut self) -> Option<(Result<View<'_>, DecodeError>, Context<'_>)> {
        match self {
            Reader::Slice(r, _) => r.next_view(),
            Reader::Stream(r) => r.next_view(),
        }
    }

    /// Ticks per second of the current provider (the specification's
    /// default, 1 tick = 1 ns, when it sent no initialization record or 0).
    pub fn ticks_per_second(&self) -> u64 {
        let tps = match self {
            Reader::Slice(r, _) => r.ticks_per_second(),
            Reader::Stream(r) => r.ticks_per_second(),
        };
        fxt_format::time::ticks_per_second_or_default(tps)
    }
}

impl Iterator for Reader<'_> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Reader::Slice(r, _) => r.next(),
            Reader::Stream(r) => r.next(),
        }
    }
}

pub use fxt_format::time::ticks_to_ns;
