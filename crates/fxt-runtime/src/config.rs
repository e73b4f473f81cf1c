//! Session configuration: [`Config`], [`Mode`], [`ClockSource`], and the
//! one parser of the `FXT_*` environment variables ([`Config::from_env`],
//! and the variables `fxt record` passes on).

use std::path::PathBuf;

use fxt_control::recording::env;

/// What a session does when its buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Record up to a limit; past it, drop new records and count them. The
    /// default. The buffer's chunks are written to the output file as they
    /// fill and reused ([`Config::drain`], on by default), so the trace
    /// holds the whole run up to its file limit ([`Config::file_limit`])
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

/// When the buffer's pages are faulted in (see [`Config::prefault`]).
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
/// `SCHED_IDLE`) are scheduled; see [`Config::helper_scheduling`].
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

/// Default file limit of a drained oneshot session: 16 GiB (bounded by
/// half the free space of the output's file system, see
/// [`Config::file_limit`]).
pub const DEFAULT_FILE_LIMIT: u64 = 16 << 30;

/// Default buffer size: 64 MiB (pages are only touched when written).
pub const DEFAULT_BUFFER_SIZE: usize = 64 << 20;
/// Smallest buffer a session accepts: 256 KiB ([`fxt_control::MIN_BUFFER`],
/// the limit of the recording contract).
pub const MIN_BUFFER_SIZE: usize = fxt_control::MIN_BUFFER as usize;
/// Default chunk size: 64 KiB.
pub const DEFAULT_CHUNK_SIZE: usize = 64 << 10;
/// Smallest chunk size: 32 KiB, the largest normal record.
pub const MIN_CHUNK_SIZE: usize = 32 << 10;
/// Default output file.
pub const DEFAULT_OUTPUT: &str = "trace.fxt";

/// One environment variable [`Config::from_env`] parses: its name, what a
/// good value looks like (for the warning about a bad one), and how it
/// sets a config (`false`: the value does not parse).
pub(crate) struct EnvVar {
    name: &'static str,
    expected: &'static str,
    apply: fn(&mut Config, &str) -> bool,
}

/// The variables `fxt record` passes on over a program's own config.
const RECORDING_ENV_VARS: [&str; 5] = [
    env::BUFFER,
    env::MODE,
    env::CATEGORIES,
    env::SAMPLE_HZ,
    env::ALLOC_SAMPLE,
];

