//! Layer 6, the session: the public API on top of the engine — starting,
//! category switches, stopping and collecting, what a forked child does,
//! the panic hook. Nothing in the engine imports this module.
//!
//! # Finishing, once
//!
//! A session is finished by its guard ([`Session`]'s `finish*` methods or
//! its drop) or by the panic hook ([`install_panic_hook`]), whichever comes
//! first: `Shared::finish_state` is a mutex held while the trace is
//! written, and `Some(stats)` once it is, so the second comer returns those
//! stats without writing anything.
//!
//! # Fork
//!
//! A `pthread_atfork` child handler (registered at the first [`start`])
//! makes the child of a process with an unfinished session inert: it sets
//! `FORKED`, turns every call site off and forgets the forking thread's
//! chunk, all without taking a lock (another thread may have held one at
//! the fork). From then on nothing in the child takes fxt's locks or
//! writes to the parent's buffer (which, in crash-safe mode, is a shared
//! mapping of the parent's file): events are dropped, and finishing or
//! dropping the session in the child does nothing (its recorded pid is not
//! the child's). Such a child cannot start a session of its own.

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

use crate::callsite::{self, STALE};
use crate::clock::{self, Clock};
use crate::collect::{self, stream, CollectError};
use crate::config::Prefault;
use crate::config::{
    ClockSource, Config, Mode, DEFAULT_CHUNK_SIZE, MIN_BUFFER_SIZE, MIN_CHUNK_SIZE,
};
use crate::durable::Durable;
use crate::large::LargeRecords;
use crate::memory::file_map::FileMap;
use crate::memory::prefault;
use crate::memory::words::Words;
use crate::output;
use crate::ring::Ring;
use crate::snapshot::{snapshot_shared, snapshot_shared_to, write_renamed};
use crate::state::control::{Filter, ACTIVE, CONTROL, FORKED, UNFINISHED};
use crate::state::shared::{lock, Drained};
use crate::state::{control, forked, Shared};
use crate::stats::Stats;
use crate::thread;

/// How long [`Session::finish`] waits, after disabling every call site, for
/// writers that were already past their call site check to publish their
/// record. An event whose writer is preempted for longer than this between
/// its call-site check and its publication is not in the file (and, because
/// detecting it would cost the hot path a fence, not counted as dropped).
pub const FINISH_GRACE: Duration = Duration::from_millis(2);

/// The `pthread_atfork` child handler. Runs in the child, which has only
/// the forking thread; it must not take a lock: atomics only (and the
/// thread-local writer of this thread, see `thread::forget_after_fork`).
extern "C" fn atfork_child() {
    if UNFINISHED.load(Ordering::Relaxed) == 0 {
        return;
    }
    FORKED.store(true, Ordering::Relaxed);
    ACTIVE.store(false, Ordering::Relaxed);
    callsite::disable_all_after_fork();
    thread::forget_after_fork();
}

fn register_atfork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `atfork_child` is an `extern "C" fn()` that lives for the
        // whole program and only does what is allowed in a forked child of
        // a multithreaded process (atomic loads and stores; no locks).
        let rc = unsafe { libc::pthread_atfork(None, None, Some(atfork_child)) };
        if rc != 0 {
            eprintln!("fxt: pthread_atfork failed ({rc}); a forked child may write to the trace");
        }
    });
}

