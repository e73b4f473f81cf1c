//! Reading events without copying them.
//!
//! [`SliceReader::next_view`](super::SliceReader::next_view) and
//! [`StreamReader::next_view`](super::StreamReader::next_view) yield an
//! event record as an [`EventView`], which borrows the trace's bytes and
//! leaves its category and name as the record holds them ([`StrRef`]: a
//! string-table index, or the inline text); every other record comes out
//! decoded, as the iterators yield it. A reader that tallies many events
//! under a few names (`fxt stats`) then resolves each index once and
//! counts by index, instead of copying two strings and a vector of
//! arguments per event. The reader's tables at that record come with each
//! view ([`Context`]): string look-ups, and the whole [`Event`] when one is
//! wanted after all.
//!
//! A view is checked as the record would be decoded: its arguments are
//! read as [`Record::Event`]'s would be (the same reads, so the same
//! errors), only not kept. Walking views therefore meets exactly the
//! records and errors that iterating meets.

use super::args::{arg_view, skip_args};
use super::cursor::{Cursor, Region};
use super::error::DecodeError;
use super::parse::{bits, event, event_kind, Decoder};
use super::record::{Event, EventKind, Record, Text, Thread};
use super::resolve::{string_ref, Resolver, INLINE_STRING};
use super::tables::ProviderTables;
use super::values::{ArgValueView, ArgView, IntArg, IntParts, StrOrF64, StrRef};
use crate::encode::header::{arg_type, record_type};

/// An event record, its strings unresolved and its arguments unread.
#[derive(Debug, Clone, Copy)]
pub struct EventView<'a> {
    /// The event type and its type-specific data.
    pub kind: EventKind,
    /// When, in ticks of the provider's clock.
    pub timestamp: u64,
    /// Where (resolved: a thread ref is a copy of two words).
    pub thread: Thread,
    /// The category.
    pub category: StrRef<'a>,
    /// The event's name.
    pub name: StrRef<'a>,
    /// How many arguments the record carries.
    pub arg_count: u8,
    /// The record's bytes, to decode it whole ([`Context::event`]).
    bytes: &'a [u8],
    offset: u64,
    /// Where its arguments start in `bytes`.
    /// (Fits: an event record is at most 4095 words.)
    args_at: u16,
}

impl<'a> EventView<'a> {
    /// The view of an event whose fields were read elsewhere (a head:
    /// [`super::EventHead::view`]); `args`: how many arguments, and where
    /// they start in `bytes`.
    pub(super) fn new(
        kind: EventKind,
        timestamp: u64,
        thread: Thread,
        (category, name): (StrRef<'a>, StrRef<'a>),
        bytes: &'a [u8],
        offset: u64,
        (arg_count, args_at): (u8, u16),
    ) -> Self {
        EventView {
            kind,
            timestamp,
            thread,
            category,
            name,
            arg_count,
            bytes,
            offset,
            args_at,
        }
    }

    /// The record's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The record's byte offset in the input.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The arguments, their values read but their strings unresolved
    /// ([`Context::str`] resolves them without copying).
    #[inline]
    pub fn args(&self) -> ArgViews<'a> {
        ArgViews {
            words: self.arg_words(),
        }
    }

    /// The string refs of each argument: its name, and its value for a
    /// string argument.
    #[inline]
    pub fn arg_refs(&self) -> ArgRefs<'a> {
        ArgRefs {
            args: self.arg_words(),
        }
    }

    /// Each argument's words, its header first.
    #[inline]
    pub fn arg_words(&self) -> ArgWordIter<'a> {
        ArgWordIter {
            bytes: &self.bytes[usize::from(self.args_at)..],
            left: self.arg_count,
        }
    }
}

/// The words of an event's arguments ([`EventView::arg_words`]), each
/// argument's header first.
pub struct ArgWordIter<'a> {
    bytes: &'a [u8],
    left: u8,
}

impl<'a> ArgWordIter<'a> {
    /// The `count` arguments at the front of `bytes`, checked when their
    /// event was read.
    pub(super) fn new(bytes: &'a [u8], count: u8) -> Self {
        ArgWordIter { bytes, left: count }
    }
}

impl<'a> Iterator for ArgWordIter<'a> {
    type Item = ArgWords<'a>;

    #[inline]
    fn next(&mut self) -> Option<ArgWords<'a>> {
        // The view was checked when it was made: every argument's size is
        // at least one word and within the record.
        self.left = self.left.checked_sub(1)?;
        let header = word_at(self.bytes, 0)?;
        let size = bits(header, 4, 12) as usize * 8;
        let (arg, rest) = self.bytes.split_at_checked(size)?;
        self.bytes = rest;
        Some(ArgWords { header, bytes: arg })
    }
}

