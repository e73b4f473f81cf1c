//! What `fxt export parquet` costs: rows per second and peak memory against
//! the size of the trace.
//!
//! ```text
//! cargo bench -p fxt-cli --bench export              # 10 MB and 100 MB traces
//! cargo bench -p fxt-cli --bench export -- 10 100 1000   # sizes in MB
//! ```
//!
//! For each size the bench writes a trace with `fxt_format`'s encoders (four
//! threads; per batch one complete event holding 16 complete events with an
//! argument, each followed by a counter, every fourth by an instant with two
//! arguments: the shapes the engine writes, children before their parent),
//! runs the `fxt` binary on it as a child process, and prints the wall
//! and CPU time (user + system, `wait4`'s rusage: what a loaded machine
//! does not inflate), the rows written (from its summary), rows and input
//! MB per CPU second and the child's peak resident memory (`ru_maxrss`). The
//! files go to a temporary folder beside the target directory, removed
//! afterwards.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use fxt_format::encode::{
    write_words, Arg, ArgValue, Encode, Event, EventKind, Initialization, KernelObject,
    MagicNumber, ProviderInfo, StringRecord, StringRef, ThreadRecord, ThreadRef, OBJ_TYPE_PROCESS,
    OBJ_TYPE_THREAD,
};

const THREADS: u64 = 4;
const ITEMS: u64 = 16;
const PID: u64 = 1000;

/// Appends one record's words.
fn put(out: &mut impl Write, record: &impl Encode, buf: &mut Vec<u64>) {
    buf.clear();
    buf.resize(record.word_len().expect("record size"), 0);
    record.encode(buf).expect("record encodes");
    write_words(out, buf).expect("write the trace");
}

/// The preamble: provider, clock, strings 1..=5, threads 1..=4 named.
fn preamble(out: &mut impl Write, buf: &mut Vec<u64>) {
    put(out, &MagicNumber, buf);
    put(
        out,
        &ProviderInfo {
            provider_id: 1,
            name: "bench",
        },
        buf,
    );
    put(
        out,
        &Initialization {
            ticks_per_second: 1_000_000_000,
        },
        buf,
    );
    for (index, value) in ["work", "batch", "item", "n", "depth"]
        .into_iter()
        .enumerate()
    {
        put(
            out,
            &StringRecord {
                index: index as u16 + 1,
                value,
            },
            buf,
        );
    }
    put(
        out,
        &KernelObject {
            koid: PID,
            object_type: OBJ_TYPE_PROCESS,
            name: StringRef::Inline("bench"),
            args: &[],
        },
        buf,
    );
    for t in 1..=THREADS {
        put(
            out,
            &ThreadRecord {
                index: t as u8,
                process: PID,
                thread: PID + t,
            },
            buf,
        );
        let process = [Arg::new(StringRef::Inline("process"), ArgValue::Koid(PID))];
        let name = format!("worker-{t}");
        put(
            out,
            &KernelObject {
                koid: PID + t,
                object_type: OBJ_TYPE_THREAD,
                name: StringRef::Inline(&name),
                args: &process,
            },
            buf,
        );
    }
}

/// An event of category 1 on `thread`.
fn ev<'a>(
    thread: ThreadRef,
    kind: EventKind,
    timestamp: u64,
    name: StringRef<'a>,
    args: &'a [Arg<'a>],
) -> Event<'a> {
    Event {
        kind,
        timestamp,
        thread,
        category: StringRef::Index(1),
        name,
        args,
    }
}

