//! The choices a [`Config`](super::Config) holds, each with its parser.

/// What a session does when its buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Record up to a limit; past it, drop new records and count them. The
    /// default. The buffer's chunks are written to the output file as they
    /// fill and reused ([`Config::drain`](super::Config::drain), on by default), so the trace
    /// holds the whole run up to its file limit ([`Config::file_limit`](super::Config::file_limit))
    /// while its memory stays within the buffer; kept in memory
    /// (`drain(false)`) or crash-safe, the limit is the buffer.
    #[default]
    Oneshot,
    /// Keep the newest data: overwrite the oldest chunks of the buffer
    /// (never one a thread is writing). Records in overwritten chunks count
    /// as dropped.
    Circular,
    /// A background thread writes filled chunks to the output file while
    /// the program runs, so the trace can be many times larger than the
    /// buffer. If the writer falls behind, records are dropped and counted;
    /// the program never blocks.
    Streaming,
}

impl Mode {
    /// Parses `oneshot`, `circular` or `streaming` (case-insensitive):
    /// [`fxt_control::parse_mode`], the grammar of every mode a user gives.
    pub fn parse(s: &str) -> Option<Mode> {
        fxt_control::parse_mode(s).ok().map(Mode::from)
    }
}

impl From<fxt_control::Mode> for Mode {
    fn from(m: fxt_control::Mode) -> Mode {
        match m {
            fxt_control::Mode::Oneshot => Mode::Oneshot,
            fxt_control::Mode::Circular => Mode::Circular,
            fxt_control::Mode::Streaming => Mode::Streaming,
        }
    }
}

/// When the buffer's pages are faulted in (see [`Config::prefault`](super::Config::prefault)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prefault {
    /// A background thread (lowest CPU priority, `SCHED_IDLE` on Linux)
    /// faults the buffer in ahead of the writers, in the order they lease
    /// chunks; writers never wait for it and fault pages themselves when
    /// they overtake it. `start` does not wait. The default.
    #[default]
    Background,
    /// Every page is faulted in before `start` returns (`start` then takes
    /// time in proportion to the buffer: `bench-table --sections
    /// lifecycle`).
    AtStart,
    /// Pages are faulted in by the writers, when an event first lands in
    /// them.
    Off,
}

impl From<bool> for Prefault {
    /// `true`: [`Prefault::AtStart`]; `false`: [`Prefault::Off`].
    fn from(on: bool) -> Prefault {
        if on {
            Prefault::AtStart
        } else {
            Prefault::Off
        }
    }
}

impl Prefault {
    /// Parses `background`, `start`/`1`/`on`, `off`/`0`.
    pub fn parse(s: &str) -> Option<Prefault> {
        match s.trim().to_ascii_lowercase().as_str() {
            "background" | "bg" | "" => Some(Prefault::Background),
            "start" | "at-start" | "1" | "true" | "yes" | "on" => Some(Prefault::AtStart),
            "off" | "0" | "false" | "no" => Some(Prefault::Off),
            _ => None,
        }
    }
}

/// Where timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockSource {
    /// The TSC on x86-64 when it is invariant, otherwise the monotonic clock.
    #[default]
    Auto,
    /// The monotonic clock (`std::time::Instant`), 1 tick = 1 ns.
    Monotonic,
}

/// How fxt's own threads (the streamer, the snapshot thread: every
/// thread a session starts but the prefaulter, which always runs at
/// `SCHED_IDLE`) are scheduled; see [`Config::helper_scheduling`](super::Config::helper_scheduling).
///
/// A Linux thread inherits its creator's policy, so without this a program
/// whose thread that starts the session is real time would get fxt's
/// background work at the same real-time priority, competing with its own
/// real-time threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HelperScheduling {
    /// At most normal priority: a real-time policy (`SCHED_FIFO`,
    /// `SCHED_RR`) becomes `SCHED_OTHER`, a negative nice value becomes 0;
    /// a lower priority inherited from the creator (a positive nice value,
    /// `SCHED_BATCH`, `SCHED_IDLE`) is kept. The default.
    #[default]
    Normal,
    /// Whatever the thread that starts them has (Linux's inheritance).
    Inherit,
    /// `SCHED_FIFO` at this priority (1–99; needs `CAP_SYS_NICE` or an
    /// `RLIMIT_RTPRIO` that allows it).
    Fifo(u8),
    /// `SCHED_RR` at this priority (1–99; the same privilege).
    RoundRobin(u8),
}

impl HelperScheduling {
    /// Parses `normal`, `inherit`, `fifo:N` or `rr:N` (N in 1..=99;
    /// case-insensitive).
    pub fn parse(s: &str) -> Option<HelperScheduling> {
        let s = s.trim().to_ascii_lowercase();
        let priority = |p: &str| p.trim().parse::<u8>().ok().filter(|p| (1..=99).contains(p));
        match s.split_once(':') {
            Some(("fifo", p)) => priority(p).map(HelperScheduling::Fifo),
            Some(("rr", p)) => priority(p).map(HelperScheduling::RoundRobin),
            Some(_) => None,
            None => match s.as_str() {
                "normal" | "other" | "" => Some(HelperScheduling::Normal),
                "inherit" => Some(HelperScheduling::Inherit),
                _ => None,
            },
        }
    }
}

impl std::fmt::Display for HelperScheduling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HelperScheduling::Normal => write!(f, "normal"),
            HelperScheduling::Inherit => write!(f, "inherit"),
            HelperScheduling::Fifo(p) => write!(f, "fifo:{p}"),
            HelperScheduling::RoundRobin(p) => write!(f, "rr:{p}"),
        }
    }
}
