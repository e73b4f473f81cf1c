//! `fxt json`'s events written straight from the record's bytes
//! ([`EventView`]): no [`fxt_format::decode::Event`], no argument vector,
//! each string index escaped once ([`Formatted`]). The object is the one
//! the decoded path writes for the event, byte for byte.

use std::io::Write as _;

use fxt_format::decode::{
    ArgValueView, ArgWords, Context, EventKind, EventView, StrOrF64, StrRef, Thread,
};
use fxt_format::encode::header::event_type;

use super::{pid_tid, string};
use crate::clock::Clock;
use crate::formatted::{Form, Formatted};
use crate::heads::{Heads, Names, OfThread};
use crate::input::ticks_to_ns;
use crate::piece::{put_hex, put_i64, put_u64, Blocks, Halves, HighDigits, Piece};
use crate::shapes::{Shapes, ARGS};
use crate::usual::Usual;

/// Strings as JSON strings; an undefined index as the text
/// `<undefined string #N>`.
pub struct Json;

impl Form for Json {
    fn text(out: &mut Vec<u8>, s: &str) {
        let _ = string(out, s);
    }

    fn undefined(out: &mut Vec<u8>, index: u16) {
        let _ = string(out, &format!("<undefined string #{index}>"));
    }
}

/// Argument names: a JSON string and the `:` after it (one piece per
/// argument).
pub struct Key;

impl Form for Key {
    fn text(out: &mut Vec<u8>, s: &str) {
        Json::text(out, s);
        out.push(b':');
    }

    fn undefined(out: &mut Vec<u8>, index: u16) {
        Json::undefined(out, index);
        out.push(b':');
    }
}

/// The strings of one range's events.
#[derive(Default)]
pub struct EventObjects {
    strings: Formatted<Json>,
    keys: Formatted<Key>,
    /// An event's object that is not the usual one, being built.
    object: Vec<u8>,
    /// The clock of the last event (`None` before the first).
    clock: Option<Clock>,
    /// The leading digits of the last timestamp's microseconds.
    ts_digits: HighDigits,
    /// The leading digits of the last integer argument.
    arg_digits: HighDigits,
    /// The `{"ph":…,"cat":…,"name":…,"ts":` of recent events whose
    /// strings are by index, by phase and strings.
    heads: Heads<Names>,
    /// The last `,"pid":…,"tid":…` written: its thread, and its bytes.
    ids_of: Option<Thread>,
    ids: Piece,
    /// What the usual event's object has between its timestamp and its
    /// first argument (`,"pid":…,"tid":…`, `,"s":"t"` for an instant,
    /// `,"args":{` if it has arguments and no duration), of recent events
    /// by thread, whether it is an instant and whether it opens the
    /// arguments.
    after_ts: Heads<OfThread>,
    /// The fixed pieces of recent events' objects, by shape: the usual
    /// event read by its head.
    shapes: Shapes,
}

/// A complete event's end, the id the object shows (a counter's id 0 is
/// no id), and whether the piece after the timestamp opens the arguments
/// (the event has some and nothing comes between: by the type alone, as
/// a shape is keyed, for a counter's id, 0 or not, is not in its header
/// word), of an event of type `ty` with `args` arguments whose word after
/// them is `trailing`. One jump on the type.
#[inline(always)]
fn end_id_opens(ty: u8, trailing: u64, args: u8) -> (Option<u64>, Option<u64>, bool) {
    match u64::from(ty) {
        event_type::DURATION_COMPLETE => (Some(trailing), None, false),
        event_type::INSTANT | event_type::DURATION_BEGIN | event_type::DURATION_END => {
            (None, None, args > 0)
        }
        event_type::COUNTER if trailing == 0 => (None, None, false),
        _ => (None, Some(trailing), false),
    }
}

impl EventObjects {
    /// Appends `{"ph":…,"cat":…,"name":…,"ts":`.
    #[inline]
    fn head(&mut self, w: &mut Vec<u8>, ctx: &Context<'_>, view: &EventView<'_>) {
        let phase = phase(&view.kind);
        let strings = &mut self.strings;
        match Names::of(ctx, phase[0], view.category, view.name) {
            Some(key) => self
                .heads
                .get(key, |head| {
                    write_head(head, strings, ctx, (view.category, view.name), phase)
                })
                .put(w),
            None => write_head(w, strings, ctx, (view.category, view.name), phase),
        }
    }