/// One argument of an event view: its header and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct ArgWords<'a> {
    /// The argument's header word.
    pub header: u64,
    /// The argument's bytes, its header included.
    bytes: &'a [u8],
}

impl<'a> ArgWords<'a> {
    /// The argument's name and, for a string argument, its value, as
    /// string refs.
    #[inline]
    pub fn refs(&self) -> (StrRef<'a>, Option<StrRef<'a>>) {
        let (name, value) = ((self.header >> 16) as u16, (self.header >> 32) as u16);
        let string = self.header & 0xf == 6;
        let plain_value = if string {
            plain_ref(value).map(Some)
        } else {
            Some(None)
        };
        if let (Some(name), Some(value)) = (plain_ref(name), plain_value) {
            return (name, value);
        }
        self.inline_refs()
    }

    /// The argument, its strings unresolved (`None` if it does not read:
    /// not met in a checked view).
    #[inline]
    pub fn view(&self) -> Option<ArgView<'a>> {
        plain_arg(self.header, self.bytes).or_else(|| other_arg(self.bytes))
    }

    /// The usual argument, an integer named by index, read from its
    /// words as its view reads it: the name's string index (not 0) and
    /// the value. `None` for any other argument (a name empty or inline,
    /// a value not an integer of types 1 to 4).
    #[inline(always)]
    pub fn int(&self) -> Option<(u16, IntArg)> {
        let header = self.header;
        let name = by_index((header >> 16) as u16)?;
        let high = (header >> 32) as u32;
        let value = match header & 0xf {
            arg_type::I32 => IntArg::I32(high as i32),
            arg_type::U32 => IntArg::U32(high),
            arg_type::I64 => IntArg::I64(word_at(self.bytes, 1)? as i64),
            arg_type::U64 => IntArg::U64(word_at(self.bytes, 1)?),
            _ => return None,
        };
        Some((name, value))
    }

    /// [`ArgWords::int`] as its sign and magnitude, read from the words
    /// with one test of the type where `int` chooses among four: the
    /// value of a 32-bit type is the header's high half (sign-extended for
    /// an int32), of a 64-bit one the word after.
    #[inline(always)]
    pub fn int_parts(&self) -> Option<(u16, IntParts)> {
        let header = self.header;
        let name = by_index((header >> 16) as u16)?;
        let ty = header & 0xf;
        if !(arg_type::I32..=arg_type::U64).contains(&ty) {
            return None;
        }
        let high = (header >> 32) as u32;
        let raw = match ty {
            arg_type::I64 | arg_type::U64 => word_at(self.bytes, 1)?,
            arg_type::I32 => i64::from(high as i32) as u64,
            _ => u64::from(high),
        };
        let signed = matches!(ty, arg_type::I32 | arg_type::I64);
        let negative = signed && (raw as i64) < 0;
        let magnitude = if negative { raw.wrapping_neg() } else { raw };
        let uint64 = ty == arg_type::U64;
        Some((
            name,
            IntParts {
                negative,
                magnitude,
                uint64,
            },
        ))
    }

    /// An argument named by index whose value is a string by index (not
    /// the empty one) or a double, read from its words as its view reads
    /// it: the name's string index and the value. `None` for any other
    /// argument. A view's value is built in memory a byte at a time and
    /// read back whole, which waits on the stores; this reads the header.
    #[inline(always)]
    pub fn str_or_f64(&self) -> Option<(u16, StrOrF64)> {
        let header = self.header;
        let name = by_index((header >> 16) as u16)?;
        let value = match header & 0xf {
            arg_type::STRING => StrOrF64::Str(by_index((header >> 32) as u16)?),
            arg_type::F64 => StrOrF64::F64(f64::from_bits(word_at(self.bytes, 1)?)),
            _ => return None,
        };
        Some((name, value))
    }

    /// [`ArgWords::refs`] of an argument with an inline text: read as
    /// decoding reads it (the view was checked, so the reads succeed).
    #[cold]
    fn inline_refs(&self) -> (StrRef<'a>, Option<StrRef<'a>>) {
        let (name, value) = ((self.header >> 16) as u16, (self.header >> 32) as u16);
        let string = self.header & 0xf == 6;
        let mut arg = Cursor::new(self.bytes, 0, Region::Argument);
        let _ = arg.word();
        let name = string_ref(name, &mut arg).unwrap_or(StrRef::Empty);
        let value = string.then(|| string_ref(value, &mut arg).unwrap_or(StrRef::Empty));
        (name, value)
    }
}

