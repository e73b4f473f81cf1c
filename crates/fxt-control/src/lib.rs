//! The fxt control channel: how a trace manager (`fxt trace`) finds the
//! provider processes of its user and turns tracing on and off in them.
//!
//! A process becomes a provider with `fxt::register_provider(name)`: it
//! listens on a Unix domain socket `PID.sock` in the per-user
//! [`runtime_dir`]. A manager lists the sockets ([`discover`]) and sends
//! each provider one [`Request`] per connection ([`call`]), which the
//! provider answers with one [`Response`].
//!
//! # Frames
//!
//! Every message is one frame: a `u32` little-endian payload length, then
//! the payload. A length over [`MAX_MESSAGE`] (64 KiB) is an error
//! ([`FrameError::TooLarge`]) and the connection is dropped: a reader never
//! holds more than that for a peer.
//!
//! # Payloads (protocol version 1)
//!
//! Each payload starts with the version byte ([`PROTOCOL_VERSION`]) and a
//! kind byte; the fields follow in the order given, without padding:
//! `u32`/`u64` little-endian; `str` a `u32` byte length then UTF-8 bytes;
//! `path` a `u32` byte length then the path's bytes; `opt<T>` a byte `0`
//! (none) or `1` followed by a `T`. Bytes after the last field, an unknown
//! kind or tag, a field cut short or another version are
//! [`DecodeError`]s.
//!
//! | kind | message | fields |
//! |---|---|---|
//! | `0x01` | [`Request::Status`] | — |
//! | `0x02` | [`Request::Start`] | window `u64`, spool `path`, categories `opt<str>`, mode `opt<str>`, buffer `opt<u64>`, sample rate `opt<u32>` |
//! | `0x03` | [`Request::Stop`] | window `u64` |
//! | `0x04` | [`Request::Snapshot`] | path `path` |
//! | `0x81` | [`Response::Status`] | pid `u32`, name `str`, state (`0` dormant, `1` tracing + window `u64`, `2` own session), count `u32`, that many category `str` |
//! | `0x82` | [`Response::Started`] | — |
//! | `0x83` | [`Response::Stopped`] | records written `u64`, records dropped `u64`, output `path` |
//! | `0x84` | [`Response::SnapshotWritten`] | bytes `u64` |
//! | `0x85` | [`Response::Error`] | message `str` |
//!
//! A `Status` request is the 6 bytes `02 00 00 00 01 01`.
//!
//! A change to any message's bytes increments [`PROTOCOL_VERSION`]: a peer
//! of another version gets [`DecodeError::Version`], never a misread.
//!
//! # Security model
//!
//! * Only the provider's own user and root may talk to it. The provider
//!   reads the peer's credentials from the kernel ([`peer_uid`],
//!   `SO_PEERCRED`) on every connection before reading a byte, and closes
//!   the connection of anyone else ([`peer_allowed`]) — whatever the modes
//!   of the socket file or its directory say.
//! * The [`runtime_dir`] is created 0700 and refused unless owned by the
//!   caller and closed to others, so another user cannot plant sockets a
//!   manager would talk to.
//! * Input is bounded and checked: frames over [`MAX_MESSAGE`], truncated
//!   or malformed payloads are typed errors; decoding never allocates more
//!   than the payload's size, never panics (fuzzed:
//!   `fuzz/fuzz_targets/control_decode.rs`). The provider serves each
//!   connection under a deadline and keeps a bounded number of them
//!   pending, so a silent client or a flood of connections cannot stall or
//!   grow it.
//! * Every descriptor is close-on-exec; a forked child closes its
//!   parent's listener and is no provider until it registers itself.
#![cfg(unix)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod client;
mod codec;
mod dir;
mod frame;
mod message;
mod peer;

pub use client::{call, CallError};
pub use codec::{decode_request, decode_response, encode_request, encode_response, DecodeError};
pub use dir::{discover, runtime_dir, socket_path, ProviderEntry, RUNTIME_ENV};
pub use frame::{read_frame, write_frame, FrameError, PartialFrame};
pub use message::{ProviderState, ProviderStatus, Request, Response, StartRequest};
pub use peer::{peer_allowed, peer_uid};

/// The protocol version this crate speaks: the first byte of every
/// payload.
pub const PROTOCOL_VERSION: u8 = 1;

/// The largest payload, in bytes, either side sends or accepts.
pub const MAX_MESSAGE: usize = 64 * 1024;

#[cfg(test)]
mod tests;
