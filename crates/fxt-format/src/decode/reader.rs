//! Framing: finding records one after the other in a byte slice
//! ([`SliceReader`]) or in any [`std::io::Read`] ([`StreamReader`]).
//!
//! Both are iterators of `Result<Record, DecodeError>`. A record whose
//! content is malformed yields an `Err` and reading continues after it (its
//! size is intact); a fatal error ([`DecodeError::is_fatal`]: input ending
//! inside a record, a size-0 header, an I/O failure) yields an `Err` and
//! ends the iteration. Every step consumes at least one 8-byte word or ends,
//! so iteration always terminates.

use std::io::{self, Read};
use std::iter::FusedIterator;

use super::error::DecodeError;
use super::parse::{record_words, Decoder};
use super::record::Record;
use super::view::{self, Context, View};
use crate::encode::header::record_type;

/// Reads the header word at the front of `bytes`, if there are 8 bytes.
#[inline]
pub(crate) fn header_word(bytes: &[u8]) -> Option<u64> {
    let b: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The record at byte `pos` of `input` if it is an event record that
/// frames (a size other than 0, within the input); `None` for any other
/// record, which [`SliceReader::frame`] frames (and reports, if it does
/// not).
#[inline(always)]
fn framed_event(input: &[u8], pos: usize) -> Option<&[u8]> {
    let rest = input.get(pos..)?;
    let header = header_word(rest)?;
    if header & 0xf != record_type::EVENT {
        return None;
    }
    let size = record_words(header) as usize * 8;
    if size == 0 {
        return None;
    }
    rest.get(..size)
}

/// How far ahead of a header [`prefetch_ahead`] asks for the input.
const AHEAD_BYTES: usize = 2048;

/// Asks the processor to bring the line [`AHEAD_BYTES`] past `pos` into
/// the cache. Each header's address depends on the one before, so a walk
/// of small records would otherwise wait on one line after another; with
/// the request made early, the lines a walk is about to need are loading
/// while it decodes. A prefetch, not a load: a load that misses holds up
/// every instruction after it from retiring, so it would slow the walk
/// it means to speed up.
#[inline(always)]
pub(crate) fn prefetch_ahead(input: &[u8], pos: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // Never dereferenced: `wrapping_add` forms the address without the
        // in-bounds promise of `add`.
        let at = input.as_ptr().wrapping_add(pos.wrapping_add(AHEAD_BYTES));
        // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 processor
        // has; a prefetch reads nothing into the program and cannot
        // fault, whatever the address.
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (input, pos);
}

/// A framed record: its header word, its bytes and its offset.
type Framed<'a> = (u64, &'a [u8], u64);

/// Accessors shared by both readers.
macro_rules! reader_state_accessors {
    () => {
        /// Byte offset of the record most recently yielded (as `Ok` or `Err`).
        pub fn record_offset(&self) -> u64 {
            self.record_offset
        }

        /// Id of the provider whose section the reader is in (`None` before
        /// any provider info or provider section metadata record).
        pub fn provider_id(&self) -> Option<u32> {
            self.decoder.providers.current_id()
        }

        /// Name of the current provider, if a provider info record gave one.
        pub fn provider_name(&self) -> Option<&str> {
            self.decoder.providers.name()
        }

        /// Ticks per second of the current provider's timestamps, if it
        /// sent an initialization record (the specification's default, when
        /// absent, is 1 tick = 1 nanosecond).
        pub fn ticks_per_second(&self) -> Option<u64> {
            self.decoder.providers.ticks_per_second()
        }
    };
}

/// Decodes the records of a trace held in memory.
///
/// ```
/// use fxt_format::decode::{Record, SliceReader};
/// let bytes = 0x0016_5478_4604_0010u64.to_le_bytes();
/// let records: Vec<_> = SliceReader::new(&bytes).collect();
/// assert_eq!(records, [Ok(Record::Magic)]);
/// ```
pub struct SliceReader<'a> {
    pub(super) input: &'a [u8],
    pub(super) pos: usize,
    pub(super) record_offset: u64,
    pub(super) finished: bool,
    pub(super) decoder: Decoder,
}

impl<'a> SliceReader<'a> {
    /// A reader at the start of `input`.
    pub fn new(input: &'a [u8]) -> Self {
        Self {
            input,
            pos: 0,
            record_offset: 0,
            finished: false,
            decoder: Decoder::default(),
        }
    }