/// Whether a tracing session is live.
pub fn is_enabled() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Turns a category on (in the live session; [`start`] resets the set from
/// its [`Config`]). Every call site of the category sees the change on its
/// next use.
pub fn enable_category(name: &str) {
    if forked() {
        return;
    }
    let mut ctl = control();
    ctl.filter.enable(name);
    if ctl.current.is_some() {
        callsite::reset_all(&ctl, STALE);
    }
}

/// Turns a category off (see [`enable_category`]).
pub fn disable_category(name: &str) {
    if forked() {
        return;
    }
    let mut ctl = control();
    ctl.filter.disable(name);
    if ctl.current.is_some() {
        callsite::reset_all(&ctl, STALE);
    }
}

/// Why [`start`] failed.
#[derive(Debug)]
pub enum StartError {
    /// Another session is live; finish it first.
    AlreadyRunning,
    /// Streaming or crash-safe mode could not create its output file.
    Io(PathBuf, io::Error),
    /// The configuration cannot be honored (the reason is given).
    Unsupported(&'static str),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => write!(f, "a tracing session is already running"),
            StartError::Io(p, e) => write!(f, "cannot create {}: {e}", p.display()),
            StartError::Unsupported(why) => write!(f, "cannot start a tracing session: {why}"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Io(_, e) => Some(e),
            StartError::AlreadyRunning | StartError::Unsupported(_) => None,
        }
    }
}

/// A live tracing session, returned by [`start`]. Finish it with one of the
/// `finish*` methods; dropping it finishes to the configured output
/// (printing errors to stderr).
#[must_use = "dropping the session stops it and writes the trace at once"]
pub struct Session {
    shared: Option<Arc<Shared>>,
    output: PathBuf,
    mode: Mode,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("output", &self.output)
            .field("mode", &self.mode)
            .field("live", &self.shared.is_some())
            .finish()
    }
}

/// The name of this process: `/proc/self/comm`, else the executable's file
/// name, else `"process"`.
pub(crate) fn process_name() -> String {
    if let Ok(s) = std::fs::read_to_string("/proc/self/comm") {
        let s = s.trim();
        if !s.is_empty() {
            return s.to_string();
        }
    }
    std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "process".to_string())
}

/// The largest large region of a crash-safe file, in bytes: its stride
/// fillers are written in `start` (one `pwrite` per 32 KiB, about 1.5 µs
/// each: 2 MiB keeps a crash-safe `start` under 1 ms). Blobs that do not
/// fit in it still reach the file when the session finishes.
const MAX_CRASH_SAFE_LARGE: usize = 2 << 20;

/// Starts a tracing session. Only one session can be live at a time.
pub fn start(config: Config) -> Result<Session, StartError> {
    start_recording(config, output::recording())
}

