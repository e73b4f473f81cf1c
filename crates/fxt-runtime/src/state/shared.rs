//! What one session's writers, collector and streamer share: [`Shared`],
//! held through an `Arc`, so its memory outlives the session for as long
//! as a thread still holds it.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::clock::Clock;
use crate::config::Mode;
use crate::durable::Durable;
use crate::helpers::wake::IdleWake;
use crate::large::LargeRecords;
use crate::ring::Ring;
use crate::stats::Stats;

/// Per-thread counters the collector reads. Written by their thread only.
#[derive(Debug, Default)]
pub(crate) struct ThreadCounters {
    /// Records this thread emitted that will not be in the file (no chunk,
    /// too large, overwritten by this thread in circular mode).
    pub(crate) dropped: AtomicU64,
}

impl ThreadCounters {
    /// Adds to the drop count: a single-writer counter, so a load and a
    /// store (no RMW on the path that drops).
    #[inline]
    pub(crate) fn add_dropped(&self, n: u64) {
        let v = self.dropped.load(Ordering::Relaxed);
        self.dropped.store(v + n, Ordering::Relaxed);
    }
}

/// Everything a session's writers, streamer and collector share: its
/// identity and clock, the [`Buffers`] records go to, the [`Helpers`]
/// (threads) that serve them, the [`Settings`] fixed at start, and the
/// bookkeeping of counts, snapshots and finishing.
///
/// Invariants: everything but the mutexes and counters is fixed once
/// `session::start` publishes the session; the session is finished at most
/// once (`finish_state`); the helpers are stopped and joined before the
/// trace is finished (see `crate::session`).
#[derive(Debug)]
pub(crate) struct Shared {
    /// The session's generation (see `Control::next_generation`).
    pub(crate) generation: u32,
    pub(crate) clock: Clock,
    pub(crate) buffers: Buffers,
    pub(crate) helpers: Helpers,
    pub(crate) settings: Settings,
    pub(crate) threads: Mutex<Vec<Arc<ThreadCounters>>>,
    /// Records dropped where no thread state could count them (thread-local
    /// state already destroyed).
    pub(crate) orphan_dropped: AtomicU64,
    /// Snapshots taken so far (the next one's number is this + 1).
    pub(crate) snapshots: AtomicU64,
    /// Held while the session is finished; `Some` once it is (see
    /// `crate::session`).
    pub(crate) finish_state: Mutex<Option<Stats>>,
    /// The claim on `settings.output`, released when the session finishes.
    pub(crate) claim: Mutex<Option<crate::output::Claim>>,
    /// Threads armed for CPU samples, by source: a `perf_event` task clock,
    /// a CPU-time timer (the trace's `fxt.sampling` record says them).
    pub(crate) sampled_threads: [AtomicU64; 2],
    /// Strong references to this session that allocation hooks gave up
    /// once it was over, without dropping them (see `super::retired`).
    pub(crate) abandoned: AtomicUsize,
}

/// Where a session's records go.
///
/// Invariants: in a crash-safe session `ring`, `durable`, `large` and
/// `init_tps` are disjoint windows of one mapping of the output file (and
/// `init_tps` is `Some` exactly then); `drained` is `Some` exactly for a
/// drained oneshot session, whose ring is then drained too (a streaming
/// ring is drained without it: its file is the trace).
#[derive(Debug)]
pub(crate) struct Buffers {
    pub(crate) ring: Ring,
    pub(crate) durable: Durable,
    /// Large records (large blobs), outside the ring.
    pub(crate) large: LargeRecords,
    /// Crash-safe: the ticks-per-second word of the file's initialization
    /// record, written with an estimate at start and corrected once the
    /// clock is calibrated.
    pub(crate) init_tps: Option<crate::memory::words::Words>,
    /// A drained oneshot session: what its streamer has written to
    /// `output` so far, held by the streamer during each pass (a snapshot
    /// copies that much of the file, then the rest from memory).
    pub(crate) drained: Option<Mutex<Drained>>,
    /// Held by the streamer during each pass over the released chunks
    /// (it frees what it wrote) and by a snapshot of a live session during
    /// its pass: a snapshot sees the chunks as they are between two passes,
    /// so every thread's records in it run without a gap that no drop
    /// explains (a chunk freed in the middle of its pass would leave one).
    pub(crate) passes: Mutex<()>,
}