    /// A reader of `input` from byte `pos`, a record boundary, with the
    /// tables in force there.
    pub(crate) fn range(input: &'a [u8], pos: usize, decoder: Decoder) -> Self {
        Self {
            input,
            pos,
            record_offset: pos as u64,
            finished: false,
            decoder,
        }
    }

    /// Byte offset of the next record to read.
    pub fn position(&self) -> u64 {
        self.pos as u64
    }

    reader_state_accessors!();

    #[cold]
    fn fail<T>(&mut self, error: DecodeError) -> Option<Result<T, DecodeError>> {
        self.finished = true;
        Some(Err(error))
    }
}

impl<'a> SliceReader<'a> {
    /// Frames the next record: its bytes and offset, a fatal error (which
    /// ends the reader), or `None` at the end.
    #[inline(always)]
    fn frame(&mut self) -> Option<Result<(&'a [u8], u64), DecodeError>> {
        Some(
            self.frame_header()?
                .map(|(_, record, offset)| (record, offset)),
        )
    }

    /// [`SliceReader::frame`], with the record's header word (its first,
    /// read to frame it).
    #[inline(always)]
    pub(super) fn frame_header(&mut self) -> Option<Result<Framed<'a>, DecodeError>> {
        if self.finished {
            return None;
        }
        let input = self.input;
        prefetch_ahead(input, self.pos);
        let rest = &input[self.pos..];
        let offset = self.pos as u64;
        self.record_offset = offset;
        let Some(header) = header_word(rest) else {
            if rest.is_empty() {
                self.finished = true;
                return None;
            }
            return self.fail(DecodeError::Truncated {
                offset,
                needed_bytes: 8,
                available_bytes: rest.len() as u64,
            });
        };
        let size_bytes = record_words(header) * 8;
        if size_bytes == 0 {
            return self.fail(DecodeError::ZeroSizeRecord { offset, header });
        }
        if size_bytes > rest.len() as u64 {
            return self.fail(DecodeError::Truncated {
                offset,
                needed_bytes: size_bytes,
                available_bytes: rest.len() as u64,
            });
        }
        // Fits in usize: it is at most `rest.len()`.
        let record = &rest[..size_bytes as usize];
        self.pos += record.len();
        Some(Ok((header, record, offset)))
    }

    /// The next record as a [`View`]: an event borrowing the input, its
    /// strings unresolved, or any other record decoded; with the reader's
    /// tables at that record. Meets the same records and errors as
    /// iterating: a view's arguments are read as decoding reads them, only
    /// not kept ([`Context::event`] decodes them).
    #[inline(always)]
    pub fn next_view(&mut self) -> Option<(Result<View<'a>, DecodeError>, Context<'_>)> {
        let (item, record) = match self.frame()? {
            Ok((record, offset)) => (view::decode(&mut self.decoder, record, offset), record),
            Err(e) => (Err(e), &[][..]),
        };
        let context = self.context_of(record);
        Some((item, context))
    }
}

impl<'a> SliceReader<'a> {
    /// The context of the record just framed (`record`, empty for an
    /// error), with the reader's tables as that record left them.
    #[inline(always)]
    pub(crate) fn context_of<'s>(&'s self, record: &'s [u8]) -> Context<'s> {
        Context {
            decoder: &self.decoder,
            record,
            offset: self.record_offset,
        }
    }
}

impl<'a> SliceReader<'a> {
    /// Reads the records from the reader's position up to byte `end` (or
    /// the end of the input), giving each to `f` with the reader's tables
    /// at it, as [`SliceReader::next_view`] yields them but lent rather
    /// than moved: a view is made once, where `f` reads it, instead of
    /// being copied out through each step. Stops at `f`'s first error.
    #[inline(always)]
    pub fn views_until<E>(
        &mut self,
        end: u64,
        mut f: impl FnMut(Result<&View<'a>, DecodeError>, &Context<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.finished {
            return Ok(());
        }
        // The position in locals, not in `self`, which the other records'
        // step borrows (as in `heads_until`): the usual event's step then
        // reads and writes no field of the reader.
        let input = self.input;
        let (mut pos, mut last) = (self.pos, self.record_offset);
        while (pos as u64) < end {
            prefetch_ahead(input, pos);
            // The usual event, framed here and lent where it was made.
            if let Some(record) = framed_event(input, pos) {
                let offset = pos as u64;
                let plain = view::plain(&self.decoder, record, offset);
                if let Some(view) = &plain {
                    (pos, last) = (pos + record.len(), offset);
                    let context = Context {
                        decoder: &self.decoder,
                        record,
                        offset,
                    };
                    if let Err(e) = f(Ok(view), &context) {
                        (self.pos, self.record_offset) = (pos, last);
                        return Err(e);
                    }
                    continue;
                }
            }
            (self.pos, self.record_offset) = (pos, last);
            let step = self.other_view(&mut f);
            (pos, last) = (self.pos, self.record_offset);
            if !self.goes_on(step)? {
                break;
            }
        }
        (self.pos, self.record_offset) = (pos, last);
        Ok(())
    }

