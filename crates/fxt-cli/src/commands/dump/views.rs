//! `fxt dump`'s event lines written straight from the record's bytes
//! ([`EventView`]): no [`fxt_format::decode::Event`], no argument vector,
//! each string index quoted once ([`Formatted`]). The line is the one the
//! decoded path prints for the event, byte for byte.

use std::io::Write as _;

use fxt_format::decode::{
    ArgValueView, ArgWords, Context, EventKind, EventView, IntArg, StrOrF64, StrRef, Thread,
};
use fxt_format::encode::header::event_type;
use fxt_format::encode::split_blob::{PARTS_KEY, SIZE_KEY};

use super::id_or_end;
use crate::formatted::{Form, Formatted};
use crate::heads::{Heads, Names, ThreadNames};
use crate::names::event_kind_name;
use crate::piece::{put_f64, put_i64, put_u64, Blocks, Halves, HighDigits, Piece};
use crate::shapes::{Shapes, ARGS};
use crate::usual::Usual;

/// The ` name=` of argument `i`, named by index `name`: its shape's
/// piece (`shape`, the slot of an event read by its head), or looked up
/// at epoch `epoch`.
#[inline(always)]
fn key<'k>(
    shapes: &'k mut Shapes,
    keys: &'k mut Formatted<Key>,
    (shape, i, name): (Option<usize>, usize, u16),
    (epoch, ctx): (u64, &Context<'_>),
) -> &'k Piece {
    match shape {
        Some(at) if i < ARGS => shapes.at(at).arg(i, name, |piece| {
            piece.extend_from_slice(keys.indexed_at(epoch, ctx, name).bytes())
        }),
        _ => keys.indexed_at(epoch, ctx, name),
    }
}

/// Category, name and string values: quoted and escaped as `{s:?}`.
pub struct Quoted;

impl Form for Quoted {
    fn text(out: &mut Vec<u8>, s: &str) {
        quoted(out, s);
    }

    fn undefined(out: &mut Vec<u8>, index: u16) {
        let _ = write!(out, "<undefined string #{index}>");
    }
}

/// Argument names: as they are, between the space before and the `=`
/// after (one piece per argument).
pub struct Key;

impl Form for Key {
    fn text(out: &mut Vec<u8>, s: &str) {
        out.push(b' ');
        out.extend_from_slice(s.as_bytes());
        out.push(b'=');
    }

    fn undefined(out: &mut Vec<u8>, index: u16) {
        out.push(b' ');
        Quoted::undefined(out, index);
        out.push(b'=');
    }
}

/// Appends `s` as `{s:?}` writes it, without the formatting machinery
/// when nothing needs escaping (printable ASCII but `"` and `\`).
pub fn quoted(out: &mut Vec<u8>, s: &str) {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        let _ = write!(out, "{s:?}");
    }
}

/// The strings of one range's event lines.
#[derive(Default)]
pub struct EventLines {
    quoted: Formatted<Quoted>,
    keys: Formatted<Key>,
    /// The leading digits of the last timestamp.
    ts_digits: HighDigits,
    /// The leading digits of the last end of a complete duration.
    end_digits: HighDigits,
    /// The leading digits of the last integer argument.
    arg_digits: HighDigits,
    /// The ` thread=… category=… name=…` of recent events whose strings
    /// are by index, by thread and strings.
    tails: Heads<ThreadNames>,
    /// The fixed pieces of recent events' lines, by shape: the usual event
    /// read by its head.
    shapes: Shapes,
}

/// Bytes of a [`KIND_HEADS`] block: more than the longest `kind ts=`.
const KIND_HEAD: usize = 32;

/// The `kind ts=` that begins the line of each event type
/// ([`EventKind::event_type`]; none past the last type) and its length,
/// made when compiled: a block of half a piece's size from a table
/// indexed by the type, with no length to test (a kept piece was looked
/// up by the kind's hash, then by its place, each a load of its length
/// and a copy of a whole piece).
static KIND_HEADS: [([u8; KIND_HEAD], usize); 16] = {
    let mut heads = [([0; KIND_HEAD], 0); 16];
    let mut t = 0;
    while t < EventKind::EACH_TYPE.len() {
        let kind = EventKind::EACH_TYPE[t];
        let name = event_kind_name(&kind).as_bytes();
        let head = &mut heads[kind.event_type() as usize];
        let mut i = 0;
        while i < name.len() {
            head.0[i] = name[i];
            i += 1;
        }
        let suffix = b" ts=";
        let mut j = 0;
        while j < suffix.len() {
            head.0[i + j] = suffix[j];
            j += 1;
        }
        head.1 = i + j;
        t += 1;
    }
    heads
};

