//! `fxt json`'s events written straight from the record's bytes
//! ([`EventView`]): no [`fxt_format::decode::Event`], no argument vector,
//! each string index escaped once ([`Formatted`]). The object is the one
//! the decoded path writes for the event, byte for byte.

use std::io::Write as _;

use fxt_format::decode::{ArgValueView, Context, EventKind, EventView, Record, StrRef, Thread};

use super::{int, pid_tid, string};
use crate::formatted::{Form, Formatted};
use crate::input::ticks_to_ns;
use crate::piece::{put_u64, Piece};

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

/// The strings of one range's events.
#[derive(Default)]
pub struct EventObjects {
    strings: Formatted<Json>,
    /// The last `{"ph":…,"cat":…,"name":…,"ts":` written, for events whose
    /// strings are by index: its phase and indices, and its bytes.
    head_of: Option<(u8, u16, u16)>,
    head: Piece,
    /// The last `,"pid":…,"tid":…` written: its thread, and its bytes.
    ids_of: Option<Thread>,
    ids: Piece,
}

/// The index of a string field that is not inline (0 for the empty
/// string).
fn index(s: StrRef<'_>) -> Option<u16> {
    match s {
        StrRef::Empty => Some(0),
        StrRef::Indexed(i) => Some(i),
        StrRef::Inline(_) => None,
    }
}

impl EventObjects {
    /// Notes a record that changes what string indices mean.
    pub fn see(&mut self, record: &Record) {
        if matches!(
            record,
            Record::String { .. } | Record::ProviderInfo { .. } | Record::ProviderSection { .. }
        ) {
            self.head_of = None;
        }
        self.strings.see(record);
    }

    /// Appends `{"ph":…,"cat":…,"name":…,"ts":`.
    #[inline]
    fn head(&mut self, w: &mut Vec<u8>, ctx: &Context<'_>, view: &EventView<'_>) {
        let phase = phase(&view.kind);
        match (index(view.category), index(view.name)) {
            (Some(category), Some(name)) => {
                let key = Some((phase[0], category, name));
                if self.head_of == key {
                    self.head.put(w);
                } else {
                    let at = w.len();
                    self.write_head(w, ctx, view, phase);
                    self.head.set(&w[at..]);
                    self.head_of = key;
                }
            }
            _ => self.write_head(w, ctx, view, phase),
        }
    }

    /// Writes [`EventObjects::head`]'s bytes.
    fn write_head(&mut self, w: &mut Vec<u8>, ctx: &Context<'_>, view: &EventView<'_>, ph: &[u8]) {
        w.extend_from_slice(b"{\"ph\":\"");
        w.extend_from_slice(ph);
        w.extend_from_slice(b"\",\"cat\":");
        self.strings.write(w, ctx, view.category);
        w.extend_from_slice(b",\"name\":");
        self.strings.write(w, ctx, view.name);
        w.extend_from_slice(b",\"ts\":");
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

    /// Appends the Chrome event of the event (`tps`: the provider's ticks
    /// per second); `false` (and `w` as it was) if an argument does not
    /// read, for the decoded path.
    #[inline]
    pub fn event(
        &mut self,
        w: &mut Vec<u8>,
        ctx: &Context<'_>,
        view: &EventView<'_>,
        tps: u64,
    ) -> bool {
        let start = w.len();
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
            EventKind::Counter { id } if id != 0 => {
                let _ = write!(w, ",\"id\":\"{id:#x}\"");
            }
            EventKind::AsyncBegin { id }
            | EventKind::AsyncInstant { id }
            | EventKind::AsyncEnd { id }
            | EventKind::FlowBegin { id } => {
                let _ = write!(w, ",\"id\":\"{id:#x}\"");
            }
            EventKind::FlowStep { id } | EventKind::FlowEnd { id } => {
                let _ = write!(w, ",\"id\":\"{id:#x}\",\"bp\":\"e\"");
            }
            _ => {}
        }
        if view.arg_count > 0 && !self.args(w, ctx, view) {
            w.truncate(start);
            return false;
        }
        w.push(b'}');
        true
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
                ArgValueView::I32(x) => int(w, x),
                ArgValueView::U32(x) => int(w, x),
                ArgValueView::I64(x) => int(w, x),
                ArgValueView::U64(x) | ArgValueView::Koid(x) => {
                    put_u64(w, x);
                    Ok(())
                }
                ArgValueView::F64(x) => serde_json::to_writer(&mut *w, &x).map_err(Into::into),
                ArgValueView::Str(s) => {
                    self.strings.write(w, ctx, s);
                    Ok(())
                }
                ArgValueView::Pointer(p) => write!(w, "\"{p:#x}\""),
                ArgValueView::Bool(b) => write!(w, "{b}"),
                ArgValueView::Blob(b) => write!(w, "\"<blob of {} bytes>\"", b.len()),
                ArgValueView::Unknown { arg_type } => {
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

/// The Chrome phase of an event type.
fn phase(kind: &EventKind) -> &'static [u8] {
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
