//! CPU samples where they are not implemented (not Linux x86-64): a
//! session with `Config::sample_hz` records no sample.

use crate::callsite::{GEN_MASK, INLINE};
use crate::ring::Cursor;

/// See the Linux module.
pub(crate) fn sample_token(generation: u32) -> u32 {
    (INLINE | (generation as u64 & GEN_MASK)) as u32
}

/// See the Linux module.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) taken: u64,
    pub(crate) dropped: u64,
    pub(crate) merged_periods: u64,
}

pub(crate) fn start(_generation: u32, _use_tsc: bool, _crash_safe: bool, _pid: u64) {}

pub(crate) fn stop(_generation: u32) -> Option<Counts> {
    None
}

pub(crate) fn counts() -> Counts {
    Counts::default()
}

/// See the Linux module.
pub(crate) type Refill = fn(usize) -> bool;

pub(crate) fn arm_thread(
    _: &'static Cursor,
    _tid: u64,
    _generation: u32,
    _hz: u32,
    _refill: Refill,
) -> Option<()> {
    None
}

pub(crate) fn disarm_thread() {}
