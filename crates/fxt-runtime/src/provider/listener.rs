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
    loop {
        let mut fds = Vec::with_capacity(2 + pending.len());
        fds.push(pollfd(wake.0.as_raw_fd()));
        fds.push(pollfd(listener.0.as_raw_fd()));
        fds.extend(pending.iter().map(|p| pollfd(p.stream.0.as_raw_fd())));
        let timeout = match pending.iter().map(|p| p.deadline).min() {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .as_millis()
                .clamp(1, i32::MAX as u128) as i32,
            None => -1,
        };
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds, alive
        // for the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
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
        if fds[1].revents != 0 {
            accept_some(&listener.0, own, &mut pending, provider);
        }
    }
}

/// Accepts up to [`ACCEPT_BURST`] connections: refused peers are closed at
/// once, the others served at once when their request is already there,
/// else kept pending.
fn accept_some(listener: &UnixListener, own: u32, pending: &mut Vec<Pending>, provider: &Provider) {
    for _ in 0..ACCEPT_BURST {
        let stream = match listener.accept() {
            Ok((s, _)) => Tracked::new(s),
            // WouldBlock: none left. Other errors (a peer gone before
            // accept, out of descriptors): try again on the next wake-up.
            Err(_) => return,
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
}

/// Reads what the connection sent; answers once its request is complete.
/// Returns whether it is still pending.
fn progress(p: &mut Pending, provider: &Provider) -> bool {
    match p.frame.read_from(&mut p.stream.0) {
        Ok(None) => Instant::now() < p.deadline,
        Ok(Some(payload)) => {
            answer(&mut p.stream.0, &payload, provider);
            false
        }
        // Closed, truncated, oversized, failed: dropped without an answer.
        Err(_) => false,
    }
}

/// Decodes the request and writes the answer (a malformed request is
/// dropped unanswered).
fn answer(stream: &mut UnixStream, payload: &[u8], provider: &Provider) {
    let Ok(request) = fxt_control::decode_request(payload) else {
        return;
    };
    // The engine does not panic on a manager's settings (they are checked
    // first); should it, the listener answers and lives on.
    let response =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| provider.handle(request)))
            .unwrap_or_else(|_| {
                fxt_control::Response::Error("the provider failed (a panic)".into())
            });
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
