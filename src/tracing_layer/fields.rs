//! Field values: the visitors that collect an event's fields (borrowed, for
//! the duration of the call) and a span's fields (owned, kept in the span's
//! extensions), by argument position.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use fxt_runtime::__macro_support::{ArgValue, StringRef};
use tracing_core::field::{Field, Visit};

use super::sites::LayerSite;

/// A field value of an event, with strings as ranges of a scratch buffer.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    Unset,
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(usize, usize),
}

/// What an event's `message` turned out to be.
#[derive(Clone, Copy)]
pub(super) enum Message {
    /// The call site has no message, or it was not visited.
    Absent,
    /// Exactly the text of the call site's [`Named`] message: nothing was
    /// copied.
    Same,
    /// Any other text, as a range of the scratch buffer.
    Text(usize, usize),
}

/// A `fmt::Write` that compares what is written with `expected` and copies
/// nothing while it matches; from the first difference on, it copies
/// (the matched prefix, then the rest) into `scratch`.
struct Compare<'a> {
    expected: &'static str,
    matched: usize,
    diverged: bool,
    scratch: &'a mut String,
}

impl std::fmt::Write for Compare<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if !self.diverged {
            let rest = &self.expected.as_bytes()[self.matched..];
            // Byte by byte: messages are short, and a `memcmp` call costs
            // more than the loop.
            if rest.len() >= s.len() && rest.iter().zip(s.as_bytes()).all(|(a, b)| a == b) {
                self.matched += s.len();
                return Ok(());
            }
            self.diverged = true;
            self.scratch.push_str(&self.expected[..self.matched]);
        }
        self.scratch.push_str(s);
        Ok(())
    }
}

/// Collects an event's fields by argument position (`N`: slots, at least
/// the call site's argument count).
pub(super) struct EventVisitor<'a, const N: usize> {
    pub(super) site: &'static LayerSite,
    pub(super) slots: [Slot; N],
    pub(super) scratch: &'a mut String,
    pub(super) message: Message,
}

impl<const N: usize> EventVisitor<'_, N> {
    #[inline]
    fn set(&mut self, field: &Field, slot: Slot) {
        if let Some(p) = self.site.position(field) {
            self.slots[p] = slot;
        }
    }

    /// Formats the message: compared with the call site's constant message
    /// while it has one, copied into the scratch buffer otherwise.
    fn message(&mut self, value: &dyn std::fmt::Debug) {
        let start = self.scratch.len();
        if !self.site.varying.load(Ordering::Relaxed) {
            if let Some(named) = self.site.named.get() {
                let mut compare = Compare {
                    expected: named.message,
                    matched: 0,
                    diverged: false,
                    scratch: self.scratch,
                };
                let _ = write!(compare, "{value:?}");
                if !compare.diverged && compare.matched == named.message.len() {
                    self.message = Message::Same;
                    return;
                }
                if !compare.diverged {
                    // A strict prefix of the constant.
                    let prefix = &named.message[..compare.matched];
                    self.scratch.push_str(prefix);
                }
                self.message = Message::Text(start, self.scratch.len());
                return;
            }
        }
        let _ = write!(self.scratch, "{value:?}");
        self.message = Message::Text(start, self.scratch.len());
    }

    fn text(&mut self, field: &Field, write: impl FnOnce(&mut String)) {
        if self.site.position(field).is_none() {
            return;
        }
        let start = self.scratch.len();
        write(self.scratch);
        self.set(field, Slot::Str(start, self.scratch.len()));
    }
}

impl<const N: usize> Visit for EventVisitor<'_, N> {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, Slot::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, Slot::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, Slot::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, Slot::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if Some(field.index()) == self.site.message {
            let start = self.scratch.len();
            self.scratch.push_str(value);
            self.message = Message::Text(start, self.scratch.len());
            return;
        }
        self.text(field, |s| s.push_str(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if Some(field.index()) == self.site.message {
            return self.message(value);
        }
        self.text(field, |s| {
            let _ = write!(s, "{value:?}");
        });
    }
}

/// The argument value of a slot (strings from `scratch`).
#[inline]
pub(super) fn arg_value(slot: Slot, scratch: &str) -> ArgValue<'_> {
    match slot {
        Slot::Unset => ArgValue::Null,
        Slot::I64(v) => ArgValue::I64(v),
        Slot::U64(v) => ArgValue::U64(v),
        Slot::F64(v) => ArgValue::F64(v),
        Slot::Bool(v) => ArgValue::Bool(v),
        Slot::Str(a, b) => ArgValue::Str(StringRef::Inline(&scratch[a..b])),
    }
}

/// A span's field value, owned (it outlives the `new_span`/`record` call).
#[derive(Clone)]
pub(super) enum Owned {
    Unset,
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(String),
}

/// What a span keeps in its extensions.
pub(super) struct SpanData {
    pub(super) site: &'static LayerSite,
    pub(super) values: Vec<Owned>,
}

impl SpanData {
    fn set(&mut self, field: &Field, value: Owned) {
        if let Some(p) = self.site.position(field) {
            if self.values.len() <= p {
                self.values.resize(p + 1, Owned::Unset);
            }
            self.values[p] = value;
        }
    }
}

impl Visit for SpanData {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, Owned::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, Owned::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, Owned::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, Owned::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.site.position(field).is_some() {
            self.set(field, Owned::Str(value.to_owned()));
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if self.site.position(field).is_some() {
            self.set(field, Owned::Str(format!("{value:?}")));
        }
    }
}
