//! Collect: writing a session's trace — the one [`Collector`],
//! used by finishing (oneshot, circular) and by the streaming thread
//! ([`stream`]).
//!
//! A trace is: magic number, provider info, initialization record, then
//! passes of (durable records appended since the last pass, large records
//! kept since the last pass, chunks oldest first), then a "buffer filled
//! up" provider event when anything was dropped. Finishing is a single
//! pass over every chunk holding data; streaming makes a pass over the
//! released chunks every millisecond while there are some, less often
//! while there are none (freeing each once written, see `stream`), and a
//! last pass over every chunk at the end.
//!
//! Why this order is valid: a pass takes the chunk states first and the
//! large records next, then reads the durable region. Every string or
//! thread a published record refers to was appended to the durable region
//! before the record was published, so it is in that read, and lands in
//! the file before the record (readers such as Perfetto resolve refs in
//! file order).

pub(crate) mod derived;
pub(crate) mod direct;
mod modules;
pub(crate) mod samples;
mod stage;
pub(crate) mod stream;

use std::fmt;
use std::io::{self, Write};

use fxt_format::encode::{encode_to_vec, Initialization, MagicNumber, ProviderEvent, ProviderInfo};

use crate::config::Mode;
use crate::memory::atomic::Ordering;
use crate::ring::ChunkSnapshot;
use crate::state::Shared;
use crate::stats::Stats;
use samples::SampleTap;
use stage::Stager;

/// Provider id written in the trace.
pub(crate) const PROVIDER_ID: u32 = 1;

/// Why collecting a session failed.
#[derive(Debug)]
pub enum CollectError {
    /// Writing the trace failed.
    Io(io::Error),
    /// A streaming session writes to its configured output while it runs;
    /// it can only be finished with [`crate::Session::finish`] (or
    /// `finish_to_path` with that same path).
    Streaming,
    /// There is no live session to snapshot.
    NoSession,
}

impl fmt::Display for CollectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectError::Io(e) => write!(f, "writing the trace failed: {e}"),
            CollectError::NoSession => write!(f, "no tracing session is live"),
            CollectError::Streaming => write!(
                f,
                "a streaming session writes to its configured output; finish it with Session::finish"
            ),
        }
    }
}

impl std::error::Error for CollectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CollectError::Io(e) => Some(e),
            CollectError::Streaming | CollectError::NoSession => None,
        }
    }
}

impl From<io::Error> for CollectError {
    fn from(e: io::Error) -> Self {
        CollectError::Io(e)
    }
}

/// The words of magic, provider info and initialization records.
pub(crate) fn preamble(provider_name: &str, ticks_per_second: u64) -> Vec<u64> {
    let mut v = Vec::new();
    v.extend(encode_to_vec(&MagicNumber).unwrap_or_default());
    v.extend(
        encode_to_vec(&ProviderInfo {
            provider_id: PROVIDER_ID,
            name: provider_name,
        })
        .unwrap_or_default(),
    );
    v.extend(encode_to_vec(&Initialization { ticks_per_second }).unwrap_or_default());
    v
}

/// Writes one session's trace to `W` (see the module docs); `'r`: the
/// session's data, which a drained session's chunks are written from.
pub(crate) struct Collector<'r, W: Write> {
    stage: Stager<'r, W>,
    /// Words of the durable region already written.
    durable_pos: usize,
    /// Records of the durable region already written.
    durable_records: u64,
    /// Emitted records (chunks, large records) written.
    emitted: u64,
    /// Records not in the file although they were in the buffer: chunks
    /// re-taken by a writer while read (circular), or freed unwritten
    /// after an I/O error (streaming).
    lost: u64,
    /// The first I/O error; from then on nothing more is written.
    error: Option<io::Error>,
    ticks_per_second: u64,
    /// A snapshot of a live session: its number, until the marker event
    /// is written (see [`Collector::snapshot`]).
    snapshot: Option<u64>,
    /// The session is live: chunks are copied aside and validated.
    live: bool,
    /// A drained session's file: the byte offset of the initialization
    /// record's ticks per second, written with an estimate and corrected
    /// when the session finishes.
    tps_offset: Option<u64>,
    /// A sampling session's samples, for the appendix [`Collector::finish`]
    /// writes (see [`samples`]).
    tap: Option<SampleTap>,
}