    /// Appends `,"pid":…,"tid":…`.
    #[inline]
    fn ids(&mut self, w: &mut Vec<u8>, thread: Thread) {
        if self.ids_of == Some(thread) {
            self.ids.put(w);
        } else {
            let at = w.len();
            let _ = pid_tid(w, &thread);
            self.ids.set(&w[at..]);
            self.ids_of = Some(thread);
        }
    }

    /// `sep` and the Chrome event of the event (`tps`: the provider's
    /// ticks per second); `None` if an argument does not read, for the
    /// decoded path.
    pub fn event(
        &mut self,
        ctx: &Context<'_>,
        view: &EventView<'_>,
        tps: u64,
        sep: &[u8],
    ) -> Option<&[u8]> {
        let mut w = std::mem::take(&mut self.object);
        w.clear();
        w.extend_from_slice(sep);
        let written = self.write_event(&mut w, ctx, view, tps);
        self.object = w;
        written.then_some(&self.object[..])
    }

    /// Appends the Chrome event of the event; `false` if an argument does
    /// not read.
    fn write_event(
        &mut self,
        w: &mut Vec<u8>,
        ctx: &Context<'_>,
        view: &EventView<'_>,
        tps: u64,
    ) -> bool {
        self.head(w, ctx, view);
        let begin = ticks_to_ns(view.timestamp, tps);
        micros(w, begin);
        self.ids(w, view.thread);
        match view.kind {
            EventKind::Instant => w.extend_from_slice(b",\"s\":\"t\""),
            EventKind::DurationComplete { end } => {
                w.extend_from_slice(b",\"dur\":");
                micros(w, ticks_to_ns(end, tps).saturating_sub(begin));
            }
            EventKind::Counter { id } if id != 0 => hex_id(w, id),
            EventKind::AsyncBegin { id }
            | EventKind::AsyncInstant { id }
            | EventKind::AsyncEnd { id }
            | EventKind::FlowBegin { id } => hex_id(w, id),
            EventKind::FlowStep { id } | EventKind::FlowEnd { id } => {
                hex_id(w, id);
                w.extend_from_slice(b",\"bp\":\"e\"");
            }
            _ => {}
        }
        if view.arg_count > 0 && !self.args(w, ctx, view) {
            return false;
        }
        w.push(b'}');
        true
    }

