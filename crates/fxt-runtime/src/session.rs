//! Sessions: starting, the process-global control state, stopping and
//! collecting.

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::buffer::{Ring, RingMode};
use crate::callsite::{self, STALE};
use crate::clock::{self, Clock};
use crate::collect::{self, Stats};
use crate::config::{
    ClockSource, Config, Mode, DEFAULT_CHUNK_SIZE, MIN_BUFFER_SIZE, MIN_CHUNK_SIZE,
};
use crate::intern::Durable;
use crate::stream;
use crate::thread;

/// How long [`Session::finish`] waits, after disabling every call site, for
/// writers that were already past their call site check to publish their
/// record. An event whose writer is preempted for longer than this between
/// its call-site check and its publication is not in the file (and, because
/// detecting it would cost the hot path a fence, not counted as dropped).
pub const FINISH_GRACE: Duration = Duration::from_millis(2);

/// Provider id written in the trace.
pub(crate) const PROVIDER_ID: u32 = 1;

/// Categories on or off.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    /// `true`: every category not in `disabled`.
    all: bool,
    enabled: Vec<String>,
    disabled: Vec<String>,
}

impl Filter {
    const fn all() -> Filter {
        Filter {
            all: true,
            enabled: Vec::new(),
            disabled: Vec::new(),
        }
    }

    pub(crate) fn enabled(&self, category: &str) -> bool {
        if self.disabled.iter().any(|c| c == category) {
            return false;
        }
        self.all || self.enabled.iter().any(|c| c == category)
    }

    fn enable(&mut self, category: &str) {
        self.disabled.retain(|c| c != category);
        if !self.enabled.iter().any(|c| c == category) {
            self.enabled.push(category.to_string());
        }
    }

    fn disable(&mut self, category: &str) {
        self.enabled.retain(|c| c != category);
        if !self.disabled.iter().any(|c| c == category) {
            self.disabled.push(category.to_string());
        }
    }
}

/// Process-global control state, behind [`control`]. Only slow paths take
/// the lock: call site registration, a thread's first event in a session,
/// start/stop, category changes.
#[derive(Debug)]
pub(crate) struct Control {
    pub(crate) current: Option<Arc<Shared>>,
    pub(crate) filter: Filter,
    last_gen: u32,
}

static CONTROL: Mutex<Control> = Mutex::new(Control {
    current: None,
    filter: Filter::all(),
    last_gen: 0,
});

/// Whether a session is live (for [`crate::is_enabled`]).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Locks the control state (poisoning ignored: every critical section
/// leaves it consistent).
pub(crate) fn control() -> MutexGuard<'static, Control> {
    CONTROL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The live session, if any.
pub(crate) fn current() -> Option<Arc<Shared>> {
    control().current.clone()
}

/// Whether a tracing session is live.
pub fn is_enabled() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Turns a category on (in the live session; [`start`] resets the set from
/// its [`Config`]). Every call site of the category sees the change on its
/// next use.
pub fn enable_category(name: &str) {
    let mut ctl = control();
    ctl.filter.enable(name);
    if ctl.current.is_some() {
        callsite::reset_all(&ctl, STALE);
    }
}

/// Turns a category off (see [`enable_category`]).
pub fn disable_category(name: &str) {
    let mut ctl = control();
    ctl.filter.disable(name);
    if ctl.current.is_some() {
        callsite::reset_all(&ctl, STALE);
    }
}

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

/// Everything a session's writers, streamer and collector share. Writers
/// hold it through an `Arc`, so its memory outlives the session for as long
/// as a thread still holds it.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) gen: u32,
    pub(crate) ring: Ring,
    pub(crate) durable: Durable,
    pub(crate) clock: Clock,
    pub(crate) pid: u64,
    pub(crate) provider_name: String,
    pub(crate) threads: Mutex<Vec<Arc<ThreadCounters>>>,
    /// Records dropped where no thread state could count them (thread-local
    /// state already destroyed).
    pub(crate) orphan_dropped: AtomicU64,
    /// Tells the streamer to stop.
    pub(crate) stream_stop: AtomicBool,
}

impl Shared {
    /// Sum of every drop counter.
    pub(crate) fn dropped(&self) -> u64 {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads
            .iter()
            .map(|t| t.dropped.load(Ordering::Relaxed))
            .sum::<u64>()
            + self.orphan_dropped.load(Ordering::Relaxed)
    }
}

/// Why [`start`] failed.
#[derive(Debug)]
pub enum StartError {
    /// Another session is live; finish it first.
    AlreadyRunning,
    /// Streaming mode could not create its output file.
    Io(PathBuf, io::Error),
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::AlreadyRunning => write!(f, "a tracing session is already running"),
            StartError::Io(p, e) => write!(f, "cannot create {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Io(_, e) => Some(e),
            StartError::AlreadyRunning => None,
        }
    }
}

/// Why collecting a session failed.
#[derive(Debug)]
pub enum CollectError {
    /// Writing the trace failed.
    Io(io::Error),
    /// A streaming session writes to its configured output while it runs;
    /// it can only be finished with [`Session::finish`] (or
    /// `finish_to_path` with that same path).
    Streaming,
}

impl fmt::Display for CollectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectError::Io(e) => write!(f, "writing the trace failed: {e}"),
            CollectError::Streaming => write!(
                f,
                "a streaming session writes to its configured output; finish it with Session::finish"
            ),
        }
    }
}

impl std::error::Error for CollectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CollectError::Io(e) => Some(e),
            CollectError::Streaming => None,
        }
    }
}

