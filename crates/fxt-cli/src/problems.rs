//! The strict check's rules for one record: why a record fails
//! ([`Reason`]), the problem as `fxt check` prints it ([`Problem`]), and
//! the problems of a record on its own ([`record_problems`]; of an event,
//! read from its view, [`event_problems_after`]). `fxt check`
//! reports them; `fxt recover` drops or repairs the records they name, so
//! that what it writes passes the check.

use fxt_format::decode::{
    Arg, ArgValue, ArgWordIter, Context, EventHead, EventKind, EventView, Process, Record, StrRef,
    Text, Thread,
};
use fxt_format::reserved::{arg_reserved_mask, reserved_bits_in};

/// Why a record fails the strict check (what `fxt recover` counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The decoder rejects the record (or the rest of the input).
    Malformed,
    /// The first record is not a magic number record.
    NoMagic,
    /// Reserved bits are set (repairable: clearing them changes nothing
    /// the decoder reads).
    ReservedBits,
    /// A reference to a string or thread index no earlier record defined.
    UndefinedRef,
    /// A duration complete event that ends before it begins.
    BackwardsDuration,
    /// A duration end with no open begin on its thread.
    EndWithoutBegin,
    /// A duration end whose name or time does not fit the begin it closes.
    MismatchedEnd,
    /// A duration begin that no end closes.
    NeverEnded,
}

impl Reason {
    /// How `fxt recover`'s summary names records dropped for this reason.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::Malformed => "malformed",
            Reason::NoMagic => "no magic number record first",
            Reason::ReservedBits => "reserved bits set",
            Reason::UndefinedRef => "referring to an undefined string or thread",
            Reason::BackwardsDuration => "complete durations ending before they begin",
            Reason::EndWithoutBegin => "duration ends without a begin",
            Reason::MismatchedEnd => {
                "duration ends naming another begin or ending before it, with those begins"
            }
            Reason::NeverEnded => "duration begins never ended",
        }
    }
}

/// One problem the strict check reports.
pub struct Problem {
    /// Byte offset of the record.
    pub offset: u64,
    /// Its kind.
    pub reason: Reason,
    /// The line `check` prints after the offset.
    pub message: String,
}

/// The problems of one record on its own (everything but begin / end
/// matching and the magic number): reserved bits in `raw`, its bytes, and
/// undefined references. For any record but an event: a walk hands every
/// event as a view ([`fxt_format::decode::View`]), whose problems are
/// [`event_problems_after`]'.
pub fn record_problems(offset: u64, record: &Record, raw: Option<&[u8]>) -> Vec<Problem> {
    let mut found = Found {
        offset,
        problems: Vec::new(),
    };
    if let Some(raw) = raw {
        found.reserved_bits(raw);
    }
    undefined_refs(record, &mut |m| found.push(Reason::UndefinedRef, m));
    found.problems
}

/// The header words (the record's, then its arguments') of the last events
/// [`event_problems_after`] found without problems, one per slot (chosen by
/// the header word). Whether an event has any is a function of these words
/// and of the reader's tables, but for a complete event's times: an event
/// with the same words, when no other record came between to change the
/// tables, has none either. A trace repeats a few shapes of event (per
/// thread, when threads take turns), so most events are one of these word
/// for word.
pub struct LastClean {
    /// Per set (chosen by the header word), its ways, the one remembered
    /// last first.
    sets: Box<[[Shape; WAYS]; SETS]>,
    /// Bumped by [`LastClean::forget`]: a shape remembered in an earlier
    /// generation is forgotten (never wraps: one per record at most).
    generation: u64,
}

/// Sets of [`LastClean`] (a power of two). A trace's shapes are each
/// event kind of each thread (a few dozen where eight threads take
/// turns): with one slot per set, shapes that share a slot would evict
/// each other at every turn; with two, and four times more sets than
/// such a trace has shapes, hardly any set holds more than two.
const SETS: usize = 256;
/// Shapes each set keeps.
const WAYS: usize = 2;

/// One remembered clean event.
#[derive(Clone, Copy, Default)]
struct Shape {
    words: [u64; 16],
    /// How many of `words` are the event's; 0 for none.
    len: usize,
    generation: u64,
}

impl Default for LastClean {
    fn default() -> Self {
        LastClean {
            sets: Box::new([[Shape::default(); WAYS]; SETS]),
            generation: 0,
        }
    }
}

impl LastClean {
    /// Forgets the clean events: a record that may change the reader's
    /// tables came.
    #[inline(always)]
    pub fn forget(&mut self) {
        self.generation += 1;
    }