    /// Whether a walk (`views_until`, `heads_until`) goes on after its step
    /// for another record (`step`, `None` at the end of the input): not at
    /// the end, nor after a fatal error, which ends the reader (nothing
    /// after it is read); `f`'s error is returned as it is.
    #[inline(always)]
    pub(super) fn goes_on<E>(&self, step: Option<Result<(), E>>) -> Result<bool, E> {
        match step {
            Some(Ok(())) => Ok(!self.finished),
            Some(Err(e)) => Err(e),
            None => Ok(false),
        }
    }

    /// [`SliceReader::views_until`]'s step for a record that is not an
    /// event of the usual shape (or for the end of the input, or a fatal
    /// error): framed again from the reader's position, decoded and lent;
    /// `None` at the end.
    #[inline(never)]
    fn other_view<E>(
        &mut self,
        f: &mut impl FnMut(Result<&View<'a>, DecodeError>, &Context<'_>) -> Result<(), E>,
    ) -> Option<Result<(), E>> {
        let (record, offset) = match self.frame()? {
            Ok(framed) => framed,
            Err(error) => return Some(self.lend_other(Err(error), &[], f)),
        };
        let item = view::decode(&mut self.decoder, record, offset);
        Some(self.lend_other(item, record, f))
    }

    /// [`SliceReader::views_until`]'s step for anything but the usual event:
    /// a call of its own, so that the compiler does not merge it with the
    /// usual one, which would move every view to one place first.
    #[inline(never)]
    fn lend_other<E>(
        &self,
        item: Result<View<'a>, DecodeError>,
        record: &[u8],
        f: &mut impl FnMut(Result<&View<'a>, DecodeError>, &Context<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let context = self.context_of(record);
        match item {
            Ok(ref view) => f(Ok(view), &context),
            Err(error) => f(Err(error), &context),
        }
    }
}

impl Iterator for SliceReader<'_> {
    type Item = Result<Record, DecodeError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.frame()? {
            Ok((record, offset)) => self.decoder.decode_record(record, offset),
            Err(e) => Err(e),
        })
    }
}

impl FusedIterator for SliceReader<'_> {}

/// The stream buffer's first size; it doubles up to [`READ_CHUNK`] as the
/// input proves long, so a short input never costs a large buffer.
const INITIAL_BUFFER: usize = 4096;
/// The buffer size the reader settles at for long inputs of small records.
const READ_CHUNK: usize = 64 * 1024;

/// Decodes the records of a trace from any [`std::io::Read`], buffering
/// internally (wrapping the input in a `BufReader` is not needed).
///
/// Memory follows the data actually read, never a size field: a record
/// header claiming 2^32 words makes the buffer grow only as bytes arrive,
/// and a stream that ends early yields [`DecodeError::Truncated`].
pub struct StreamReader<R> {
    input: R,
    buf: Vec<u8>,
    /// First byte of `buf` not yet consumed.
    start: usize,
    /// End of the bytes read into `buf`.
    end: usize,
    /// Input offset of `buf[start]`.
    offset: u64,
    /// Bytes read from the input so far.
    bytes_read: u64,
    eof: bool,
    record_offset: u64,
    finished: bool,
    decoder: Decoder,
}

impl<R: Read> StreamReader<R> {
    /// A reader at the current position of `input` (counted as offset 0).
    pub fn new(input: R) -> Self {
        Self {
            input,
            buf: Vec::new(),
            start: 0,
            end: 0,
            offset: 0,
            bytes_read: 0,
            eof: false,
            record_offset: 0,
            finished: false,
            decoder: Decoder::default(),
        }
    }