/// [`start`], recorded into a spool when `recording` is given (by `fxt
/// record`'s environment or a trace manager; see `output`).
pub(crate) fn start_recording(
    mut config: Config,
    recording: Option<output::Recording>,
) -> Result<Session, StartError> {
    if forked() {
        return Err(StartError::Unsupported(
            "this process was forked while its parent was tracing",
        ));
    }
    register_atfork();
    let mut ctl = control();
    if ctl.current.is_some() {
        return Err(StartError::AlreadyRunning);
    }
    if let Some(r) = &recording {
        config = output::for_recording(config, r);
    }
    let spool = recording.map(|r| r.spool);
    let mode = config.mode;
    if config.crash_safe && mode == Mode::Streaming {
        return Err(StartError::Unsupported(
            "crash-safe mode needs the oneshot or circular mode (streaming writes its file as it goes)",
        ));
    }

    // Sizes: the durable region takes ~1/16 of the buffer, the ring the rest.
    let buffer = config.buffer_size.max(MIN_BUFFER_SIZE);
    // A crash-safe file writes its durable region before `start` returns:
    // at most 512 KiB of it (strings past it are written inline).
    let durable_max = if config.crash_safe {
        512 << 10
    } else {
        16 << 20
    };
    let durable_bytes = (buffer / 16).clamp(64 << 10, durable_max);
    let ring_bytes = buffer - durable_bytes;
    let mut chunk = config
        .chunk_size
        .unwrap_or(DEFAULT_CHUNK_SIZE)
        .max(MIN_CHUNK_SIZE)
        / 8
        * 8;
    if config.chunk_size.is_none() && ring_bytes / chunk < 8 {
        chunk = MIN_CHUNK_SIZE;
    }
    // A oneshot session drains to its file unless told not to (or the
    // buffer is the file); streaming always does.
    let drain_oneshot = mode == Mode::Oneshot && config.drain && !config.crash_safe;
    if mode == Mode::Streaming || drain_oneshot {
        // Drained chunks are written out in whole blocks (`collect::direct`).
        chunk = chunk.next_multiple_of(collect::direct::BLOCK);
    }
    let chunks = (ring_bytes / chunk).max(1);
    let chunk_words = chunk / 8;

    // Claim the output before creating anything there (see `output`).
    let pname = process_name();
    let wanted = output::expand(&config.output, std::process::id(), &pname);
    let (path, claim) = output::claim(&wanted, spool.as_deref());
    if spool.is_none() && path != wanted {
        eprintln!(
            "fxt: {} is being written by another process; this one writes {}",
            wanted.display(),
            path.display()
        );
    }
    config.output = path;

    let mut file = None;
    let mut drained = None;
    if mode == Mode::Streaming {
        match collect::direct::DirectFile::create(&config.output) {
            Ok(f) => file = Some(f),
            Err(e) => return Err(StartError::Io(config.output.clone(), e)),
        }
    } else if drain_oneshot {
        // Where the file cannot be created now, the buffer is kept in
        // memory instead, and writing the trace at the end says why.
        let opened = collect::direct::DirectFile::create(&config.output)
            .and_then(|f| Ok((f, File::open(&config.output)?)));
        if let Ok((f, reader)) = opened {
            file = Some(f);
            drained = Some(Mutex::new(Drained {
                file: reader,
                bytes: 0,
                records: 0,
                emitted: 0,
                fillers: 0,
                durable_pos: 0,
                durable_records: 0,
                tps_offset: 0,
            }));
        }
    }

    // A file written as the session runs (drained, crash-safe) starts with
    // an estimate of the clock's rate, corrected when it finishes.
    let clock = Clock::start(config.clock == ClockSource::Auto, false);
    let pid = std::process::id() as u64;
    let provider_name = config
        .provider_name
        .clone()
        .unwrap_or_else(|| pname.clone());
    let mut init_tps = None;
    let large_budget = buffer / 4 / 8;
    let (ring, durable, large) = if config.crash_safe {
        // File: [preamble][durable region][large region][chunks], the ring
        // on a 4 KiB boundary. Only the preamble, the durable region and
        // the large region's stride fillers (one word per 32 KiB, over a
        // hole) are written now; the file grows over the chunks ahead of
        // the writers (the prefaulter) or as they reach them (see
        // `memory::file_map`).
        let pre = collect::preamble(&provider_name, clock.provisional_ticks_per_second());
        let large_start = pre.len() + durable_bytes / 8;
        let ring_start =
            (large_start + large_budget.min(MAX_CRASH_SAFE_LARGE / 8)).next_multiple_of(4096 / 8);
        let ring_words = chunks * chunk_words;
        let map = FileMap::create(
            &config.output,
            &pre,
            large_start,
            ring_start,
            ring_start + ring_words,
        )
        .map_err(|e| StartError::Io(config.output.clone(), e))?;
        // The initialization record's last word: its ticks per second.
        init_tps = Some(Words::mapped(map.clone(), pre.len() - 1, 1));
        let ring = Ring::with_words(
            mode,
            chunks,
            chunk_words,
            Words::mapped(map.clone(), ring_start, ring_words),
            true,
        );
        let durable = Durable::mirrored(Words::mapped(
            map.clone(),
            pre.len(),
            large_start - pre.len(),
        ));
        let large = LargeRecords::mirrored(
            large_budget,
            Words::mapped(map, large_start, ring_start - large_start),
        );
        (ring, durable, large)
    } else {
        let ring = if drained.is_some() {
            Ring::drained(mode, chunks, chunk_words)
        } else {
            Ring::new(mode, chunks, chunk_words)
        };
        (
            ring,
            Durable::new(durable_bytes / 8),
            LargeRecords::new(large_budget),
        )
    };
    if config.prefault == Prefault::AtStart {
        prefault::prepare_all(ring.words())
            .map_err(|e| StartError::Io(config.output.clone(), e))?;
        ring.populated()
            .store(ring.words().len() as u64, Ordering::Relaxed);
    }

    let generation = ctl.next_generation(callsite::GEN_MASK as u32);
    let shared = Arc::new(Shared {
        generation,
        ring,
        durable,
        clock,
        pid,
        provider_name,
        threads: Mutex::new(Vec::new()),
        orphan_dropped: AtomicU64::new(0),
        stream_stop: AtomicBool::new(false),
        prefault_stop: AtomicBool::new(false),
        prefaulter: Mutex::new(None),
        streamer: Mutex::new(None),
        large,
        output: config.output.clone(),
        mode,
        crash_safe: config.crash_safe,
        init_tps,
        large_records: config.large_records,
        start_pid: std::process::id(),
        finish_state: Mutex::new(None),
        snapshots: AtomicU64::new(0),
        claim: Mutex::new(claim),
        recorded: spool.is_some(),
        drained,
    });
    shared.durable.name_process(pid, &pname);

    if config.prefault == Prefault::Background {
        let s = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("fxt-prefault".into())
            .spawn(move || {
                let lead = if s.ring.is_drained() {
                    prefault::DRAINED_LEAD_WORDS
                } else {
                    usize::MAX
                };
                prefault::run(
                    s.ring.words(),
                    || s.ring.leased_frontier(),
                    lead,
                    &s.prefault_stop,
                    s.ring.populated(),
                );
                correct_init_record(&s);
            });
        // Without the thread the writers fault pages themselves.
        *lock(&shared.prefaulter) = spawned.ok();
    }
    if let Some(f) = file {
        let handle = stream::spawn(shared.clone(), f)
            .map_err(|e| StartError::Io(config.output.clone(), e))?;
        *lock(&shared.streamer) = Some(handle);
    }

    clock::set_use_tsc(clock.use_tsc);
    ctl.filter = match &config.categories {
        Some(list) => Filter::only(list.clone()),
        None => Filter::all(),
    };
    UNFINISHED.fetch_add(1, Ordering::Relaxed);
    ctl.current = Some(shared.clone());
    ACTIVE.store(true, Ordering::Relaxed);
    callsite::reset_all(&ctl, STALE);
    drop(ctl);

    if let Some(sig) = config.snapshot_signal {
        if let Err(e) = crate::snapshot::snapshot_on_signal(sig) {
            eprintln!("fxt: cannot install the snapshot signal {sig}: {e}");
        }
    }
    Ok(Session {
        shared: Some(shared),
        output: config.output,
        mode,
    })
}