/// The session's helper threads and their stop flags (all spawned by
/// `session::start`, in one place).
///
/// Invariants: a handle is `Some` from start until whoever finishes the
/// session takes and joins it, after setting the thread's stop flag; the
/// streamer is `Some` exactly when the ring is drained to a file.
#[derive(Debug)]
pub(crate) struct Helpers {
    /// Tells the streamer to stop (set once the writers stopped).
    pub(crate) stream_stop: AtomicBool,
    /// The streamer's long waits, which the first chunk a writer takes
    /// cuts short (`crate::helpers::wake`).
    pub(crate) stream_wake: IdleWake,
    /// The streaming thread, which writes the whole file and returns its
    /// stats; joined by whoever finishes.
    pub(crate) streamer: Mutex<Option<JoinHandle<io::Result<Stats>>>>,
    /// Tells the background prefaulter to stop.
    pub(crate) prefault_stop: AtomicBool,
    /// The background prefaulter, joined when the session stops.
    pub(crate) prefaulter: Mutex<Option<JoinHandle<()>>>,
}

impl Helpers {
    /// No helper yet, none told to stop.
    pub(crate) fn new() -> Helpers {
        Helpers {
            stream_stop: AtomicBool::new(false),
            stream_wake: IdleWake::new(),
            streamer: Mutex::new(None),
            prefault_stop: AtomicBool::new(false),
            prefaulter: Mutex::new(None),
        }
    }
}

/// What the session was started with; fixed from then on.
#[derive(Debug)]
pub(crate) struct Settings {
    /// The output, claimed (its `{pid}`/`{name}` expanded).
    pub(crate) output: PathBuf,
    pub(crate) mode: Mode,
    /// The ring and durable region are a mapping of `output`.
    pub(crate) crash_safe: bool,
    /// Blobs over 32 KiB are written as large blob records (else as split
    /// blob groups).
    pub(crate) large_records: bool,
    /// Recorded by `fxt record`: finishing also writes the counts beside
    /// the trace.
    pub(crate) recorded: bool,
    /// The process id recorded in the trace.
    pub(crate) pid: u64,
    /// The process that started the session (a forked child is not it).
    pub(crate) start_pid: u32,
    pub(crate) provider_name: String,
    /// CPU samples per second of each thread's CPU time (0: off).
    pub(crate) sample_hz: u32,
    /// Mean bytes between sampled allocations (0: off).
    pub(crate) alloc_sample_bytes: u64,
}

impl Settings {
    /// Whether the session records stacks (CPU samples or sampled
    /// allocations), which the trace's modules name.
    pub(crate) fn records_stacks(&self) -> bool {
        self.sample_hz > 0 || self.alloc_sample_bytes > 0
    }
}

/// What a drained session's streamer has written, between two passes.
#[derive(Debug)]
pub(crate) struct Drained {
    /// The output, open for reading.
    pub(crate) file: std::fs::File,
    /// Bytes written (fillers included).
    pub(crate) bytes: u64,
    /// Records written (fillers included).
    pub(crate) records: u64,
    /// Of which emitted by the program.
    pub(crate) emitted: u64,
    /// Of which fillers.
    pub(crate) fillers: u64,
    /// Words and records of the durable region written.
    pub(crate) durable_pos: usize,
    pub(crate) durable_records: u64,
    /// Byte offset of the initialization record's ticks per second (an
    /// estimate until the session finishes).
    pub(crate) tps_offset: u64,
}

impl Shared {
    /// Sum of every drop counter.
    pub(crate) fn dropped(&self) -> u64 {
        let threads = lock(&self.threads);
        threads
            .iter()
            .map(|t| t.dropped.load(Ordering::Relaxed))
            .sum::<u64>()
            + self.orphan_dropped.load(Ordering::Relaxed)
    }

    /// Threads that recorded.
    pub(crate) fn thread_count(&self) -> u64 {
        lock(&self.threads).len() as u64
    }

    /// Counts a new recording thread.
    pub(crate) fn add_thread(&self) -> Arc<ThreadCounters> {
        let counters = Arc::new(ThreadCounters::default());
        lock(&self.threads).push(counters.clone());
        counters
    }
}

/// Locks a mutex, ignoring poisoning (every critical section of the engine
/// leaves its data consistent).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