    /// The set of an event whose header word is `header`.
    #[inline(always)]
    fn set(header: u64) -> usize {
        (header.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SETS.trailing_zeros())) as usize % SETS
    }

    /// Whether `e`'s header words are those of a clean event remembered
    /// since the tables last changed.
    #[inline(always)]
    fn matches(&self, e: &EventView<'_>) -> bool {
        let Some(header) = header_word(e) else {
            return false;
        };
        self.matches_words(header, e.arg_count, || e.arg_words())
    }

    /// [`LastClean::matches`] of an event read by its head (whose words
    /// are its view's: `fxt_format::decode::head`), no view made.
    #[inline(always)]
    pub fn matches_head(&self, e: &EventHead<'_>) -> bool {
        self.matches_words(e.header(), e.arg_count(), || e.arg_words())
    }

    /// Whether an event of header word `header` and `count` arguments
    /// with these words is a clean shape of this generation.
    #[inline(always)]
    fn matches_words<'a>(
        &self,
        header: u64,
        count: u8,
        args: impl Fn() -> ArgWordIter<'a>,
    ) -> bool {
        self.sets[Self::set(header)].iter().any(|shape| {
            // An event has at most 15 arguments: its count is 4 bits.
            usize::from(count) + 1 == shape.len
                && shape.words[0] == header
                && shape.generation == self.generation
                && args().zip(&shape.words[1..]).all(|(a, &w)| a.header == w)
        })
    }

    /// Remembers `e`, found without problems, in the first way of its
    /// set; the shape there moves to the next way (a way of an earlier
    /// generation is taken first: it is forgotten anyway).
    #[cold]
    fn remember(&mut self, e: &EventView<'_>) {
        let Some(header) = header_word(e) else {
            return;
        };
        let generation = self.generation;
        let set = &mut self.sets[Self::set(header)];
        let stale = set
            .iter()
            .position(|s| s.generation != generation || s.len == 0);
        set[..=stale.unwrap_or(WAYS - 1)].rotate_right(1);
        let shape = &mut set[0];
        shape.generation = generation;
        shape.words[0] = header;
        let mut len = 1;
        for (a, w) in e.arg_words().zip(&mut shape.words[1..]) {
            *w = a.header;
            len += 1;
        }
        // Fewer arguments read than counted never match (see `matches`).
        shape.len = len;
    }
}

/// The first word of an event's record.
#[inline(always)]
fn header_word(e: &EventView<'_>) -> Option<u64> {
    let b: [u8; 8] = e.bytes().get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

/// The problems of an event on its own, read from its view without
/// decoding it: reserved bits in its arguments' headers, undefined
/// references, a complete duration ending before it begins; added to
/// `problems` (nothing is allocated for an event without any). For a walk
/// that remembers the last event without
/// any (`last`; [`LastClean::forget`] at every other record): an event of
/// the same header words is not looked at again.
#[inline(always)]
pub fn event_problems_after(
    ctx: &Context<'_>,
    e: &EventView<'_>,
    last: &mut LastClean,
    problems: &mut Vec<Problem>,
) {
    let backwards = matches!(e.kind, EventKind::DurationComplete { end } if end < e.timestamp);
    if !backwards && last.matches(e) {
        return;
    }
    if backwards || event_may_have_problems(ctx, e) {
        return event_problems_in_full(ctx, e, problems);
    }
    last.remember(e);
}

/// [`event_problems_after`]'s problems of an event that may have some.
#[cold]
#[inline(never)]
fn event_problems_in_full(ctx: &Context<'_>, e: &EventView<'_>, problems: &mut Vec<Problem>) {
    let mut found = Found {
        offset: e.offset(),
        problems: std::mem::take(problems),
    };
    // An event's reserved bits are those of its argument headers: the
    // record is looked at whole only when one of them has any set.
    if e.arg_words()
        .any(|a| a.header & arg_reserved_mask(a.header) != 0)
    {
        found.reserved_bits(e.bytes());
    }
    event_references(ctx, e, &mut found);
    *problems = found.problems;
}

/// False when the event has none of [`event_problems_after`]'s problems
/// (reserved bits included); true when it may have some. The
/// same rules, read straight from the view's fields and argument header
/// words: a string ref is undefined only when it is an index (not 0, its
/// top bit clear) the provider's table lacks; an inline text is always
/// defined.
#[inline(always)]
fn event_may_have_problems(ctx: &Context<'_>, e: &EventView<'_>) -> bool {
    if ctx.undefined_index(e.category).is_some() || ctx.undefined_index(e.name).is_some() {
        return true;
    }
    if let Thread::Undefined(_) = e.thread {
        return true;
    }
    if let EventKind::DurationComplete { end } = e.kind {
        if end < e.timestamp {
            return true;
        }
    }
    for a in e.arg_words() {
        let h = a.header;
        if h & arg_reserved_mask(h) != 0
            || undefined_ref(ctx, (h >> 16) as u16)
            || (h & 0xf == 6 && undefined_ref(ctx, (h >> 32) as u16))
        {
            return true;
        }
    }
    false
}

/// Whether the string ref `r` of an argument header is an index (not 0,
/// its top bit clear: not an inline text) the provider's table lacks.
#[inline(always)]
fn undefined_ref(ctx: &Context<'_>, r: u16) -> bool {
    r != 0 && r & 0x8000 == 0 && ctx.undefined_index(StrRef::Indexed(r)).is_some()
}

/// The problems of an event view's references and times.
#[inline]
fn event_references(ctx: &Context<'_>, e: &EventView<'_>, found: &mut Found) {
    let text = |found: &mut Found, what: &str, s: StrRef<'_>| {
        if let Some(i) = ctx.undefined_index(s) {
            found.push(Reason::UndefinedRef, undefined_string(what, i));
        }
    };
    text(found, "category", e.category);
    text(found, "name", e.name);
    for (name, value) in e.arg_refs() {
        text(found, "argument name", name);
        if let Some(value) = value {
            text(found, "string argument value", value);
        }
    }
    if let Thread::Undefined(i) = e.thread {
        found.push(Reason::UndefinedRef, undefined_thread("thread", i));
    }
    found.backwards(e.kind, e.timestamp, || ctx.text(e.name));
}

