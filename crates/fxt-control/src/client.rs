//! The manager's side of a connection: one request, one response, within
//! a deadline.

use std::fmt;
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::codec::{decode_response, encode_request, DecodeError};
use crate::frame::{read_frame, send_frame, FrameError};
use crate::message::{Request, Response};
use crate::peer::peer_cred;

/// Why [`call`] got no response.
#[derive(Debug)]
pub enum CallError {
    /// No connection (no such socket, a dead provider's stale socket, a
    /// provider whose backlog is full, the timeout).
    Connect(io::Error),
    /// The process listening is not the caller's own (another user's, or
    /// not the pid its socket's name says): nothing was sent.
    Peer(String),
    /// Sending the request failed (the provider closed the connection: it
    /// refuses this user, for one).
    Send(io::Error),
    /// No complete response came (closed, timed out, oversized).
    Receive(FrameError),
    /// The response is malformed or of another protocol version.
    Decode(DecodeError),
}

impl CallError {
    /// Whether the provider process is gone: its socket refuses
    /// connections or no longer exists (a stale socket a manager may
    /// remove).
    pub fn is_stale(&self) -> bool {
        matches!(self, CallError::Connect(e)
            if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound))
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Connect(e) => write!(f, "cannot connect: {e}"),
            CallError::Peer(why) => write!(f, "not talking to it: {why}"),
            CallError::Send(e) => write!(f, "cannot send the request: {e}"),
            CallError::Receive(e) => write!(f, "no response: {e}"),
            CallError::Decode(e) => write!(f, "bad response: {e}"),
        }
    }
}

impl std::error::Error for CallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Connect(e) | CallError::Send(e) => Some(e),
            CallError::Receive(e) => Some(e),
            CallError::Decode(e) => Some(e),
            CallError::Peer(_) => None,
        }
    }
}

/// Connects to the provider listening on `socket`, checks it is the
/// caller's own process (the pid of a `PID.sock` name), sends `req` (with
/// `folder`, an open directory, for the requests that write: see
/// [`Request::needs_folder`]) and returns its response, all within
/// `timeout`: a provider that does not answer, or answers a byte at a
/// time, costs at most that long.
pub fn call(
    socket: &Path,
    req: &Request,
    folder: Option<BorrowedFd<'_>>,
    timeout: Duration,
) -> Result<Response, CallError> {
    let deadline = Instant::now() + timeout;
    let s = connect(socket, timeout).map_err(CallError::Connect)?;
    check_peer(&s, socket)?;
    s.set_write_timeout(Some(left(deadline)))
        .map_err(CallError::Send)?;
    send_frame(&s, &encode_request(req), folder).map_err(CallError::Send)?;
    let payload = read_frame(&mut Deadline { s: &s, deadline }).map_err(CallError::Receive)?;
    decode_response(&payload).map_err(CallError::Decode)
}

/// The time left until `d` (at least 1 ms: a zero timeout means none).
fn left(d: Instant) -> Duration {
    d.saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// Reads from a socket until one deadline for the whole message: each
/// read may wait only what is left, and none starts once it passed.
struct Deadline<'a> {
    s: &'a UnixStream,
    deadline: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if Instant::now() >= self.deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no whole answer in time",
            ));
        }
        self.s.set_read_timeout(Some(left(self.deadline)))?;
        match (&mut &*self.s).read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no whole answer in time",
            )),
            r => r,
        }
    }
}

/// Refuses a listener that is not the caller's own process: the kernel's
/// word (`SO_PEERCRED`) on its effective uid and, for a `PID.sock`, its
/// pid. A socket in the caller's private runtime directory is always its
/// own; this holds even if that directory were not.
fn check_peer(s: &UnixStream, socket: &Path) -> Result<(), CallError> {
    let cred = peer_cred(s).map_err(|e| CallError::Peer(format!("no credentials: {e}")))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let own = unsafe { libc::geteuid() };
    if cred.uid != own {
        return Err(CallError::Peer(format!(
            "it runs as uid {}, not {own}",
            cred.uid
        )));
    }
    let named = socket
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(crate::dir::parse_name);
    match (named, cred.pid) {
        (Some(want), Some(got)) if want != got => Err(CallError::Peer(format!(
            "pid {got} listens on the socket of pid {want}"
        ))),
        _ => Ok(()),
    }
}

/// A connection to `path`, made within `timeout` (the socket is
/// close-on-exec).
fn connect(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.set_cloexec(true)?;
    socket.connect_timeout(&SockAddr::unix(path)?, timeout)?;
    socket.set_nonblocking(false)?;
    Ok(socket.into())
}
