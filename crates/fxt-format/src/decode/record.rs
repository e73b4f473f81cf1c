//! The decoded records: owned values with every string and thread reference
//! resolved against the tables of the provider that wrote them.
//!
//! A reference to a string or thread index that no earlier record of the
//! same provider defined is not an error: it decodes to
//! [`Text::Undefined`] / [`Thread::Undefined`] / [`Process::Undefined`]
//! carrying the index, so the record is still usable and a checker can
//! report exactly which reference was dangling.

use std::fmt;
use std::sync::Arc;

pub use crate::encode::{BlobType, EventKind, ThreadState};

/// A string field: its text, or the string-table index it referred to if
/// that index was never defined.
///
/// Table strings are shared (`Arc<str>`), so resolving an indexed reference
/// does not copy the string. Compare with a `&str` directly:
///
/// ```
/// use fxt_format::decode::Text;
/// assert_eq!(Text::from("rendering"), "rendering");
/// assert_ne!(Text::Undefined(7), "");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Text {
    /// The string (empty for the empty string ref).
    Known(Arc<str>),
    /// An indexed ref to an index the provider's string table did not hold.
    Undefined(u16),
}

impl Text {
    /// The text, or `None` for an undefined index.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Known(s) => Some(s),
            Self::Undefined(_) => None,
        }
    }

    /// Whether this is a reference to an undefined index.
    pub fn is_undefined(&self) -> bool {
        matches!(self, Self::Undefined(_))
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Known(s) => fmt::Debug::fmt(&**s, f),
            Self::Undefined(i) => write!(f, "Undefined({i:#x})"),
        }
    }
}

/// Shows the text, or `<undefined string #N>`.
impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Known(s) => f.write_str(s),
            Self::Undefined(i) => write!(f, "<undefined string #{i}>"),
        }
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::Known(Arc::from(s))
    }
}

impl From<Arc<str>> for Text {
    fn from(s: Arc<str>) -> Self {
        Self::Known(s)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

/// A thread field: the process and thread koids, or the thread-table index
/// it referred to if that index was never defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Thread {
    /// The thread's koids (inline, or from the thread table).
    Known {
        /// Process koid.
        process: u64,
        /// Thread koid.
        thread: u64,
    },
    /// An indexed ref to an index the provider's thread table did not hold.
    Undefined(u8),
}

/// A process field (userspace object records name a process with a thread
/// ref: inline it is one koid word, indexed it is the process of a thread
/// table entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Process {
    /// The process koid.
    Known(u64),
    /// An indexed ref to an index the provider's thread table did not hold.
    Undefined(u8),
}

/// A typed key/value pair attached to a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Arg {
    /// The argument's name.
    pub name: Text,
    /// The argument's value.
    pub value: ArgValue,
}

/// The value of an argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// Type 0: no value.
    Null,
    /// Type 1: 32-bit signed integer.
    I32(i32),
    /// Type 2: 32-bit unsigned integer.
    U32(u32),
    /// Type 3: 64-bit signed integer.
    I64(i64),
    /// Type 4: 64-bit unsigned integer.
    U64(u64),
    /// Type 5: double-precision float.
    F64(f64),
    /// Type 6: string.
    Str(Text),
    /// Type 7: pointer.
    Pointer(u64),
    /// Type 8: kernel object id.
    Koid(u64),
    /// Type 9: boolean.
    Bool(bool),
    /// Type 10: opaque bytes (padding removed).
    Blob(Vec<u8>),
    /// An argument type this decoder does not know (11..=15), skipped by
    /// its size; its name was still decoded.
    Unknown {
        /// The argument type field.
        arg_type: u8,
        /// The argument's header word.
        header: u64,
        /// The argument's size in words, header included.
        size_words: u16,
    },
}

/// An event record (record type 4).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The event type and its type-specific data.
    pub kind: EventKind,
    /// When, in ticks of the provider's clock.
    pub timestamp: u64,
    /// Where.
    pub thread: Thread,
    /// The category.
    pub category: Text,
    /// The event's name.
    pub name: Text,
    /// Up to 15 arguments, in record order.
    pub args: Vec<Arg>,
}

/// A blob record (record type 5): a chunk of a named blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The blob's name.
    pub name: Text,
    /// What the payload holds.
    pub blob_type: BlobType,
    /// The payload, padding removed.
    pub payload: Vec<u8>,
}

/// A userspace object record (record type 6).
#[derive(Debug, Clone, PartialEq)]
pub struct UserspaceObject {
    /// The object's pointer value.
    pub pointer: u64,
    /// The process the pointer belongs to.
    pub process: Process,
    /// The object's label.
    pub name: Text,
    /// Up to 15 arguments.
    pub args: Vec<Arg>,
}

/// A kernel object record (record type 7).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelObject {
    /// The object's koid.
    pub koid: u64,
    /// A `ZX_OBJ_TYPE_*` value (1 process, 2 thread, ...).
    pub object_type: u8,
    /// The object's label.
    pub name: Text,
    /// Up to 15 arguments (by convention `"process"` for threads).
    pub args: Vec<Arg>,
}

/// A context switch record (scheduling record type 1).
#[derive(Debug, Clone, PartialEq)]
pub struct ContextSwitch {
    /// When, in ticks.
    pub timestamp: u64,
    /// CPU number.
    pub cpu: u16,
    /// The outgoing thread's new state.
    pub outgoing_state: ThreadState,
    /// Outgoing thread koid.
    pub outgoing_thread: u64,
    /// Incoming thread koid.
    pub incoming_thread: u64,
    /// Up to 15 arguments (by convention `incoming_weight`, `outgoing_weight`).
    pub args: Vec<Arg>,
}