/// The `kind ts=` of `kind` and its length.
#[inline(always)]
fn kind_head(kind: EventKind) -> &'static ([u8; KIND_HEAD], usize) {
    &KIND_HEADS[kind.event_type() as usize & 15]
}

/// What [`EventLines::event`] did.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// Wrote the event's line.
    Written,
    /// Wrote nothing: the event may start a split blob group (an instant
    /// whose arguments are `fxt.blob.size` and `fxt.blob.parts ≥ 1`, both
    /// uint64), for the joiner.
    GroupStart,
    /// Wrote nothing: an argument does not read.
    Unreadable,
}

impl EventLines {
    /// Appends the line of the event (without the newline), with the
    /// bytes of its blob arguments if `payloads`. Writes nothing (the line
    /// as it was) if an argument does not read, or if `join` and the event
    /// may start a split blob group: those take the decoded path.
    #[inline]
    pub fn event(
        &mut self,
        line: &mut Vec<u8>,
        ctx: &Context<'_>,
        view: &EventView<'_>,
        payloads: bool,
        join: bool,
    ) -> Line {
        let start = line.len();
        let (head, len) = kind_head(view.kind);
        line.extend_from_slice(&head[..*len]);
        put_u64(line, view.timestamp);
        if let Some((label, n)) = id_or_end(view.kind) {
            line.extend_from_slice(label.as_bytes());
            put_u64(line, n);
        }
        let quoted = &mut self.quoted;
        match Names::of(ctx, 0, view.category, view.name) {
            Some(names) => self
                .tails
                .get(ThreadNames::of(&view.thread, names), |piece| {
                    tail(piece, quoted, ctx, (&view.thread, view.category, view.name))
                })
                .put(line),
            None => tail(line, quoted, ctx, (&view.thread, view.category, view.name)),
        }
        let line_is = self.args(line, ctx, view, payloads, join);
        if line_is != Line::Written {
            line.truncate(start);
        }
        line_is
    }

