//! Scheduling records (record type 8). Bits `[60 .. 63]` select the kind,
//! which also covers the older revisions' layout of record type 8 (the legacy
//! context switch, kind 0).
//!
//! | bits | context switch (1) | thread wakeup (2) | legacy context switch (0) |
//! |---|---|---|---|
//! | `[0 .. 3]` | 8 | 8 | 8 |
//! | `[4 .. 15]` | size | size | size |
//! | `[16 .. 19]` | argument count | argument count | `[16 .. 23]` cpu |
//! | `[20 .. 35]` | cpu | cpu | `[24 .. 27]` outgoing state, `[28 .. 35]` outgoing thread ref |
//! | `[36 .. 39]` | outgoing thread state | 0 | `[36 .. 43]` incoming thread ref |
//! | `[40 .. 59]` | 0 | 0 | `[44 .. 51]` outgoing priority, `[52 .. 59]` incoming priority |
//! | `[60 .. 63]` | 1 | 2 | 0 |
//!
//! Context switch: timestamp, outgoing thread koid, incoming thread koid,
//! arguments. Thread wakeup: timestamp, waking thread koid, arguments. Legacy:
//! timestamp, then outgoing process and thread koids (inline outgoing ref
//! only) and incoming process and thread koids (inline incoming ref only).

use super::args::Arg;
use super::header::{self, record_type};
use super::refs::ThreadRef;
use super::{args_words, check_record_words, write_args, Encode, EncodeError, WordWriter};

/// Zircon thread states (`ZX_THREAD_STATE_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// 0
    New,
    /// 1
    Running,
    /// 2
    Suspended,
    /// 3
    Blocked,
    /// 4
    Dying,
    /// 5
    Dead,
    /// Any other 4-bit value.
    Other(u8),
}

impl ThreadState {
    /// The 4-bit field value.
    pub const fn value(self) -> u8 {
        match self {
            Self::New => 0,
            Self::Running => 1,
            Self::Suspended => 2,
            Self::Blocked => 3,
            Self::Dying => 4,
            Self::Dead => 5,
            Self::Other(v) => v,
        }
    }

    /// The state for a field value.
    pub const fn from_value(v: u8) -> Self {
        match v {
            0 => Self::New,
            1 => Self::Running,
            2 => Self::Suspended,
            3 => Self::Blocked,
            4 => Self::Dying,
            5 => Self::Dead,
            v => Self::Other(v),
        }
    }
}

const fn sched_kind(kind: u64) -> u64 {
    kind << 60
}

fn state_field(state: ThreadState) -> Result<u64, EncodeError> {
    let v = state.value();
    if v > 0xf {
        Err(EncodeError::FieldOverflow("thread state"))
    } else {
        Ok(v as u64)
    }
}

/// The layout scheduling kinds 1 and 2 share: a header with the argument
/// count, the CPU, the outgoing thread state (context switch only) and the
/// kind; then the timestamp, `N` thread koids and the arguments.
struct KindRecord<'a, const N: usize> {
    kind: u64,
    cpu: u16,
    outgoing_state: Option<ThreadState>,
    timestamp: u64,
    koids: [u64; N],
    args: &'a [Arg<'a>],
}

impl<const N: usize> KindRecord<'_, N> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        check_record_words(2 + N + args_words(self.args)?)
    }

    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        let state = match self.outgoing_state {
            Some(state) => state_field(state)? << 36,
            None => 0,
        };
        w.word(
            header::record(record_type::SCHEDULING, words)
                | ((self.args.len() as u64) << 16)
                | ((self.cpu as u64) << 20)
                | state
                | sched_kind(self.kind),
        )?;
        w.word(self.timestamp)?;
        for koid in self.koids {
            w.word(koid)?;
        }
        write_args(&mut w, self.args)?;
        Ok(words)
    }
}

/// A context switch on a CPU (scheduling kind 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextSwitch<'a> {
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// CPU number (16 bits).
    pub cpu: u16,
    /// New state of the outgoing thread.
    pub outgoing_state: ThreadState,
    /// Outgoing thread koid.
    pub outgoing_thread: u64,
    /// Incoming thread koid.
    pub incoming_thread: u64,
    /// Up to 15 arguments (by convention `incoming_weight`, `outgoing_weight`).
    pub args: &'a [Arg<'a>],
}