    /// Byte offset of the next record to read.
    pub fn position(&self) -> u64 {
        self.offset
    }

    reader_state_accessors!();

    /// Gives the input back (bytes already buffered are lost).
    pub fn into_inner(self) -> R {
        self.input
    }

    /// Reads until `needed` unconsumed bytes are buffered; `Ok(false)` if
    /// the input ends first.
    fn fill(&mut self, needed: usize) -> io::Result<bool> {
        while self.end - self.start < needed {
            if self.eof {
                return Ok(false);
            }
            if self.start > 0 {
                // Move the unconsumed tail (less than one record) to the front.
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            let full = self.end == self.buf.len();
            let input_is_long = self.bytes_read >= self.buf.len() as u64;
            if full || (input_is_long && self.buf.len() < READ_CHUNK) {
                // Grow by doubling, driven by data that has arrived: the
                // buffer is full of unread bytes, or the input has already
                // delivered more than the buffer holds.
                let doubled = self.buf.len().saturating_mul(2).max(INITIAL_BUFFER);
                let new_len = doubled.min(needed.max(READ_CHUNK));
                if new_len > self.buf.len() {
                    self.buf.resize(new_len, 0);
                }
            }
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.end += n;
                    self.bytes_read += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    #[cold]
    fn fail<T>(&mut self, error: DecodeError) -> Option<Result<T, DecodeError>> {
        self.finished = true;
        Some(Err(error))
    }
}

impl<R: Read> StreamReader<R> {
    /// Frames the next record: where its bytes are in the buffer and its
    /// offset, a fatal error (which ends the reader), or `None` at the end.
    fn frame(&mut self) -> Option<Result<(std::ops::Range<usize>, u64), DecodeError>> {
        if self.finished {
            return None;
        }
        let offset = self.offset;
        self.record_offset = offset;
        match self.fill(8) {
            Err(e) => return self.fail(DecodeError::io(offset, &e)),
            Ok(false) if self.start == self.end => {
                self.finished = true;
                return None;
            }
            Ok(false) => {
                let available_bytes = (self.end - self.start) as u64;
                return self.fail(DecodeError::Truncated {
                    offset,
                    needed_bytes: 8,
                    available_bytes,
                });
            }
            Ok(true) => {}
        }
        let Some(header) = header_word(&self.buf[self.start..self.end]) else {
            // Unreachable: `fill(8)` succeeded.
            return self.fail(DecodeError::ZeroSizeRecord { offset, header: 0 });
        };
        let size_bytes = record_words(header) * 8;
        if size_bytes == 0 {
            return self.fail(DecodeError::ZeroSizeRecord { offset, header });
        }
        // On 32-bit hosts a record over 4 GiB cannot be held; asking for
        // usize::MAX makes it end as truncated when the input runs out.
        let needed = usize::try_from(size_bytes).unwrap_or(usize::MAX);
        match self.fill(needed) {
            Err(e) => {
                let at = offset + (self.end - self.start) as u64;
                return self.fail(DecodeError::io(at, &e));
            }
            Ok(false) => {
                let available_bytes = (self.end - self.start) as u64;
                return self.fail(DecodeError::Truncated {
                    offset,
                    needed_bytes: size_bytes,
                    available_bytes,
                });
            }
            Ok(true) => {}
        }
        let record = self.start..self.start + needed;
        self.start += needed;
        self.offset += size_bytes;
        Some(Ok((record, offset)))
    }

    /// [`SliceReader::next_view`] for a stream: the view borrows the
    /// reader's buffer until the next call.
    pub fn next_view(&mut self) -> Option<(Result<View<'_>, DecodeError>, Context<'_>)> {
        let (item, record) = match self.frame()? {
            Ok((record, offset)) => {
                let record = &self.buf[record];
                (view::decode(&mut self.decoder, record, offset), record)
            }
            Err(e) => (Err(e), &[][..]),
        };
        let context = Context {
            decoder: &self.decoder,
            record,
            offset: self.record_offset,
        };
        Some((item, context))
    }
}

impl<R: Read> Iterator for StreamReader<R> {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.frame()? {
            Ok((record, offset)) => self.decoder.decode_record(&self.buf[record], offset),
            Err(e) => Err(e),
        })
    }
}

impl<R: Read> FusedIterator for StreamReader<R> {}
