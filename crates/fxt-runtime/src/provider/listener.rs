//! The provider's listener thread: accepts connections, checks each
//! peer's credentials, reads one request per connection and answers it.
//!
//! No connection can stall it: sockets are non-blocking and watched with
//! one `poll`, each connection has [`DEADLINE`] to send its request, at
//! most [`MAX_PENDING`] wait at once (a new one pushes out the oldest),
//! and each holds at most one frame ([`fxt_control::MAX_MESSAGE`]). While
//! nothing happens the thread sleeps in `poll` without a timeout.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fxt_control::{peer_allowed, peer_uid, write_frame, PartialFrame};

use super::fork::Tracked;
use super::serve::Provider;

/// How long a connection may take to send its request, and the provider
/// to write its answer.
pub(crate) const DEADLINE: Duration = Duration::from_secs(1);
/// Connections waiting for their request at once.
pub(crate) const MAX_PENDING: usize = 16;
/// Connections accepted per wake-up before the pending ones are served
/// again: a flood cannot keep the thread in `accept`.
const ACCEPT_BURST: usize = 32;
/// How long the listener stops accepting after `accept` failed for want
/// of descriptors (`EMFILE`, `ENFILE`) or memory: the connection stays in
/// the backlog and the socket stays readable, so polling it at once would
/// spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Times the listener thread woke up (for tests: a listener that spins
/// shows it here).
static WAKEUPS: AtomicU64 = AtomicU64::new(0);

/// How many times the listener woke up since the process started.
pub fn wakeups() -> u64 {
    // Relaxed: a counter read for itself.
    WAKEUPS.load(Ordering::Relaxed)
}

/// A connection waiting for its request.
struct Pending {
    stream: Tracked<UnixStream>,
    frame: PartialFrame,
    deadline: Instant,
}

/// Runs until `wake` becomes readable (a byte or its peer closed).
pub(crate) fn run(listener: Tracked<UnixListener>, wake: Tracked<UnixStream>, provider: &Provider) {
    // SAFETY: geteuid has no preconditions.
    let own = unsafe { libc::geteuid() };
    let mut pending: Vec<Pending> = Vec::with_capacity(MAX_PENDING);
    let mut paused_until: Option<Instant> = None;
    loop {
        if paused_until.is_some_and(|t| Instant::now() >= t) {
            paused_until = None;
        }
        let mut fds = Vec::with_capacity(2 + pending.len());
        fds.push(pollfd(wake.0.as_raw_fd()));
        // While accepting is paused the listener is left out (a negative
        // descriptor is ignored by poll).
        fds.push(pollfd(match paused_until {
            Some(_) => -1,
            None => listener.0.as_raw_fd(),
        }));
        fds.extend(pending.iter().map(|p| pollfd(p.stream.0.as_raw_fd())));
        let wake_at = pending.iter().map(|p| p.deadline).chain(paused_until).min();
        let timeout = match wake_at {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .as_millis()
                .clamp(1, i32::MAX as u128) as i32,
            None => -1,
        };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds, alive
        // for the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        WAKEUPS.fetch_add(1, Ordering::Relaxed);
        if rc < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // No way to wait: stop serving rather than spin.
            eprintln!(
                "fxt: the provider's poll failed: {}",
                io::Error::last_os_error()
            );
            return;
        }
        if fds[0].revents != 0 {
            return;
        }
        // Serve the ready ones, drop the expired, then accept new ones.
        let now = Instant::now();
        let ready: Vec<bool> = fds[2..].iter().map(|f| f.revents != 0).collect();
        let mut i = 0;
        pending.retain_mut(|p| {
            let keep = if ready[i] {
                progress(p, provider)
            } else {
                now < p.deadline
            };
            i += 1;
            keep
        });
        if fds[1].revents != 0 && !accept_some(&listener.0, own, &mut pending, provider) {
            paused_until = Some(Instant::now() + ACCEPT_PAUSE);
        }
    }
}

/// Accepts up to [`ACCEPT_BURST`] connections: refused peers are closed at
/// once, the others served at once when their request is already there,
/// else kept pending. Returns `false` when accepting must pause (out of
/// descriptors or memory: see [`ACCEPT_PAUSE`]).
fn accept_some(
    listener: &UnixListener,
    own: u32,
    pending: &mut Vec<Pending>,
    provider: &Provider,
) -> bool {
    for _ in 0..ACCEPT_BURST {
        let stream = match listener.accept() {
            Ok((s, _)) => Tracked::new(s),
            Err(e) => {
                return !matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                )
            }
        };
        // The kernel's word on who connected, before reading anything.
        match peer_uid(&stream.0) {
            Ok(uid) if peer_allowed(uid, own) => {}
            _ => continue,
        }
        if stream.0.set_nonblocking(true).is_err() {
            continue;
        }
        let mut p = Pending {
            stream,
            frame: PartialFrame::new(),
            deadline: Instant::now() + DEADLINE,
        };
        if !progress(&mut p, provider) {
            continue;
        }
        if pending.len() == MAX_PENDING {
            pending.remove(0);
        }
        pending.push(p);
    }
    true
}

/// Reads what the connection sent; answers once its request is complete.
/// Returns whether it is still pending.
fn progress(p: &mut Pending, provider: &Provider) -> bool {
    match p.frame.receive(&p.stream.0) {
        Ok(None) => Instant::now() < p.deadline,
        Ok(Some(payload)) => {
            let folder = p.frame.take_folder();
            answer(&mut p.stream.0, &payload, folder, provider);
            false
        }
        // Closed, truncated, oversized, failed: dropped without an answer.
        Err(_) => false,
    }
}

/// Decodes the request and writes the answer (a malformed request is
/// dropped unanswered); `folder` is the descriptor that came with it.
fn answer(
    stream: &mut UnixStream,
    payload: &[u8],
    folder: Option<std::os::fd::OwnedFd>,
    provider: &Provider,
) {
    let Ok(request) = fxt_control::decode_request(payload) else {
        return;
    };
    // The engine does not panic on a manager's settings (they are checked
    // first); should it, the listener answers and lives on.
    let response = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        provider.handle(request, folder)
    }))
    .unwrap_or_else(|_| fxt_control::Response::Error("the provider failed (a panic)".into()));
    let bytes = fxt_control::encode_response(&response);
    // A client that does not read its answer holds the thread at most
    // the write timeout.
    if stream.set_nonblocking(false).is_ok() && stream.set_write_timeout(Some(DEADLINE)).is_ok() {
        let _ = write_frame(stream, &bytes);
    }
}

fn pollfd(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}
