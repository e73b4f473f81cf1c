//! The records readers derive from a trace's compact ones, and the marker
//! that says a trace carries them.
//!
//! The runtime writes each fact once, with what a drawing needs in its
//! arguments (a lock's wait names the thread whose release ended it, see
//! [`lock`]); the slices and arrows a viewer draws from those facts (the
//! holder's `held` slice, the flow from its release to the acquisition)
//! are computed by readers (`fxt_symbols::derived`) and appended to the
//! trace that is delivered to a viewer (`fxt open`, `fxt symbolize`,
//! archives). The appended records are preceded by one blob record (type
//! data) named [`MARKER_NAME`] with an empty payload, in the provider
//! section the records belong to: a section holding it is not derived
//! again ([`is_marker`]).

/// The name of the blob record that precedes derived records.
pub const MARKER_NAME: &str = "fxt.derived";

/// The compact record of a lock's contended acquisition (`fxt::sync`,
/// category [`lock::CATEGORY`]): a duration complete event named after
/// the lock, from the waiter's first try to its acquisition, on the
/// waiter's thread, with these arguments.
pub mod lock {
    /// The category of lock events.
    pub const CATEGORY: &str = "lock";
    /// `exclusive`, `shared` or `upgradable` (string).
    pub const MODE: &str = "mode";
    /// `wait`, `timed out`, or in derived records `held` (the holder's
    /// part of its hold someone waited through) and `handoff` (the
    /// waiter's part of its wait from the holder's release) (string).
    pub const STATE: &str = "state";
    /// The koid of the thread whose release ended the wait (u64; absent
    /// when the waiter's own release did, or none was seen).
    pub const HOLDER: &str = "holder";
    /// Nanoseconds from that release to the acquisition (u64): a
    /// duration, which a tool moving the trace's timestamps to another
    /// clock leaves right.
    pub const HANDOFF_NS: &str = "handoff_ns";
}

/// The compact record of a traced task's poll (`fxt::task`, category
/// [`task::CATEGORY`]): a duration complete event named after the task,
/// on the thread that polled it, with these arguments. Readers derive
/// from it the same span on the task's own track (an async slice of id
/// `task`, inside the task's life, which the runtime writes) and, for a
/// poll a recorded wake caused, the flow from the waking thread at the
/// wake to the poll.
pub mod task {
    /// The category of task events.
    pub const CATEGORY: &str = "task";
    /// The task's id: its async events' id (u64).
    pub const TASK: &str = "task";
    /// Nanoseconds from the wake that caused the poll to its start (u64;
    /// absent when no wake of the task's waker caused it).
    pub const DELAY: &str = "delay";
    /// The koid of the thread that made that wake (u64; absent when the
    /// wake was not recorded, as for the polls seen through Tokio's
    /// hooks). The arrow begins there, `delay` before the poll's start.
    pub const WAKER_THREAD: &str = "waker_thread";
    /// The id of the task whose poll made the wake (u64).
    pub const WOKEN_BY: &str = "woken_by";
    /// `true` when a Tokio runtime's I/O or timer driver made it (bool).
    pub const WOKEN_BY_DRIVER: &str = "woken_by_driver";
    /// `true` for a long poll (bool).
    pub const LONG: &str = "long";
}

/// The heap counter readers derive from a trace's `fxt.alloc` records
/// ([`crate::samples::alloc`]; the runtime writes no counter): per
/// process, after each sampled allocation and each free of a sampled
/// block, a counter event (id 0) on the recording thread at the record's
/// timestamp, category [`heap::CATEGORY`], name [`heap::NAME`], with one
/// argument [`heap::LIVE_BYTES`] (i64): the estimated bytes of the
/// process's sampled blocks live then (each allocation's
/// `estimated_bytes`, paired with its free by address as `fxt flame
/// --alloc --live` pairs them).
pub mod heap {
    /// The counter's category.
    pub const CATEGORY: &str = "fxt";
    /// The counter's name.
    pub const NAME: &str = "heap";
    /// Its one argument: estimated live bytes (i64).
    pub const LIVE_BYTES: &str = "live_bytes";
}

/// Whether a blob record named `name` of type data is the marker.
pub fn is_marker(name: &str, payload_len: usize) -> bool {
    name == MARKER_NAME && payload_len == 0
}
