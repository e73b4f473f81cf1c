//! Frames on a stream: a `u32` little-endian payload length, then the
//! payload. A length over [`MAX_MESSAGE`] is refused before anything is
//! allocated, so a peer can make the reader hold at most that much.

use std::fmt;
use std::io::{self, Read, Write};

use crate::MAX_MESSAGE;

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
    if payload.len() > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "message of {} bytes, larger than the limit of {MAX_MESSAGE}",
                payload.len()
            ),
        ));
    }
    // One write: the peer never sees a length without its payload because
    // of how this side split its writes.
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(payload);
    s.write_all(&frame)?;
    s.flush()
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
/// most `4 + MAX_MESSAGE` bytes.
#[derive(Debug, Default)]
pub struct PartialFrame {
    buf: Vec<u8>,
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
        loop {
            let want = match self.needed()? {
                0 => return Ok(Some(self.buf.split_off(4))),
                n => n,
            };
            let mut chunk = [0u8; 4096];
            let n = want.min(chunk.len());
            match s.read(&mut chunk[..n]) {
                Ok(0) if self.buf.is_empty() => return Err(FrameError::Closed),
                Ok(0) => {
                    return Err(FrameError::Truncated {
                        expected: self.buf.len() + want,
                        got: self.buf.len(),
                    })
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(FrameError::Io(e)),
            }
        }
    }

    /// Bytes still missing from the frame (0: complete).
    fn needed(&self) -> Result<usize, FrameError> {
        if self.buf.len() < 4 {
            return Ok(4 - self.buf.len());
        }
        let n = u32::from_le_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
        if n as usize > MAX_MESSAGE {
            return Err(FrameError::TooLarge(n));
        }
        Ok(4 + n as usize - self.buf.len())
    }
}