/// The problems found in one record, at its offset.
struct Found {
    offset: u64,
    problems: Vec<Problem>,
}

impl Found {
    fn push(&mut self, reason: Reason, message: String) {
        self.problems.push(Problem {
            offset: self.offset,
            reason,
            message,
        });
    }

    /// Reserved bits set in the record's bytes.
    fn reserved_bits(&mut self, raw: &[u8]) {
        for r in reserved_bits_in(raw) {
            self.push(
                Reason::ReservedBits,
                format!("reserved bits {:#018x} of the {} are set", r.mask, r.what),
            );
        }
    }

    /// A complete duration that ends before it begins.
    fn backwards(&mut self, kind: EventKind, timestamp: u64, name: impl FnOnce() -> Text) {
        if let EventKind::DurationComplete { end } = kind {
            if end < timestamp {
                let message = format!(
                    "duration complete event {} ends (ts {end}) before it begins (ts {timestamp})",
                    name()
                );
                self.push(Reason::BackwardsDuration, message);
            }
        }
    }
}

/// The message of a reference to an undefined string index.
fn undefined_string(what: &str, index: u16) -> String {
    format!("the {what} refers to undefined string #{index}")
}

/// The message of a reference to an undefined thread index.
fn undefined_thread(what: &str, index: u8) -> String {
    format!("the {what} refers to undefined thread #{index}")
}

/// A thread as `process/thread`.
pub fn thread_label(t: &Thread) -> String {
    match t {
        Thread::Known { process, thread } => format!("{process}/{thread}"),
        Thread::Undefined(i) => format!("<undefined thread #{i}>"),
    }
}

