//! Opening inputs (a memory-mapped file, or stdin `-` as a stream), in
//! one place for every subcommand, and reading their records
//! ([`Reader`]); [`crate::walk`] walks them.
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

use fxt_format::decode::{Context, DecodeError, Record, SliceReader, StreamReader, View};
use fxt_format::encode::header::MAGIC_RECORD;

use crate::error::Error;

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

    /// A reader of the whole input, and its size if known (for progress).
    pub fn reader(&mut self) -> (Reader<'_>, Option<u64>) {
        match &mut self.data {
            Data::Mmap(m) => (Reader::Slice(SliceReader::new(m), m), Some(m.len() as u64)),
            Data::Bytes(b) => (Reader::Slice(SliceReader::new(b), b), Some(b.len() as u64)),
            Data::Stream(s) => (Reader::Stream(StreamReader::new(s.as_mut())), None),
        }
    }

    /// Whether a whole walk lets go of the mapped pages behind it.
    pub(crate) fn bounded(&self) -> bool {
        self.bounded
    }
}

/// A record reader over a slice or a stream, with the accessors both share.
pub enum Reader<'a> {
    /// Over bytes in memory (the reader, and the bytes).
    Slice(SliceReader<'a>, &'a [u8]),
    /// Over a stream.
    Stream(StreamReader<&'a mut dyn Read>),
}

impl Reader<'_> {
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

    /// The next record as a view, with the reader's tables at it (see
    /// [`Input::walk_view_ranges`]).
    #[inline]
    pub fn next_view(&mut self) -> Option<(Result<View<'_>, DecodeError>, Context<'_>)> {
        match self {
            Reader::Slice(r, _) => r.next_view(),
            Reader::Stream(r) => r.next_view(),
        }
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