/// The writer every collection goes through (a caller's file or writer,
/// or nothing for a drained session, which writes its own file): one
/// instance of the collector's code for all of them (staging writes whole
/// blocks, so the indirect call costs nothing measurable), which keeps the
/// runtime's compile time and size down in every program that traces.
pub(crate) type Out<'w> = Box<dyn Write + 'w>;

impl<'r> Collector<'r, Out<'static>> {
    /// Starts a drained session's trace in `file` (see [`direct`]). The
    /// preamble goes out at once, with the clock's rate estimated (the
    /// calibration needs the session's length; [`Collector::finish`]
    /// corrects it in place).
    pub(crate) fn start_direct(shared: &Shared, file: direct::DirectFile) -> Self {
        let tps = shared.clock.provisional_ticks_per_second();
        let mut c = Collector::resume(Stager::direct(file), 0, 0, tps);
        c.tap = shared.settings.records_stacks().then(SampleTap::default);
        let pre = preamble(&shared.settings.provider_name, tps);
        c.tps_offset = Some((pre.len() as u64 - 1) * 8);
        let r = c.stage.words(&pre, 3);
        c.check(r);
        c
    }

    /// Bytes written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.stage.bytes
    }

    /// What the streamer of a drained oneshot session has written so far
    /// (called between passes, with `shared.drained` locked).
    pub(crate) fn progress(&self, d: &mut crate::state::shared::Drained) {
        d.bytes = self.stage.bytes;
        d.records = self.stage.records;
        d.fillers = self.stage.fillers;
        d.emitted = self.emitted;
        d.durable_pos = self.durable_pos;
        d.durable_records = self.durable_records;
        d.tps_offset = self.tps_offset.unwrap_or(0);
    }
}

impl<'r, W: Write> Collector<'r, W> {
    /// Starts the trace: writes the preamble (waiting for the clock's
    /// calibration, if it is not done yet).
    pub(crate) fn start(shared: &Shared, out: W) -> Self {
        Collector::start_staged(shared, Stager::new(out))
    }

    fn start_staged(shared: &Shared, stage: Stager<'r, W>) -> Self {
        let ticks_per_second = shared.clock.ticks_per_second();
        let mut c = Collector::resume(stage, 0, 0, ticks_per_second);
        c.tap = shared.settings.records_stacks().then(SampleTap::default);
        let pre = preamble(&shared.settings.provider_name, ticks_per_second);
        let r = c.stage.words(&pre, 3);
        c.check(r);
        c
    }

    /// A collector whose output already holds the preamble and the durable
    /// region up to `durable_pos` words (`durable_records` records).
    fn resume(
        stage: Stager<'r, W>,
        durable_pos: usize,
        durable_records: u64,
        ticks_per_second: u64,
    ) -> Self {
        Collector {
            stage,
            durable_pos,
            durable_records,
            emitted: 0,
            lost: 0,
            error: None,
            ticks_per_second,
            snapshot: None,
            live: false,
            tps_offset: None,
            tap: None,
        }
    }

    fn check(&mut self, r: io::Result<()>) -> bool {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
        self.error.is_none()
    }

    /// One pass over `chunks` (snapshots the caller took just before):
    /// new durable records, new large records, the chunks. With `free`,
    /// each chunk is freed for reuse once copied (streaming).
    pub(crate) fn pass(&mut self, shared: &'r Shared, chunks: &[ChunkSnapshot], free: bool) {
        let large = match self.snapshot {
            Some(_) => shared.buffers.large.copy(),
            None => shared.buffers.large.take(),
        };
        if self.error.is_none() {
            let (from, prev) = (self.durable_pos, self.durable_records);
            let stage = &mut self.stage;
            let (len, r) = shared.buffers.durable.read_from(from, |words, records| {
                stage.words(words, records - prev).map(|_| records)
            });
            match r {
                Ok(records) => {
                    self.durable_pos = len;
                    self.durable_records = records;
                }
                Err(e) => self.error = Some(e),
            }
        }
        if let Some(n) = self.snapshot.take() {
            // Right after the durable records, once (see `snapshot`).
            let marker = snapshot_marker(shared, n);
            let r = self.stage.words(&marker, 1);
            self.check(r);
        }
        for record in &large {
            if let Some(tap) = &mut self.tap {
                tap.scan(&record.words);
            }
            if self.error.is_none() {
                let r = self.stage.words(&record.words, record.records);
                if self.check(r) {
                    self.emitted += 1;
                    continue;
                }
            }
            self.lost += 1;
        }
        let mut copy = Vec::new();
        if self.live {
            // A live session's writers re-take chunks oldest first: copy
            // newest first, so that what a snapshot loses to them is, as a
            // rule, each thread's oldest data rather than a chunk between
            // two kept ones. (Not always: a writer preempted between its
            // sequence number and its claim lets later ones overwrite
            // newer chunks first. Every chunk lost is counted.)
            for snap in chunks.iter().rev() {
                self.chunk(shared, snap, &mut copy);
            }
        } else {
            for snap in chunks {
                self.chunk(shared, snap, &mut copy);
            }
        }
        if self.error.is_none() {
            let r = self.stage.flush();
            self.check(r);
        }
        // Only now: a drained session's chunks were written from the ring.
        if free {
            for snap in chunks {
                shared.buffers.ring.free(snap);
            }
        }
    }

