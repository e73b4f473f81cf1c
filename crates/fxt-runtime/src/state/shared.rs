//! What one session's writers, collector and streamer share: [`Shared`],
//! held through an `Arc`, so its memory outlives the session for as long
//! as a thread still holds it.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::clock::Clock;
use crate::config::Mode;
use crate::durable::Durable;
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

/// Everything a session's writers, streamer and collector share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The session's generation (see `Control::next_generation`).
    pub(crate) generation: u32,
    pub(crate) ring: Ring,
    pub(crate) durable: Durable,
    /// Large records (large blobs), outside the ring.
    pub(crate) large: LargeRecords,
    pub(crate) clock: Clock,
    pub(crate) pid: u64,
    pub(crate) provider_name: String,
    pub(crate) threads: Mutex<Vec<Arc<ThreadCounters>>>,
    /// Records dropped where no thread state could count them (thread-local
    /// state already destroyed).
    pub(crate) orphan_dropped: AtomicU64,
    /// Tells the streamer to stop (streaming mode).
    pub(crate) stream_stop: AtomicBool,
    /// The streaming thread, which writes the whole file and returns its
    /// stats; joined by whoever finishes.
    pub(crate) streamer: Mutex<Option<JoinHandle<io::Result<Stats>>>>,
    /// Tells the background prefaulter to stop.
    pub(crate) prefault_stop: AtomicBool,
    /// The background prefaulter, joined when the session stops.
    pub(crate) prefaulter: Mutex<Option<JoinHandle<()>>>,
    /// The configured output.
    pub(crate) output: PathBuf,
    pub(crate) mode: Mode,
    /// Blobs over 32 KiB are written as large blob records (else as split
    /// blob groups).
    pub(crate) large_records: bool,
    /// Crash-safe: the ticks-per-second word of the file's initialization
    /// record, written with an estimate at start and corrected once the
    /// clock is calibrated.
    pub(crate) init_tps: Option<crate::memory::words::Words>,
    /// The ring and durable region are a mapping of `output`.
    pub(crate) crash_safe: bool,
    /// The process that started the session (a forked child is not it).
    pub(crate) start_pid: u32,
    /// Snapshots taken so far (the next one's number is this + 1).
    pub(crate) snapshots: AtomicU64,
    /// Held while the session is finished; `Some` once it is (see
    /// `crate::session`).
    pub(crate) finish_state: Mutex<Option<Stats>>,
    /// The claim on `output`, released when the session finishes.
    pub(crate) claim: Mutex<Option<crate::output::Claim>>,
    /// Recorded by `fxt record`: finishing also writes the counts beside
    /// the trace.
    pub(crate) recorded: bool,
    /// A drained oneshot session: what its streamer has written to
    /// `output` so far, held by the streamer during each pass (a snapshot
    /// copies that much of the file, then the rest from memory).
    pub(crate) drained: Option<Mutex<Drained>>,
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
