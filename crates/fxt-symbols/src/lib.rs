//! CPU samples in FXT traces, made readable (issue 31): which code the
//! sampled addresses belong to, their names, and packets that show them in
//! Perfetto.
//!
//! * [`process_modules`]: the executable mappings of a running process
//!   (`/proc/PID/maps`) with their files' build ids, for an `fxt.modules`
//!   record.
//! * [`Symbolizer`]: addresses to demangled Rust names (without the hash),
//!   inlined frames and file:line where debug info exists, from the
//!   binaries on this machine (`addr2line`'s loader and `object`), checked
//!   against the recorded build ids.
//! * [`perfetto`]: `PerfSample` packets with interned mappings, frames and
//!   callstacks, and the heap profile of the sampled allocations
//!   (`ProfilePacket`s), in chunks that fit `fxt.perfetto` blob records.
//! * [`appendix`]: the entry point of the runtime at collection (feature
//!   `symbolize`), of `fxt open` and of
//!   `fxt symbolize`: from a trace's samples, the records to append.
//! * [`derived`]: the records a viewer draws that the runtime does not
//!   write (a lock's `held` slices and arrows, a task's polls on its
//!   track, the heap counter of live bytes), from a trace's compact
//!   records, to append to the trace delivered to a viewer.
//! * [`scan`]: the sample, modules and symbols records of a trace, raw
//!   stacks unwound.
//! * [`unwind`]: raw stacks (registers and a copy of the stack, as the
//!   runtime's sampler records them) to frames, with the unwind tables of
//!   the files the trace's modules name (`framehop`).
//!
//! The record layouts are in [`fxt_format::samples`].

mod appendix;
pub mod derived;
mod maps;
pub mod perfetto;
mod proto;
pub mod scan;
mod symbolize;
pub mod unwind;

pub use appendix::{appendix, appendix_of_trace, names, Appendix};
pub use maps::{build_id, process_modules};
pub use scan::Request;
pub use symbolize::{unresolved_name, Symbolizer};
pub use unwind::{stack_key, unwind_samples, StackKey, StackUnwinder, Unwound};
