//! The Fuchsia Trace Format (FXT), bit-exact.
//!
//! * [`encode`]: pure, allocation-free encoders for every record and argument
//!   type of the specification. Each record knows its exact size before it is
//!   written, so a tracer can reserve space first and then write into a slice
//!   of words it owns.
//! * `decode` (feature `decode`, on by default): a reader for `&[u8]` and any [`std::io::Read`] that yields
//!   typed records with string and thread references resolved, skips what it
//!   does not know, and stops cleanly at the last well-formed record of a
//!   damaged trace.
//! * `compat` (feature `decode`): what Perfetto and Tracy would misread, drop or refuse in a
//!   trace (record framing, slice nesting, references before definitions).
//! * [`reserved`]: the reserved bits of headers, found and cleared.
//! * `retime` (feature `decode`): timestamps of encoded records rewritten in place (one time
//!   base for traces of several clocks).
//! * [`samples`]: CPU samples, module lists and symbols as blob records.
//! * [`time`]: ticks to nanoseconds, the one rule (rounding, a missing or
//!   zero clock) every reader here uses.
//!
//! A program that only writes traces (the runtime) depends on this crate
//! with `default-features = false`: the encoders, [`samples`]' layouts and
//! [`time`], without the decoder that readers need and writers would only
//! compile.
//!
//! # Words and bytes
//!
//! A record is a sequence of 64-bit words. This crate handles words as `u64`
//! values; their bytes in a file are `word.to_le_bytes()` on every host.
//! Streams (strings, blob payloads) are packed into words with
//! `u64::from_le_bytes`, so writing the words back with `to_le_bytes`
//! reproduces the stream in byte order.
//!
//! ```
//! use fxt_format::encode::{encode_to_vec, Encode, MagicNumber};
//! let words = encode_to_vec(&MagicNumber).unwrap();
//! assert_eq!(words, [0x0016_5478_4604_0010]);
//! ```
// Two audited `unsafe` blocks: `decode::record::small_str`, and the
// prefetch of `decode::reader::prefetch_ahead`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "decode")]
pub mod compat;
#[cfg(feature = "decode")]
pub mod decode;
pub mod derived;
pub mod encode;
pub mod reserved;
#[cfg(feature = "decode")]
pub mod retime;
pub mod samples;
pub mod time;
pub mod value;
