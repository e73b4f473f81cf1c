//! What a provider does for each request, through the session API (a
//! manager's session is recorded exactly as under `fxt record`).

use std::path::PathBuf;
use std::sync::Mutex;

use fxt_control::{ProviderState, ProviderStatus, Request, Response, StartRequest, MAX_MESSAGE};

use crate::callsite;
use crate::collect::CollectError;
use crate::config::{Config, Mode, MAX_SAMPLE_HZ};
use crate::output::{Recording, Settings};
use crate::session::{self, Session, StartError};
use crate::snapshot::snapshot_current_to;

/// A registered provider's state, shared by its guard and its listener.
pub(crate) struct Provider {
    pub(crate) name: String,
    /// The session a manager started, with its window id.
    pub(crate) window: Mutex<Option<(u64, Session)>>,
}

impl Provider {
    /// The answer to `request` (never panics on any request).
    pub(crate) fn handle(&self, request: Request) -> Response {
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        match request {
            Request::Status => Response::Status(self.status(window.as_ref().map(|w| w.0))),
            Request::Start(req) => {
                if let Some((open, _)) = window.as_ref() {
                    return Response::Error(format!("already tracing window {open}"));
                }
                match start(&self.name, &req) {
                    Ok(s) => {
                        *window = Some((req.window, s));
                        Response::Started
                    }
                    Err(e) => Response::Error(e),
                }
            }
            Request::Stop { window: id } => match window.take() {
                Some((open, s)) if open == id => match s.finish() {
                    Ok(stats) => Response::Stopped {
                        records_written: stats.records_written,
                        records_dropped: stats.records_dropped,
                        output: stats.output.unwrap_or_default(),
                    },
                    Err(e) => Response::Error(format!("writing the trace failed: {e}")),
                },
                Some(other) => {
                    let open = other.0;
                    *window = Some(other);
                    Response::Error(format!("tracing window {open}, not {id}"))
                }
                None => Response::Error("not tracing".into()),
            },
            Request::Snapshot { path } => snapshot(path),
        }
    }

    /// The status, `window` being the manager's open window.
    fn status(&self, window: Option<u64>) -> ProviderStatus {
        let state = match window {
            Some(window) => ProviderState::Tracing { window },
            None if session::is_enabled() => ProviderState::OwnSession,
            None => ProviderState::Dormant,
        };
        let mut status = ProviderStatus {
            pid: std::process::id(),
            name: self.name.clone(),
            state,
            categories: callsite::registered_categories()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        };
        // The answer must fit in one frame: past that, categories are left
        // out (the list is sorted, so the first ones stay).
        let mut size = fxt_control::encode_response(&Response::Status(status.clone())).len();
        while size > MAX_MESSAGE {
            match status.categories.pop() {
                Some(c) => size -= 4 + c.len(),
                None => break,
            }
        }
        status
    }
}

/// Starts the session a manager asked for: recorded into its spool, as
/// `fxt record` would.
fn start(name: &str, req: &StartRequest) -> Result<Session, String> {
    let mode = match req.mode.as_deref() {
        None => None,
        Some(m) => Some(Mode::parse(m).ok_or_else(|| format!("unknown mode {m:?}"))?),
    };
    let buffer = match req.buffer {
        None => None,
        // A buffer the machine cannot hold would fail to map (a panic in
        // the engine): refused here instead.
        Some(b) if b > physical_memory() => {
            return Err(format!(
                "a buffer of {b} bytes is larger than this machine's memory"
            ))
        }
        Some(b) => Some(b as usize),
    };
    if let Some(hz) = req.sample_hz.filter(|&hz| hz > MAX_SAMPLE_HZ) {
        return Err(format!(
            "a sampling rate of {hz} Hz is over the limit ({MAX_SAMPLE_HZ} Hz)"
        ));
    }
    let recording = Recording {
        spool: req.spool.clone(),
        given: Some(Settings {
            buffer,
            mode,
            categories: req.categories.clone(),
            sample_hz: req.sample_hz,
        }),
    };
    let mut config = Config::new();
    config.provider_name = Some(name.to_string());
    // Its helpers are scheduled as the process's own would be.
    config.helper_scheduling = crate::config::helper_scheduling_from_env();
    session::start_recording(config, Some(recording)).map_err(|e| match e {
        StartError::AlreadyRunning => "runs its own session".to_string(),
        e => e.to_string(),
    })
}

/// A snapshot of whatever session is live (the manager's or the
/// program's own).
fn snapshot(path: PathBuf) -> Response {
    match snapshot_current_to(&path) {
        Ok(_) => match std::fs::metadata(&path) {
            Ok(m) => Response::SnapshotWritten { bytes: m.len() },
            Err(e) => Response::Error(format!("{}: {e}", path.display())),
        },
        Err(CollectError::NoSession) => Response::Error("no session is running".into()),
        Err(e) => Response::Error(format!("snapshot failed: {e}")),
    }
}

/// The machine's memory in bytes (`u64::MAX` when unknown).
fn physical_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || size <= 0 {
        return u64::MAX;
    }
    (pages as u64).saturating_mul(size as u64)
}