/// Reports references to undefined string and thread indices of a record
/// that is not an event (an event's are [`event_references`]').
fn undefined_refs(record: &Record, report: &mut impl FnMut(String)) {
    let mut text = |what: &str, t: &Text| {
        if let Some(i) = t.undefined_index() {
            report(undefined_string(what, i));
        }
    };
    // At most two threads per record: no allocation.
    let mut threads: [Option<(&str, Thread)>; 2] = [None, None];
    let mut push = |what, t| {
        let slot = if threads[0].is_none() { 0 } else { 1 };
        threads[slot] = Some((what, t));
    };
    let mut args: &[Arg] = &[];
    match record {
        Record::Blob(b) => text("name", &b.name),
        Record::UserspaceObject(o) => {
            text("name", &o.name);
            if let Process::Undefined(i) = o.process {
                push("process", Thread::Undefined(i));
            }
            args = &o.args;
        }
        Record::KernelObject(o) => {
            text("name", &o.name);
            args = &o.args;
        }
        Record::ContextSwitch(c) => args = &c.args,
        Record::ThreadWakeup(w) => args = &w.args,
        Record::LegacyContextSwitch(c) => {
            push("outgoing thread", c.outgoing_thread);
            push("incoming thread", c.incoming_thread);
        }
        Record::Log(l) => push("thread", l.thread),
        Record::LargeBlobWithMetadata(b) => {
            text("category", &b.category);
            text("name", &b.name);
            push("thread", b.thread);
            args = &b.args;
        }
        Record::LargeBlobNoMetadata(b) => {
            text("category", &b.category);
            text("name", &b.name);
        }
        _ => {}
    }
    for a in args {
        text("argument name", &a.name);
        if let ArgValue::Str(v) = &a.value {
            text("string argument value", v);
        }
    }
    for (what, t) in threads.into_iter().flatten() {
        if let Thread::Undefined(i) = t {
            report(undefined_thread(what, i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxt_format::decode::{SliceReader, View};
    use fxt_format::encode::header::{event, event_type};
    use fxt_format::encode::{write_record, Arg, ArgValue, Event, StringRef, ThreadRef};

    /// Instants on thread 1 of category 1, named by the string indices
    /// `names`, each with one argument named by index 9: a `u64`, or an
    /// `i64` (`signed`).
    fn instants(names: &[(u16, bool)]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for &(name, signed) in names {
            let value = if signed {
                ArgValue::I64(1)
            } else {
                ArgValue::U64(1)
            };
            let args = [Arg::new(StringRef::Index(9), value)];
            let instant = Event {
                kind: fxt_format::encode::EventKind::Instant,
                timestamp: 5,
                thread: ThreadRef::Index(1),
                category: StringRef::Index(1),
                name: StringRef::Index(name),
                args: &args,
            };
            write_record(&mut bytes, &instant).unwrap();
        }
        bytes
    }

    fn views(bytes: &[u8]) -> Vec<EventView<'_>> {
        let mut reader = SliceReader::new(bytes);
        let mut views = Vec::new();
        while let Some((view, _)) = reader.next_view() {
            match view {
                Ok(View::Event(e)) => views.push(e),
                other => panic!("not an event view: {other:?}"),
            }
        }
        views
    }

    /// The heads of the events of `bytes` (each of the usual shape).
    fn heads(bytes: &[u8]) -> Vec<EventHead<'_>> {
        let mut reader = SliceReader::new(bytes);
        let mut heads = Vec::new();
        reader
            .heads_until(u64::MAX, |head, _| match head {
                Ok(fxt_format::decode::Head::Event(e, _)) => {
                    heads.push(e);
                    Ok::<(), ()>(())
                }
                _ => panic!("not an event head"),
            })
            .unwrap();
        heads
    }

    /// An event read by its head matches the shapes its view matches
    /// (`fxt check` reads heads, and remembers views).
    #[test]
    fn a_head_matches_as_its_view_does() {
        let [a, b, c] = three_in_one_set();
        let bytes = instants(&[(a, false), (b, false), (c, false), (a, true)]);
        let (views, heads) = (views(&bytes), heads(&bytes));
        assert_eq!(heads.len(), 4);
        let mut last = LastClean::default();
        let agree = |last: &LastClean| {
            let matched: Vec<bool> = views.iter().map(|e| last.matches(e)).collect();
            let by_head: Vec<bool> = heads.iter().map(|e| last.matches_head(e)).collect();
            assert_eq!(matched, by_head);
            matched
        };
        assert_eq!(agree(&last), [false; 4]);
        last.remember(&views[0]);
        last.remember(&views[2]);
        assert_eq!(agree(&last), [true, false, true, false]);
        last.forget();
        assert_eq!(agree(&last), [false; 4]);
    }

    /// The first three string indices whose instants (as [`instants`]
    /// writes them) fall in one set.
    fn three_in_one_set() -> [u16; 3] {
        let set = |name: u16| LastClean::set(event(event_type::INSTANT, 4, 1, 1, 1, name));
        let first = 2;
        let same: Vec<u16> = (3..0x7fff).filter(|&n| set(n) == set(first)).collect();
        [first, same[0], same[1]]
    }

    /// Shapes that share a set are each remembered until two others of
    /// their set come after them, or the tables change; an event matches
    /// only a shape of the same words.
    #[test]
    fn a_set_keeps_the_last_two_shapes_remembered_in_it() {
        let [a, b, c] = three_in_one_set();
        let bytes = instants(&[(a, false), (b, false), (c, false), (a, true)]);
        let [a, b, c, a_signed] = views(&bytes)[..] else {
            panic!("four instants")
        };
        let header = |e: &EventView<'_>| header_word(e).unwrap();
        assert_eq!(LastClean::set(header(&a)), LastClean::set(header(&c)));
        let mut last = LastClean::default();
        assert!(![a, b, c].iter().any(|e| last.matches(e)));
        last.remember(&a);
        last.remember(&b);
        assert!(last.matches(&a) && last.matches(&b) && !last.matches(&c));
        // The same record header, another argument header: no match.
        assert_eq!(header(&a_signed), header(&a));
        assert!(!last.matches(&a_signed));
        last.remember(&c);
        assert!(!last.matches(&a) && last.matches(&b) && last.matches(&c));
        last.forget();
        assert!(![a, b, c].iter().any(|e| last.matches(e)));
        // A stale way is taken before a remembered one.
        last.remember(&a);
        last.remember(&b);
        assert!(last.matches(&a) && last.matches(&b));
    }
}