/// The string refs of an event's arguments ([`EventView::arg_refs`]): per
/// argument, its name and, for a string argument, its value.
pub struct ArgRefs<'a> {
    args: ArgWordIter<'a>,
}

impl<'a> Iterator for ArgRefs<'a> {
    type Item = (StrRef<'a>, Option<StrRef<'a>>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.args.next().map(|arg| arg.refs())
    }
}

/// The arguments of an event view ([`EventView::args`]).
pub struct ArgViews<'a> {
    words: ArgWordIter<'a>,
}

impl<'a> ArgViews<'a> {
    /// The arguments of `words`.
    pub(super) fn new(words: ArgWordIter<'a>) -> Self {
        ArgViews { words }
    }
}

impl<'a> Iterator for ArgViews<'a> {
    type Item = ArgView<'a>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.words.next()?.view()
    }
}

/// An argument [`plain_arg`] does not read (`bytes`, the whole argument),
/// read as decoding reads it: a call of its own, so that the usual
/// argument's few tests stay small where they are inlined.
#[cold]
#[inline(never)]
fn other_arg(bytes: &[u8]) -> Option<ArgView<'_>> {
    arg_view(&mut Cursor::new(bytes, 0, Region::Argument)).ok()
}

/// An argument of the usual shape read from its header and words (`bytes`,
/// the whole argument): a name by index, a value that is a number or an
/// indexed string. `None` for anything else, which `arg_view` reads.
#[inline(always)]
fn plain_arg(header: u64, bytes: &[u8]) -> Option<ArgView<'_>> {
    let name = plain_ref((header >> 16) as u16)?;
    let high = (header >> 32) as u32;
    let value = match header & 0xf {
        arg_type::NULL => ArgValueView::Null,
        arg_type::I32 => ArgValueView::I32(high as i32),
        arg_type::U32 => ArgValueView::U32(high),
        arg_type::I64 => ArgValueView::I64(word_at(bytes, 1)? as i64),
        arg_type::U64 => ArgValueView::U64(word_at(bytes, 1)?),
        arg_type::F64 => ArgValueView::F64(f64::from_bits(word_at(bytes, 1)?)),
        arg_type::STRING => ArgValueView::Str(plain_ref(high as u16)?),
        arg_type::POINTER => ArgValueView::Pointer(word_at(bytes, 1)?),
        arg_type::KOID => ArgValueView::Koid(word_at(bytes, 1)?),
        arg_type::BOOL => ArgValueView::Bool(high & 1 == 1),
        arg_type::BLOB => return None,
        other => ArgValueView::Unknown {
            arg_type: other as u8,
            skipped: (),
        },
    };
    Some(ArgView { name, value })
}

/// One record of a view walk.
#[derive(Debug, Clone)]
pub enum View<'a> {
    /// An event record of a known event type.
    Event(EventView<'a>),
    /// Any other record, decoded (table records applied, as iterating
    /// does).
    Record(Record),
}

/// The reader's state at the record of a view: the tables its references
/// resolve against. A copy is as good as the original: a reader may hand
/// one to a call kept out of its loop, so that the original, used only
/// there, need not be written to memory at every record.
#[derive(Clone, Copy)]
pub struct Context<'r> {
    pub(crate) decoder: &'r Decoder,
    /// The record's bytes (empty for an error) and its offset.
    pub(crate) record: &'r [u8],
    pub(crate) offset: u64,
}

