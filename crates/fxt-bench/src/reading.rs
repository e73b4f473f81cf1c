//! The reading side's benchmark: traces of a given size written with the
//! encoder (instants, duration begin/end and complete events with
//! arguments, counters; several threads interleaved), and the resource use
//! of one child process (CPU seconds, wall time, peak memory) as `wait4`
//! reports it.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fxt_format::encode::{
    write_record, Arg, ArgValue, Encode, Event, EventKind, Initialization, MagicNumber,
    ProviderInfo, StringRecord, StringRef, ThreadRecord, ThreadRef,
};

/// Threads the generated trace interleaves.
pub const THREADS: u8 = 8;

/// String-table indices of the generated trace.
const CATEGORY: u16 = 1;
const FRAME: u16 = 2;
const DRAW: u16 = 3;
const LAYOUT: u16 = 4;
const TICK: u16 = 5;
const QUEUE: u16 = 6;
const ID: u16 = 7;
const PHASE: u16 = 8;
const BYTES: u16 = 9;
const DEPTH: u16 = 10;
const PHASE_VALUE: u16 = 11;

const STRINGS: [(u16, &str); 11] = [
    (CATEGORY, "bench"),
    (FRAME, "frame"),
    (DRAW, "draw"),
    (LAYOUT, "layout the whole window"),
    (TICK, "tick"),
    (QUEUE, "queue depth"),
    (ID, "id"),
    (PHASE, "phase"),
    (BYTES, "bytes"),
    (DEPTH, "depth"),
    (PHASE_VALUE, "steady"),
];

/// Counts what [`generate`] writes.
struct Sink {
    w: BufWriter<File>,
    bytes: u64,
    records: u64,
}

impl Sink {
    fn put<R: Encode>(&mut self, record: &R) -> io::Result<()> {
        let words = record.word_len().map_err(io::Error::other)?;
        write_record(&mut self.w, record)?;
        self.bytes += words as u64 * 8;
        self.records += 1;
        Ok(())
    }
}

/// Writes a trace of at least `bytes` bytes to `path`; returns its records.
pub fn generate(path: &Path, bytes: u64) -> io::Result<u64> {
    let mut sink = Sink {
        w: BufWriter::with_capacity(1 << 20, File::create(path)?),
        bytes: 0,
        records: 0,
    };
    sink.put(&MagicNumber)?;
    sink.put(&ProviderInfo {
        provider_id: 1,
        name: "bench",
    })?;
    sink.put(&Initialization {
        ticks_per_second: 1_000_000_000,
    })?;
    for (index, value) in STRINGS {
        sink.put(&StringRecord { index, value })?;
    }
    for t in 1..=THREADS {
        sink.put(&ThreadRecord {
            index: t,
            process: 100 + u64::from(t % 2),
            thread: 1000 + u64::from(t),
        })?;
    }
    let mut ts = 1_000u64;
    let mut i = 0u64;
    while sink.bytes < bytes {
        let thread = ThreadRef::Index(1 + (i % u64::from(THREADS)) as u8);
        frame(&mut sink, thread, &mut ts, i)?;
        i += 1;
    }
    sink.w.flush()?;
    Ok(sink.records)
}

/// One frame of one thread: a begin, an instant, a nested begin, a counter,
/// its end, a complete event, the outer end (seven events).
fn frame(sink: &mut Sink, thread: ThreadRef, ts: &mut u64, i: u64) -> io::Result<()> {
    let id = [
        Arg::new(StringRef::Index(ID), ArgValue::U64(i)),
        Arg::new(
            StringRef::Index(PHASE),
            ArgValue::Str(StringRef::Index(PHASE_VALUE)),
        ),
    ];
    let counter = [
        Arg::new(StringRef::Index(DEPTH), ArgValue::I64((i % 17) as i64)),
        Arg::new(StringRef::Index(BYTES), ArgValue::F64(i as f64 * 0.5)),
    ];
    let mut at = |step: u64| {
        *ts += step;
        *ts
    };
    let steps = [
        (EventKind::DurationBegin, 10, FRAME, &id[..]),
        (EventKind::Instant, 5, TICK, &id[..1]),
        (EventKind::DurationBegin, 7, DRAW, &[][..]),
        (EventKind::Counter { id: 1 }, 3, QUEUE, &counter[..]),
        (EventKind::DurationEnd, 40, DRAW, &[][..]),
        (EventKind::DurationComplete { end: 0 }, 2, LAYOUT, &id[..1]),
        (EventKind::DurationEnd, 29, FRAME, &[][..]),
    ];
    for (kind, step, name, args) in steps {
        let timestamp = at(step);
        let kind = match kind {
            EventKind::DurationComplete { .. } => EventKind::DurationComplete {
                end: timestamp + 25,
            },
            other => other,
        };
        sink.put(&Event {
            kind,
            timestamp,
            thread,
            category: StringRef::Index(CATEGORY),
            name: StringRef::Index(name),
            args,
        })?;
    }
    Ok(())
}

/// What one child process used.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// User + system CPU seconds.
    pub cpu: f64,
    /// Wall seconds.
    pub wall: f64,
    /// Peak resident memory, bytes.
    pub max_rss: u64,
    /// Whether it exited with status 0 (or 1, `check`'s "problems found").
    pub ok: bool,
}

/// Runs `command` (its output already redirected) to the end and reports
/// its resource use.
pub fn run(mut command: Command) -> io::Result<Usage> {
    let started = Instant::now();
    let child = command.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (std's `Child` is
    // dropped without waiting); `status` and `usage` outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    if waited != pid {
        return Err(io::Error::last_os_error());
    }
    let secs = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let exited = libc::WIFEXITED(status);
    Ok(Usage {
        cpu: (secs(usage.ru_utime) + secs(usage.ru_stime)).as_secs_f64(),
        wall: wall.as_secs_f64(),
        max_rss: usage.ru_maxrss as u64 * 1024,
        ok: exited && matches!(libc::WEXITSTATUS(status), 0 | 1),
    })
}
