//! Streaming mode: a background thread writes released chunks to the
//! output file while the program runs, and frees them for reuse — the
//! [`Collector`]'s passes, one every [`POLL`], then a last pass over every
//! chunk when the session stops.
//!
//! Writers never wait for the streamer: a writer that finds no free chunk
//! drops its record and counts it. Chunks still owned by a thread (e.g. an
//! idle thread's partly filled chunk) are written by the last pass.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::direct::DirectFile;
use super::Collector;
use crate::state::shared::lock;
use crate::state::Shared;
use crate::stats::Stats;

/// How often the streamer looks for released chunks while writers
/// release some.
pub const POLL: Duration = Duration::from_millis(1);

/// How long the streamer waits at most: each pass that wrote nothing
/// doubles the wait after it, from [`POLL`], so that a session whose
/// writers record nothing does not wake it 1000 times a second. The
/// first chunk a writer takes while it waits this long wakes it
/// (`crate::helpers::wake`), and so does a finish (`stream_stop`) and
/// nothing else: a snapshot waits for a pass, never for a wait.
pub const IDLE_WAIT: Duration = Duration::from_millis(16);

/// Bytes a pass writes that make the streamer pass again at once.
const BUSY_PASS: u64 = 2 << 20;

/// The streaming thread's body, for `shared`, writing to `file`. It runs
/// until `shared.helpers.stream_stop` is set (by the finisher, after the
/// writers stopped), then writes what is left and returns the stats.
///
/// A pass that wrote [`BUSY_PASS`] bytes or more is followed by another at
/// once (writers are filling the ring fast: the sooner chunks are free
/// again, the fewer fresh ones they need); after a smaller pass it waits
/// [`POLL`], so that chunks go out in large writes (the CPU an `O_DIRECT`
/// write costs is mostly per call, `bench-table --sections sinks` shows
/// it by write size) and the streamer, which may share a core with a
/// writer, takes little of it; after a pass that wrote nothing, twice its
/// last wait, up to [`IDLE_WAIT`] (woken early by writers that need it).
pub(crate) fn run(shared: Arc<Shared>, file: DirectFile) -> io::Result<Stats> {
    let mut file = file;
    // Until this returns the file holds an earlier trace, whole.
    let truncated = file.truncate();
    let mut c = Collector::start_direct(&shared, file);
    // An error is the collection's first: nothing more is written,
    // finishing reports it.
    c.check(truncated);
    // Acquire pairs with the finisher's Release store: the writers it
    // stopped are done before the last pass.
    let mut wait = POLL;
    while !shared.helpers.stream_stop.load(Ordering::Acquire) {
        // A snapshot of a drained oneshot session waits for the end of the
        // pass (see `Collector::snapshot`).
        let mut drained = shared.buffers.drained.as_ref().map(lock);
        // A snapshot of a live session waits for the end of the pass too.
        let pass = lock(&shared.buffers.passes);
        let released = shared.buffers.ring.snapshot_released();
        let before = c.bytes();
        c.pass(&shared, &released, true);
        drop(pass);
        if let Some(d) = drained.as_deref_mut() {
            c.progress(d);
        }
        drop(drained);
        let wrote = c.bytes() - before;
        if wrote >= BUSY_PASS {
            continue;
        }
        wait = if wrote > 0 {
            POLL
        } else {
            (wait * 2).min(IDLE_WAIT)
        };
        if wait > POLL {
            // Unparked by a writer taking a chunk, or by the finisher.
            shared.helpers.stream_wake.park_long(wait);
        } else {
            // Unparked by the finisher.
            std::thread::park_timeout(wait);
        }
    }
    c.pass(&shared, &shared.buffers.ring.snapshot_all(), false);
    c.finish(&shared)
}
