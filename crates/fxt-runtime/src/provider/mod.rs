//! The provider: a process that a trace manager (`fxt trace`)
//! can find and trace on demand, through the control channel of
//! `fxt_control`. Nothing in the engine imports this module; it drives
//! sessions through the session API.
//!
//! [`register_provider`] binds `PID.sock` in the per-user runtime
//! directory and starts one listener thread (`fxt-provider`, scheduled
//! as `FXT_HELPER_SCHED` says, by default never above normal priority
//! whatever the caller's: `crate::helpers`) that sleeps in `poll` until a
//! manager connects. While dormant nothing else exists: no buffer, and
//! call sites cost what they cost without a session (one relaxed load).
//!
//! | request | answer |
//! |---|---|
//! | `Status` | pid, name, state (dormant, tracing window N, own session), the categories of every call site that ran at least once (with or without a session) |
//! | `Start` | starts a session exactly as under `fxt record`: `SPOOL/PID.fxt`, crash-safe unless streaming, with the categories, mode and buffer asked; refused while a session runs (the program's own: "runs its own session") |
//! | `Stop` | finishes the window's session, answers its counts and file |
//! | `Snapshot` | a snapshot of the live session (the manager's or the program's own) to the path given; tracing goes on |
//!
//! Only the process's own user and root are served (`SO_PEERCRED`, checked
//! before anything is read); see `listener` for how slow, malformed and
//! flooding clients are bounded, and `fork` for what a forked child keeps.

mod fork;
mod listener;
mod serve;

use std::fmt;
use std::io::{self, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::helpers::{self, Sched};
use fork::{Tracked, PROVIDER_PID};
use serve::Provider;

pub use listener::wakeups as listener_wakeups;

/// The longest provider name kept (longer ones are cut at a character
/// boundary): a status answer must fit in one control message.
const MAX_NAME: usize = 256;

/// Makes this process a trace provider named `name` until the guard is
/// dropped: a trace manager (`fxt trace list`, `start`, `stop`,
/// `snapshot`) of the same user, or root, can then find it and record it
/// for a window, without a restart. See the module docs of
/// `fxt_control` for the protocol and its security model.
///
/// Fails in a setuid, setgid or file-capability process (`AT_SECURE`:
/// `PermissionDenied`), when the runtime directory cannot be used (not
/// private, not writable), when the socket cannot be bound or the listener thread
/// started, or when this process is a provider already
/// (`AlreadyExists`).
///
/// After `fork`, the child is not a provider (it may register itself);
/// dropping the guard it inherited does nothing.
pub fn register_provider(name: &str) -> io::Result<ProviderGuard> {
    if fxt_control::secure_process() {
        // Its user (and whoever may run it) is not who its privileges
        // are: no one may be let in to control it.
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "a setuid, setgid or file-capability process is never a trace provider",
        ));
    }
    let pid = std::process::id();
    if PROVIDER_PID
        .compare_exchange(0, pid, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "this process is a trace provider already",
        ));
    }
    fork::register_atfork();
    match listen(name, pid) {
        Ok(guard) => Ok(guard),
        Err(e) => {
            PROVIDER_PID.store(0, Ordering::Relaxed);
            Err(e)
        }
    }
}

fn listen(name: &str, pid: u32) -> io::Result<ProviderGuard> {
    let dir = fxt_control::runtime_dir()?;
    let socket = fxt_control::socket_path(&dir, pid);
    // The socket is bound under a name managers do not list, then renamed:
    // between `bind` and `listen` a connection is refused, and a manager
    // must not take a provider being born for a dead one. A leftover of
    // this pid is a dead process's (pids are reused): this process is the
    // only one that may own these names now.
    let unlisted = dir.join(format!(".{pid}.sock.new"));
    remove_if_present(&unlisted)?;
    // std opens every descriptor close-on-exec.
    let listener = Tracked::new(UnixListener::bind(&unlisted)?);
    listener.0.set_nonblocking(true)?;
    std::fs::rename(&unlisted, &socket)?;
    let (wake_tx, wake_rx) = UnixStream::pair()?;
    let wake_rx = Tracked::new(wake_rx);
    let provider = Arc::new(Provider {
        name: truncate(name, MAX_NAME).to_string(),
        window: Mutex::new(None),
    });
    let p = provider.clone();
    // The process's setting (`FXT_HELPER_SCHED`): no session, no config.
    let sched = Sched::Helper(crate::config::helper_scheduling_from_env());
    let spawned = helpers::spawn("fxt-provider", sched, move || {
        listener::run(listener, wake_rx, &p)
    });
    let thread = match spawned {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_file(&socket);
            return Err(e);
        }
    };
    Ok(ProviderGuard {
        socket,
        pid,
        wake: Some(wake_tx),
        thread: Some(thread),
        provider,
    })
}

fn remove_if_present(path: &std::path::Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// `s` cut to at most `max` bytes at a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A registered provider (see [`register_provider`]). Dropping it
/// unregisters: the listener stops, its socket is removed, and a session a
/// manager started is finished (its trace written to the spool).
#[must_use = "dropping the guard unregisters the provider at once"]
pub struct ProviderGuard {
    socket: PathBuf,
    /// The process that registered: a guard inherited by a forked child
    /// owns nothing of its parent's.
    pid: u32,
    wake: Option<UnixStream>,
    thread: Option<JoinHandle<()>>,
    provider: Arc<Provider>,
}

impl fmt::Debug for ProviderGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderGuard")
            .field("name", &self.provider.name)
            .field("socket", &self.socket)
            .finish()
    }
}

impl ProviderGuard {
    /// The socket managers reach this provider at.
    pub fn socket(&self) -> &std::path::Path {
        &self.socket
    }
}

impl Drop for ProviderGuard {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            // Inherited through fork: the listener thread and its
            // descriptors are the parent's (closed here by the fork
            // handler); the window's session is the parent's too.
            std::mem::forget(self.thread.take());
            std::mem::forget(self.provider.clone());
            return;
        }
        if let Some(mut w) = self.wake.take() {
            let _ = w.write_all(&[1]);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
        let window = self
            .provider
            .window
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(w) = window {
            if let fxt_control::Response::Error(e) = serve::stop(w) {
                eprintln!("fxt: the provider's session could not be written: {e}");
            }
        }
        PROVIDER_PID.store(0, Ordering::Relaxed);
    }
}