/// The categories of a comma-separated list (blanks trimmed, empty items
/// skipped), as `FXT_CATEGORIES` and a trace manager give them.
pub(crate) fn category_list(v: &str) -> Vec<&str> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every variable [`Config::from_env`] parses (`FXT_OUTPUT`, any path, is
/// read beside them).
const ENV_VARS: [EnvVar; 13] = [
    EnvVar {
        name: env::BUFFER,
        expected: "bytes with an optional K/M/G suffix, 256K to 16G",
        apply: |c, v| {
            fxt_control::parse_buffer(v)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .map(|n| c.buffer_size = n)
                .is_some()
        },
    },
    EnvVar {
        name: env::MODE,
        expected: "oneshot, circular or streaming",
        apply: |c, v| Mode::parse(v).map(|m| c.mode = m).is_some(),
    },
    EnvVar {
        name: env::CATEGORIES,
        expected: "a comma-separated list",
        apply: |c, v| {
            c.set_categories(&category_list(v));
            true
        },
    },
    EnvVar {
        name: "FXT_CLOCK",
        expected: "auto or monotonic",
        apply: |c, v| {
            c.clock = match v.trim().to_ascii_lowercase().as_str() {
                "monotonic" | "mono" | "ns" => ClockSource::Monotonic,
                "auto" | "tsc" | "" => ClockSource::Auto,
                _ => return false,
            };
            true
        },
    },
    EnvVar {
        name: "FXT_PREFAULT",
        expected: "background, start (1) or off (0)",
        apply: |c, v| Prefault::parse(v).map(|p| c.prefault = p).is_some(),
    },
    EnvVar {
        name: "FXT_SNAPSHOT_SIGNAL",
        expected: "USR1, USR2, HUP, QUIT or a number",
        apply: |c, v| {
            parse_signal(v)
                .map(|s| c.snapshot_signal = Some(s))
                .is_some()
        },
    },
    EnvVar {
        name: "FXT_CRASH_SAFE",
        expected: "0 or 1",
        apply: |c, v| parse_flag(v).map(|on| c.crash_safe = on).is_some(),
    },
    EnvVar {
        name: "FXT_LARGE_RECORDS",
        expected: "0 or 1",
        apply: |c, v| parse_flag(v).map(|on| c.large_records = on).is_some(),
    },
    EnvVar {
        name: "FXT_DRAIN",
        expected: "0 or 1",
        apply: |c, v| parse_flag(v).map(|on| c.drain = on).is_some(),
    },
    EnvVar {
        name: "FXT_FILE_LIMIT",
        expected: "bytes with an optional K/M/G suffix",
        apply: |c, v| {
            parse_size(v)
                .map(|n| c.file_limit = Some(n as u64))
                .is_some()
        },
    },
    EnvVar {
        name: "FXT_HELPER_SCHED",
        expected: "normal, inherit, fifo:N or rr:N (N in 1..=99)",
        apply: |c, v| {
            HelperScheduling::parse(v)
                .map(|h| c.helper_scheduling = h)
                .is_some()
        },
    },
    EnvVar {
        name: env::SAMPLE_HZ,
        expected: "a rate in Hz, 0 (off) to 10000",
        apply: |c, v| parse_sample_hz(v).map(|hz| c.sample_hz = hz).is_some(),
    },
    EnvVar {
        name: env::ALLOC_SAMPLE,
        expected: "a mean in bytes with an optional K/M/G suffix, 0 (off) to 1G",
        apply: |c, v| {
            parse_alloc_sample(v)
                .map(|n| c.alloc_sample_bytes = n)
                .is_some()
        },
    },
];

/// The highest allocation sampling mean (kept with the format, which the
/// command line reads too).
pub use fxt_format::samples::MAX_ALLOC_SAMPLE_BYTES;

/// The allocation sampling mean `fxt record --alloc-sample` and the
/// documentation suggest: one sample per 512 KiB allocated. A sample costs
/// a copy of the thread's stack and one record, so a thread allocating a
/// gigabyte per second takes about 2000 a second; a site that allocates
/// 100 MB gets about 200 samples, a relative error near 7%. The guide
/// (`docs/guide/memory.md`) gives what each mean costs and how close its
/// estimates come.
pub const DEFAULT_ALLOC_SAMPLE_BYTES: u64 = 512 << 10;

/// Parses `FXT_ALLOC_SAMPLE`: bytes with an optional K/M/G suffix, 0 to
/// [`MAX_ALLOC_SAMPLE_BYTES`].
pub(crate) fn parse_alloc_sample(v: &str) -> Option<u64> {
    fxt_control::parse_alloc_sample(v).ok()
}

/// The highest sampling rate (kept with the samples' format, which the
/// command line reads too).
pub use fxt_format::samples::MAX_SAMPLE_HZ;

/// Parses `FXT_SAMPLE_HZ`: 0 to [`MAX_SAMPLE_HZ`]
/// ([`fxt_control::parse_sample_hz`]).
pub(crate) fn parse_sample_hz(v: &str) -> Option<u32> {
    fxt_control::parse_sample_hz(v).ok()
}

/// `FXT_HELPER_SCHED` (parsed and reported as [`Config::from_env`] does),
/// else the default: for fxt's threads that belong to no session (a
/// provider's listener).
pub(crate) fn helper_scheduling_from_env() -> HelperScheduling {
    Config::new()
        .apply_env(ENV_VARS.iter().filter(|v| v.name == "FXT_HELPER_SCHED"))
        .helper_scheduling
}

/// Parses an on/off variable: `1`/`true`/`yes`/`on`, `0`/`false`/`no`/`off`
/// or empty.
fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// How a tracing session records. Build one with [`Config::new`] or
/// [`Config::from_env`] and the builder methods, then pass it to
/// [`crate::start`].
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) buffer_size: usize,
    pub(crate) chunk_size: Option<usize>,
    pub(crate) mode: Mode,
    /// `None` = every category.
    pub(crate) categories: Option<Vec<String>>,
    pub(crate) output: PathBuf,
    pub(crate) provider_name: Option<String>,
    pub(crate) clock: ClockSource,
    pub(crate) prefault: Prefault,
    pub(crate) crash_safe: bool,
    pub(crate) large_records: bool,
    pub(crate) snapshot_signal: Option<i32>,
    pub(crate) drain: bool,
    pub(crate) helper_scheduling: HelperScheduling,
    /// `None`: [`DEFAULT_FILE_LIMIT`] bounded by the free space.
    pub(crate) file_limit: Option<u64>,
    /// CPU samples per second of each thread's CPU time (0: off).
    pub(crate) sample_hz: u32,
    /// Mean bytes between sampled allocations (0: off).
    pub(crate) alloc_sample_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// Defaults: 64 MiB buffer, [`Mode::Oneshot`], all categories, output
    /// `trace.fxt`, provider named after the process, [`ClockSource::Auto`].
    pub fn new() -> Config {
        Config {
            buffer_size: DEFAULT_BUFFER_SIZE,
            chunk_size: None,
            mode: Mode::Oneshot,
            categories: None,
            output: PathBuf::from(DEFAULT_OUTPUT),
            provider_name: None,
            clock: ClockSource::Auto,
            prefault: Prefault::Background,
            crash_safe: false,
            large_records: false,
            snapshot_signal: None,
            drain: true,
            helper_scheduling: HelperScheduling::Normal,
            file_limit: None,
            sample_hz: 0,
            alloc_sample_bytes: 0,
        }
    }

    /// The defaults of [`Config::new`], overridden by the `FXT_*`
    /// environment variables: the table of the repository's README
    /// (section "Configuration") lists each with its values and default. A value that does not parse
    /// is reported on stderr and ignored.
    pub fn from_env() -> Config {
        let mut c = Config::new();
        if let Some(v) = std::env::var_os("FXT_OUTPUT") {
            if !v.is_empty() {
                c.output = PathBuf::from(v);
            }
        }
        c.apply_env(ENV_VARS.iter())
    }

    /// `config` with `FXT_BUFFER`, `FXT_MODE` and `FXT_CATEGORIES` applied
    /// where set (parsed and reported as [`Config::from_env`] does): what
    /// `fxt record` passes on to every session it records, over the
    /// program's own config (see `crate::output`).
    pub(crate) fn with_recording_env(self) -> Config {
        self.apply_env(
            ENV_VARS
                .iter()
                .filter(|v| RECORDING_ENV_VARS.contains(&v.name)),
        )
    }

    /// Applies each of `vars` that is set; a value that does not parse is
    /// reported on stderr and ignored.
    fn apply_env<'a>(self, vars: impl Iterator<Item = &'a EnvVar>) -> Config {
        self.apply_vars(vars, |name| std::env::var(name), |w| eprintln!("fxt: {w}"))
    }

    /// [`Config::apply_env`] with the values from `lookup` and the warnings
    /// about bad ones to `warn`.
    fn apply_vars<'a>(
        mut self,
        vars: impl Iterator<Item = &'a EnvVar>,
        lookup: impl Fn(&str) -> Result<String, std::env::VarError>,
        mut warn: impl FnMut(String),
    ) -> Config {
        for var in vars {
            let bad = match lookup(var.name) {
                Ok(v) if (var.apply)(&mut self, &v) => continue,
                Ok(v) => format!("{v:?}"),
                Err(std::env::VarError::NotUnicode(v)) => format!("{v:?}"),
                Err(std::env::VarError::NotPresent) => continue,
            };
            warn(format!(
                "ignoring {}={bad}: expected {}",
                var.name, var.expected
            ));
        }
        self
    }

    /// Total buffer size in bytes (at least 256 KiB; rounded down to whole
    /// chunks): the memory the session may touch. About 1/16 of it (at
    /// least 64 KiB, at most 16 MiB) is the durable region for string,
    /// thread and naming records. A oneshot session kept in memory
    /// (`drain(false)`, crash-safe) stops at it; a drained one (the
    /// default) stops at its file limit ([`Config::file_limit`]).
    pub fn buffer_size(mut self, bytes: usize) -> Config {
        self.buffer_size = bytes;
        self
    }

    /// Chunk size in bytes (default 64 KiB, at least 32 KiB: a record never
    /// straddles chunks). Each thread writes into its own chunk, so the
    /// buffer should hold a few chunks per thread.
    pub fn chunk_size(mut self, bytes: usize) -> Config {
        self.chunk_size = Some(bytes);
        self
    }

    /// Buffering mode.
    pub fn mode(mut self, mode: Mode) -> Config {
        self.mode = mode;
        self
    }

    /// Categories to record; an empty list or one containing `"*"` records
    /// every category.
    pub fn categories(mut self, list: &[&str]) -> Config {
        self.set_categories(list);
        self
    }

    /// See [`Config::categories`].
    fn set_categories(&mut self, list: &[&str]) {
        self.categories = if list.is_empty() || list.contains(&"*") {
            None
        } else {
            Some(list.iter().map(|s| s.to_string()).collect())
        };
    }

    /// The file [`crate::Session::finish`] (and streaming and crash-safe
    /// modes) writes. `{pid}` in it is replaced by the process id and
    /// `{name}` by the process name. The session claims the file for its
    /// lifetime: a session that finds it claimed by another live process
    /// writes `STEM.PID.EXT` instead, says so on stderr, and names the file
    /// in [`crate::Stats::output`]. Under `fxt record` (`FXT_RECORD`) the
    /// recorder chooses the file.
    /// ```no_run
    /// let c = fxt_runtime::Config::new().output("traces/{name}-{pid}.fxt");
    /// # let _ = c;
    /// ```
    pub fn output(mut self, path: impl Into<PathBuf>) -> Config {
        self.output = path.into();
        self
    }

    /// The provider name written in the trace (default: the process name).
    pub fn provider_name(mut self, name: impl Into<String>) -> Config {
        self.provider_name = Some(name.into());
        self
    }

    /// Clock selection.
    pub fn clock(mut self, clock: ClockSource) -> Config {
        self.clock = clock;
        self
    }

    /// When the buffer's pages are faulted in (default:
    /// [`Prefault::Background`]). Buffer memory is allocated lazily; the
    /// first write to each page costs a page fault, which would otherwise
    /// land on the hot path of a fresh session (`bench-table --sections
    /// fresh` shows what it costs an event). In the background, a thread of the
    /// lowest priority faults pages in ahead of the writers (so it uses an
    /// idle core and never takes one from the program); `true`
    /// ([`Prefault::AtStart`]) does it all before `start` returns; `false`
    /// ([`Prefault::Off`]) leaves it to the writers. `FXT_PREFAULT` in
    /// [`Config::from_env`].
    ///
    /// ```
    /// let c = fxt_runtime::Config::new().prefault(true);
    /// let c = c.prefault(fxt_runtime::Prefault::Off);
    /// # let _ = c;
    /// ```
    pub fn prefault(mut self, when: impl Into<Prefault>) -> Config {
        self.prefault = when.into();
        self
    }

    /// Oneshot mode: write filled chunks to the output file while the
    /// program runs and reuse their memory (default: on). Drained, the
    /// trace holds the whole run up to the file limit
    /// ([`Config::file_limit`]); kept in memory, the first `buffer_size`
    /// bytes of records; then drops, counted, either way. Drained, a
    /// background thread writes each filled chunk with `O_DIRECT` (the
    /// device reads it from the buffer: no copy, almost no CPU) and hands
    /// it back to the writers, so a trace of any size runs in a few
    /// megabytes of memory that stay faulted in and in cache, instead of
    /// every event landing on a page touched for the first time (a page
    /// fault per 4 KiB, which no background thread can keep ahead of when
    /// the program's threads use every core). If the file cannot be
    /// written as fast as it fills, the rest of the buffer takes the
    /// difference (when all of it waits for the disk, records are dropped
    /// and counted until a chunk is written out). The file is a valid trace prefix while the session runs
    /// (a killed process leaves its trace up to the last chunk written),
    /// padded to 4 KiB blocks by fillers that readers ignore
    /// ([`crate::Stats::filler_records`]). `finish_to_path` moves it,
    /// `finish_to_writer` reads it back and removes it. Off: the buffer
    /// is written when the session finishes. Not for circular mode (it
    /// keeps the newest data) or crash-safe mode (the buffer is the file).
    /// `FXT_DRAIN=0` in [`Config::from_env`].
    ///
    /// ```
    /// let c = fxt_runtime::Config::new().drain(false);
    /// # let _ = c;
    /// ```
    pub fn drain(mut self, on: bool) -> Config {
        self.drain = on;
        self
    }

    /// How large the file of a drained oneshot session (the default) may
    /// grow: once its chunks of records reach `bytes`, new records are
    /// dropped and counted ([`crate::Stats::records_dropped`], with
    /// [`crate::Stats::limit_reached`] set and the trace ending with
    /// "buffer filled up"), as a oneshot buffer does when it is full. The
    /// limit counts the chunks (rounded down to whole chunks); the
    /// strings, thread names and large blobs come on top (at most about
    /// 5/16 of the buffer). Default: 16 GiB (`DEFAULT_FILE_LIMIT`) or
    /// half the space free on the output's file system when the session
    /// starts, whichever is smaller. The memory the session touches is the
    /// buffer ([`Config::buffer_size`]), whatever the limit. Not used by
    /// other modes: kept in memory or crash-safe, oneshot stops at the
    /// buffer; circular keeps the newest buffer's worth; streaming has no
    /// limit. `FXT_FILE_LIMIT` in [`Config::from_env`].
    ///
    /// ```
    /// let c = fxt_runtime::Config::new().file_limit(1 << 30);
    /// # let _ = c;
    /// ```
    pub fn file_limit(mut self, bytes: u64) -> Config {
        self.file_limit = Some(bytes);
        self
    }

    /// A signal (e.g. `libc::SIGUSR1`) that writes a snapshot of the
    /// session next to its output while it keeps recording (installed at
    /// `start`; see `snapshot_on_signal`). `FXT_SNAPSHOT_SIGNAL` in
    /// [`Config::from_env`].
    pub fn snapshot_signal(mut self, signal: i32) -> Config {
        self.snapshot_signal = Some(signal);
        self
    }

    /// Write a blob over 32 KiB as one large blob record (record type 15;
    /// default: off). By default it is written as a split blob group (an
    /// instant with the blob's size and part count, then blob records of at
    /// most 32 KiB, contiguous; see `fxt_format::encode::SplitBlob`), which
    /// every viewer sizes correctly: Perfetto's and Tracy's importers read
    /// every record's size from header bits 4–15 and misread large records.
    /// `fxt_format`'s decoder and `fxt dump` join the parts back.
    /// `FXT_LARGE_RECORDS=1` in [`Config::from_env`].
    pub fn large_records(mut self, on: bool) -> Config {
        self.large_records = on;
        self
    }

    /// Back the buffer with the output file itself (default: off), so that
    /// a process that dies mid-trace (`SIGKILL`, the OOM killer, `abort`, a
    /// segfault; not a crash of the machine) leaves a valid trace of every
    /// record published before it died. `FXT_CRASH_SAFE=1` in
    /// [`Config::from_env`].
    ///
    /// At [`crate::start`] the output file is created and mapped shared:
    /// magic number, provider info, initialization record (with an
    /// estimate of the clock's rate, corrected once it is calibrated), the
    /// durable region (strings, threads, names), then the chunks, with
    /// every unwritten word a filler record that readers skip; the file
    /// grows over the chunks ahead of the writers (`bench-table --sections
    /// lifecycle` shows what a crash-safe `start` costs). Each record then
    /// costs one more store and two Release fences (free on x86), and the
    /// kernel writes the dirty pages back to disk in the background. The file opens in
    /// Perfetto and decodes with `fxt_format::decode` as it is, killed or
    /// not; a session that finishes normally rewrites it as a compact
    /// trace. Large blobs (over 32 KiB) are kept in memory until then, so
    /// a killed process loses those. Supported in [`Mode::Oneshot`] and
    /// [`Mode::Circular`]; [`Mode::Streaming`] already writes its file as it
    /// goes, and [`crate::start`] refuses the combination.
    pub fn crash_safe(mut self, on: bool) -> Config {
        self.crash_safe = on;
        self
    }

    /// How fxt's own threads are scheduled (default:
    /// [`HelperScheduling::Normal`]). Each sets its policy itself, from
    /// inside, before it does any work: a program whose threads are real
    /// time keeps fxt's background work (writing the file, snapshots) out
    /// of their way, and fxt's threads out of its real-time budget. A
    /// policy that cannot be set is reported once on stderr and counted in
    /// [`crate::Stats::helper_sched_failures`]; the thread then runs with
    /// what it inherited, and the session goes on. `FXT_HELPER_SCHED` in
    /// [`Config::from_env`].
    ///
    /// ```
    /// use fxt_runtime::{Config, HelperScheduling};
    /// let c = Config::new().helper_scheduling(HelperScheduling::RoundRobin(1));
    /// # let _ = c;
    /// ```
    pub fn helper_scheduling(mut self, scheduling: HelperScheduling) -> Config {
        self.helper_scheduling = scheduling;
        self
    }

    /// Samples each recording thread's stack `hz` times per second of its
    /// CPU time (0, the default: off; at most [`MAX_SAMPLE_HZ`]). Each
    /// sample is an `fxt.sample` record on the thread's timeline: the
    /// interrupted code address and the return addresses of the stack,
    /// walked with the unwind tables every Rust binary carries (no rebuild
    /// needed), named at collection. The source is a per-thread
    /// `perf_event_open` task clock where the kernel allows it (an ordinary
    /// user at `perf_event_paranoid` <= 2), else a POSIX CPU-time timer
    /// (whose rate the kernel's tick bounds, often 250 Hz); both deliver
    /// `SIGPROF` (a handler the program installed before keeps getting its
    /// own `SIGPROF`s). Linux x86-64 only; elsewhere nothing is sampled.
    /// `FXT_SAMPLE_HZ` in [`Config::from_env`].
    pub fn sample_hz(mut self, hz: u32) -> Config {
        self.sample_hz = hz.min(MAX_SAMPLE_HZ);
        self
    }

    /// Samples the allocations made through [`crate::alloc::Sampled`] (the
    /// program's global allocator) by bytes: the bytes between two sampled
    /// allocations are drawn from an exponential distribution of mean
    /// `bytes`, so each sample stands for about `bytes` bytes whatever the
    /// sizes (0, the default: off; at most [`MAX_ALLOC_SAMPLE_BYTES`];
    /// [`DEFAULT_ALLOC_SAMPLE_BYTES`] is a good start). Each sampled
    /// allocation, and the free of each sampled block, is an `fxt.alloc`
    /// record on its thread's timeline with its size, address and stack
    /// (threads that record in the session); readers derive from them a
    /// counter `fxt`/`heap` of the estimated live bytes
    /// (`fxt_format::derived::heap`). `FXT_ALLOC_SAMPLE` in
    /// [`Config::from_env`].
    pub fn alloc_sample_bytes(mut self, bytes: u64) -> Config {
        self.alloc_sample_bytes = bytes.min(MAX_ALLOC_SAMPLE_BYTES);
        self
    }

    /// The configured output path.
    pub fn output_path(&self) -> &std::path::Path {
        &self.output
    }

    /// The configured mode.
    pub fn get_mode(&self) -> Mode {
        self.mode
    }
}