/// One batch on thread `t` from `ts`: its items, counters, instants, then
/// the batch itself; returns the time after it.
fn batch(out: &mut impl Write, buf: &mut Vec<u64>, t: u64, mut ts: u64) -> u64 {
    let start = ts;
    let thread = ThreadRef::Index(t as u8);
    for i in 0..ITEMS {
        let n = [Arg::new(StringRef::Index(4), ArgValue::U64(ts))];
        put(
            out,
            &ev(
                thread,
                EventKind::DurationComplete { end: ts + 90 },
                ts + 1,
                StringRef::Index(3),
                &n,
            ),
            buf,
        );
        let depth = [Arg::new(StringRef::Index(5), ArgValue::U64(i))];
        put(
            out,
            &ev(
                thread,
                EventKind::Counter { id: t },
                ts + 95,
                StringRef::Index(5),
                &depth,
            ),
            buf,
        );
        if i % 4 == 0 {
            let two = [
                Arg::new(StringRef::Index(4), ArgValue::I64(i as i64)),
                Arg::new(
                    StringRef::Inline("label"),
                    ArgValue::Str(StringRef::Inline("tick")),
                ),
            ];
            put(
                out,
                &ev(
                    thread,
                    EventKind::Instant,
                    ts + 96,
                    StringRef::Inline("tick"),
                    &two,
                ),
                buf,
            );
        }
        ts += 100;
    }
    put(
        out,
        &ev(
            thread,
            EventKind::DurationComplete { end: ts + 1 },
            start,
            StringRef::Index(2),
            &[],
        ),
        buf,
    );
    ts + 10
}

/// Writes a trace of about `bytes` bytes at `path`.
fn write_trace(path: &Path, bytes: u64) {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).expect("create the trace"));
    let mut buf = Vec::new();
    preamble(&mut out, &mut buf);
    let mut ts = [0u64; THREADS as usize];
    let mut written = 0u64;
    let mut t = 0;
    while written < bytes {
        ts[t] = batch(&mut out, &mut buf, t as u64 + 1, ts[t].max(written));
        t = (t + 1) % THREADS as usize;
        written = out.get_ref().metadata().map_or(0, |m| m.len()) + out.buffer().len() as u64;
    }
    out.flush().expect("write the trace");
}

/// What one export did.
struct Run {
    seconds: f64,
    /// User and system CPU time.
    cpu_seconds: f64,
    records: u64,
    rows: u64,
    peak_rss: u64,
}

/// Runs `fxt export parquet` on `trace`.
fn export(trace: &Path, dir: &Path) -> Run {
    let started = Instant::now();
    // Waited for with wait4 below, for its resource usage.
    #[allow(clippy::zombie_processes)]
    let mut child = Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(["export", "parquet"])
        .arg(trace)
        .arg("-o")
        .arg(dir)
        .args(["--host", "bench"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run fxt");
    let pid = child.id() as libc::pid_t;
    // Read to its end first: the child exits once it has written it.
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    let mut status = 0;
    // SAFETY: all-zero is a valid rusage (plain integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for; both pointers are valid.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(rc, pid, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "fxt failed: {stderr}"
    );
    // "fxt: exported 1 input (N records) to DIR: 5 slices, 3 instants, ..."
    let summary = stderr.lines().next().unwrap_or_default();
    let rows: u64 = summary
        .rsplit(": ")
        .next()
        .unwrap_or_default()
        .split(", ")
        .filter_map(|part| part.split(' ').next()?.parse::<u64>().ok())
        .sum();
    let records = summary
        .split_once(" (")
        .and_then(|(_, r)| r.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Run {
        seconds,
        cpu_seconds: cpu(usage.ru_utime) + cpu(usage.ru_stime),
        records,
        rows,
        // In KiB on Linux.
        peak_rss: usage.ru_maxrss as u64 * 1024,
    }
}

fn main() {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10, 100]
    } else {
        sizes
    };
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("export-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench folder");
    println!("fxt export parquet, one trace per size (4 threads: complete events with arguments, counters, instants)");
    println!();
    println!(
        "| trace | records | rows | wall s | CPU s | rows per CPU s | MB per CPU s | peak RSS |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for mb in sizes {
        let trace = dir.join(format!("{mb}.fxt"));
        write_trace(&trace, mb * 1_000_000);
        let size = std::fs::metadata(&trace).map_or(0, |m| m.len());
        let out = dir.join(format!("tables-{mb}"));
        let run = export(&trace, &out);
        println!(
            "| {:.0} MB | {} | {} | {:.2} | {:.2} | {:.0} | {:.1} | {:.0} MiB |",
            size as f64 / 1e6,
            run.records,
            run.rows,
            run.seconds,
            run.cpu_seconds,
            run.rows as f64 / run.cpu_seconds,
            size as f64 / 1e6 / run.cpu_seconds,
            run.peak_rss as f64 / (1 << 20) as f64,
        );
        let _ = std::fs::remove_file(&trace);
        let _ = std::fs::remove_dir_all(&out);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
