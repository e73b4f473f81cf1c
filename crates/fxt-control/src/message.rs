//! The messages a manager and a provider exchange (their bytes are in
//! `codec`).

use std::path::PathBuf;

/// What a manager asks a provider. One request per connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Who are you and what are you doing? Answered by [`Response::Status`].
    Status,
    /// Start a session into a spool. Answered by [`Response::Started`] or
    /// [`Response::Error`] (the process runs its own session, a window is
    /// already open, the spool cannot be written).
    Start(StartRequest),
    /// Finish the session that [`Request::Start`] started for `window`.
    /// Answered by [`Response::Stopped`] or [`Response::Error`].
    Stop {
        /// The manager's window id, as given to `Start`.
        window: u64,
    },
    /// Write a snapshot of the running session (the manager's or the
    /// process's own) to `path`; tracing goes on. Answered by
    /// [`Response::SnapshotWritten`] or [`Response::Error`].
    Snapshot {
        /// Where the snapshot goes (written under a temporary name, then
        /// renamed).
        path: PathBuf,
    },
}

/// The settings of [`Request::Start`]: a session as `fxt record` gives one
/// to each process it traces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StartRequest {
    /// The manager's id of the window.
    pub window: u64,
    /// The folder the provider writes `PID.fxt` into, crash-safe.
    pub spool: PathBuf,
    /// Comma-separated categories; `None` records every category.
    pub categories: Option<String>,
    /// `oneshot`, `circular` or `streaming`; `None` is the runtime's default.
    pub mode: Option<String>,
    /// The buffer size in bytes; `None` is the runtime's default.
    pub buffer: Option<u64>,
    /// CPU samples per second of each thread's CPU time; `None`: the
    /// provider's own setting (`FXT_SAMPLE_HZ`).
    pub sample_hz: Option<u32>,
}

/// What a provider answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// The answer to [`Request::Status`].
    Status(ProviderStatus),
    /// The session of [`Request::Start`] is recording.
    Started,
    /// The session is finished and its trace written.
    Stopped {
        /// Records in the trace.
        records_written: u64,
        /// Records emitted but not in the trace.
        records_dropped: u64,
        /// The trace file written.
        output: PathBuf,
    },
    /// The snapshot is written.
    SnapshotWritten {
        /// Its size in bytes.
        bytes: u64,
    },
    /// The request was refused or failed; the text says why.
    Error(String),
}

/// A provider's answer to [`Request::Status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderStatus {
    /// Its process id.
    pub pid: u32,
    /// The name it registered with.
    pub name: String,
    /// What it is doing.
    pub state: ProviderState,
    /// The categories its call sites have registered so far.
    pub categories: Vec<String>,
}

/// What a provider is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderState {
    /// Registered, no session: call sites are off, no buffer exists.
    Dormant,
    /// Recording a session a manager started for `window`.
    Tracing {
        /// The manager's window id.
        window: u64,
    },
    /// Running a session the program started itself (`fxt::start`): a
    /// manager cannot start one, but can take snapshots of it.
    OwnSession,
}
