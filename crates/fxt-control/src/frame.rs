//! Frames on a stream: a `u32` little-endian payload length, then the
//! payload. A length over [`MAX_MESSAGE`] is refused before anything is
//! allocated, so a peer can make the reader hold at most that much.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;

use crate::ancillary;

/// The largest payload, in bytes, either side sends or accepts.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// Why no frame was read.
#[derive(Debug)]
pub enum FrameError {
    /// The peer closed the connection before sending any byte of a frame.
    Closed,
    /// The connection ended inside the frame.
    Truncated {
        /// Bytes the frame (length field included) should have had.
        expected: usize,
        /// Bytes that came.
        got: usize,
    },
    /// The length field exceeds [`MAX_MESSAGE`].
    TooLarge(u32),
    /// Reading failed (a read timeout is `WouldBlock` or `TimedOut`).
    Io(io::Error),
}

impl FrameError {
    /// Whether the read ran out of time (the socket's read timeout).
    pub fn is_timeout(&self) -> bool {
        matches!(self, FrameError::Io(e)
            if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Closed => write!(f, "connection closed before a message"),
            FrameError::Truncated { expected, got } => write!(
                f,
                "connection closed inside a message ({got} of {expected} bytes)"
            ),
            FrameError::TooLarge(n) => write!(
                f,
                "message of {n} bytes, larger than the limit of {MAX_MESSAGE}"
            ),
            FrameError::Io(e) => write!(f, "reading a message: {e}"),
        }
    }
}

impl std::error::Error for FrameError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrameError::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Writes one frame holding `payload` (an `InvalidInput` error, nothing
/// written, when it exceeds [`MAX_MESSAGE`]). The caller sets the stream's
/// write timeout.
pub fn write_frame<W: Write + ?Sized>(s: &mut W, payload: &[u8]) -> io::Result<()> {
    // One write: the peer never sees a length without its payload because
    // of how this side split its writes.
    s.write_all(&frame_bytes(payload)?)?;
    s.flush()
}

/// Writes one frame holding `payload` to a socket, with `folder` (an open
/// directory) passed along (`SCM_RIGHTS`, with the frame's first bytes):
/// the peer gets its own descriptor of the same directory, whatever
/// happens to the names that led to it. The caller sets the write timeout.
pub fn send_frame(
    s: &UnixStream,
    payload: &[u8],
    folder: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let frame = frame_bytes(payload)?;
    let Some(folder) = folder else {
        return (&mut &*s).write_all(&frame);
    };
    let sent = ancillary::send_with_fd(s, &frame, folder)?;
    (&mut &*s).write_all(&frame[sent..])
}

/// The bytes of a frame holding `payload`.
fn frame_bytes(payload: &[u8]) -> io::Result<Vec<u8>> {
    if payload.len() > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "message of {} bytes, larger than the limit of {MAX_MESSAGE}",
                payload.len()
            ),
        ));
    }
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(payload);
    Ok(frame)
}

/// Reads one frame's payload (at most [`MAX_MESSAGE`] bytes). The caller
/// sets the stream's read timeout; without one a silent peer blocks this
/// call.
pub fn read_frame<R: Read + ?Sized>(s: &mut R) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    let got = read_full(s, &mut len)?;
    if got == 0 {
        return Err(FrameError::Closed);
    }
    if got < 4 {
        return Err(FrameError::Truncated { expected: 4, got });
    }
    let n = u32::from_le_bytes(len);
    if n as usize > MAX_MESSAGE {
        return Err(FrameError::TooLarge(n));
    }
    let mut payload = vec![0u8; n as usize];
    let got = read_full(s, &mut payload)?;
    if got < payload.len() {
        return Err(FrameError::Truncated {
            expected: 4 + payload.len(),
            got: 4 + got,
        });
    }
    Ok(payload)
}

/// Reads until `buf` is full or the stream ends; returns the bytes read.
fn read_full<R: Read + ?Sized>(s: &mut R, buf: &mut [u8]) -> Result<usize, FrameError> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(got)
}

/// A frame read in pieces from a non-blocking stream: the provider keeps
/// one per pending connection, so no connection can make it wait. Holds at
/// most `4 + MAX_MESSAGE` bytes, and at most one descriptor
/// ([`PartialFrame::receive`]).
#[derive(Debug, Default)]
pub struct PartialFrame {
    buf: Vec<u8>,
    folder: Option<OwnedFd>,
}

impl PartialFrame {
    /// An empty frame.
    pub fn new() -> PartialFrame {
        PartialFrame::default()
    }

    /// Reads what `s` has now (stopping at `WouldBlock`) and returns the
    /// payload once the frame is complete. Never reads past the frame's
    /// end. `Ok(None)`: more bytes are needed.
    pub fn read_from<R: Read + ?Sized>(
        &mut self,
        s: &mut R,
    ) -> Result<Option<Vec<u8>>, FrameError> {
        fill(&mut self.buf, |chunk| s.read(chunk))
    }

    /// As [`PartialFrame::read_from`], from a socket, also taking the
    /// descriptor sent with the frame ([`send_frame`]; kept for
    /// [`PartialFrame::take_folder`], close-on-exec). A second descriptor,
    /// or more than fit, is an error (those received are closed).
    pub fn receive(&mut self, s: &UnixStream) -> Result<Option<Vec<u8>>, FrameError> {
        let PartialFrame { buf, folder } = self;
        fill(buf, |chunk| {
            let got = ancillary::recv_with_fds(s, chunk)?;
            let too_many =
                || io::Error::new(io::ErrorKind::InvalidData, "more than one descriptor");
            if got.truncated {
                return Err(too_many());
            }
            for fd in got.fds {
                if folder.replace(fd).is_some() {
                    return Err(too_many());
                }
            }
            Ok(got.bytes)
        })
    }

    /// The descriptor that came with the frame, if any.
    pub fn take_folder(&mut self) -> Option<OwnedFd> {
        self.folder.take()
    }
}

/// Reads into `buf` (a frame's bytes so far) with `read` until the frame
/// is complete (its payload returned) or `read` would block (`None`).
/// Never reads past the frame's end.
fn fill(
    buf: &mut Vec<u8>,
    mut read: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> Result<Option<Vec<u8>>, FrameError> {
    loop {
        let want = match needed(buf)? {
            0 => return Ok(Some(buf.split_off(4))),
            n => n,
        };
        let mut chunk = [0u8; 4096];
        let n = want.min(chunk.len());
        match read(&mut chunk[..n]) {
            Ok(0) if buf.is_empty() => return Err(FrameError::Closed),
            Ok(0) => {
                return Err(FrameError::Truncated {
                    expected: buf.len() + want,
                    got: buf.len(),
                })
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
}

/// Bytes still missing from the frame in `buf` (0: complete).
fn needed(buf: &[u8]) -> Result<usize, FrameError> {
    if buf.len() < 4 {
        return Ok(4 - buf.len());
    }
    let n = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if n as usize > MAX_MESSAGE {
        return Err(FrameError::TooLarge(n));
    }
    Ok(4 + n as usize - buf.len())
}