impl<'r> Context<'r> {
    /// The record's bytes (empty when the step is an error).
    pub fn record_bytes(&self) -> &'r [u8] {
        self.record
    }

    /// The record's byte offset in the input (where an error was met).
    pub fn record_offset(&self) -> u64 {
        self.offset
    }

    /// The index of a string field that refers to an index the
    /// provider's table does not hold (what decoding it gives as an
    /// undefined [`Text`]).
    #[inline]
    pub fn undefined_index(&self, s: StrRef<'_>) -> Option<u16> {
        match s {
            StrRef::Indexed(index) if !self.decoder.providers.current.has_string(index) => {
                Some(index)
            }
            _ => None,
        }
    }

    /// A number that changes whenever an indexed string may resolve to
    /// other text (a string defined, a provider switched or restarted),
    /// and that no other decoder ever had: what a reader resolved from
    /// string indices (a name's id in its own table) stays valid while it
    /// is unchanged.
    #[inline]
    pub fn strings_epoch(&self) -> u64 {
        self.decoder.providers.strings_epoch()
    }

    /// As [`Context::strings_epoch`], for thread indices: a number that
    /// changes whenever a thread index may resolve to other koids (a
    /// thread defined, a provider switched or restarted), so that what a
    /// reader keeps per thread index (an event head's
    /// [`EventHead::thread_index`](super::EventHead::thread_index)) stays
    /// valid while it is unchanged.
    #[inline]
    pub fn threads_epoch(&self) -> u64 {
        self.decoder.providers.threads_epoch()
    }

    /// The thread an indexed thread ref (1..=255) resolves to
    /// ([`Thread::Undefined`] for an index the table does not hold).
    #[inline]
    pub fn thread(&self, index: u8) -> Thread {
        self.decoder.providers.current.thread(index)
    }

    /// [`Context::thread`] where the tables keep it resolved, lent in
    /// place (no copy of the thread to read back); `None` for an index
    /// they do not, which [`Context::thread`] looks up further.
    #[inline(always)]
    pub fn resolved_thread(&self, index: u8) -> Option<&'r Thread> {
        self.decoder.providers.current.resolved_thread(index)
    }

    /// Id of the provider whose section the record is in.
    pub fn provider_id(&self) -> Option<u32> {
        self.decoder.providers.current_id()
    }

    /// Ticks per second of the current provider, if it sent an
    /// initialization record.
    pub fn ticks_per_second(&self) -> Option<u64> {
        self.decoder.providers.ticks_per_second()
    }

    /// The text of a string field (an undefined index gives an undefined
    /// [`Text`], as decoding the record does).
    pub fn text(&self, s: StrRef<'_>) -> Text {
        match s {
            StrRef::Empty => Text::default(),
            StrRef::Indexed(index) => self.decoder.providers.current.string(index),
            StrRef::Inline(text) => Text::new(text),
        }
    }

    /// The text of a string field, borrowed from the record or from the
    /// provider's table (no copy); `None` for an undefined index.
    #[inline]
    pub fn str<'s>(&self, s: StrRef<'s>) -> Option<&'s str>
    where
        'r: 's,
    {
        match s {
            StrRef::Empty => Some(""),
            StrRef::Indexed(index) => self.decoder.providers.current.str(index),
            StrRef::Inline(text) => Some(text),
        }
    }

    /// The whole event a view stands for, arguments included: what
    /// iterating yields as [`Record::Event`].
    pub fn event(&self, view: &EventView<'_>) -> Result<Event, DecodeError> {
        let mut cur = Cursor::new(
            view.bytes,
            view.offset,
            Region::Record(record_type::EVENT as u8),
        );
        let header = cur.word()?;
        let resolver = Resolver {
            tables: &self.decoder.providers.current,
        };
        event(header, &mut cur, &resolver)
    }
}

/// Decodes one framed record (`bytes`, at input offset `offset`) as a
/// view: events of known types unresolved, anything else whole.
#[inline(always)]
pub(crate) fn decode<'a>(
    decoder: &mut Decoder,
    bytes: &'a [u8],
    offset: u64,
) -> Result<View<'a>, DecodeError> {
    let header = Cursor::new(bytes, offset, Region::Record(0)).peek_word()?;
    if header & 0xf == record_type::EVENT && bits(header, 16, 4) <= 10 {
        let tables = &decoder.providers.current;
        if let Some(view) = plain_event_view(header, bytes, offset, tables) {
            return Ok(view);
        }
        return event_view(header, bytes, offset, &Resolver { tables }).map(View::Event);
    }
    decoder.decode_record(bytes, offset).map(View::Record)
}

/// The view of a framed record that is an event of the usual shape
/// ([`plain_event_view`]), made where it is returned; `None` for any other
/// record, which [`decode`] then reads.
#[inline(always)]
pub(crate) fn plain<'a>(decoder: &Decoder, bytes: &'a [u8], offset: u64) -> Option<View<'a>> {
    let header = word_at(bytes, 0)?;
    if header & 0xf != record_type::EVENT || bits(header, 16, 4) > 10 {
        return None;
    }
    let tables = &decoder.providers.current;
    plain_event_view(header, bytes, offset, tables)
}

