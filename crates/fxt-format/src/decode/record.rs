//! The decoded records: owned values with every string and thread reference
//! resolved against the tables of the provider that wrote them.
//!
//! A reference to a string or thread index that no earlier record of the
//! same provider defined is not an error: it decodes to an undefined
//! [`Text`] (see [`Text::undefined_index`]), [`Thread::Undefined`] or
//! [`Process::Undefined`] carrying the index, so the record is still usable
//! and a checker can report exactly which reference was dangling.

use std::fmt;
use std::sync::Arc;

pub use crate::encode::{BlobType, EventKind, ThreadState};

/// A string field: its text, or the string-table index it referred to if
/// that index was never defined.
///
/// Resolving an indexed reference neither allocates nor touches a reference
/// count for strings of up to 22 bytes (stored inline); longer table
/// strings are shared (`Arc<str>`). Compare with a `&str` directly:
///
/// ```
/// use fxt_format::decode::Text;
/// assert_eq!(Text::from("rendering"), "rendering");
/// assert_eq!(Text::undefined(7).undefined_index(), Some(7));
/// assert_ne!(Text::undefined(7), "");
/// ```
#[derive(Clone)]
pub struct Text(Repr);

/// Longest string kept inline in a [`Text`].
const SMALL: usize = 22;

#[derive(Clone)]
enum Repr {
    Small { len: u8, bytes: [u8; SMALL] },
    Shared(Arc<str>),
    Undefined(u16),
}

impl Text {
    /// The text `s`.
    pub fn new(s: &str) -> Self {
        if s.len() <= SMALL {
            let mut bytes = [0; SMALL];
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            Self(Repr::Small {
                len: s.len() as u8,
                bytes,
            })
        } else {
            Self(Repr::Shared(Arc::from(s)))
        }
    }

    /// A reference to string-table index `index`, which was never defined.
    pub fn undefined(index: u16) -> Self {
        Self(Repr::Undefined(index))
    }

    /// The text, or `None` for an undefined index.
    pub fn as_str(&self) -> Option<&str> {
        match &self.0 {
            Repr::Small { len, bytes } => Some(small_str(bytes, *len)),
            Repr::Shared(s) => Some(s),
            Repr::Undefined(_) => None,
        }
    }

    /// The index of an undefined string-table reference.
    pub fn undefined_index(&self) -> Option<u16> {
        match self.0 {
            Repr::Undefined(i) => Some(i),
            _ => None,
        }
    }

    /// Whether this is a reference to an undefined index.
    pub fn is_undefined(&self) -> bool {
        matches!(self.0, Repr::Undefined(_))
    }

    fn key(&self) -> (Option<&str>, Option<u16>) {
        (self.as_str(), self.undefined_index())
    }
}

/// The text of a [`Repr::Small`]: the first `len` bytes of `bytes`.
///
/// Read for every hash and comparison of a name, so the UTF-8 is not
/// checked again: [`Text::new`], the only place that builds a
/// `Repr::Small`, copies the `len <= SMALL` bytes of a `&str`.
#[allow(unsafe_code)]
#[inline]
fn small_str(bytes: &[u8; SMALL], len: u8) -> &str {
    let Some(bytes) = bytes.get(..usize::from(len)) else {
        return ""; // Never: `Text::new` keeps `len <= SMALL`.
    };
    // SAFETY: `Text::new` wrote the whole `&str` at the front of `bytes`
    // and its length in `len`, and nothing else writes either field, so
    // these bytes are that `&str`'s: valid UTF-8.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

// Equality and hashing look at the representation, which is canonical: a
// string of up to `SMALL` bytes is always `Small` (`Text::new`,
// `From<Arc<str>>`), with the bytes past `len` zero, so two `Small`s are
// equal exactly when their arrays are, compared and hashed as three words
// (names are hashed and compared for every event a reader tallies).
impl PartialEq for Text {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Small { len: a, bytes: x }, Repr::Small { len: b, bytes: y }) => {
                a == b && x == y
            }
            (Repr::Shared(x), Repr::Shared(y)) => x == y,
            (Repr::Undefined(i), Repr::Undefined(j)) => i == j,
            _ => false,
        }
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match &self.0 {
            Repr::Small { len, bytes } => {
                let mut words = [0u8; 24];
                words[0] = *len;
                words[2..].copy_from_slice(bytes);
                for word in words.chunks_exact(8) {
                    state.write_u64(u64::from_le_bytes(word.try_into().unwrap_or_default()));
                }
            }
            Repr::Shared(s) => {
                state.write_u8(1);
                s.hash(state);
            }
            Repr::Undefined(i) => {
                state.write_u8(2);
                state.write_u16(*i);
            }
        }
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.as_str(), self.undefined_index()) {
            (Some(s), _) => fmt::Debug::fmt(s, f),
            (None, i) => write!(f, "Undefined({:#x})", i.unwrap_or(0)),
        }
    }
}