impl ContextSwitch<'_> {
    fn record(&self) -> KindRecord<'_, 2> {
        KindRecord {
            kind: 1,
            cpu: self.cpu,
            outgoing_state: Some(self.outgoing_state),
            timestamp: self.timestamp,
            koids: [self.outgoing_thread, self.incoming_thread],
            args: self.args,
        }
    }
}

impl Encode for ContextSwitch<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        self.record().word_len()
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        self.record().encode(out)
    }
}

/// A thread woken up on a CPU (scheduling kind 2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThreadWakeup<'a> {
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// CPU number (16 bits).
    pub cpu: u16,
    /// Waking thread koid.
    pub waking_thread: u64,
    /// Up to 15 arguments (by convention `weight`).
    pub args: &'a [Arg<'a>],
}

impl ThreadWakeup<'_> {
    fn record(&self) -> KindRecord<'_, 1> {
        KindRecord {
            kind: 2,
            cpu: self.cpu,
            outgoing_state: None,
            timestamp: self.timestamp,
            koids: [self.waking_thread],
            args: self.args,
        }
    }
}

impl Encode for ThreadWakeup<'_> {
    fn word_len(&self) -> Result<usize, EncodeError> {
        self.record().word_len()
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        self.record().encode(out)
    }
}

/// The legacy context switch record (scheduling kind 0, and record type 8 of
/// older revisions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyContextSwitch {
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// CPU number (8 bits).
    pub cpu: u8,
    /// New state of the outgoing thread (not "running").
    pub outgoing_state: ThreadState,
    /// Outgoing thread.
    pub outgoing_thread: ThreadRef,
    /// Incoming thread.
    pub incoming_thread: ThreadRef,
    /// Outgoing thread priority.
    pub outgoing_priority: u8,
    /// Incoming thread priority.
    pub incoming_priority: u8,
}

impl Encode for LegacyContextSwitch {
    fn word_len(&self) -> Result<usize, EncodeError> {
        Ok(2 + self.outgoing_thread.inline_words() + self.incoming_thread.inline_words())
    }
    fn encode(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        w.word(
            header::record(record_type::SCHEDULING, words)
                | ((self.cpu as u64) << 16)
                | (state_field(self.outgoing_state)? << 24)
                | ((self.outgoing_thread.encoded()? as u64) << 28)
                | ((self.incoming_thread.encoded()? as u64) << 36)
                | ((self.outgoing_priority as u64) << 44)
                | ((self.incoming_priority as u64) << 52)
                | sched_kind(0),
        )?;
        w.word(self.timestamp)?;
        self.outgoing_thread.write_inline(&mut w)?;
        self.incoming_thread.write_inline(&mut w)?;
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encode_to_vec;

    #[test]
    fn a_state_wider_than_four_bits_is_refused() {
        let switch = ContextSwitch {
            timestamp: 1,
            cpu: 0,
            outgoing_state: ThreadState::Other(0x10),
            outgoing_thread: 2,
            incoming_thread: 3,
            args: &[],
        };
        assert_eq!(
            encode_to_vec(&switch),
            Err(EncodeError::FieldOverflow("thread state"))
        );
        // The widest state that fits lands in bits 36..39 and nowhere else.
        let switch = ContextSwitch {
            outgoing_state: ThreadState::Other(0xf),
            ..switch
        };
        assert_eq!(
            encode_to_vec(&switch).unwrap(),
            [0x1000_00f0_0000_0048, 1, 2, 3]
        );
    }

    #[test]
    fn a_short_buffer_is_refused_before_anything_is_written() {
        let wakeup = ThreadWakeup {
            timestamp: 1,
            cpu: 7,
            waking_thread: 2,
            args: &[],
        };
        let mut out = [0u64; 2];
        assert_eq!(
            wakeup.encode(&mut out),
            Err(EncodeError::BufferTooSmall {
                needed: 3,
                available: 2
            })
        );
        assert_eq!(out, [0, 0]);
    }
}