impl From<io::Error> for CollectError {
    fn from(e: io::Error) -> Self {
        CollectError::Io(e)
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
    streamer: Option<JoinHandle<stream::Streamed>>,
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

/// Starts a tracing session. Only one session can be live at a time.
pub fn start(config: Config) -> Result<Session, StartError> {
    let mut ctl = control();
    if ctl.current.is_some() {
        return Err(StartError::AlreadyRunning);
    }

    // Sizes: the durable region takes ~1/16 of the buffer, the ring the rest.
    let buffer = config.buffer_size.max(MIN_BUFFER_SIZE);
    let durable_bytes = (buffer / 16).clamp(64 << 10, 16 << 20);
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
    let chunks = (ring_bytes / chunk).max(1);
    let mode = config.mode;
    let ring_mode = match mode {
        Mode::Oneshot => RingMode::Oneshot,
        Mode::Circular => RingMode::Circular,
        Mode::Streaming => RingMode::Streaming,
    };

    let mut file = None;
    if mode == Mode::Streaming {
        match File::create(&config.output) {
            Ok(f) => file = Some(f),
            Err(e) => return Err(StartError::Io(config.output.clone(), e)),
        }
    }

    ctl.last_gen = if ctl.last_gen as u64 >= callsite::GEN_MASK {
        1
    } else {
        ctl.last_gen + 1
    };
    let gen = ctl.last_gen;
    let clock = Clock::start(config.clock == ClockSource::Auto, mode == Mode::Streaming);
    let pid = std::process::id() as u64;
    let pname = process_name();
    let shared = Arc::new(Shared {
        gen,
        ring: Ring::new(ring_mode, chunks, chunk / 8),
        durable: Durable::new(durable_bytes / 8),
        clock,
        pid,
        provider_name: config
            .provider_name
            .clone()
            .unwrap_or_else(|| pname.clone()),
        threads: Mutex::new(Vec::new()),
        orphan_dropped: AtomicU64::new(0),
        stream_stop: AtomicBool::new(false),
    });
    shared.durable.name_process(pid, &pname);

    let streamer = file.map(|f| stream::spawn(shared.clone(), f));

    clock::set_use_tsc(clock.use_tsc);
    ctl.filter = Filter::all();
    if let Some(list) = &config.categories {
        ctl.filter.all = false;
        ctl.filter.enabled = list.clone();
    }
    ctl.current = Some(shared.clone());
    ACTIVE.store(true, Ordering::Relaxed);
    callsite::reset_all(&ctl, STALE);
    drop(ctl);

    Ok(Session {
        shared: Some(shared),
        output: config.output,
        mode,
        streamer,
    })
}

/// [`start`] with [`Config::from_env`].
pub fn start_from_env() -> Result<Session, StartError> {
    start(Config::from_env())
}

impl Session {
    /// Stops recording, waits [`FINISH_GRACE`] for writers in flight, and
    /// writes the trace to the configured output (default `trace.fxt`).
    pub fn finish(mut self) -> Result<Stats, CollectError> {
        let path = self.output.clone();
        self.finish_path(&path)
    }

    /// Like [`Session::finish`], to `path`. (A streaming session can only
    /// finish to its configured output.)
    pub fn finish_to_path(mut self, path: impl AsRef<Path>) -> Result<Stats, CollectError> {
        self.finish_path(path.as_ref())
    }

    /// Like [`Session::finish`], to any writer (not for streaming sessions).
    pub fn finish_to_writer<W: Write>(mut self, mut w: W) -> Result<Stats, CollectError> {
        if self.mode == Mode::Streaming {
            self.finish_path(&self.output.clone())?;
            return Err(CollectError::Streaming);
        }
        let shared = self.stop();
        match shared {
            Some(s) => collect::write_trace(&s, &mut w),
            None => Ok(Stats::default()),
        }
    }

    /// Like [`Session::finish`], into memory (not for streaming sessions).
    pub fn finish_to_vec(self) -> Result<(Vec<u8>, Stats), CollectError> {
        let mut v = Vec::new();
        let stats = self.finish_to_writer(&mut v)?;
        Ok((v, stats))
    }

    fn finish_path(&mut self, path: &Path) -> Result<Stats, CollectError> {
        if self.mode == Mode::Streaming {
            let same = path == self.output;
            let stats = self.finish_stream()?;
            return if same {
                Ok(stats)
            } else {
                Err(CollectError::Streaming)
            };
        }
        let Some(shared) = self.stop() else {
            return Ok(Stats::default());
        };
        // No BufWriter: collection stages into its own large blocks.
        let file = File::create(path)?;
        collect::write_trace(&shared, file)
    }

    fn finish_stream(&mut self) -> Result<Stats, CollectError> {
        let Some(shared) = self.stop() else {
            return Ok(Stats::default());
        };
        shared.stream_stop.store(true, Ordering::Release);
        let Some(handle) = self.streamer.take() else {
            return Ok(Stats::default());
        };
        handle.thread().unpark();
        let streamed = handle
            .join()
            .map_err(|_| CollectError::Io(io::Error::other("the streaming thread panicked")))?;
        stream::finish(&shared, streamed)
    }

    /// Disables the session and waits out the grace period. `None` when
    /// already stopped.
    fn stop(&mut self) -> Option<Arc<Shared>> {
        let shared = self.shared.take()?;
        {
            let mut ctl = control();
            if ctl
                .current
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(c, &shared))
            {
                ctl.current = None;
                ACTIVE.store(false, Ordering::Relaxed);
                callsite::reset_all(&ctl, 0);
            }
        }
        std::thread::sleep(FINISH_GRACE);
        // The calling thread may hold a chunk of this session: give it back
        // so circular/streaming bookkeeping sees it released.
        thread::detach_current(&shared);
        Some(shared)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.shared.is_some() {
            let path = self.output.clone();
            if let Err(e) = self.finish_path(&path) {
                eprintln!("fxt: writing the trace to {} failed: {e}", path.display());
            }
        }
    }
}
