//! The manager's side of a connection: one request, one response, within
//! a deadline.

use std::fmt;
use std::io;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::codec::{decode_response, encode_request, DecodeError};
use crate::frame::{read_frame, write_frame, FrameError};
use crate::message::{Request, Response};

/// Why [`call`] got no response.
#[derive(Debug)]
pub enum CallError {
    /// No connection (no such socket, a dead provider's stale socket, a
    /// provider whose backlog is full, the timeout).
    Connect(io::Error),
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
        }
    }
}

/// Connects to the provider listening on `socket`, sends `req` and returns
/// its response, all within `timeout` (a provider that does not answer —
/// stopped, busy — costs at most that long).
pub fn call(socket: &Path, req: &Request, timeout: Duration) -> Result<Response, CallError> {
    let deadline = Instant::now() + timeout;
    let mut s = connect(socket, timeout).map_err(CallError::Connect)?;
    let left = |d: Instant| {
        d.saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    s.set_write_timeout(Some(left(deadline)))
        .map_err(CallError::Send)?;
    write_frame(&mut s, &encode_request(req)).map_err(CallError::Send)?;
    s.set_read_timeout(Some(left(deadline)))
        .map_err(|e| CallError::Receive(FrameError::Io(e)))?;
    let payload = read_frame(&mut s).map_err(CallError::Receive)?;
    decode_response(&payload).map_err(CallError::Decode)
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