/// Parses a byte size: digits, optionally followed by `K`, `M` or `G`
/// (powers of 1024, case-insensitive, optionally followed by `B` or `iB`):
/// [`fxt_control::parse_size`], the grammar `fxt trace start --buffer`
/// takes too, for a size this machine can address.
///
/// ```
/// use fxt_runtime::parse_size;
/// assert_eq!(parse_size("64K"), Some(65536));
/// assert_eq!(parse_size("lots"), None);
/// ```
pub fn parse_size(s: &str) -> Option<usize> {
    fxt_control::parse_size(s).and_then(|n| usize::try_from(n).ok())
}

/// Parses a signal for `FXT_SNAPSHOT_SIGNAL`: `USR1`, `SIGUSR2`, … or a
/// number.
pub(crate) fn parse_signal(s: &str) -> Option<i32> {
    let s = s.trim().to_ascii_uppercase();
    let s = s.strip_prefix("SIG").unwrap_or(&s);
    match s {
        "USR1" => Some(libc::SIGUSR1),
        "USR2" => Some(libc::SIGUSR2),
        "HUP" => Some(libc::SIGHUP),
        "QUIT" => Some(libc::SIGQUIT),
        n => n.parse().ok().filter(|&n: &i32| n > 0 && n < 65),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    /// Applies `vars` from `env` (name, value pairs); returns the config
    /// and the warnings.
    fn apply(config: Config, recording: bool, env: &[(&str, &str)]) -> (Config, Vec<String>) {
        let lookup = |name: &str| {
            env.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
                .ok_or(VarError::NotPresent)
        };
        let mut warnings = Vec::new();
        let vars = ENV_VARS
            .iter()
            .filter(|v| !recording || RECORDING_ENV_VARS.contains(&v.name));
        let c = config.apply_vars(vars, lookup, |w| warnings.push(w));
        (c, warnings)
    }

    #[test]
    fn recording_applies_only_its_variables_and_warns_on_bad_ones() {
        let env = [
            ("FXT_BUFFER", "2M"),
            ("FXT_MODE", "sideways"),
            ("FXT_CATEGORIES", "a, b,,"),
            ("FXT_CLOCK", "monotonic"),
            ("FXT_DRAIN", "0"),
        ];
        let own = Config::new().mode(Mode::Circular);
        let (c, warnings) = apply(own, true, &env);
        assert_eq!(c.buffer_size, 2 << 20);
        assert_eq!(c.mode, Mode::Circular, "a bad mode keeps the program's");
        assert_eq!(c.categories, Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(c.clock, ClockSource::Auto, "not a recording variable");
        assert!(c.drain, "not a recording variable");
        assert_eq!(
            warnings,
            ["ignoring FXT_MODE=\"sideways\": expected oneshot, circular or streaming"]
        );
    }

    #[test]
    fn from_env_parses_every_variable_with_the_same_rules() {
        let env = [
            ("FXT_BUFFER", "lots"),
            ("FXT_MODE", " Streaming "),
            ("FXT_CATEGORIES", "*"),
            ("FXT_CLOCK", "mono"),
            ("FXT_PREFAULT", "start"),
            ("FXT_SNAPSHOT_SIGNAL", "SIGUSR2"),
            ("FXT_CRASH_SAFE", "yes"),
            ("FXT_LARGE_RECORDS", "maybe"),
            ("FXT_DRAIN", "off"),
        ];
        let (c, warnings) = apply(Config::new().categories(&["x"]), false, &env);
        assert_eq!(c.buffer_size, DEFAULT_BUFFER_SIZE);
        assert_eq!(c.mode, Mode::Streaming);
        assert_eq!(c.categories, None);
        assert_eq!(c.clock, ClockSource::Monotonic);
        assert_eq!(c.prefault, Prefault::AtStart);
        assert_eq!(c.snapshot_signal, Some(libc::SIGUSR2));
        assert!(c.crash_safe);
        assert!(!c.large_records);
        assert!(!c.drain);
        assert_eq!(
            warnings,
            [
                "ignoring FXT_BUFFER=\"lots\": expected bytes with an optional K/M/G suffix, 256K to 16G",
                "ignoring FXT_LARGE_RECORDS=\"maybe\": expected 0 or 1",
            ]
        );
    }

    #[test]
    fn the_recording_contracts_limits_hold_in_the_environment() {
        // fxt_control::recording's limits: what `fxt record` and `fxt
        // trace start` refuse at their command line, a program refuses in
        // its environment (with a warning, keeping its own setting).
        let over = [
            ("FXT_BUFFER", "128K"),
            ("FXT_SAMPLE_HZ", "10001"),
            ("FXT_MODE", "sometimes"),
        ];
        let (c, warnings) = apply(Config::new(), true, &over);
        assert_eq!(c.buffer_size, DEFAULT_BUFFER_SIZE);
        assert_eq!(c.sample_hz, 0);
        assert_eq!(c.mode, Mode::Oneshot);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        let at = [
            ("FXT_BUFFER", "256K"),
            ("FXT_SAMPLE_HZ", "10000"),
            ("FXT_MODE", "Circular"),
        ];
        let (c, warnings) = apply(Config::new(), true, &at);
        assert_eq!(c.buffer_size, fxt_control::MIN_BUFFER as usize);
        assert_eq!(c.sample_hz, MAX_SAMPLE_HZ);
        assert_eq!(c.mode, Mode::Circular);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