    /// [`EventLines::event`] for the usual event, built in blocks with its
    /// newline: its kind and its strings those of the event before (their
    /// pieces kept), every short piece a block, every argument named by index
    /// and an integer, a float or a string by index. `None` for any
    /// other, which [`EventLines::event`] writes piece by piece; nothing
    /// is kept of a group's start.
    #[inline(always)]
    pub fn usual<'a>(
        &mut self,
        line: &mut Blocks<'_>,
        ctx: &Context<'_>,
        event: &impl Usual<'a>,
        join: bool,
    ) -> Option<Line> {
        // Read once: every string of the line is looked up at it.
        let epoch = ctx.strings_epoch();
        let (category, name) = (event.category(), event.name());
        // A head's shape: its tail and argument names kept together.
        let shape = match event.header_word() {
            Some(header) => Some(self.shape(ctx, event, header, epoch)?),
            None => None,
        };
        let event_type = event.event_type();
        let (head, len) = &KIND_HEADS[usize::from(event_type) & 15];
        line.put(head, *len)?;
        line.u64_near(event.timestamp(), &mut self.ts_digits)?;
        // Blocks of known sizes: each label its own copy.
        match u64::from(event_type) {
            event_type::INSTANT | event_type::DURATION_BEGIN | event_type::DURATION_END => {}
            event_type::DURATION_COMPLETE => {
                line.text(b" end=")?;
                line.u64_near(event.trailing(), &mut self.end_digits)?;
            }
            // A counter's, async or flow event's id.
            _ => {
                line.text(b" id=")?;
                line.u64(event.trailing())?;
            }
        }
        match shape {
            Some(at) => line.piece(&self.shapes.at(at).after)?,
            None => {
                let names = Names::at(epoch, 0, category, name)?;
                let quoted = &mut self.quoted;
                let thread = event.thread(ctx)?;
                let key = ThreadNames::of(thread, names);
                line.piece(self.tails.get(key, |piece| {
                    tail(piece, quoted, ctx, (thread, category, name))
                }))?;
            }
        }
        let arg_count = event.arg_count();
        let instant = u64::from(event_type) == event_type::INSTANT;
        let candidate = join && instant && arg_count == 2;
        let mut group = candidate;
        let mut read = 0;
        for (i, words) in event.arg_words().enumerate() {
            let uint64 = match words.int_parts() {
                Some((name, value)) => {
                    let key = key(
                        &mut self.shapes,
                        &mut self.keys,
                        (shape, i, name),
                        (epoch, ctx),
                    );
                    line.piece(key)?;
                    line.int_parts_near(value, &mut self.arg_digits)?;
                    let uint64 = value.uint64.then_some(value.magnitude);
                    if let (true, Some(n)) = (candidate, uint64) {
                        group &= match i {
                            0 => is_key(key.bytes(), SIZE_KEY),
                            _ => n >= 1 && is_key(key.bytes(), PARTS_KEY),
                        };
                    }
                    uint64
                }
                None => {
                    self.string_or_float(line, (shape, i), epoch, ctx, words)?;
                    None
                }
            };
            read += 1;
            // A candidate's arguments are both uint64, or it starts no
            // group.
            group &= uint64.is_some();
        }
        if read != usize::from(arg_count) {
            return None;
        }
        if group {
            line.clear();
            return Some(Line::GroupStart);
        }
        line.text(b"\n")?;
        Some(Line::Written)
    }

    /// The slot of the shape of an event read by its head, whose header
    /// word is `header` ([`crate::shapes`]): found, or made (`None` if the
    /// event is not the usual one).
    #[inline(always)]
    fn shape<'a>(
        &mut self,
        ctx: &Context<'_>,
        event: &impl Usual<'a>,
        header: u64,
        epoch: u64,
    ) -> Option<usize> {
        let threads = ctx.threads_epoch();
        let (at, found) = self.shapes.find(header, epoch, threads);
        if !found {
            let quoted = &mut self.quoted;
            self.shapes
                .at(at)
                .make((header, epoch, threads), |_, after| {
                    let (category, name) = (event.category(), event.name());
                    Names::at(epoch, 0, category, name)?;
                    let thread = event.thread(ctx)?;
                    tail(after, quoted, ctx, (thread, category, name));
                    Some(())
                })?;
        }
        Some(at)
    }

    /// Appends ` key=value` of an argument named by index whose value is
    /// a string by index (not the empty one) or a float: the other
    /// arguments of the usual event's line. `None` for any other, or
    /// where the line does not fit.
    #[inline(always)]
    fn string_or_float(
        &mut self,
        line: &mut Blocks<'_>,
        (shape, i): (Option<usize>, usize),
        epoch: u64,
        ctx: &Context<'_>,
        words: ArgWords<'_>,
    ) -> Option<()> {
        let (name, value) = words.str_or_f64()?;
        line.piece(key(
            &mut self.shapes,
            &mut self.keys,
            (shape, i, name),
            (epoch, ctx),
        ))?;
        match value {
            StrOrF64::Str(value) => line.piece(self.quoted.indexed_at(epoch, ctx, value)),
            // A whole or half number in place; the others in a call.
            StrOrF64::F64(x) => match Halves::of(x) {
                Some(halves) => line.halves(halves),
                None => line.f64(x),
            },
        }
    }

    /// Appends ` key=value` per argument; whether the event may start a
    /// split blob group is seen on the way (if `join`).
    #[inline]
    fn args(
        &mut self,
        line: &mut Vec<u8>,
        ctx: &Context<'_>,
        view: &EventView<'_>,
        payloads: bool,
        join: bool,
    ) -> Line {
        let candidate = join && view.kind == EventKind::Instant && view.arg_count == 2;
        let mut group = candidate;
        let mut read = 0;
        for (i, words) in view.arg_words().enumerate() {
            // The usual argument, an integer named by index, from its
            // words; any other as its view.
            let (key, value) = match words.int() {
                Some((name, value)) => {
                    let at = line.len();
                    self.keys.indexed(ctx, name).put(line);
                    let key = at..line.len();
                    (key, put_int(line, value))
                }
                None => {
                    // The walk ends early on an argument that does not
                    // read (not met: the view was checked when it was
                    // made).
                    let Some(arg) = words.view() else {
                        break;
                    };
                    let at = line.len();
                    // An undefined index prints as `<undefined string #N>`,
                    // never a key.
                    self.keys.write(line, ctx, arg.name);
                    let key = at..line.len();
                    self.value(line, ctx, arg.value, payloads);
                    let value = match arg.value {
                        ArgValueView::U64(x) => Some(x),
                        _ => None,
                    };
                    (key, value)
                }
            };
            read += 1;
            if candidate {
                let key = &line[key];
                group &= match (i, value) {
                    (0, Some(_)) => is_key(key, SIZE_KEY),
                    (1, Some(parts)) => parts >= 1 && is_key(key, PARTS_KEY),
                    _ => false,
                };
            }
        }
        if read != usize::from(view.arg_count) {
            Line::Unreadable
        } else if group {
            Line::GroupStart
        } else {
            Line::Written
        }
    }

    /// Appends an argument's value.
    #[inline]
    fn value(&mut self, out: &mut Vec<u8>, ctx: &Context<'_>, v: ArgValueView<'_>, payloads: bool) {
        match v {
            ArgValueView::Null => out.extend_from_slice(b"null"),
            ArgValueView::I32(x) => put_i64(out, x.into()),
            ArgValueView::U32(x) => put_u64(out, x.into()),
            ArgValueView::I64(x) => put_i64(out, x),
            ArgValueView::U64(x) => put_u64(out, x),
            ArgValueView::F64(x) => put_f64(out, x),
            ArgValueView::Str(s) => self.quoted.write(out, ctx, s),
            ArgValueView::Pointer(p) => {
                let _ = write!(out, "{p:#x}");
            }
            ArgValueView::Koid(k) => {
                out.extend_from_slice(b"koid(");
                put_u64(out, k);
                out.push(b')');
            }
            ArgValueView::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            ArgValueView::Blob(b) if payloads => {
                let _ = write!(out, "blob({} bytes: ", b.len());
                hex(out, b);
                out.push(b')');
            }
            ArgValueView::Blob(b) => {
                let _ = write!(out, "blob({} bytes)", b.len());
            }
            ArgValueView::Unknown { arg_type, .. } => {
                let _ = write!(out, "unknown(type {arg_type})");
            }
        }
    }
}