    /// [`EventObjects::event`] for the usual event, built in blocks: its
    /// head and thread those of an event before (their pieces kept), every
    /// short piece a block, every argument named by index and an integer, a
    /// float or a string by index. `None` for any other, which
    /// [`EventObjects::event`] writes piece by piece.
    #[inline(always)]
    pub fn usual<'a>(
        &mut self,
        line: &mut Blocks<'_>,
        ctx: &Context<'_>,
        event: &impl Usual<'a>,
        tps: u64,
        first: bool,
    ) -> Option<()> {
        if let Some(header) = event.header_word() {
            return self.shaped(line, ctx, event, header, (tps, first));
        }
        let (end, id, opens_args) =
            end_id_opens(event.event_type(), event.trailing(), event.arg_count());
        // The phase as a byte from a table: one load, where the phase's
        // text is chosen by a jump on the kind.
        let ph = PHASE_LETTERS[usize::from(event.event_type()) & 15];
        let instant = ph == b'i';
        // Read once: every string of the object is looked up at it.
        let epoch = ctx.strings_epoch();
        let (category, name) = (event.category(), event.name());
        let names = Names::at(epoch, ph, category, name)?;
        let arg_count = event.arg_count();
        if first {
            line.text(b"\n")?;
        } else {
            line.text(b",\n")?;
        }
        let strings = &mut self.strings;
        line.piece(self.heads.get(names, |head| {
            write_head(head, strings, ctx, (category, name), &[ph])
        }))?;
        let clock = self.clock(tps);
        let begin = clock.ns(event.timestamp());
        let (fraction, fraction_len) = super::micros_fraction(begin);
        line.u64_near_then(begin / 1000, &mut self.ts_digits, fraction, fraction_len)?;
        // Its key made where it is looked up: made before the head, it was
        // kept on the stack across the head and the timestamp.
        let thread = *event.thread(ctx)?;
        let after_ts = OfThread::of(thread, instant, opens_args);
        line.piece(self.after_ts.get(after_ts, |piece| {
            after_ts_piece(piece, thread, instant, opens_args)
        }))?;
        dur_and_id(line, &clock, (begin, end), id, ph)?;
        if arg_count > 0 {
            if !opens_args {
                line.text(b",\"args\":{")?;
            }
            let mut read = 0;
            for (i, words) in event.arg_words().enumerate() {
                if i > 0 {
                    line.text(b",")?;
                }
                match words.int_parts() {
                    Some((name, value)) => {
                        line.piece(self.keys.indexed_at(epoch, ctx, name))?;
                        line.int_parts_near(value, &mut self.arg_digits)?;
                    }
                    None => self.string_or_float(line, epoch, ctx, words)?,
                }
                read += 1;
            }
            if read != usize::from(arg_count) {
                return None;
            }
            // The arguments' brace and the object's, as one block.
            return line.text(b"}}");
        }
        line.text(b"}")
    }

    /// [`EventObjects::usual`] of an event read by its head, whose header
    /// word is `header`: its fixed pieces those of its shape
    /// ([`crate::shapes`]), its values between them.
    #[inline(always)]
    fn shaped<'a>(
        &mut self,
        line: &mut Blocks<'_>,
        ctx: &Context<'_>,
        event: &impl Usual<'a>,
        header: u64,
        (tps, first): (u64, bool),
    ) -> Option<()> {
        let (end, id, opens_args) =
            end_id_opens(event.event_type(), event.trailing(), event.arg_count());
        let ph = PHASE_LETTERS[usize::from(event.event_type()) & 15];
        let epoch = ctx.strings_epoch();
        let threads = ctx.threads_epoch();
        let arg_count = event.arg_count();
        let (at, found) = self.shapes.find(header, epoch, threads);
        let shape = self.shapes.at(at);
        if !found {
            let strings = &mut self.strings;
            shape.make((header, epoch, threads), |head, after| {
                let (category, name) = (event.category(), event.name());
                Names::at(epoch, ph, category, name)?;
                let thread = *event.thread(ctx)?;
                write_head(head, strings, ctx, (category, name), &[ph]);
                after_ts_piece(after, thread, ph == b'i', opens_args);
                Some(())
            })?;
        }
        if first {
            line.text(b"\n")?;
        } else {
            line.text(b",\n")?;
        }
        line.piece(&shape.head)?;
        let clock = self.clock(tps);
        let begin = clock.ns(event.timestamp());
        let (fraction, fraction_len) = super::micros_fraction(begin);
        line.u64_near_then(begin / 1000, &mut self.ts_digits, fraction, fraction_len)?;
        line.piece(&self.shapes.at(at).after)?;
        dur_and_id(line, &clock, (begin, end), id, ph)?;
        if arg_count > 0 {
            let mut read = 0;
            for (i, words) in event.arg_words().enumerate() {
                match words.int_parts() {
                    Some((name, value)) => {
                        self.arg_name(line, ctx, (at, epoch), (i, name), opens_args)?;
                        line.int_parts_near(value, &mut self.arg_digits)?;
                    }
                    None => {
                        let (name, value) = words.str_or_f64()?;
                        self.arg_name(line, ctx, (at, epoch), (i, name), opens_args)?;
                        self.str_or_f64_value(line, epoch, ctx, value)?;
                    }
                }
                read += 1;
            }
            if read != usize::from(arg_count) {
                return None;
            }
            return line.text(b"}}");
        }
        line.text(b"}")
    }

    /// Appends argument `i`'s name, named by index `name`, with what comes
    /// before it (`,`, or `,"args":{` before the first where the piece
    /// after the timestamp does not open them): its shape's piece, or
    /// looked up past the names a shape keeps.
    #[inline(always)]
    fn arg_name(
        &mut self,
        line: &mut Blocks<'_>,
        ctx: &Context<'_>,
        (at, epoch): (usize, u64),
        (i, name): (usize, u16),
        opens_args: bool,
    ) -> Option<()> {
        if i < ARGS {
            let keys = &mut self.keys;
            line.piece(self.shapes.at(at).arg(i, name, |piece| {
                if i > 0 {
                    piece.push(b',');
                } else if !opens_args {
                    piece.extend_from_slice(b",\"args\":{");
                }
                piece.extend_from_slice(keys.indexed_at(epoch, ctx, name).bytes());
            }))
        } else {
            line.text(b",")?;
            line.piece(self.keys.indexed_at(epoch, ctx, name))
        }
    }

    /// Appends the value of a string (by index) or float argument.
    #[inline(always)]
    fn str_or_f64_value(
        &mut self,
        line: &mut Blocks<'_>,
        epoch: u64,
        ctx: &Context<'_>,
        value: StrOrF64,
    ) -> Option<()> {
        match value {
            StrOrF64::Str(value) => line.piece(self.strings.indexed_at(epoch, ctx, value)),
            StrOrF64::F64(x) => {
                if let Some(halves) = Halves::of(x) {
                    line.halves(halves)
                } else if x.is_finite() {
                    line.bytes(zmij::Buffer::new().format_finite(x).as_bytes())
                } else {
                    line.text(b"null")
                }
            }
        }
    }

    /// Appends `"key":value` of an argument named by index whose value is
    /// a string by index (not the empty one) or a float: the other
    /// arguments of the usual event. `None` for any other, or where the
    /// object does not fit.
    #[inline(always)]
    fn string_or_float(
        &mut self,
        line: &mut Blocks<'_>,
        epoch: u64,
        ctx: &Context<'_>,
        words: ArgWords<'_>,
    ) -> Option<()> {
        let (name, value) = words.str_or_f64()?;
        line.piece(self.keys.indexed_at(epoch, ctx, name))?;
        self.str_or_f64_value(line, epoch, ctx, value)
    }

    /// The clock of `tps` ticks per second (the last one's, or a new one).
    #[inline(always)]
    fn clock(&mut self, tps: u64) -> Clock {
        match self.clock {
            Some(clock) if clock.ticks_per_second() == tps => clock,
            _ => *self.clock.insert(Clock::new(tps)),
        }
    }

    /// Appends `,"args":{...}`; `false` if an argument does not read.
    #[inline]
    fn args(&mut self, w: &mut Vec<u8>, ctx: &Context<'_>, view: &EventView<'_>) -> bool {
        w.extend_from_slice(b",\"args\":{");
        let mut read = 0;
        for (i, arg) in view.args().enumerate() {
            read += 1;
            if i > 0 {
                w.push(b',');
            }
            self.strings.write(w, ctx, arg.name);
            w.push(b':');
            let _ = match arg.value {
                ArgValueView::Null => w.write_all(b"null"),
                ArgValueView::I32(x) => {
                    put_i64(w, x.into());
                    Ok(())
                }
                ArgValueView::U32(x) => {
                    put_u64(w, x.into());
                    Ok(())
                }
                ArgValueView::I64(x) => {
                    put_i64(w, x);
                    Ok(())
                }
                ArgValueView::U64(x) | ArgValueView::Koid(x) => {
                    put_u64(w, x);
                    Ok(())
                }
                ArgValueView::F64(x) => {
                    float(w, x);
                    Ok(())
                }
                ArgValueView::Str(s) => {
                    self.strings.write(w, ctx, s);
                    Ok(())
                }
                ArgValueView::Pointer(p) => write!(w, "\"{p:#x}\""),
                ArgValueView::Bool(b) => w.write_all(if b { b"true" } else { b"false" }),
                ArgValueView::Blob(b) => write!(w, "\"<blob of {} bytes>\"", b.len()),
                ArgValueView::Unknown { arg_type, .. } => {
                    write!(w, "\"<unknown argument type {arg_type}>\"")
                }
            };
        }
        w.push(b'}');
        // The walk ends early on an argument that does not read (not met:
        // the view was checked when it was made).
        read == usize::from(view.arg_count)
    }
}

