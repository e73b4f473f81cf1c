//! `const fn` builders for record header words.
//!
//! A tracer that writes the same shape of record many times (say, an instant
//! event from one call site on one thread) can build its header once and
//! store it with each event. Fields are masked to their width; callers check
//! ranges beforehand.
//!
//! | bits | field (every record) |
//! |---|---|
//! | `[0 .. 3]` | record type |
//! | `[4 .. 15]` | record size in words, header included (large records: `[4 .. 35]`) |
//! | `[16 .. 63]` | record-specific |

/// Record type numbers (bits `[0 .. 3]` of every header).
pub mod record_type {
    /// Metadata record.
    pub const METADATA: u64 = 0;
    /// Initialization record.
    pub const INITIALIZATION: u64 = 1;
    /// String record.
    pub const STRING: u64 = 2;
    /// Thread record.
    pub const THREAD: u64 = 3;
    /// Event record.
    pub const EVENT: u64 = 4;
    /// Blob record.
    pub const BLOB: u64 = 5;
    /// Userspace object record.
    pub const USERSPACE_OBJECT: u64 = 6;
    /// Kernel object record.
    pub const KERNEL_OBJECT: u64 = 7;
    /// Scheduling record.
    pub const SCHEDULING: u64 = 8;
    /// Log record.
    pub const LOG: u64 = 9;
    /// Large record (32-bit size field).
    pub const LARGE: u64 = 15;
}

/// Event type numbers (bits `[16 .. 19]` of an event record header).
pub mod event_type {
    /// Instant event.
    pub const INSTANT: u64 = 0;
    /// Counter event.
    pub const COUNTER: u64 = 1;
    /// Duration begin event.
    pub const DURATION_BEGIN: u64 = 2;
    /// Duration end event.
    pub const DURATION_END: u64 = 3;
    /// Duration complete event.
    pub const DURATION_COMPLETE: u64 = 4;
    /// Async begin event.
    pub const ASYNC_BEGIN: u64 = 5;
    /// Async instant event.
    pub const ASYNC_INSTANT: u64 = 6;
    /// Async end event.
    pub const ASYNC_END: u64 = 7;
    /// Flow begin event.
    pub const FLOW_BEGIN: u64 = 8;
    /// Flow step event.
    pub const FLOW_STEP: u64 = 9;
    /// Flow end event.
    pub const FLOW_END: u64 = 10;
}

/// Metadata type numbers (bits `[16 .. 19]` of a metadata record header).
pub mod metadata_type {
    /// Provider info metadata.
    pub const PROVIDER_INFO: u64 = 1;
    /// Provider section metadata.
    pub const PROVIDER_SECTION: u64 = 2;
    /// Provider event metadata.
    pub const PROVIDER_EVENT: u64 = 3;
    /// Trace info metadata.
    pub const TRACE_INFO: u64 = 4;
}

/// Argument type numbers (bits `[0 .. 3]` of an argument header).
pub mod arg_type {
    /// Null argument.
    pub const NULL: u64 = 0;
    /// 32-bit signed integer.
    pub const I32: u64 = 1;
    /// 32-bit unsigned integer.
    pub const U32: u64 = 2;
    /// 64-bit signed integer.
    pub const I64: u64 = 3;
    /// 64-bit unsigned integer.
    pub const U64: u64 = 4;
    /// Double-precision float.
    pub const F64: u64 = 5;
    /// String.
    pub const STRING: u64 = 6;
    /// Pointer.
    pub const POINTER: u64 = 7;
    /// Kernel object id.
    pub const KOID: u64 = 8;
    /// Boolean.
    pub const BOOL: u64 = 9;
    /// Blob (newest revision, ADDENDUM §1).
    pub const BLOB: u64 = 10;

