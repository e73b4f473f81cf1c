//! The providers of the caller's runtime directory: discovery (removing the
//! sockets of processes that are gone) and requests sent to many providers
//! at once, each on its own thread, so that one provider that does not
//! answer (stopped, hung) costs one timeout, not one per provider.

use std::io;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fxt_control::{ProviderState, ProviderStatus, Request, Response};

/// How long a provider has to answer Status.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(2);

/// A provider found in the runtime directory.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Its process.
    pub pid: u32,
    /// Its socket.
    pub socket: PathBuf,
    /// What it said of itself, or why it did not.
    pub status: Result<ProviderStatus, String>,
}

impl Provider {
    /// Its name, when it answered.
    pub fn name(&self) -> &str {
        self.status.as_ref().map(|s| s.name.as_str()).unwrap_or("?")
    }

    /// "pid 123 (name)".
    pub fn label(&self) -> String {
        format!("pid {} ({})", self.pid, self.name())
    }

    /// Whether it traces for `window`.
    pub fn in_window(&self, window: u64) -> bool {
        matches!(&self.status, Ok(s) if s.state == ProviderState::Tracing { window })
    }
}

/// Whether process `pid` exists (a process of another user counts: only
/// ESRCH means gone).
pub fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The sockets of live providers in `runtime` (the caller's own runtime
/// directory); the sockets of processes that no longer exist are removed.
pub fn discover(runtime: &Path) -> io::Result<Vec<fxt_control::ProviderEntry>> {
    let mut live = Vec::new();
    for entry in fxt_control::discover(runtime)? {
        if alive(entry.pid) {
            live.push(entry);
            continue;
        }
        // Only a socket is removed, never what a symlink points to.
        use std::os::unix::fs::FileTypeExt;
        if entry
            .socket
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_socket())
        {
            let _ = std::fs::remove_file(&entry.socket);
        }
    }
    Ok(live)
}

/// Sends `request(pid)` (with `folder`, for the requests that write) to
/// every `(pid, socket)` at once and returns the answers in the same
/// order: a provider that does not answer within `timeout` (or refuses)
/// gives an error message.
pub fn call_all(
    targets: &[(u32, PathBuf)],
    request: impl Fn(u32) -> Request + Sync,
    folder: Option<BorrowedFd<'_>>,
    timeout: Duration,
) -> Vec<Result<Response, String>> {
    std::thread::scope(|s| {
        let calls: Vec<_> = targets
            .iter()
            .map(|(pid, socket)| {
                let request = &request;
                s.spawn(move || {
                    fxt_control::call(socket, &request(*pid), folder, timeout)
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        calls
            .into_iter()
            .map(|c| {
                c.join()
                    .unwrap_or_else(|_| Err("the request thread failed".into()))
            })
            .collect()
    })
}

/// Every live provider of `runtime` with its status, by pid.
pub fn survey(runtime: &Path) -> io::Result<Vec<Provider>> {
    let entries = discover(runtime)?;
    let targets: Vec<(u32, PathBuf)> = entries.into_iter().map(|e| (e.pid, e.socket)).collect();
    let answers = call_all(&targets, |_| Request::Status, None, STATUS_TIMEOUT);
    let mut out: Vec<Provider> = targets
        .into_iter()
        .zip(answers)
        .map(|((pid, socket), answer)| Provider {
            pid,
            socket,
            status: match answer {
                Ok(Response::Status(s)) => Ok(s),
                Ok(Response::Error(e)) => Err(e),
                Ok(_) => Err("unexpected answer to Status".into()),
                Err(e) => Err(e),
            },
        })
        .collect();
    out.sort_by_key(|p| p.pid);
    Ok(out)
}

/// "pid 1 (a), pid 2 (b)".
pub fn labels<'a>(providers: impl IntoIterator<Item = &'a Provider>) -> String {
    providers
        .into_iter()
        .map(Provider::label)
        .collect::<Vec<_>>()
        .join(", ")
}
