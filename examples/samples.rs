//! CPU samples inside traced phases (issue 31's "done when" program).
//!
//! Two traced phases; phase 1 calls `worker_a`, phase 2 `worker_b`, the
//! same number of times. `worker_a` does three times the CPU work of
//! `worker_b` per call, and both do it by calling one shared inner
//! function, `spin` (`#[inline(never)]`): only a walked stack tells their
//! samples apart.
//!
//! ```text
//! FXT_SAMPLE_HZ=1000 cargo run --release --example samples
//! RUSTFLAGS="-C force-frame-pointers=yes" FXT_SAMPLE_HZ=1000 cargo run --release --example samples
//! fxt record --sample 1000 -- target/release/examples/samples
//! ```
//!
//! writes `trace.fxt` (or where `FXT_OUTPUT` says) and prints what the
//! samples say: how many there are against what the thread's CPU time
//! calls for, how they split between the workers, and how many of phase
//! 1's are inside `worker_a`. (Until the trace carries symbol names, the
//! program reads the workers' address ranges from its own symbol table.)

use std::hint::black_box;

use fxt::trace_duration_scope;
use fxt_format::decode::{EventKind, Record};

/// Iterations of `spin` per unit of work.
pub const UNIT: u64 = 200_000;

/// The shared inner function: `units` units of CPU work.
#[inline(never)]
pub fn spin(units: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..units * UNIT {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = black_box(x);
    }
    x
}

/// Phase 1's worker: three units per call.
#[inline(never)]
pub fn worker_a() -> u64 {
    black_box(spin(black_box(3)))
}

/// Phase 2's worker: one unit per call.
#[inline(never)]
pub fn worker_b() -> u64 {
    black_box(spin(black_box(1)))
}

/// Runs both phases, `calls` worker calls each; returns the calling
/// thread's CPU time in nanoseconds.
pub fn phases(calls: u32) -> u64 {
    let start = cpu_ns();
    {
        let _p = trace_duration_scope!("samples", "phase 1");
        for _ in 0..calls {
            black_box(worker_a());
        }
    }
    {
        let _p = trace_duration_scope!("samples", "phase 2");
        for _ in 0..calls {
            black_box(worker_b());
        }
    }
    cpu_ns() - start
}

/// The calling thread's CPU time, in nanoseconds.
pub fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What the samples of a trace say.
#[derive(Debug, Default)]
pub struct Report {
    /// `fxt.sample` records.
    pub samples: u64,
    /// Samples with `worker_a` / `worker_b` on their stack.
    pub in_a: u64,
    pub in_b: u64,
    /// Samples taken while phase 1 was open, and those in `worker_a`.
    pub phase1: u64,
    pub phase1_in_a: u64,
    /// The largest stack depth seen.
    pub deepest: usize,
}

/// The address ranges of `worker_a` and `worker_b` in this process, from
/// the executable's own symbol table (`object`), placed where the
/// functions are loaded.
fn worker_ranges() -> [std::ops::Range<u64>; 2] {
    use object::{Object, ObjectSymbol};
    let exe = std::fs::read("/proc/self/exe").expect("read the executable");
    let file = object::File::parse(&*exe).expect("parse the executable");
    let find = |name: &str| {
        file.symbols()
            .chain(file.dynamic_symbols())
            .find(|s| {
                s.name()
                    .is_ok_and(|n| n.contains(name) && n.contains("samples"))
            })
            .map(|s| s.address()..s.address() + s.size())
            .unwrap_or_else(|| panic!("{name} not in the symbol table"))
    };
    let (a, b) = (find("worker_a"), find("worker_b"));
    let bias = (worker_a as fn() -> u64 as usize as u64).wrapping_sub(a.start);
    [a, b].map(|r| r.start.wrapping_add(bias)..r.end.wrapping_add(bias))
}

/// Reads the samples of `bytes`.
pub fn analyse(bytes: &[u8]) -> Report {
    let records = fxt_format::decode::decode_all(bytes).expect("the trace decodes");
    let mut phase1 = None;
    for r in &records {
        if let Record::Event(e) = r {
            if let (Some("phase 1"), EventKind::DurationComplete { end }) =
                (e.name.as_str(), &e.kind)
            {
                phase1 = Some(e.timestamp..*end);
            }
        }
    }
    let phase1 = phase1.expect("phase 1 is in the trace");
    let [a, b] = worker_ranges();
    let mut report = Report::default();
    for r in &records {
        let Record::Blob(blob) = r else { continue };
        if blob.name.as_str() != Some("fxt.sample") {
            continue;
        }
        let w: Vec<u64> = blob
            .payload
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let frames = &w[4..];
        report.samples += 1;
        report.deepest = report.deepest.max(frames.len());
        // Return addresses (frames after the first) of each worker.
        // A return address (the call is the byte before it) in a worker.
        let calls = |r: &std::ops::Range<u64>| frames.iter().skip(1).any(|&f| r.contains(&(f - 1)));
        let (in_a, in_b) = (calls(&a), calls(&b));
        report.in_a += in_a as u64;
        report.in_b += in_b as u64;
        if phase1.contains(&w[0]) {
            report.phase1 += 1;
            report.phase1_in_a += in_a as u64;
        }
    }
    report
}

#[allow(dead_code)]
fn main() {
    let session = fxt::start_from_env().expect("start");
    let hz: u64 = std::env::var("FXT_SAMPLE_HZ")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let cpu = phases(400);
    let stats = session.finish().expect("finish");
    let path = stats.output.clone().expect("a file");
    let bytes = std::fs::read(&path).expect("read the trace");
    let r = analyse(&bytes);
    let wanted = cpu as f64 / 1e9 * hz as f64;
    println!("trace: {}", path.display());
    println!(
        "CPU time {:.3} s at {hz} Hz calls for {wanted:.0} samples; taken {}, written {} ({:.0}%)",
        cpu as f64 / 1e9,
        stats.samples,
        r.samples,
        100.0 * r.samples as f64 / wanted.max(1.0)
    );
    println!(
        "worker_a {} : worker_b {} = {:.2} (work 3:1); phase 1: {} of {} samples in worker_a ({:.0}%); deepest stack {}",
        r.in_a,
        r.in_b,
        r.in_a as f64 / r.in_b.max(1) as f64,
        r.phase1_in_a,
        r.phase1,
        100.0 * r.phase1_in_a as f64 / r.phase1.max(1) as f64,
        r.deepest
    );
}
