//! Benchmarks of fxt against the hardware floor and other Rust tracers.
//!
//! * [`harness`]: scenarios, the [`harness::Tracer`] trait and the
//!   multi-threaded wall-clock measurement;
//! * [`floor`]: the least work that records an FXT event (clock read, one
//!   atomic reservation, word stores), with a shared or a per-thread cursor;
//! * [`adapters`]: fxt itself and fastrace, tracy-client, puffin,
//!   tracing + tracing-chrome behind the same trait;
//! * `perfetto` (feature `perfetto-sdk`): the official Perfetto SDK's
//!   in-process session and a count of the events in the trace it returns;
//! * [`lifecycle`]: `start()`/`finish()` times and the first pass over a
//!   fresh buffer, default and crash-safe;
//! * [`load`]: the CPU- and memory-heavy neighbour of the loaded latency
//!   runs;
//! * [`tracing_route`]: `tracing` call sites with each trace-file layer;
//! * [`realtime`]: the default path recorded by a real-time writer;
//! * [`sinks`]: where a trace's bytes can go (fresh memory, the page
//!   cache, `O_DIRECT`) and what each costs;
//! * [`callgrind`]: instructions counted in a child under valgrind;
//!   [`host`]: the load average every table reports and the CPU clocks;
//!   [`locks`]: the lock workloads; [`tokio_hooks`]:
//!   the empty hooks the Tokio benches compare with;
//! * [`report`]: the generated regions of `docs/PERFORMANCE.md`;
//! * the `bench-table` binary runs every cell in its own process and writes
//!   the comparison as Markdown tables into `docs/PERFORMANCE.md` (or
//!   prints them with `--stdout`); the criterion benches in `benches/`
//!   cover the same scenarios for regression tracking.
//!
//! Nothing here is published; it exists to hold the engine to its targets.

pub mod adapters;
pub mod callgrind;
pub mod checks;
pub mod floor;
pub mod harness;
pub mod host;
pub mod lifecycle;
pub mod load;
pub mod locks;
#[cfg(feature = "perfetto-sdk")]
pub mod perfetto;
pub mod reading;
pub mod realtime;
pub mod report;
pub mod sinks;
pub mod tokio_hooks;
pub mod tracing_route;
