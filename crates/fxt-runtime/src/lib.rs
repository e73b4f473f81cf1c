//! The fxt engine: sessions, clocks, interning, per-thread chunks of a
//! shared buffer, buffering modes, and collection to a Fuchsia Trace Format
//! file.
//!
//! Users normally reach this crate through `fxt`'s macros; this crate's
//! public API starts, configures and finishes sessions.
//!
//! ```no_run
//! let session = fxt_runtime::start(fxt_runtime::Config::new().output("app.fxt"))?;
//! // ... instrumented code runs ...
//! let stats = session.finish()?;
//! eprintln!("{} records, {} dropped", stats.records_written, stats.records_dropped);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Configuration
//!
//! [`Config::new`] defaults: a 64 MiB buffer, [`Mode::Oneshot`], every
//! category, output `trace.fxt`, the process name as provider name, the
//! TSC clock where it is invariant. [`Config::from_env`] reads the same
//! settings from `FXT_*` environment variables, listed with their values
//! and defaults in one table: the repository README's "Configuration"
//! section.
//!
//! # Cost
//!
//! * A disabled call site (no session, or its category off) is one relaxed
//!   load and a branch.
//! * An enabled event reads the clock, takes the call site's cached string
//!   refs and the thread's cached thread ref, reserves words in the
//!   thread's own chunk of the buffer, stores them and publishes them with
//!   one Release store. No lock, allocation or system call after a thread's
//!   first event in a session.
//!
//! # Design
//!
//! Layers, each importing only the ones below it (`docs/ARCHITECTURE.md`
//! draws them):
//!
//! 0. `memory`: heap or file-mapped words, the crash-safe store protocol
//!    (filler, body, header); `clock`, `config`, `stats`, `args`: leaves;
//!    `output`: claims on output paths and `fxt record`'s settings;
//!    `helpers`: the one place fxt's own threads are spawned; `stack`: a
//!    thread's registers and a bounded copy of its stack (CPU samples and
//!    any other record that carries a stack).
//! 1. `ring`: chunks and their states, the `Cursor` that reserves and
//!    publishes records in a leased chunk (model-checked with loom, as the
//!    hot path uses it: `RUSTFLAGS="--cfg loom" cargo test -p fxt-runtime
//!    --release --test loom`); `durable`: the string/thread/name records
//!    the ring never overwrites; `large`: records too large for a chunk.
//! 2. `state`: the process-global control state and one session's shared
//!    state; `callsite`: per-call-site cache word and registry.
//! 3. `thread`: each thread's writer and the thread-local cursor.
//! 4. `emit`: the event encoders (the hot path).
//! 5. `collect`: the one collector, used by finishing and streaming.
//! 6. `task`: futures traced as tasks (`task::traced`), their wakers, and
//!    (feature `tokio`) a Tokio runtime's hooks, through the macros' emit
//!    API (category `task`).
//! 7. `sync` (feature `sync`): `sync::Mutex`, `sync::RwLock` and `sync::Condvar`,
//!    `parking_lot`'s locks whose contended acquisitions are recorded
//!    (category `lock`) through the macros' emit API.
//! 8. `session`: the public API (start, finish, panic hook, fork).
//! 9. `provider`: a process a trace manager finds and traces on demand
//!    (`register_provider`, the control channel of `fxt-control`).
//!
//! # Buffering modes
//!
//! See [`Mode`]. Whatever the mode, [`Stats::records_dropped`] counts every
//! emitted record that is not in the file, and when it is not zero the file
//! ends with a provider event "buffer filled up".
//!
//! # Finishing
//!
//! [`Session::finish`] disables every call site, waits [`FINISH_GRACE`] for
//! writers in flight, then writes the file: magic number, provider info,
//! initialization record (ticks per second), the durable records, the large
//! records, the chunks (oldest first), and the "buffer filled up" event if
//! anything was dropped. Memory of a finished session stays valid while a
//! thread still holds it; each thread lets go on its next event or when it
//! exits.
//!
//! # Crashes, panics, fork
//!
//! * [`Config::crash_safe`] (`FXT_CRASH_SAFE=1`): the buffer is a shared
//!   mapping of the output file, which is a valid trace at every moment. A
//!   process killed with `SIGKILL` (or dying any other way) leaves a file
//!   that opens in Perfetto and decodes with `fxt_format::decode` **as it
//!   is** (no `fxt recover` needed), holding every record published before
//!   the kill, except large blobs. A normal finish rewrites it compactly.
//! * [`install_panic_hook`]: a panic that ends the process (any panic under
//!   `panic = "abort"`, a main-thread panic when unwinding) writes the
//!   trace first; the session guard then does not write it again.
//! * `fork`: the child of a process with an unfinished session records
//!   nothing, never touches the parent's buffer or file, and finishing its
//!   copy of the session does nothing (see `session`).
//! * Threads may exit mid-trace, and events emitted from thread-local
//!   destructors are recorded or dropped and counted, never a panic.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

// Each module imports only modules of lower layers (the order is in the
// crate docs above and in `tests/layers.rs`, which checks it).
pub mod alloc;
mod args;
mod callsite;
mod clock;
mod collect;
mod config;
mod durable;
mod emit;
mod helpers;
mod large;
#[cfg(loom)]
#[doc(hidden)]
pub mod memory;
#[cfg(not(loom))]
mod memory;
mod output;
#[cfg(unix)]
mod provider;
#[cfg(loom)]
#[doc(hidden)]
pub mod ring;
#[cfg(not(loom))]
mod ring;
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    path = "sample/off.rs"
)]
mod sample;
mod session;
mod snapshot;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod stack;
mod state;
mod stats;
#[cfg(feature = "sync")]
pub mod sync;
pub mod task;
mod thread;

#[doc(hidden)]
pub mod __macro_support {
    //! Re-exported from `macro_support.rs`.
    #![allow(missing_docs)]
    pub use crate::macro_support::*;
}
mod macro_support;

pub use args::{ArgScratch, CounterValue, IntoArgValue, Koid};
pub use clock::tsc_usable;
pub use collect::CollectError;
pub use config::{
    parse_size, ClockSource, Config, HelperScheduling, Mode, Prefault, DEFAULT_ALLOC_SAMPLE_BYTES,
    MAX_ALLOC_SAMPLE_BYTES, MAX_SAMPLE_HZ,
};
pub use output::RECORD_ENV;
#[doc(hidden)]
pub use provider::listener_wakeups;
#[cfg(unix)]
pub use provider::{register_provider, ProviderGuard};
pub use session::{
    disable_category, enable_category, install_panic_hook, is_enabled, start, start_from_env,
    Session, StartError, FINISH_GRACE,
};
pub use snapshot::{snapshot, snapshot_on_signal};
pub use stats::Stats;
pub use thread::set_thread_name;