/// Writes the calibrated ticks per second into a crash-safe file's
/// initialization record (one aligned 8-byte store: a reader of the file
/// sees the estimate or the calibrated value, both whole). Waits for the
/// calibration's minimum time if needed.
fn correct_init_record(shared: &Shared) {
    if let Some(w) = &shared.init_tps {
        w.slice(0..1)[0].store(shared.clock.ticks_per_second(), Ordering::Relaxed);
    }
}

/// [`start`] with [`Config::from_env`].
pub fn start_from_env() -> Result<Session, StartError> {
    start(Config::from_env())
}

impl Session {
    /// Stops recording, waits [`FINISH_GRACE`] for writers in flight, and
    /// writes the trace to the configured output (default `trace.fxt`).
    pub fn finish(mut self) -> Result<Stats, CollectError> {
        match self.shared.take() {
            Some(s) => finish_shared(&s, Target::Configured),
            None => Ok(Stats::default()),
        }
    }

    /// Like [`Session::finish`], to `path`. (A streaming session can only
    /// finish to its configured output. A drained oneshot session, the
    /// default, moves the file it wrote while running to `path`. A
    /// crash-safe session leaves its raw, valid file at the configured
    /// output when `path` is another file.)
    pub fn finish_to_path(mut self, path: impl AsRef<Path>) -> Result<Stats, CollectError> {
        match self.shared.take() {
            Some(s) => finish_shared(&s, Target::Path(path.as_ref())),
            None => Ok(Stats::default()),
        }
    }

