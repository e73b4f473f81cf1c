//! fxt itself, in oneshot, circular or streaming mode, with the default
//! configuration or with [`Config::prefault`] (every page of the buffer
//! touched synchronously in `start()`).
//!
//! The session starts when the adapter is built and is collected by
//! [`Tracer::finish`] (untimed): oneshot and circular collect into
//! `io::sink()`, streaming writes its file (removed afterwards). The buffer
//! sizes are chosen so that what is timed is the recording path:
//!
//! * oneshot: [`ONESHOT_BUFFER`] (256 MiB) holds 4 threads x 1M counters
//!   (40 bytes each) without filling, so no event takes the drop path; the
//!   pages are touched for the first time while recording, as in real use;
//! * circular: [`CIRCULAR_BUFFER`] (8 MiB) wraps many times, so most events
//!   land in chunks that are reused (the steady state of a flight recorder);
//! * streaming: [`STREAMING_BUFFER`] (64 MiB) drained to a file by the
//!   runtime's streaming thread while recording.
//!
//! [`Scenario::Disabled`] disables the benchmark's category in the live
//! session (the call site's cached word is 0, exactly as with no session).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;

use fxt::{Config, Mode, Session};

use crate::harness::{time_each, Scenario, Tracer};

/// Category of every benchmark call site.
pub const CATEGORY: &str = "bench";
/// Oneshot buffer size.
pub const ONESHOT_BUFFER: usize = 256 << 20;
/// Circular buffer size.
pub const CIRCULAR_BUFFER: usize = 8 << 20;
/// Streaming buffer size.
pub const STREAMING_BUFFER: usize = 64 << 20;

/// The fxt adapter: one live session.
#[derive(Debug)]
pub struct Fxt {
    name: &'static str,
    mode: Mode,
    session: Mutex<Option<Session>>,
    /// A streaming output to remove after collection.
    scratch: Option<PathBuf>,
}

impl Fxt {
    /// Starts a session in `mode` with the adapter's buffer size for it
    /// (streaming: to a temporary file removed when the adapter finishes).
    pub fn new(mode: Mode) -> Fxt {
        Fxt::with_buffer(mode, default_buffer(mode))
    }

    /// Starts a session in `mode` with a buffer of `bytes` (streaming: to a
    /// temporary file removed when the adapter finishes).
    pub fn with_buffer(mode: Mode, bytes: usize) -> Fxt {
        Fxt::configured(Config::new().mode(mode).buffer_size(bytes))
    }

    /// Starts a session with `config` (its mode and buffer size; streaming
    /// and crash-safe sessions write to a temporary file removed when the
    /// adapter finishes).
    pub fn configured(config: Config) -> Fxt {
        let scratch = std::env::temp_dir().join(format!("fxt-bench-{}.fxt", std::process::id()));
        let mut fxt = Fxt::build(config.output(&scratch));
        fxt.scratch = Some(scratch);
        fxt
    }

    /// Starts a session in `mode` with the adapter's buffer size for it,
    /// streaming to `path` (which is kept; `/dev/null` works).
    pub fn with_output(mode: Mode, path: impl Into<PathBuf>) -> Fxt {
        Fxt::build(
            Config::new()
                .mode(mode)
                .buffer_size(default_buffer(mode))
                .output(path.into()),
        )
    }

    fn build(config: Config) -> Fxt {
        let mode = config.get_mode();
        let name = match mode {
            Mode::Oneshot => "fxt",
            Mode::Circular => "fxt-circular",
            Mode::Streaming => "fxt-streaming",
        };
        let session = fxt::start(config).expect("start an fxt session");
        Fxt {
            name,
            mode,
            session: Mutex::new(Some(session)),
            scratch: None,
        }
    }

    /// Renames the adapter (the table column), e.g. `fxt-prefault`.
    pub fn named(mut self, name: &'static str) -> Fxt {
        self.name = name;
        self
    }

    /// Takes the live session out of the adapter (to collect it yourself).
    pub fn take_session(&self) -> Option<Session> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// The buffer size the adapter uses for `mode`.
pub fn default_buffer(mode: Mode) -> usize {
    match mode {
        Mode::Oneshot => ONESHOT_BUFFER,
        Mode::Circular => CIRCULAR_BUFFER,
        Mode::Streaming => STREAMING_BUFFER,
    }
}

#[fxt::trace_duration(category = "bench")]
#[inline(never)]
fn traced_fn() {
    black_box(());
}

#[inline(never)]
fn guarded_fn() {
    let _scope = fxt::trace_duration_scope!("bench", "guard");
    black_box(());
}

impl Tracer for Fxt {
    fn name(&self) -> &'static str {
        self.name
    }

    fn supports(&self, _scenario: Scenario) -> bool {
        true
    }

    fn prepare(&self, scenario: Scenario) {
        if scenario == Scenario::Disabled {
            fxt::disable_category(CATEGORY);
        } else {
            fxt::enable_category(CATEGORY);
        }
    }

    fn run(&self, scenario: Scenario, events: u64) {
        match scenario {
            Scenario::Instant => (0..events).for_each(|_| fxt::trace_instant!("bench", "instant")),
            Scenario::InstantArg => (0..events)
                .for_each(|i| fxt::trace_instant!("bench", "instant", "value" => black_box(i))),
            Scenario::Counter => (0..events).for_each(
                |i| fxt::trace_counter!("bench", "counter", "series" => black_box(i as i64)),
            ),
            Scenario::DurationAttr => (0..events).for_each(|_| traced_fn()),
            Scenario::DurationGuard => (0..events).for_each(|_| guarded_fn()),
            Scenario::Disabled => (0..events).for_each(|_| fxt::trace_instant!("bench", "off")),
        }
    }

    fn run_timed(&self, scenario: Scenario, out: &mut [u64]) -> bool {
        match scenario {
            Scenario::Instant => time_each(out, |_| fxt::trace_instant!("bench", "instant")),
            Scenario::InstantArg => time_each(
                out,
                |i| fxt::trace_instant!("bench", "instant", "value" => black_box(i)),
            ),
            Scenario::Counter => time_each(
                out,
                |i| fxt::trace_counter!("bench", "counter", "series" => black_box(i as i64)),
            ),
            Scenario::DurationAttr => time_each(out, |_| traced_fn()),
            Scenario::DurationGuard => time_each(out, |_| guarded_fn()),
            Scenario::Disabled => time_each(out, |_| fxt::trace_instant!("bench", "off")),
        }
        true
    }

    fn finish(&self) -> String {
        let Some(session) = self.take_session() else {
            return String::new();
        };
        let streaming = self.mode == Mode::Streaming;
        let stats = if streaming {
            session.finish()
        } else {
            session.finish_to_writer(std::io::sink())
        }
        .expect("collect the fxt session");
        if let Some(path) = &self.scratch {
            let _ = std::fs::remove_file(path);
        }
        if stats.records_dropped > 0 {
            format!(
                "{} of {} records {}",
                stats.records_dropped,
                stats.records_dropped + stats.records_written,
                if self.mode == Mode::Circular {
                    "overwritten (circular)"
                } else {
                    "dropped"
                }
            )
        } else {
            String::new()
        }
    }
}

impl Drop for Fxt {
    fn drop(&mut self) {
        // Collect (to a sink) rather than let the session write its default
        // output file.
        self.finish();
    }
}
