//! The messages a manager and a provider exchange (their bytes are in
//! `codec`).

use std::path::PathBuf;

/// What a manager asks a provider. One request per connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Who are you and what are you doing? Answered by [`Response::Status`].
    Status,
    /// Start a session into the spool folder sent with the request (an
    /// open descriptor, see [`crate::call`]). Answered by
    /// [`Response::Started`] or [`Response::Error`] (the process runs its
    /// own session, a window is already open, no folder came, the spool
    /// cannot be written).
    Start(StartRequest),
    /// Finish the session that [`Request::Start`] started for `window`.
    /// Answered by [`Response::Stopped`] or [`Response::Error`].
    Stop {
        /// The manager's window id, as given to `Start`.
        window: u64,
    },
    /// Write a snapshot of the running session (the manager's or the
    /// process's own) as `PID.fxt` into the folder sent with the request
    /// (written under a temporary name, then renamed); tracing goes on.
    /// Answered by [`Response::SnapshotWritten`] or [`Response::Error`].
    Snapshot,
}

impl Request {
    /// Whether the request must come with a folder (an open descriptor):
    /// the provider writes only there, never through a name it is sent.
    pub fn needs_folder(&self) -> bool {
        matches!(self, Request::Start(_) | Request::Snapshot)
    }
}

/// A session's buffering mode, as a manager asks it (the engine's
/// `fxt::Mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Record until the buffer is full, then drop.
    Oneshot,
    /// Keep the most recent records.
    Circular,
    /// Write the buffer to the file as it fills.
    Streaming,
}

impl Mode {
    /// Every mode, in tag order.
    pub const ALL: [Mode; 3] = [Mode::Oneshot, Mode::Circular, Mode::Streaming];

    /// Its name on a command line and in the window's state.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Oneshot => "oneshot",
            Mode::Circular => "circular",
            Mode::Streaming => "streaming",
        }
    }

    /// The mode called `name` (see [`Mode::name`]).
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The settings of [`Request::Start`]: a session as `fxt record` gives one
/// to each process it traces.
///
/// A new setting is a new field here, its bytes appended in `codec`'s
/// `encode_request`/`decode_request` (and the crate docs' table), and a
/// new [`crate::PROTOCOL_VERSION`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StartRequest {
    /// The manager's id of the window.
    pub window: u64,
    /// Comma-separated categories; `None` records every category.
    pub categories: Option<String>,
    /// The buffering mode; `None` is the runtime's default.
    pub mode: Option<Mode>,
    /// The buffer size in bytes, at most [`crate::MAX_BUFFER`]; `None` is the
    /// runtime's default.
    pub buffer: Option<u64>,
    /// CPU samples per second of each thread's CPU time; `None`: the
    /// provider's own setting (`FXT_SAMPLE_HZ`).
    pub sample_hz: Option<u32>,
    /// Mean bytes between sampled allocations (a program whose global
    /// allocator is `fxt::alloc::Sampled`); `None`: the provider's own
    /// setting (`FXT_ALLOC_SAMPLE`).
    pub alloc_sample: Option<u64>,
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
        /// The trace file written: its name in the spool folder.
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