    /// Like [`Session::finish`], to any writer (not for streaming sessions;
    /// a drained oneshot session, the default, reads back the file it wrote
    /// while running and removes it; a crash-safe session leaves its raw,
    /// valid file at the configured output, and `w` must not write to that
    /// file).
    pub fn finish_to_writer<W: Write>(mut self, mut w: W) -> Result<Stats, CollectError> {
        match self.shared.take() {
            Some(s) => finish_shared(&s, Target::Writer(&mut w)),
            None => Ok(Stats::default()),
        }
    }

    /// Like [`Session::finish`], into memory (not for streaming sessions).
    pub fn finish_to_vec(self) -> Result<(Vec<u8>, Stats), CollectError> {
        let mut v = Vec::new();
        let stats = self.finish_to_writer(&mut v)?;
        Ok((v, stats))
    }
}

/// Snapshots: a complete trace of everything published so far, written
/// while the session keeps recording. Writers never wait for a snapshot:
/// it copies what is published (the durable records, the large records,
/// every chunk's committed records, a chunk re-taken by a writer during
/// the copy being left out and counted in the snapshot's
/// `records_dropped`), consumes nothing, and is followed by an instant
/// event `fxt`/`snapshot` with a u64 argument `snapshot` (its number in
/// the session, from 1) right after the durable records. In circular mode
/// each snapshot holds the newest records of every thread (a flight
/// recorder). In streaming mode it holds what is still in the buffer (the
/// rest is already in the streamed file).
impl Session {
    /// Writes a snapshot next to the configured output
    /// (`trace.fxt` → `trace.snapshot-1.fxt`, `-2`, …) and returns its path.
    pub fn snapshot(&self) -> Result<(PathBuf, Stats), CollectError> {
        match &self.shared {
            Some(s) => snapshot_shared(s),
            None => Err(CollectError::NoSession),
        }
    }

    /// A snapshot to `path` (written under a temporary name, then renamed).
    pub fn snapshot_to_path(&self, path: impl AsRef<Path>) -> Result<Stats, CollectError> {
        let s = self.shared.as_ref().ok_or(CollectError::NoSession)?;
        snapshot_shared_to(s, path.as_ref())
    }

    /// A snapshot to any writer.
    pub fn snapshot_to_writer<W: Write>(&self, w: W) -> Result<Stats, CollectError> {
        let s = self.shared.as_ref().ok_or(CollectError::NoSession)?;
        let n = s.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(collect::Collector::snapshot(s, w, n)?)
    }

    /// A snapshot into memory.
    pub fn snapshot_to_vec(&self) -> Result<(Vec<u8>, Stats), CollectError> {
        let mut v = Vec::new();
        let stats = self.snapshot_to_writer(&mut v)?;
        Ok((v, stats))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(s) = self.shared.take() {
            if let Err(e) = finish_shared(&s, Target::Configured) {
                eprintln!(
                    "fxt: writing the trace to {} failed: {e}",
                    self.output.display()
                );
            }
        }
    }
}

