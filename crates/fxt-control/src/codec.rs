//! The bytes of a message (the table is in the crate docs). Decoding checks
//! every length against the bytes that are there, so no input allocates
//! more than its own size, and any malformed input is a [`DecodeError`].

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crate::message::{Mode, ProviderState, ProviderStatus, Request, Response, StartRequest};

/// The protocol version this crate speaks: the first byte of every
/// payload.
pub const PROTOCOL_VERSION: u8 = 3;

/// Kind bytes. Requests have the high bit clear, responses set, so a
/// response sent where a request is expected is an unknown kind.
mod kind {
    pub const STATUS: u8 = 0x01;
    pub const START: u8 = 0x02;
    pub const STOP: u8 = 0x03;
    pub const SNAPSHOT: u8 = 0x04;
    pub const R_STATUS: u8 = 0x81;
    pub const R_STARTED: u8 = 0x82;
    pub const R_STOPPED: u8 = 0x83;
    pub const R_SNAPSHOT: u8 = 0x84;
    pub const R_ERROR: u8 = 0x85;
}

/// Provider state tags.
mod state {
    pub const DORMANT: u8 = 0;
    pub const TRACING: u8 = 1;
    pub const OWN_SESSION: u8 = 2;
}

/// Why a payload is not a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The payload has no version byte.
    Empty,
    /// The payload speaks another version of the protocol.
    Version {
        /// The version byte received.
        got: u8,
    },
    /// The kind byte names no message of this direction.
    UnknownKind(u8),
    /// The payload ends inside a field.
    Truncated,
    /// Bytes follow the last field.
    TrailingBytes(usize),
    /// A string field is not UTF-8.
    BadUtf8,
    /// A tag byte (option, provider state) has no meaning.
    BadTag(u8),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Empty => write!(f, "empty message"),
            DecodeError::Version { got } => write!(
                f,
                "protocol version {got}, this side speaks {PROTOCOL_VERSION}"
            ),
            DecodeError::UnknownKind(k) => write!(f, "unknown message kind {k:#04x}"),
            DecodeError::Truncated => write!(f, "message ends inside a field"),
            DecodeError::TrailingBytes(n) => write!(f, "{n} bytes after the message"),
            DecodeError::BadUtf8 => write!(f, "a string field is not UTF-8"),
            DecodeError::BadTag(t) => write!(f, "invalid tag byte {t:#04x}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The bytes of `r` (a frame's payload).
pub fn encode_request(r: &Request) -> Vec<u8> {
    let mut w = Writer::new();
    match r {
        Request::Status => w.u8(kind::STATUS),
        Request::Start(s) => {
            w.u8(kind::START);
            w.u64(s.window);
            w.opt_str(s.categories.as_deref());
            match s.mode {
                Some(m) => {
                    w.u8(1);
                    w.u8(mode_tag(m));
                }
                None => w.u8(0),
            }
            match s.buffer {
                Some(b) => {
                    w.u8(1);
                    w.u64(b);
                }
                None => w.u8(0),
            }
            match s.sample_hz {
                Some(hz) => {
                    w.u8(1);
                    w.u32(hz);
                }
                None => w.u8(0),
            }
            match s.alloc_sample {
                Some(bytes) => {
                    w.u8(1);
                    w.u64(bytes);
                }
                None => w.u8(0),
            }
        }
        Request::Stop { window } => {
            w.u8(kind::STOP);
            w.u64(*window);
        }
        Request::Snapshot => w.u8(kind::SNAPSHOT),
    }
    w.0
}

/// A mode's byte: its place in [`Mode::ALL`].
fn mode_tag(m: Mode) -> u8 {
    Mode::ALL.iter().position(|&x| x == m).unwrap_or(0) as u8
}

/// The bytes of `r` (a frame's payload).
pub fn encode_response(r: &Response) -> Vec<u8> {
    let mut w = Writer::new();
    match r {
        Response::Status(s) => {
            w.u8(kind::R_STATUS);
            w.u32(s.pid);
            w.str(&s.name);
            match s.state {
                ProviderState::Dormant => w.u8(state::DORMANT),
                ProviderState::Tracing { window } => {
                    w.u8(state::TRACING);
                    w.u64(window);
                }
                ProviderState::OwnSession => w.u8(state::OWN_SESSION),
            }
            w.u32(s.categories.len() as u32);
            for c in &s.categories {
                w.str(c);
            }
        }
        Response::Started => w.u8(kind::R_STARTED),
        Response::Stopped {
            records_written,
            records_dropped,
            output,
        } => {
            w.u8(kind::R_STOPPED);
            w.u64(*records_written);
            w.u64(*records_dropped);
            w.path(output);
        }
        Response::SnapshotWritten { bytes } => {
            w.u8(kind::R_SNAPSHOT);
            w.u64(*bytes);
        }
        Response::Error(e) => {
            w.u8(kind::R_ERROR);
            w.str(e);
        }
    }
    w.0
}

/// The request in `b` (a frame's payload).
pub fn decode_request(b: &[u8]) -> Result<Request, DecodeError> {
    let mut r = Reader::open(b)?;
    let req = match r.u8()? {
        kind::STATUS => Request::Status,
        kind::START => Request::Start(StartRequest {
            window: r.u64()?,
            categories: r.opt_str()?,
            mode: match r.u8()? {
                0 => None,
                1 => {
                    let t = r.u8()?;
                    Some(*Mode::ALL.get(t as usize).ok_or(DecodeError::BadTag(t))?)
                }
                t => return Err(DecodeError::BadTag(t)),
            },
            buffer: match r.u8()? {
                0 => None,
                1 => Some(r.u64()?),
                t => return Err(DecodeError::BadTag(t)),
            },
            sample_hz: match r.u8()? {
                0 => None,
                1 => Some(r.u32()?),
                t => return Err(DecodeError::BadTag(t)),
            },
            alloc_sample: match r.u8()? {
                0 => None,
                1 => Some(r.u64()?),
                t => return Err(DecodeError::BadTag(t)),
            },
        }),
        kind::STOP => Request::Stop { window: r.u64()? },
        kind::SNAPSHOT => Request::Snapshot,
        k => return Err(DecodeError::UnknownKind(k)),
    };
    r.end()?;
    Ok(req)
}

/// The response in `b` (a frame's payload).
pub fn decode_response(b: &[u8]) -> Result<Response, DecodeError> {
    let mut r = Reader::open(b)?;
    let resp = match r.u8()? {
        kind::R_STATUS => {
            let pid = r.u32()?;
            let name = r.str()?;
            let state = match r.u8()? {
                state::DORMANT => ProviderState::Dormant,
                state::TRACING => ProviderState::Tracing { window: r.u64()? },
                state::OWN_SESSION => ProviderState::OwnSession,
                t => return Err(DecodeError::BadTag(t)),
            };
            let n = r.u32()? as usize;
            // Every string takes at least its 4-byte length: a count the
            // remaining bytes cannot hold is truncated, not allocated.
            if n > r.remaining() / 4 {
                return Err(DecodeError::Truncated);
            }
            let mut categories = Vec::with_capacity(n);
            for _ in 0..n {
                categories.push(r.str()?);
            }
            Response::Status(ProviderStatus {
                pid,
                name,
                state,
                categories,
            })
        }
        kind::R_STARTED => Response::Started,
        kind::R_STOPPED => Response::Stopped {
            records_written: r.u64()?,
            records_dropped: r.u64()?,
            output: r.path()?,
        },
        kind::R_SNAPSHOT => Response::SnapshotWritten { bytes: r.u64()? },
        kind::R_ERROR => Response::Error(r.str()?),
        k => return Err(DecodeError::UnknownKind(k)),
    };
    r.end()?;
    Ok(resp)
}

struct Writer(Vec<u8>);

impl Writer {
    fn new() -> Writer {
        Writer(vec![PROTOCOL_VERSION])
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
            None => self.u8(0),
        }
    }
    fn path(&mut self, p: &std::path::Path) {
        use std::os::unix::ffi::OsStrExt;
        self.bytes(p.as_os_str().as_bytes());
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// Checks the version byte.
    fn open(b: &'a [u8]) -> Result<Reader<'a>, DecodeError> {
        match b.split_first() {
            None => Err(DecodeError::Empty),
            Some((&PROTOCOL_VERSION, rest)) => Ok(Reader(rest)),
            Some((&got, _)) => Err(DecodeError::Version { got }),
        }
    }
    fn remaining(&self) -> usize {
        self.0.len()
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.0.len() {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }
    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn str(&mut self) -> Result<String, DecodeError> {
        let b = self.bytes()?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| DecodeError::BadUtf8)
    }
    fn opt_str(&mut self) -> Result<Option<String>, DecodeError> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.str()?)),
            t => Err(DecodeError::BadTag(t)),
        }
    }
    fn path(&mut self) -> Result<PathBuf, DecodeError> {
        use std::os::unix::ffi::OsStringExt;
        Ok(PathBuf::from(OsString::from_vec(self.bytes()?.to_vec())))
    }
    fn end(&self) -> Result<(), DecodeError> {
        match self.0.len() {
            0 => Ok(()),
            n => Err(DecodeError::TrailingBytes(n)),
        }
    }
}
