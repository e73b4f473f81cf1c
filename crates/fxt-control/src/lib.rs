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
//! # Payloads (protocol version 3)
//!
//! Each payload starts with the version byte ([`PROTOCOL_VERSION`]) and a
//! kind byte; the fields follow in the order given, without padding:
//! `u32`/`u64` little-endian; `str` a `u32` byte length then UTF-8 bytes;
//! `path` a `u32` byte length then the path's bytes; `opt<T>` a byte `0`
//! (none) or `1` followed by a `T`; `mode` a byte (`0` oneshot, `1`
//! circular, `2` streaming). Bytes after the last field, an unknown kind
//! or tag, a field cut short or another version are [`DecodeError`]s.
//!
//! | kind | message | fields |
//! |---|---|---|
//! | `0x01` | [`Request::Status`] | — |
//! | `0x02` | [`Request::Start`] | window `u64`, categories `opt<str>`, mode `opt<mode>`, buffer `opt<u64>`, sample rate `opt<u32>`, allocation sampling mean `opt<u64>`; + the spool folder |
//! | `0x03` | [`Request::Stop`] | window `u64` |
//! | `0x04` | [`Request::Snapshot`] | —; + the snapshot folder |
//! | `0x81` | [`Response::Status`] | pid `u32`, name `str`, state (`0` dormant, `1` tracing + window `u64`, `2` own session), count `u32`, that many category `str` |
//! | `0x82` | [`Response::Started`] | — |
//! | `0x83` | [`Response::Stopped`] | records written `u64`, records dropped `u64`, output `path` (its name in the spool) |
//! | `0x84` | [`Response::SnapshotWritten`] | bytes `u64` |
//! | `0x85` | [`Response::Error`] | message `str` |
//!
//! "+ the folder": the request's frame carries an open directory
//! descriptor (`SCM_RIGHTS`, [`send_frame`], received by
//! [`PartialFrame::receive`]): a provider writes only into that directory,
//! reached through its own descriptor, never through a name a manager
//! sends. A request without its folder is answered with an error.
//!
//! A `Status` request is the 6 bytes `02 00 00 00 03 01`.
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
//!   of the socket file or its directory say. A manager ([`call`]) checks
//!   the listener's credentials too: its own effective uid, and the pid
//!   its socket's name says ([`CallError::Peer`]).
//! * The [`runtime_dir`] is the caller's own: created 0700 and refused
//!   unless owned by the caller and closed to others; a `XDG_RUNTIME_DIR`
//!   that is not the caller's (root with another user's, as `sudo -E`
//!   leaves it; a user with root's, as `su` without `-` leaves it), or
//!   any folder above the runtime directory that another user could
//!   change, is not used: the caller's temp folder is. In a setuid, setgid or file-capability
//!   process (`AT_SECURE`) the environment is not read.
//! * Writes go through descriptors: the folders of Start and Snapshot are
//!   passed open, a provider refuses one that is not a directory or is
//!   open to other users' writes, and creates its temporary files anew
//!   (`O_EXCL | O_NOFOLLOW`), so a name planted by another user is never
//!   written through.
//! * Input is bounded and checked: frames over [`MAX_MESSAGE`], truncated
//!   or malformed payloads are typed errors; decoding never allocates more
//!   than the payload's size, never panics (fuzzed:
//!   `fuzz/fuzz_targets/control_decode.rs`); at most one descriptor comes
//!   with a frame; a Start's buffer is at most [`MAX_BUFFER`]. The provider
//!   serves each connection under a deadline and keeps a bounded number of
//!   them pending, so a silent client or a flood of connections cannot
//!   stall or grow it; a manager's call has one deadline for the whole
//!   answer, so a provider answering a byte at a time cannot stall it.
//! * Every descriptor is close-on-exec; a forked child closes its
//!   parent's listener and is no provider until it registers itself.
#![cfg(unix)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

mod ancillary;
#[cfg(feature = "client")]
mod client;
mod codec;
mod dir;
mod frame;
mod message;
mod peer;
pub mod recording;

#[cfg(feature = "client")]
pub use client::{call, CallError};
pub use codec::{
    decode_request, decode_response, encode_request, encode_response, DecodeError, PROTOCOL_VERSION,
};
pub use dir::{discover, runtime_dir, secure_process, socket_path, ProviderEntry, RUNTIME_ENV};
pub use frame::{read_frame, send_frame, write_frame, FrameError, PartialFrame, MAX_MESSAGE};
pub use message::{Mode, ProviderState, ProviderStatus, Request, Response, StartRequest};
pub use peer::{peer_allowed, peer_cred, peer_uid, PeerCred};
pub use recording::{
    check_alloc_sample, check_buffer, check_sample_hz, parse_alloc_sample, parse_buffer,
    parse_categories, parse_mode, parse_sample_hz, parse_size, RecordingOptions,
    MAX_ALLOC_SAMPLE_BYTES, MAX_BUFFER, MAX_SAMPLE_HZ, MIN_BUFFER,
};

// The tests talk to providers as a manager does (`call`); the workspace's
// tests build this crate with the `fxt` command's features.
#[cfg(all(test, feature = "client"))]
mod tests;