/// Where a finished session's trace goes.
enum Target<'a> {
    Configured,
    Path(&'a Path),
    Writer(&'a mut dyn Write),
}

/// Finishes `shared` once (see the module docs): stops it, then writes its
/// trace to `target`. In a forked child, does nothing.
fn finish_shared(shared: &Arc<Shared>, target: Target<'_>) -> Result<Stats, CollectError> {
    if forked() || shared.start_pid != std::process::id() {
        return Ok(Stats::default());
    }
    let mut state = lock(&shared.finish_state);
    finish_locked(shared, &mut state, target)
}

fn finish_locked(
    shared: &Arc<Shared>,
    state: &mut Option<Stats>,
    target: Target<'_>,
) -> Result<Stats, CollectError> {
    if let Some(stats) = state.as_ref() {
        // Already finished (by the panic hook).
        return Ok(stats.clone());
    }
    stop(shared);
    let written = match &target {
        Target::Configured => Some(shared.output.clone()),
        Target::Path(p) => Some(p.to_path_buf()),
        Target::Writer(_) => None,
    };
    let result = write_out(shared, target).map(|mut stats| {
        stats.output = written;
        stats
    });
    if shared.recorded {
        if let Ok(stats) = &result {
            if let Err(e) = output::write_record_stats(&shared.output, stats) {
                eprintln!(
                    "fxt: cannot write the counts beside {}: {e}",
                    shared.output.display()
                );
            }
        }
    }
    // The trace is written: another process may take the path now.
    lock(&shared.claim).take();
    *state = Some(result.as_ref().cloned().unwrap_or_default());
    UNFINISHED.fetch_sub(1, Ordering::Relaxed);
    result
}

/// Disables the session (if it is still the live one) and waits out the
/// grace period.
fn stop(shared: &Arc<Shared>) {
    {
        let mut ctl = control();
        if ctl.current.as_ref().is_some_and(|c| Arc::ptr_eq(c, shared)) {
            ctl.current = None;
            ACTIVE.store(false, Ordering::Relaxed);
            callsite::reset_all(&ctl, 0);
        }
    }
    // The prefaulter stops within one slice.
    shared.prefault_stop.store(true, Ordering::Relaxed);
    if let Some(h) = lock(&shared.prefaulter).take() {
        let _ = h.join();
    }
    std::thread::sleep(FINISH_GRACE);
    // The calling thread may hold a chunk of this session: give it back
    // so circular/streaming bookkeeping sees it released.
    thread::detach_current(shared);
}

/// Writes the trace of a stopped session.
fn write_out(shared: &Arc<Shared>, target: Target<'_>) -> Result<Stats, CollectError> {
    if shared.mode == Mode::Streaming {
        let stats = finish_stream(shared)?;
        return match target {
            Target::Configured => Ok(stats),
            Target::Path(p) if p == shared.output => Ok(stats),
            _ => Err(CollectError::Streaming),
        };
    }
    if shared.drained.is_some() {
        // The trace is in the configured output: finish it, then put it
        // where it was asked for.
        let stats = finish_stream(shared)?;
        match target {
            Target::Configured => {}
            Target::Path(p) if same_file(p, &shared.output) => {}
            Target::Path(p) => move_file(&shared.output, p)?,
            Target::Writer(w) => {
                io::copy(&mut File::open(&shared.output)?, w)?;
                std::fs::remove_file(&shared.output)?;
            }
        }
        return Ok(stats);
    }
    match target {
        Target::Writer(w) => collect::write_trace(shared, w),
        Target::Configured => write_file(shared, &shared.output),
        Target::Path(p) => write_file(shared, p),
    }
}

/// Collects to the file `path`. When that is the crash-safe session's own
/// (mapped) file, collects to a temporary file beside it and renames it
/// over: the path holds a valid trace at every moment, and the mapping is
/// never truncated under the collector.
fn write_file(shared: &Shared, path: &Path) -> Result<Stats, CollectError> {
    if shared.crash_safe && same_file(path, &shared.output) {
        return write_renamed(path, |f| collect::write_trace(shared, f));
    }
    // No BufWriter: collection stages into its own large blocks.
    let file = File::create(path)?;
    collect::write_trace(shared, file)
}

/// Moves the file `from` to `to`: renamed, or copied and removed across
/// file systems.
fn move_file(from: &Path, to: &Path) -> io::Result<()> {
    if std::fs::rename(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)?;
    std::fs::remove_file(from)
}

/// Whether `a` and `b` name the same file (same device and inode on Unix).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => a == b,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => a == b,
        }
    }
}

