//! What a provider does for each request, through the session API (a
//! manager's session is recorded exactly as under `fxt record`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Mutex;

use fxt_control::{ProviderState, ProviderStatus, Request, Response, StartRequest, MAX_MESSAGE};

use crate::callsite;
use crate::collect::CollectError;
use crate::config::{Config, Mode};
use crate::output::{Recording, Settings};
use crate::session::{self, Session, StartError};
use crate::snapshot::snapshot_current_to;

/// A registered provider's state, shared by its guard and its listener.
pub(crate) struct Provider {
    pub(crate) name: String,
    /// The session a manager started.
    pub(crate) window: Mutex<Option<Window>>,
}

/// A session a manager started, with its window id and the spool folder
/// it writes into (held open until the session is finished).
pub(crate) struct Window {
    pub(crate) id: u64,
    pub(crate) session: Session,
    pub(crate) _spool: Folder,
}

/// A folder a manager handed over with its request (an open descriptor):
/// the provider writes only there, reached through the descriptor
/// (`/proc/self/fd/N`), never through a name the manager sent, so no one
/// can swap the folder or the folders above it for others.
pub(crate) struct Folder(OwnedFd);

impl Folder {
    /// Checks what came: a directory that no user but its owner can write
    /// (a spool or snapshot folder is private), reachable through
    /// `/proc/self/fd`.
    fn check(fd: Option<OwnedFd>) -> Result<Folder, String> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let fd = fd.ok_or("no folder came with the request")?;
        let meta = std::fs::File::from(fd.try_clone().map_err(|e| e.to_string())?)
            .metadata()
            .map_err(|e| format!("the folder: {e}"))?;
        if !meta.is_dir() {
            return Err("what came as the folder is not a directory".into());
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err(format!(
                "the folder is open to other users (mode {:o})",
                meta.mode() & 0o777
            ));
        }
        let folder = Folder(fd);
        if folder.path().symlink_metadata().is_err() {
            return Err("/proc/self/fd is not available".into());
        }
        Ok(folder)
    }

    /// The folder, as a path that leads through the descriptor.
    fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.0.as_raw_fd()))
    }
}

impl Provider {
    /// The answer to `request`, `folder` being the descriptor that came
    /// with it (never panics on any request).
    pub(crate) fn handle(&self, request: Request, folder: Option<OwnedFd>) -> Response {
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        match request {
            Request::Status => Response::Status(self.status(window.as_ref().map(|w| w.id))),
            Request::Start(req) => {
                if let Some(open) = window.as_ref() {
                    return Response::Error(format!("already tracing window {}", open.id));
                }
                match Folder::check(folder).and_then(|f| Ok((start(&self.name, &req, &f)?, f))) {
                    Ok((session, spool)) => {
                        *window = Some(Window {
                            id: req.window,
                            session,
                            _spool: spool,
                        });
                        Response::Started
                    }
                    Err(e) => Response::Error(e),
                }
            }
            Request::Stop { window: id } => match window.take() {
                Some(w) if w.id == id => stop(w),
                Some(other) => {
                    let open = other.id;
                    *window = Some(other);
                    Response::Error(format!("tracing window {open}, not {id}"))
                }
                None => Response::Error("not tracing".into()),
            },
            Request::Snapshot => match Folder::check(folder) {
                Ok(f) => snapshot(&f),
                Err(e) => Response::Error(e),
            },
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

/// Finishes a manager's session; the answer names the trace by its name
/// in the spool.
pub(crate) fn stop(w: Window) -> Response {
    let Window {
        session, _spool, ..
    } = w;
    // The folder stays open until the trace is written.
    let finished = session.finish();
    drop(_spool);
    match finished {
        Ok(stats) => Response::Stopped {
            records_written: stats.records_written,
            records_dropped: stats.records_dropped,
            output: stats
                .output
                .and_then(|o| o.file_name().map(PathBuf::from))
                .unwrap_or_default(),
        },
        Err(e) => Response::Error(format!("writing the trace failed: {e}")),
    }
}

/// Starts the session a manager asked for: recorded into `spool`, as
/// `fxt record` would.
fn start(name: &str, req: &StartRequest, spool: &Folder) -> Result<Session, String> {
    let mode = req.mode.map(Mode::from);
    let buffer = match req.buffer.map(fxt_control::check_buffer).transpose()? {
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
    req.sample_hz
        .map(fxt_control::check_sample_hz)
        .transpose()?;
    req.alloc_sample
        .map(fxt_control::check_alloc_sample)
        .transpose()?;
    let recording = Recording {
        spool: spool.path(),
        given: Some(Settings {
            buffer,
            mode,
            categories: req.categories.clone(),
            sample_hz: req.sample_hz,
            alloc_sample: req.alloc_sample,
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
/// program's own), as `PID.fxt` in `folder`.
fn snapshot(folder: &Folder) -> Response {
    let path = folder.path().join(format!("{}.fxt", std::process::id()));
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
