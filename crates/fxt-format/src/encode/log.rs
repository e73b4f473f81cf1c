//! Log records (record type 9).
//!
//! _header word_
//!
//! | bits | field |
//! |---|---|
//! | `[0 .. 3]` | 9 |
//! | `[4 .. 15]` | size in words |
//! | `[16 .. 30]` | message length in bytes |
//! | `[31]` | 0 |
//! | `[32 .. 39]` | thread (thread ref) |
//! | `[40 .. 63]` | 0 |
//!
//! then the timestamp word, the process and thread koid words (inline thread
//! only), and the message stream.

use super::header::{self, record_type};
use super::refs::ThreadRef;
use super::stream::{stream_words, truncate_str};
use super::{check_record_words, Encode, EncodeError, WordWriter};

/// A log message at a moment on a thread. The message is cut to 32000 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Log<'a> {
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// Thread that logged.
    pub thread: ThreadRef,
    /// The message.
    pub message: &'a str,
}

impl Encode for Log<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_record_words(
            2 + self.thread.inline_words() + stream_words(truncate_str(self.message).len()),
        )
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let message = truncate_str(self.message).as_bytes();
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::LOG, words)
                | ((message.len() as u64) << 16)
                | ((self.thread.encoded()? as u64) << 32),
        )?;
        w.word(self.timestamp)?;
        self.thread.write_inline(&mut w)?;
        w.stream(message)?;
        Ok(words)
    }
}
