//! The session: the public API on top of the engine — starting,
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

mod start;

pub use start::start;
pub(crate) use start::start_recording;

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, TryLockError};
use std::time::Duration;

use crate::callsite::{self, STALE};
use crate::collect::{self, CollectError};
use crate::config::{Config, Mode};
use crate::output;
use crate::sample;
use crate::snapshot::{snapshot_shared, snapshot_shared_to, write_renamed};
use crate::state::control::{ACTIVE, CONTROL, FORKED, UNFINISHED};
use crate::state::shared::lock;
use crate::state::{changed, control, forked, retired, Shared};
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

/// Registers [`atfork_child`] (atomic loads and stores only), once.
fn register_atfork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    crate::state::fork::on_fork_child(&ONCE, atfork_child, "a forked child may write to the trace");
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
    drop(ctl);
    changed();
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
    drop(ctl);
    changed();
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
        // A drained session's file had them already.
        let stats = collect::derived::append_to_vec(&mut v).count_in(stats);
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
        let mut w = w;
        Ok(collect::Collector::snapshot(s, Box::new(&mut w), n)?)
    }

    /// A snapshot into memory.
    pub fn snapshot_to_vec(&self) -> Result<(Vec<u8>, Stats), CollectError> {
        let mut v = Vec::new();
        let stats = self.snapshot_to_writer(&mut v)?;
        let stats = collect::derived::append_to_vec(&mut v).count_in(stats);
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
    if forked() || shared.settings.start_pid != std::process::id() {
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
    let (samples, allocs) = stop(shared);
    let written = match &target {
        Target::Configured => Some(shared.settings.output.clone()),
        Target::Path(p) => Some(p.to_path_buf()),
        Target::Writer(_) => None,
    };
    let result = write_out(shared, target).map(|mut stats| {
        stats.output = written;
        stats.samples = samples;
        stats.alloc_samples = allocs.taken;
        stats.alloc_untracked = allocs.untracked;
        stats
    });
    if shared.settings.recorded {
        if let Ok(stats) = &result {
            if let Err(e) = output::write_record_stats(&shared.settings.output, stats) {
                eprintln!(
                    "fxt: cannot write the counts beside {}: {e}",
                    shared.settings.output.display()
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
/// grace period. Returns the CPU samples taken and what allocation
/// sampling did (their drops are counted with the session's).
fn stop(shared: &Arc<Shared>) -> (u64, crate::alloc::Counts) {
    let mut samples = None;
    let mut allocs = false;
    {
        let mut ctl = control();
        if ctl.current.as_ref().is_some_and(|c| Arc::ptr_eq(c, shared)) {
            ctl.current = None;
            // Listed before another session can start: a thread that
            // leaves this one from an allocation hook (once the next has
            // started) abandons its reference to it there.
            retired::stopped(shared);
            ACTIVE.store(false, Ordering::Relaxed);
            callsite::reset_all(&ctl, 0);
            samples = sample::stop(shared.generation);
            allocs = crate::alloc::stop(shared.generation);
        }
    }
    changed();
    // The prefaulter stops within one slice (woken if it waits ahead of
    // the writers).
    shared.helpers.prefault_stop.store(true, Ordering::Relaxed);
    if let Some(h) = lock(&shared.helpers.prefaulter).take() {
        h.thread().unpark();
        let _ = h.join();
    }
    std::thread::sleep(FINISH_GRACE);
    // The calling thread may hold a chunk of this session: give it back
    // so circular/streaming bookkeeping sees it released.
    thread::detach_current(shared);
    // After the grace period: a handler that was writing has finished.
    let samples = samples.map(|_| sample::counts()).unwrap_or_default();
    let allocs = if allocs {
        crate::alloc::counts()
    } else {
        crate::alloc::Counts::default()
    };
    shared
        .orphan_dropped
        .fetch_add(samples.dropped + allocs.dropped, Ordering::Relaxed);
    // Earlier sessions whose last references hooks gave up are freed.
    retired::release_abandoned();
    (samples.taken, allocs)
}

/// Writes the trace of a stopped session.
fn write_out(shared: &Arc<Shared>, target: Target<'_>) -> Result<Stats, CollectError> {
    if shared.settings.mode == Mode::Streaming {
        let stats = finish_stream(shared)?;
        return match target {
            Target::Configured => Ok(derived_in_output(shared, stats)),
            Target::Path(p) if p == shared.settings.output => Ok(derived_in_output(shared, stats)),
            _ => Err(CollectError::Streaming),
        };
    }
    if shared.buffers.drained.is_some() {
        // The trace is in the configured output: finish it (its derived
        // records too, as it is read back anyway when copied to a
        // writer), then put it where it was asked for.
        let stats = derived_in_output(shared, finish_stream(shared)?);
        match target {
            Target::Configured => {}
            Target::Path(p) if same_file(p, &shared.settings.output) => {}
            Target::Path(p) => move_file(&shared.settings.output, p)?,
            Target::Writer(w) => {
                io::copy(&mut File::open(&shared.settings.output)?, w)?;
                std::fs::remove_file(&shared.settings.output)?;
            }
        }
        return Ok(stats);
    }
    match target {
        Target::Writer(w) => collect::write_trace(shared, Box::new(w)),
        Target::Configured => write_file(shared, &shared.settings.output),
        Target::Path(p) => write_file(shared, p),
    }
}

/// Collects to the file `path`. When that is the crash-safe session's own
/// (mapped) file, collects to a temporary file beside it and renames it
/// over: the path holds a valid trace at every moment, and the mapping is
/// never truncated under the collector.
fn write_file(shared: &Shared, path: &Path) -> Result<Stats, CollectError> {
    if shared.settings.crash_safe && same_file(path, &shared.settings.output) {
        return write_renamed(path, |f| collect::write_trace(shared, Box::new(f)));
    }
    // No BufWriter: collection stages into its own large blocks.
    let file = File::create(path)?;
    let stats = collect::write_trace(shared, Box::new(file))?;
    Ok(collect::derived::append_to_file(path).count_in(stats))
}

/// `stats` of the trace the session wrote to its configured output, with
/// its derived records appended there (feature `symbolize`,
/// [`collect::derived`]).
fn derived_in_output(shared: &Shared, stats: Stats) -> Stats {
    collect::derived::append_to_file(&shared.settings.output).count_in(stats)
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
    shared.helpers.stream_stop.store(true, Ordering::Release);
    let Some(handle) = lock(&shared.helpers.streamer).take() else {
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
    if shared.settings.start_pid != std::process::id() {
        return;
    }
    if !cfg!(panic = "abort") {
        if shared.settings.crash_safe || shared.buffers.ring.is_drained() {
            return;
        }
        let n = shared.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
        match write_renamed(&shared.settings.output, |f| {
            Ok(collect::Collector::snapshot(&shared, Box::new(f), n)?)
        }) {
            Ok(stats) => eprintln!(
                "fxt: panic: snapshot written to {} ({} records, {} dropped); tracing goes on",
                shared.settings.output.display(),
                stats.records_written,
                stats.records_dropped
            ),
            Err(e) => eprintln!(
                "fxt: panic: writing a snapshot to {} failed: {e}",
                shared.settings.output.display()
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
            shared.settings.output.display(),
            stats.records_written,
            stats.records_dropped
        ),
        Err(e) => eprintln!(
            "fxt: panic: writing the trace to {} failed: {e}",
            shared.settings.output.display()
        ),
    }
}