/// Writes `{"ph":…,"cat":…,"name":…,"ts":` of `view`, whose phase is
/// `ph`.
fn write_head(
    w: &mut Vec<u8>,
    strings: &mut Formatted<Json>,
    ctx: &Context<'_>,
    (category, name): (StrRef<'_>, StrRef<'_>),
    ph: &[u8],
) {
    w.extend_from_slice(b"{\"ph\":\"");
    w.extend_from_slice(ph);
    w.extend_from_slice(b"\",\"cat\":");
    strings.write(w, ctx, category);
    w.extend_from_slice(b",\"name\":");
    strings.write(w, ctx, name);
    w.extend_from_slice(b",\"ts\":");
}

/// Writes what the usual event's object has between its timestamp and
/// its first argument: `,"pid":…,"tid":…` of `thread`, then `,"s":"t"` if
/// an `instant`, `,"args":{` if it `opens_args`.
fn after_ts_piece(w: &mut Vec<u8>, thread: Thread, instant: bool, opens_args: bool) {
    let _ = pid_tid(w, &thread);
    if instant {
        w.extend_from_slice(b",\"s\":\"t\"");
    }
    if opens_args {
        w.extend_from_slice(b",\"args\":{");
    }
}

/// The Chrome phase of each event type ([`EventKind::event_type`]), as
/// its one letter (0 past the last type).
const PHASE_LETTERS: [u8; 16] = {
    let mut letters = [0; 16];
    let mut t = 0;
    while t < EventKind::EACH_TYPE.len() {
        let kind = EventKind::EACH_TYPE[t];
        letters[kind.event_type() as usize] = phase(&kind)[0];
        t += 1;
    }
    letters
};

