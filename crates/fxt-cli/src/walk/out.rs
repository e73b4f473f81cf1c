//! Where a range of a walk in file order writes its output: a buffer of
//! its own on several threads, which the walk hands on in file order; the
//! sink itself, a chunk at a time, when one thread reads the whole input.

use std::io::{self, BufWriter, Write};

use crate::piece::{Blocks, LINE};

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
const SINK_CHUNK: usize = 1 << 18;

impl<'s> Out<'s> {
    /// An empty output in `buf` (whose bytes are reused as room).
    pub(super) fn new(buf: Vec<u8>, sink: Option<&'s mut Sink>) -> Self {
        Out { buf, end: 0, sink }
    }

    /// Bytes held: on several threads, everything the range wrote so far.
    pub fn len(&self) -> usize {
        self.end
    }

    /// The buffer and how many of its bytes are held.
    pub(super) fn into_held(self) -> (Vec<u8>, usize) {
        (self.buf, self.end)
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