/// Word `at` of a record's bytes, if it has that many.
#[inline(always)]
pub(super) fn word_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b: [u8; 8] = bytes.get(at * 8..at * 8 + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// A string ref that names no inline text: `None` for an inline one.
#[inline(always)]
pub(super) fn plain_ref<'a>(string_ref: u16) -> Option<StrRef<'a>> {
    match string_ref {
        0 => Some(StrRef::Empty),
        r if r & INLINE_STRING == 0 => Some(StrRef::Indexed(r)),
        _ => None,
    }
}

/// A string ref's index: `None` for the empty string or an inline text.
#[inline(always)]
fn by_index(string_ref: u16) -> Option<u16> {
    (string_ref != 0 && string_ref & INLINE_STRING == 0).then_some(string_ref)
}

/// The word where the arguments of an event of the usual shape end, the
/// first at word `at` of `bytes` (`header`'s count of them): `None` if
/// one is not of that shape (its name or string value inline, a blob) or
/// its size is short of its type's or runs past the record. The one
/// check of the arguments of a view made on the fast path and of a head
/// (`super::head`).
#[inline(always)]
pub(super) fn plain_args_end(bytes: &[u8], header: u64, mut at: usize) -> Option<usize> {
    for _ in 0..bits(header, 20, 4) {
        let arg = word_at(bytes, at)?;
        let size = bits(arg, 4, 12) as usize;
        plain_ref((arg >> 16) as u16)?;
        let least = match arg & 0xf {
            t if arg_type::has_value_word(t) => 2,
            arg_type::STRING => {
                plain_ref((arg >> 32) as u16)?;
                1
            }
            arg_type::BLOB => return None,
            _ => 1,
        };
        if size < least {
            return None;
        }
        at += size;
    }
    Some(at)
}

/// The view of an event of the usual shape, read in one pass with a
/// bounds check per word: category and name by index, and arguments whose
/// names are by index and whose values are numbers or indexed strings.
/// `None` for anything else, inline texts, blob arguments and records too
/// short for their fields included: [`event_view`] then reads it field by
/// field and meets any error where decoding meets it. Whatever this
/// accepts, `event_view` accepts with the same result (the decoder's
/// tests walk bit-flipped traces both ways).
#[inline(always)]
fn plain_event_view<'a>(
    header: u64,
    bytes: &'a [u8],
    offset: u64,
    tables: &ProviderTables,
) -> Option<View<'a>> {
    let timestamp = word_at(bytes, 1)?;
    let mut at = 2;
    let thread = match bits(header, 24, 8) as u8 {
        0 => {
            let process = word_at(bytes, 2)?;
            let thread = word_at(bytes, 3)?;
            at = 4;
            Thread::Known { process, thread }
        }
        index => tables.thread(index),
    };
    let category = plain_ref(bits(header, 32, 16) as u16)?;
    let name = plain_ref(bits(header, 48, 16) as u16)?;
    let arg_count = bits(header, 20, 4);
    let args_at = (at * 8) as u16;
    at = plain_args_end(bytes, header, at)?;
    // The word after the arguments, for the event types that carry one
    // (`None` if the arguments run past the record).
    let rest = bytes.get(at * 8..)?;
    let kind = event_kind(
        bits(header, 16, 4),
        &mut Cursor::new(rest, 0, Region::Argument),
    )
    .ok()?;
    // Made as the `View` it is returned as, so that it is written where
    // the caller keeps it rather than copied there.
    Some(View::Event(EventView {
        kind,
        timestamp,
        thread,
        category,
        name,
        arg_count: arg_count as u8,
        bytes,
        offset,
        args_at,
    }))
}

/// An event record's view: the reads `parse::event` makes, in its order,
/// without resolving strings or keeping arguments.
#[inline(always)]
fn event_view<'a>(
    header: u64,
    bytes: &'a [u8],
    offset: u64,
    resolver: &Resolver<'_>,
) -> Result<EventView<'a>, DecodeError> {
    let mut cur = Cursor::new(bytes, offset, Region::Record(record_type::EVENT as u8));
    cur.word()?;
    let timestamp = cur.word()?;
    let thread = resolver.thread(bits(header, 24, 8) as u8, &mut cur)?;
    let category = string_ref(bits(header, 32, 16) as u16, &mut cur)?;
    let name = string_ref(bits(header, 48, 16) as u16, &mut cur)?;
    let arg_count = bits(header, 20, 4);
    // Fits: the cursor is within the record.
    let args_at = (cur.offset() - offset) as u16;
    skip_args(arg_count, &mut cur)?;
    let kind = event_kind(bits(header, 16, 4), &mut cur)?;
    Ok(EventView {
        kind,
        timestamp,
        thread,
        category,
        name,
        arg_count: arg_count as u8,
        bytes,
        offset,
        args_at,
    })
}