    /// Copies one chunk's published records (or, for a drained session's
    /// released chunk, queues it to be written from the ring).
    fn chunk(&mut self, shared: &'r Shared, snap: &ChunkSnapshot, copy: &mut Vec<u64>) {
        if snap.words == 0 {
            return;
        }
        if self.error.is_some() {
            self.lost += snap.records;
            return;
        }
        let ring = &shared.buffers.ring;
        if !self.live && ring.is_drained() && snap.state & 3 == crate::ring::RELEASED {
            // Released, not freed: no writer stores into it until we free
            // it after the write (`pass`).
            let whole = ring.chunk_words_of(snap);
            if self.stage.queue_chunk(whole, snap.words, snap.records) {
                // Read in place, not copied: the words stay as they are
                // until the chunk is freed.
                if let Some(tap) = &mut self.tap {
                    tap.scan_atomic(ring.chunk_data(snap));
                }
                self.emitted += snap.records;
                return;
            }
        }
        let data = ring.chunk_data(snap);
        // A writer may re-acquire the chunk while we copy: circular mode
        // when finishing, every mode in a snapshot of a live session.
        let r = if ring.mode() == Mode::Circular || self.live {
            // Copy aside, then check (seqlock read side, `Ring::validate`).
            copy.clear();
            copy.extend(data.iter().map(|w| w.load(Ordering::Relaxed)));
            if !ring.validate(snap) {
                self.lost += snap.records;
                return;
            }
            if let Some(tap) = &mut self.tap {
                tap.scan(copy);
            }
            self.stage.words(copy, snap.records)
        } else {
            if let Some(tap) = &mut self.tap {
                tap.scan_atomic(data);
            }
            self.stage.atomic_words(data, snap.records)
        };
        if self.check(r) {
            self.emitted += snap.records;
        } else {
            self.lost += snap.records;
        }
    }

    /// Ends the trace: the CPU samples' appendix if the session sampled,
    /// the "buffer filled up" event if anything was dropped, then flushes.
    pub(crate) fn finish(mut self, shared: &Shared) -> io::Result<Stats> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        // A drained session's file says the rate measured now. Measured
        // once: each measure differs, and the appendix's Perfetto packets
        // must be stamped at the rate the file says, or they drift from
        // the samples as the session's length grows.
        if self.tps_offset.is_some() && self.stage.direct_file().is_some() {
            self.ticks_per_second = shared.clock.ticks_per_second();
        }
        if let Some(tap) = self.tap.take() {
            // Before the appendix: how the samples were taken, so that a
            // reader turns their counts into CPU time.
            let counts = &shared.sampled_threads;
            let taken = crate::sample::counts();
            let mut words = Vec::new();
            let sampling = fxt_format::samples::Sampling {
                pid: shared.settings.pid,
                hz: u64::from(shared.settings.sample_hz),
                perf_threads: counts[0].load(Ordering::Relaxed),
                timer_threads: counts[1].load(Ordering::Relaxed),
                samples: taken.taken.saturating_sub(taken.dropped),
                merged_periods: taken.merged_periods,
            };
            if sampling.hz > 0 && sampling.encode_records(&mut words).is_ok() {
                self.stage.words(&words, 1)?;
            }
            // Last but the "buffer filled up" event: every sample is in.
            let pid = shared.settings.pid;
            let thread = fxt_format::encode::ThreadRef::Inline {
                process: pid,
                thread: crate::thread::os_tid(),
            };
            let now = crate::clock::read(shared.clock.use_tsc);
            let words = tap.appendix(pid, now, thread, self.ticks_per_second);
            self.stage
                .words(&words, samples::records(&words).len() as u64)?;
        }
        let dropped = shared.dropped() + self.lost;
        if dropped > 0 {
            let filled = encode_to_vec(&ProviderEvent {
                provider_id: PROVIDER_ID,
                event: ProviderEvent::BUFFER_FILLED,
            })
            .unwrap_or_default();
            self.stage.words(&filled, 1)?;
        }
        if let (Some(offset), Some(file)) = (self.tps_offset, self.stage.direct_file()) {
            file.patch_u64(offset, self.ticks_per_second)?;
        }
        let fillers = self.stage.fillers;
        let (_, bytes, records) = self.stage.finish()?;
        Ok(Stats {
            records_written: records,
            emitted_records_written: self.emitted,
            records_dropped: dropped,
            limit_reached: shared.buffers.ring.limit_reached(),
            bytes_written: bytes,
            durable_records: self.durable_records,
            filler_records: fillers,
            buffer_bytes_touched: shared.buffers.ring.leased_frontier() as u64 * 8,
            threads: shared.thread_count(),
            samples: 0,
            alloc_samples: 0,
            alloc_untracked: 0,
            ticks_per_second: self.ticks_per_second,
            late_records_dropped: crate::state::control::LATE.swap(0, Ordering::Relaxed),
            helper_sched_failures: crate::helpers::take_sched_failures(),
            output: None,
        })
    }
}