/// Shows the text, or `<undefined string #N>`.
impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.as_str(), self.undefined_index()) {
            (Some(s), _) => f.write_str(s),
            (None, i) => write!(f, "<undefined string #{}>", i.unwrap_or(0)),
        }
    }
}

impl Default for Text {
    /// The empty string.
    fn default() -> Self {
        Self::new("")
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<Arc<str>> for Text {
    /// Shares `s` if it is too long to keep inline.
    fn from(s: Arc<str>) -> Self {
        if s.len() <= SMALL {
            Self::new(&s)
        } else {
            Self(Repr::Shared(s))
        }
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

/// The value of an argument ([`crate::value::Value`]): strings resolved,
/// bytes copied; of an argument of an unknown type, its header and size.
pub type ArgValue = crate::value::Value<Text, Vec<u8>, SkippedArg>;

/// What is kept of an argument of a type this decoder does not know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkippedArg {
    /// The argument's header word.
    pub header: u64,
    /// The argument's size in words, header included.
    pub size_words: u16,
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

impl KernelObject {
    /// The koid of the process a thread object belongs to: its `"process"`
    /// argument (a koid, or a uint64 from lenient writers), if present.
    ///
    /// ```
    /// use fxt_format::decode::{Arg, ArgValue, KernelObject, Text};
    /// let thread = KernelObject {
    ///     koid: 12,
    ///     object_type: 2,
    ///     name: Text::from("worker"),
    ///     args: vec![Arg { name: Text::from("process"), value: ArgValue::Koid(7) }],
    /// };
    /// assert_eq!(thread.process_koid(), Some(7));
    /// ```
    pub fn process_koid(&self) -> Option<u64> {
        self.args
            .iter()
            .find(|a| a.name == "process")
            .and_then(|a| match a.value {
                ArgValue::Koid(k) | ArgValue::U64(k) => Some(k),
                _ => None,
            })
    }
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

#[cfg(test)]
mod text_tests {
    use super::*;
    use std::hash::{BuildHasher, RandomState};

    #[test]
    fn equality_and_hash_follow_the_string() {
        let hasher = RandomState::new();
        let strings: Vec<String> = (0..40)
            .flat_map(|n| ["x".repeat(n), format!("{}y", "x".repeat(n))])
            .chain(["é".into(), "e".into()])
            .collect();
        for a in &strings {
            for b in &strings {
                // Built from a `&str` and from a shared string alike.
                let (x, y) = (Text::new(a), Text::from(Arc::<str>::from(b.as_str())));
                assert_eq!(x == y, a == b, "{a:?} {b:?}");
                assert_eq!(x.cmp(&y), a.cmp(b), "{a:?} {b:?}");
                if a == b {
                    assert_eq!(hasher.hash_one(&x), hasher.hash_one(&y));
                }
            }
        }
        assert_ne!(Text::undefined(1), Text::new(""));
        assert_eq!(Text::undefined(1), Text::undefined(1));
        assert_ne!(Text::undefined(1), Text::undefined(2));
    }
}
