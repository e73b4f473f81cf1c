//! String and thread references used before (or without) their definition.
//!
//! Readers apply string and thread records in file order, as this crate's
//! decoder does: a reference to an index not yet defined by the provider
//! (Perfetto counts `fuchsia_invalid_string_ref`) shows as nothing useful,
//! even if a later record defines the index.

use std::collections::HashMap;
use std::fmt;

use crate::decode::{Arg, ArgValue, Process, Record, Text, Thread};

/// What kind of table a reference points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    /// The string table.
    String,
    /// The thread table.
    Thread,
}

/// A reference to an index that was not defined when it was used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndefinedRef {
    /// Byte offset of the record that uses it.
    pub offset: u64,
    /// String or thread.
    pub kind: RefKind,
    /// The index.
    pub index: u16,
    /// Byte offset of a later record of the same provider defining the
    /// index, if one does.
    pub defined_later_at: Option<u64>,
}

impl fmt::Display for UndefinedRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            RefKind::String => "string",
            RefKind::Thread => "thread",
        };
        write!(
            f,
            "offset {:#x}: reference to {kind} #{} before any definition",
            self.offset, self.index
        )?;
        match self.defined_later_at {
            Some(at) => write!(f, " (defined later, at offset {at:#x})"),
            None => write!(f, " (never defined)"),
        }
    }
}

/// Collects undefined references record by record, then matches them
/// with definitions found later in the file.
#[derive(Default)]
pub(crate) struct RefTracker {
    found: Vec<(Option<u32>, UndefinedRef)>,
    /// (provider, kind, index) → offsets of definitions, in file order.
    definitions: HashMap<(Option<u32>, RefKind, u16), Vec<u64>>,
}

impl RefTracker {
    /// Notes the references and definitions of `record` at `offset`.
    pub(crate) fn record(&mut self, provider: Option<u32>, offset: u64, record: &Record) {
        match record {
            Record::String { index, .. } => {
                self.define(provider, RefKind::String, *index, offset);
                return;
            }
            Record::Thread { index, .. } => {
                self.define(provider, RefKind::Thread, u16::from(*index), offset);
                return;
            }
            _ => {}
        }
        let mut undefined = Vec::new();
        undefined_refs(record, &mut |kind, index| undefined.push((kind, index)));
        for (kind, index) in undefined {
            self.found.push((
                provider,
                UndefinedRef {
                    offset,
                    kind,
                    index,
                    defined_later_at: None,
                },
            ));
        }
    }

    fn define(&mut self, provider: Option<u32>, kind: RefKind, index: u16, offset: u64) {
        if index != 0 {
            self.definitions
                .entry((provider, kind, index))
                .or_default()
                .push(offset);
        }
    }

    /// The undefined references, in file order, with later definitions.
    pub(crate) fn finish(self) -> Vec<UndefinedRef> {
        let definitions = self.definitions;
        self.found
            .into_iter()
            .map(|(provider, mut r)| {
                r.defined_later_at = definitions
                    .get(&(provider, r.kind, r.index))
                    .and_then(|offsets| offsets.iter().copied().find(|&at| at > r.offset));
                r
            })
            .collect()
    }
}

/// Calls `f` for every undefined string or thread reference in `record`.
pub fn undefined_refs(record: &Record, f: &mut impl FnMut(RefKind, u16)) {
    let text = |t: &Text, f: &mut dyn FnMut(RefKind, u16)| {
        if let Some(i) = t.undefined_index() {
            f(RefKind::String, i);
        }
    };
    let thread = |t: &Thread, f: &mut dyn FnMut(RefKind, u16)| {
        if let Thread::Undefined(i) = t {
            f(RefKind::Thread, u16::from(*i));
        }
    };
    let args = |args: &[Arg], f: &mut dyn FnMut(RefKind, u16)| {
        for a in args {
            if let Some(i) = a.name.undefined_index() {
                f(RefKind::String, i);
            }
            if let ArgValue::Str(v) = &a.value {
                if let Some(i) = v.undefined_index() {
                    f(RefKind::String, i);
                }
            }
        }
    };
    match record {
        Record::Event(e) => {
            thread(&e.thread, f);
            text(&e.category, f);
            text(&e.name, f);
            args(&e.args, f);
        }
        Record::Blob(b) => text(&b.name, f),
        Record::UserspaceObject(o) => {
            if let Process::Undefined(i) = o.process {
                f(RefKind::Thread, u16::from(i));
            }
            text(&o.name, f);
            args(&o.args, f);
        }
        Record::KernelObject(o) => {
            text(&o.name, f);
            args(&o.args, f);
        }
        Record::ContextSwitch(c) => args(&c.args, f),
        Record::ThreadWakeup(w) => args(&w.args, f),
        Record::LegacyContextSwitch(c) => {
            thread(&c.outgoing_thread, f);
            thread(&c.incoming_thread, f);
        }
        Record::Log(l) => thread(&l.thread, f),
        Record::LargeBlobWithMetadata(b) => {
            thread(&b.thread, f);
            text(&b.category, f);
            text(&b.name, f);
            args(&b.args, f);
        }
        Record::LargeBlobNoMetadata(b) => {
            text(&b.category, f);
            text(&b.name, f);
        }
        Record::Magic
        | Record::ProviderInfo { .. }
        | Record::ProviderSection { .. }
        | Record::ProviderEvent { .. }
        | Record::Initialization { .. }
        | Record::String { .. }
        | Record::Thread { .. }
        | Record::Unknown(_) => {}
    }
}