/// Appends ` thread=… category=… name=…` of `view`.
fn tail(
    out: &mut Vec<u8>,
    quoted: &mut Formatted<Quoted>,
    ctx: &Context<'_>,
    (of, category, name): (&Thread, StrRef<'_>, StrRef<'_>),
) {
    out.extend_from_slice(b" thread=");
    thread(out, of);
    out.extend_from_slice(b" category=");
    quoted.write(out, ctx, category);
    out.extend_from_slice(b" name=");
    quoted.write(out, ctx, name);
}

/// Appends an integer argument's value; the value if a uint64.
#[inline(always)]
fn put_int(out: &mut Vec<u8>, value: IntArg) -> Option<u64> {
    match value {
        IntArg::I32(x) => put_i64(out, x.into()),
        IntArg::U32(x) => put_u64(out, x.into()),
        IntArg::I64(x) => put_i64(out, x),
        IntArg::U64(x) => {
            put_u64(out, x);
            return Some(x);
        }
    }
    None
}

/// Whether printed key ` name=` is ` {key}=`.
#[inline]
fn is_key(printed: &[u8], key: &str) -> bool {
    printed.len() == key.len() + 2
        && printed
            .strip_prefix(b" ")
            .and_then(|k| k.strip_suffix(b"="))
            == Some(key.as_bytes())
}

/// Appends a thread field (`process/thread`).
#[inline]
fn thread(out: &mut Vec<u8>, t: &Thread) {
    match *t {
        Thread::Known { process, thread } => {
            put_u64(out, process);
            out.push(b'/');
            put_u64(out, thread);
        }
        Thread::Undefined(i) => {
            let _ = write!(out, "<undefined thread #{i}>");
        }
    }
}

/// Appends `bytes` in lowercase hex.
fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_heads_are_each_kinds_name_and_ts() {
        for kind in EventKind::EACH_TYPE {
            let (head, len) = kind_head(kind);
            let expected = format!("{} ts=", event_kind_name(&kind));
            assert_eq!(&head[..*len], expected.as_bytes());
            assert!(head[*len..].iter().all(|&b| b == 0));
        }
    }
}