impl<'r, 'w> Collector<'r, Out<'w>> {
    /// A snapshot of a live session, number `n`: one pass over every chunk
    /// holding data without consuming anything (large records are copied,
    /// chunks copied aside and validated, nothing freed), with a marker
    /// event after the durable records.
    pub(crate) fn snapshot(shared: &'r Shared, mut out: Out<'w>, n: u64) -> io::Result<Stats> {
        // A drained oneshot session: its file so far, then what is in
        // memory. The lock keeps the streamer between two passes, so no
        // chunk is written out (and freed) meanwhile — also while nothing
        // is written yet and the snapshot is taken from memory alone.
        let drained = shared
            .buffers
            .drained
            .as_ref()
            .map(crate::state::shared::lock);
        if let Some(d) = drained.as_deref() {
            if d.bytes > 0 {
                let tps = shared.clock.ticks_per_second();
                direct::copy_prefix(&d.file, d.bytes, (d.tps_offset, tps), &mut out)?;
                let stage = Stager::new(out).counted(d.bytes, d.records, d.fillers);
                let mut c = Collector::resume(stage, d.durable_pos, d.durable_records, tps);
                c.emitted = d.emitted;
                c.snapshot = Some(n);
                c.live = true;
                c.pass(shared, &shared.buffers.ring.snapshot_all(), false);
                return c.finish(shared);
            }
        }
        let mut c = Collector::start(shared, out);
        c.snapshot = Some(n);
        c.live = true;
        // Between two of the streamer's passes (`Buffers::passes`).
        let _pass = crate::state::shared::lock(&shared.buffers.passes);
        let chunks = shared.buffers.ring.snapshot_all();
        c.pass(shared, &chunks, false);
        c.finish(shared)
    }
}

/// Category, name and argument of the event that says a file is a
/// snapshot (instant `fxt`/`snapshot`, u64 argument `snapshot` = its
/// number in the session, from 1), right after the durable records.
pub const SNAPSHOT_MARKER: (&str, &str, &str) = ("fxt", "snapshot", "snapshot");

fn snapshot_marker(shared: &Shared, n: u64) -> Vec<u64> {
    use fxt_format::encode::{Arg, ArgValue, Event, EventKind, StringRef, ThreadRef};
    let (category, name, key) = SNAPSHOT_MARKER;
    encode_to_vec(&Event {
        kind: EventKind::Instant,
        timestamp: crate::clock::read(shared.clock.use_tsc),
        thread: ThreadRef::Inline {
            process: shared.settings.pid,
            thread: crate::thread::os_tid(),
        },
        category: StringRef::Inline(category),
        name: StringRef::Inline(name),
        args: &[Arg::new(StringRef::Inline(key), ArgValue::U64(n))],
    })
    .unwrap_or_default()
}

/// Writes the whole trace of a stopped (oneshot or circular) session.
pub(crate) fn write_trace(shared: &Shared, out: Out<'_>) -> Result<Stats, CollectError> {
    let mut c = Collector::start(shared, out);
    let chunks = shared.buffers.ring.snapshot_all();
    c.pass(shared, &chunks, false);
    Ok(c.finish(shared)?)
}