/// The Chrome phase of an event type.
const fn phase(kind: &EventKind) -> &'static [u8] {
    match kind {
        EventKind::Instant => b"i",
        EventKind::Counter { .. } => b"C",
        EventKind::DurationBegin => b"B",
        EventKind::DurationEnd => b"E",
        EventKind::DurationComplete { .. } => b"X",
        EventKind::AsyncBegin { .. } => b"b",
        EventKind::AsyncInstant { .. } => b"n",
        EventKind::AsyncEnd { .. } => b"e",
        EventKind::FlowBegin { .. } => b"s",
        EventKind::FlowStep { .. } => b"t",
        EventKind::FlowEnd { .. } => b"f",
    }
}

/// What follows the timestamp of a complete event (its `"dur"`, from
/// `begin` ns to its `end` in ticks) and of an event with an id (its
/// `"id"`, and a flow step's or end's binding point), for the usual
/// event's two paths.
#[inline(always)]
fn dur_and_id(
    line: &mut Blocks<'_>,
    clock: &Clock,
    (begin, end): (u64, Option<u64>),
    id: Option<u64>,
    ph: u8,
) -> Option<()> {
    if let Some(end) = end {
        line.text(b",\"dur\":")?;
        let dur = clock.ns(end).saturating_sub(begin);
        line.u64(dur / 1000)?;
        fraction_block(line, dur)?;
    }
    if let Some(id) = id {
        line.text(b",\"id\":\"")?;
        line.hex(id)?;
        line.text(b"\"")?;
        if ph == b't' || ph == b'f' {
            line.text(b",\"bp\":\"e\"")?;
        }
    }
    Some(())
}

/// The fraction of [`micros`] into a [`Blocks`] line.
#[inline(always)]
fn fraction_block(line: &mut Blocks<'_>, ns: u64) -> Option<()> {
    let (digits, len) = super::micros_fraction(ns);
    line.put(&digits, len)
}

/// Nanoseconds as microseconds (as `super::micros` writes them; the
/// fraction appended as a block of known size and cut back).
#[inline]
fn micros(w: &mut Vec<u8>, ns: u64) {
    put_u64(w, ns / 1000);
    let (digits, len) = super::micros_fraction(ns);
    let end = w.len() + len;
    w.extend_from_slice(&digits);
    w.truncate(end);
}

/// Appends `,"id":"0x…"`.
#[inline]
fn hex_id(w: &mut Vec<u8>, id: u64) {
    w.extend_from_slice(b",\"id\":\"");
    put_hex(w, id);
    w.push(b'"');
}

/// Appends a float as `serde_json` writes it (its own formatter, `zmij`,
/// without a serializer per value): `null` if not finite.
#[inline]
fn float(w: &mut Vec<u8>, x: f64) {
    if let Some(halves) = Halves::of(x) {
        halves.put(w);
    } else if x.is_finite() {
        w.extend_from_slice(zmij::Buffer::new().format_finite(x).as_bytes());
    } else {
        w.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_written_as_serde_json_writes_them() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            0.1,
            1e-7,
            1e16,
            1e300,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(f64::from_bits(x));
            values.push((x % 100_000) as f64 / 100.0);
        }
        let mut out = Vec::new();
        for v in values {
            out.clear();
            float(&mut out, v);
            assert_eq!(out, serde_json::to_vec(&v).unwrap(), "{:#x}", v.to_bits());
        }
    }
}