fn finish_stream(shared: &Shared) -> Result<Stats, CollectError> {
    // Release pairs with the streamer's Acquire load: the writers stopped
    // (grace period) before its last pass.
    shared.stream_stop.store(true, Ordering::Release);
    let Some(handle) = lock(&shared.streamer).take() else {
        return Ok(Stats::default());
    };
    handle.thread().unpark();
    let stats = handle
        .join()
        .map_err(|_| CollectError::Io(io::Error::other("the streaming thread panicked")))?;
    Ok(stats?)
}

/// Installs a panic hook that makes sure a panic leaves the trace in the
/// configured output, then runs the hook that was installed before (which
/// prints the panic message).
///
/// * `panic = "abort"`: every panic ends the process, so the hook finishes
///   the session (writes the file) before the abort.
/// * Unwinding, on the main thread: the panic may end the process or be
///   caught (`catch_unwind` in a test harness, a request handler). The
///   hook writes a *snapshot* to the configured output and tracing goes
///   on: if the panic is caught, later records are recorded and the final
///   finish rewrites the file with everything; if it is not, the session
///   guard dropped while unwinding `main` finishes it (the file then holds
///   everything up to the panic). A crash-safe session's file is valid
///   already, and a drained or streaming session's is being written: no
///   snapshot.
/// * Unwinding, on another thread: nothing (that thread ends, the program
///   may join it; the session keeps recording).
///
/// The session's guard, dropped later, sees a session the hook finished
/// and does not write the file again. The hook skips the
/// collection rather than deadlock when the panicking thread holds fxt's
/// control lock or is itself finishing the session. Installing it twice
/// chains it twice (harmless: the session is finished once).
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        finish_on_panic();
    }));
}

fn finish_on_panic() {
    if forked() {
        return;
    }
    if !cfg!(panic = "abort") && std::thread::current().name() != Some("main") {
        return;
    }
    let shared = match CONTROL.try_lock() {
        Ok(ctl) => ctl.current.clone(),
        Err(TryLockError::Poisoned(p)) => p.into_inner().current.clone(),
        // Held, possibly by this very thread: do not wait.
        Err(TryLockError::WouldBlock) => None,
    };
    let Some(shared) = shared else {
        return;
    };
    if shared.start_pid != std::process::id() {
        return;
    }
    if !cfg!(panic = "abort") {
        if shared.crash_safe || shared.ring.is_drained() {
            return;
        }
        let n = shared.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
        match write_renamed(&shared.output, |f| {
            Ok(collect::Collector::snapshot(&shared, f, n)?)
        }) {
            Ok(stats) => eprintln!(
                "fxt: panic: snapshot written to {} ({} records, {} dropped); tracing goes on",
                shared.output.display(),
                stats.records_written,
                stats.records_dropped
            ),
            Err(e) => eprintln!(
                "fxt: panic: writing a snapshot to {} failed: {e}",
                shared.output.display()
            ),
        }
        return;
    }
    let mut state = match shared.finish_state.try_lock() {
        Ok(s) => s,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        // Being finished (possibly by this thread): nothing to add.
        Err(TryLockError::WouldBlock) => return,
    };
    match finish_locked(&shared, &mut state, Target::Configured) {
        Ok(stats) => eprintln!(
            "fxt: panic: trace written to {} ({} records, {} dropped)",
            shared.output.display(),
            stats.records_written,
            stats.records_dropped
        ),
        Err(e) => eprintln!(
            "fxt: panic: writing the trace to {} failed: {e}",
            shared.output.display()
        ),
    }
}