/// A thread wakeup record (scheduling record type 2).
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadWakeup {
    /// When, in ticks.
    pub timestamp: u64,
    /// CPU number.
    pub cpu: u16,
    /// The woken thread's koid.
    pub waking_thread: u64,
    /// Up to 15 arguments (by convention `weight`).
    pub args: Vec<Arg>,
}

/// A legacy context switch record (scheduling record type 0; the only
/// layout of record type 8 in older revisions of the specification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyContextSwitch {
    /// When, in ticks.
    pub timestamp: u64,
    /// CPU number.
    pub cpu: u8,
    /// The outgoing thread's new state.
    pub outgoing_state: ThreadState,
    /// The outgoing thread.
    pub outgoing_thread: Thread,
    /// The incoming thread.
    pub incoming_thread: Thread,
    /// The outgoing thread's priority.
    pub outgoing_priority: u8,
    /// The incoming thread's priority.
    pub incoming_priority: u8,
}

/// A log record (record type 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log {
    /// When, in ticks.
    pub timestamp: u64,
    /// The thread that logged.
    pub thread: Thread,
    /// The message.
    pub message: String,
}

/// A large blob record with metadata (record type 15, blob format 0).
#[derive(Debug, Clone, PartialEq)]
pub struct LargeBlobWithMetadata {
    /// The category.
    pub category: Text,
    /// The blob's name.
    pub name: Text,
    /// When, in ticks.
    pub timestamp: u64,
    /// Where.
    pub thread: Thread,
    /// Up to 15 arguments.
    pub args: Vec<Arg>,
    /// The payload, padding removed.
    pub payload: Vec<u8>,
}

/// A large blob record without metadata (record type 15, blob format 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeBlobNoMetadata {
    /// The category.
    pub category: Text,
    /// The blob's name.
    pub name: Text,
    /// The payload, padding removed.
    pub payload: Vec<u8>,
}

/// A record this decoder does not know, skipped by its size: an unknown
/// record type (10..=14), metadata type, trace info type, event type,
/// scheduling record type, large record type or large blob format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownRecord {
    /// Byte offset of the record in the input.
    pub offset: u64,
    /// The record type field (bits 0..=3).
    pub record_type: u8,
    /// The header word (its other fields tell which subtype was unknown).
    pub header: u64,
    /// The record's size in words, header included.
    pub size_words: u32,
}

/// One decoded record.
///
/// Table-building records (string, thread, initialization, provider
/// metadata) are yielded too, after the reader has applied them, so a
/// consumer sees the whole trace.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// Trace info metadata, magic number (`0x0016547846040010`).
    Magic,
    /// Provider info metadata: starts a provider's section with fresh tables.
    ProviderInfo {
        /// The provider's id.
        provider_id: u32,
        /// The provider's name.
        name: String,
    },
    /// Provider section metadata: the following records belong to this provider.
    ProviderSection {
        /// The provider's id.
        provider_id: u32,
    },
    /// Provider event metadata.
    ProviderEvent {
        /// The provider's id.
        provider_id: u32,
        /// The event id (0: a buffer filled up, records were likely dropped).
        event: u8,
    },
    /// Initialization record (record type 1).
    Initialization {
        /// Ticks per second of the provider's timestamps.
        ticks_per_second: u64,
    },
    /// String record (record type 2). Index 0 is reserved: such a record is
    /// yielded but does not change the table.
    String {
        /// The string index.
        index: u16,
        /// The string.
        value: Arc<str>,
    },
    /// Thread record (record type 3). Index 0 is reserved: such a record is
    /// yielded but does not change the table.
    Thread {
        /// The thread index.
        index: u8,
        /// Process koid.
        process: u64,
        /// Thread koid.
        thread: u64,
    },
    /// Event record (record type 4).
    Event(Event),
    /// Blob record (record type 5).
    Blob(Blob),
    /// Userspace object record (record type 6).
    UserspaceObject(UserspaceObject),
    /// Kernel object record (record type 7).
    KernelObject(KernelObject),
    /// Context switch record (record type 8, scheduling type 1).
    ContextSwitch(ContextSwitch),
    /// Thread wakeup record (record type 8, scheduling type 2).
    ThreadWakeup(ThreadWakeup),
    /// Legacy context switch record (record type 8, scheduling type 0).
    LegacyContextSwitch(LegacyContextSwitch),
    /// Log record (record type 9).
    Log(Log),
    /// Large blob record, format 0 (record type 15).
    LargeBlobWithMetadata(LargeBlobWithMetadata),
    /// Large blob record, format 1 (record type 15).
    LargeBlobNoMetadata(LargeBlobNoMetadata),
    /// A record (or subtype) this decoder does not know.
    Unknown(UnknownRecord),
}

impl Record {
    /// The record's timestamp in ticks, for records that have one.
    pub fn timestamp(&self) -> Option<u64> {
        match self {
            Self::Event(e) => Some(e.timestamp),
            Self::ContextSwitch(c) => Some(c.timestamp),
            Self::ThreadWakeup(w) => Some(w.timestamp),
            Self::LegacyContextSwitch(c) => Some(c.timestamp),
            Self::Log(l) => Some(l.timestamp),
            Self::LargeBlobWithMetadata(b) => Some(b.timestamp),
            _ => None,
        }
    }

    /// The record's arguments (empty for records without arguments).
    pub fn args(&self) -> &[Arg] {
        match self {
            Self::Event(e) => &e.args,
            Self::UserspaceObject(o) => &o.args,
            Self::KernelObject(o) => &o.args,
            Self::ContextSwitch(c) => &c.args,
            Self::ThreadWakeup(w) => &w.args,
            Self::LargeBlobWithMetadata(b) => &b.args,
            _ => &[],
        }
    }
}