    /// Whether an argument of type `arg_type` carries its value in one
    /// word after its name (types 3, 4, 5, 7 and 8): the rest hold it in
    /// the header (0, 1, 2, 9), in a stream (6, 10), or are unknown.
    ///
    /// ```
    /// use fxt_format::encode::header::arg_type;
    /// assert!(arg_type::has_value_word(arg_type::F64));
    /// assert!(!arg_type::has_value_word(arg_type::U32));
    /// ```
    #[inline(always)]
    pub const fn has_value_word(arg_type: u64) -> bool {
        matches!(arg_type, I64 | U64 | F64 | POINTER | KOID)
    }
}

/// The magic number carried by the trace info record (`"FxT"` and a random byte).
pub const MAGIC: u64 = 0x1654_7846;

/// The whole magic number record as one word.
pub const MAGIC_RECORD: u64 = 0x0016_5478_4604_0010;

/// Bits `[0 .. 15]` of a normal record header: type and size in words.
#[inline(always)]
pub const fn record(record_type: u64, words: usize) -> u64 {
    (record_type & 0xf) | (((words as u64) & 0xfff) << 4)
}

/// The size of the record whose header is `header`, in words: bits
/// `[4 .. 15]`, or `[4 .. 35]` for a large record (type 15). The framing
/// every reader of records walks by, the decoder's and the runtime's.
///
/// ```
/// use fxt_format::encode::header::{large_record, record, record_words, record_type};
/// assert_eq!(record_words(record(record_type::EVENT, 5)), 5);
/// assert_eq!(record_words(large_record(70_000)), 70_000);
/// ```
#[inline(always)]
pub const fn record_words(header: u64) -> u64 {
    if header & 0xf == record_type::LARGE {
        (header >> 4) & 0xffff_ffff
    } else {
        (header >> 4) & 0xfff
    }
}

/// Bits `[0 .. 35]` of a large record header: type 15 and 32-bit size.
#[inline(always)]
pub const fn large_record(words: usize) -> u64 {
    record_type::LARGE | (((words as u64) & 0xffff_ffff) << 4)
}

/// An event record header.
///
/// ```
/// use fxt_format::encode::header::{event, event_type};
/// // instant, 0 args, thread 1, category 1, name 2, 2 words
/// assert_eq!(event(event_type::INSTANT, 2, 0, 1, 1, 2), 0x0002_0001_0100_0024);
/// ```
#[inline(always)]
pub const fn event(
    event_type: u64,
    words: usize,
    arg_count: usize,
    thread: u8,
    category: u16,
    name: u16,
) -> u64 {
    record(record_type::EVENT, words)
        | ((event_type & 0xf) << 16)
        | (((arg_count as u64) & 0xf) << 20)
        | ((thread as u64) << 24)
        | ((category as u64) << 32)
        | ((name as u64) << 48)
}

/// A blob record header: `words` in all, named by string ref `name`,
/// `payload_len` bytes (15 bits) of blob type `blob_type`.
///
/// ```
/// use fxt_format::encode::header::{blob, blob_name_and_type};
/// assert_eq!(blob_name_and_type(blob(3, 0x800b, 10, 1)), (0x800b, 1));
/// ```
#[inline(always)]
pub const fn blob(words: usize, name: u16, payload_len: usize, blob_type: u8) -> u64 {
    record(record_type::BLOB, words)
        | ((name as u64) << 16)
        | (((payload_len as u64) & 0x7fff) << 32)
        | ((blob_type as u64) << 48)
}

/// The name (string ref, bits `[16 .. 31]`) and the blob type (bits
/// `[48 .. 55]`) of a blob record header: what a writer that walks its own
/// records looks for without decoding them.
#[inline(always)]
pub const fn blob_name_and_type(header: u64) -> (u16, u8) {
    ((header >> 16) as u16, (header >> 48) as u8)
}

/// An argument header (bits `[0 .. 31]`; the caller adds `[32 .. 63]`).
#[inline(always)]
pub const fn arg(arg_type: u64, words: usize, name: u16) -> u64 {
    (arg_type & 0xf) | (((words as u64) & 0xfff) << 4) | ((name as u64) << 16)
}
