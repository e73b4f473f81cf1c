//! Recording process trees: what `fxt record` runs around the traced
//! command, kept below the commands so that any command collecting the
//! traces of running processes reuses it.
//!
//! * [`spool`]: the private folder where every traced process writes its
//!   own crash-safe trace;
//! * [`timebase`]: the anchors that put every process's clock on
//!   `CLOCK_MONOTONIC_RAW` nanoseconds;
//! * [`sched`] (Linux) and [`capture`]: the kernel's scheduling of the
//!   traced processes;
//! * [`collect`]: a spool's traces (and the scheduling) merged into one
//!   archive.

pub mod capture;
pub mod collect;
pub mod options;
#[cfg(target_os = "linux")]
pub mod sched;
pub mod spool;
pub mod timebase;
