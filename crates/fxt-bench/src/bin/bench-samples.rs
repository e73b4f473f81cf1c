//! What CPU samples (`Config::sample_hz`) cost a CPU-bound program.
//!
//! ```text
//! cargo run --release -p fxt-bench --bin bench-samples -- [--work-ms MS] [--reps R]
//! ```
//!
//! One thread runs a fixed CPU-bound workload (a xorshift loop calling a
//! shared inner function through three frames) inside a traced span, under
//! four settings: no session, a session without sampling, sampling at
//! 1 kHz and at 10 kHz. Each is measured in the thread's own CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`: the signal handler runs on the thread, so
//! its cost is counted; another process's load is not), `R` repetitions
//! interleaved across the settings, medians reported. Printed per setting:
//! CPU time, overhead against the session without sampling, samples taken
//! and written, the cost of one sample split into user time (the handler:
//! stack copy and record) and system time (the kernel's timer interrupt
//! and signal delivery, and any rescheduling it triggers), the
//! mean bytes of stack a sample copies (the reader unwinds them later) and
//! the trace's growth in bytes per second of
//! the thread's CPU time.

use std::hint::black_box;

use fxt::trace_duration_scope;
use fxt_format::decode::{decode_all, Record};
use fxt_format::samples::SampleRecord;

/// The calling thread's user and system CPU time, in nanoseconds.
fn user_sys_ns() -> (u64, u64) {
    // SAFETY: a zeroed `rusage` is valid; `getrusage` fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is valid for the call.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

#[inline(never)]
fn inner(n: u64, mut x: u64) -> u64 {
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    x
}

#[inline(never)]
fn middle(n: u64, x: u64) -> u64 {
    black_box(inner(n, x))
}

#[inline(never)]
fn outer(n: u64, x: u64) -> u64 {
    black_box(middle(n, x))
}

/// The workload: `iters` loop iterations, in calls of 10,000.
fn work(iters: u64) -> u64 {
    let mut x = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..iters / 10_000 {
        x = outer(10_000, x);
    }
    x
}

/// One measurement: CPU ns of the workload, samples taken, sample records
/// written, their bytes and the stack bytes they copied.
#[derive(Debug, Default, Clone, Copy)]
struct Run {
    cpu: u64,
    user: u64,
    sys: u64,
    taken: u64,
    written: u64,
    bytes: u64,
    stack_bytes: u64,
}

fn run(hz: Option<u32>, iters: u64) -> Run {
    let session = hz.map(|hz| {
        fxt::start(
            fxt::Config::new()
                .sample_hz(hz)
                .drain(false)
                .output(std::env::temp_dir().join("fxt-bench-samples-unused.fxt")),
        )
        .expect("start")
    });
    let start = fxt_bench::host::thread_cpu_ns();
    let (user0, sys0) = user_sys_ns();
    {
        let _span = trace_duration_scope!("bench", "work");
        black_box(work(iters));
    }
    let cpu = fxt_bench::host::thread_cpu_ns() - start;
    let (user1, sys1) = user_sys_ns();
    let mut r = Run {
        cpu,
        user: user1 - user0,
        sys: sys1 - sys0,
        ..Run::default()
    };
    if let Some(session) = session {
        let (bytes, stats) = session.finish_to_vec().expect("finish");
        r.taken = stats.samples;
        for rec in decode_all(&bytes).expect("decodes") {
            let Record::Blob(b) = rec else { continue };
            if b.name.as_str() != Some("fxt.sample") {
                continue;
            }
            let s = SampleRecord::decode(&b.payload).expect("a sample");
            r.written += 1;
            r.stack_bytes += s.raw_stack.map_or(0, |raw| raw.stack.len() as u64 * 8);
            // Header, inline name, payload.
            r.bytes += 8 + 16 + b.payload.len() as u64;
        }
    }
    r
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let mut work_ms = 1000u64;
    let mut reps = 5usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().and_then(|v| v.parse::<u64>().ok());
        match (a.as_str(), v) {
            ("--work-ms", Some(v)) => work_ms = v,
            ("--reps", Some(v)) => reps = v.max(1) as usize,
            _ => {
                eprintln!("usage: bench-samples [--work-ms MS] [--reps R]");
                std::process::exit(2);
            }
        }
    }
    // Calibrate the iterations to about `work_ms` of CPU time.
    let probe = 2_000_000;
    let t = fxt_bench::host::thread_cpu_ns();
    black_box(work(probe));
    let per_iter = (fxt_bench::host::thread_cpu_ns() - t) as f64 / probe as f64;
    let iters = ((work_ms as f64 * 1e6 / per_iter) as u64).max(10_000);

    let settings: [(&str, Option<u32>); 4] = [
        ("no session", None),
        ("session, sampling off", Some(0)),
        ("sampling at 1 kHz", Some(1000)),
        ("sampling at 10 kHz", Some(10_000)),
    ];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); settings.len()];
    for _ in 0..reps {
        for (i, (_, hz)) in settings.iter().enumerate() {
            runs[i].push(run(*hz, iters));
        }
    }
    let med = |i: usize, f: fn(&Run) -> u64| median(runs[i].iter().map(f).collect());
    let base = med(1, |r| r.cpu) as f64;
    let (base_user, base_sys) = (med(1, |r| r.user) as f64, med(1, |r| r.sys) as f64);
    println!("workload: {iters} iterations (~{work_ms} ms CPU), {reps} repetitions, medians");
    println!(
        "{:<24} {:>10} {:>9} {:>8} {:>8} {:>12} {:>12} {:>11} {:>12}",
        "setting",
        "CPU ms",
        "overhead",
        "taken",
        "written",
        "user ns/smp",
        "sys ns/smp",
        "stack B/smp",
        "KiB/s/thread"
    );
    for (i, (name, _)) in settings.iter().enumerate() {
        let cpu = med(i, |r| r.cpu) as f64;
        let taken = med(i, |r| r.taken);
        let written = med(i, |r| r.written);
        let stack_bytes = med(i, |r| r.stack_bytes) as f64 / written.max(1) as f64;
        let per_sample = |v: f64, b: f64| {
            if taken > 0 {
                format!("{:.0}", (v - b) / taken as f64)
            } else {
                "-".into()
            }
        };
        let user = per_sample(med(i, |r| r.user) as f64, base_user);
        let sys = per_sample(med(i, |r| r.sys) as f64, base_sys);
        let growth = med(i, |r| r.bytes) as f64 / (cpu / 1e9) / 1024.0;
        println!(
            "{:<24} {:>10.1} {:>8.2}% {:>8} {:>8} {:>12} {:>12} {:>11.0} {:>12.1}",
            name,
            cpu / 1e6,
            (cpu / base - 1.0) * 100.0,
            taken,
            written,
            user,
            sys,
            stack_bytes,
            growth
        );
    }
}
