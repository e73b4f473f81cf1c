//! Session configuration: [`Config`] and its builder, the choices it
//! holds ([`Mode`], [`Prefault`], [`ClockSource`], [`HelperScheduling`]:
//! `choices`), and the one parser of the `FXT_*` environment variables
//! (`env`: [`Config::from_env`], and the variables `fxt record` passes
//! on).

use std::path::PathBuf;

mod choices;
mod env;

pub use choices::{ClockSource, HelperScheduling, Mode, Prefault};
pub(crate) use env::{category_list, helper_scheduling_from_env};
pub use env::{parse_size, DEFAULT_ALLOC_SAMPLE_BYTES, MAX_ALLOC_SAMPLE_BYTES, MAX_SAMPLE_HZ};

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
    /// (`fxt_format::derived::heap`). A thread that allocates so fast that
    /// it would take more than a few thousand samples a second at the
    /// default mean (over about 2.6 GB a second) raises its own mean, and
    /// its records say so: every estimate stays unbiased
    /// (`docs/guide/memory.md`). `FXT_ALLOC_SAMPLE` in
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
