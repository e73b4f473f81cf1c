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
//! 1's are inside `worker_a` — by the names a reader gives them, as the
//! `fxt` command does: the trace's own `fxt.symbols` where it has them
//! (built with feature `symbolize`, or after `fxt symbolize`), else from
//! its `fxt.modules` with the binary on this machine.

use std::hint::black_box;

use fxt::trace_duration_scope;
use std::collections::HashMap;

use fxt_format::decode::{EventKind, Record};
use fxt_symbols::scan::TraceSamples;

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
/// thread's CPU time in each phase, in nanoseconds (3:1 as the work is,
/// on a machine whose speed holds from one phase to the next).
pub fn phases(calls: u32) -> (u64, u64) {
    let start = cpu_ns();
    {
        let _p = trace_duration_scope!("samples", "phase 1");
        for _ in 0..calls {
            black_box(worker_a());
        }
    }
    let between = cpu_ns();
    {
        let _p = trace_duration_scope!("samples", "phase 2");
        for _ in 0..calls {
            black_box(worker_b());
        }
    }
    (between - start, cpu_ns() - between)
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
    /// Samples whose interrupted pc has a name in the trace.
    pub named: u64,
    /// Samples with `worker_a` / `worker_b` on their stack.
    pub in_a: u64,
    pub in_b: u64,
    /// Samples taken while phase 1 was open, and those in `worker_a`.
    pub phase1: u64,
    pub phase1_in_a: u64,
    /// The largest stack depth seen.
    pub deepest: usize,
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
    let trace = TraceSamples::read(bytes);
    // Each address's function (the outermost of its inlined frames).
    let symbols = fxt_symbols::names(&trace.request(), &mut fxt_symbols::Symbolizer::new());
    let names: HashMap<(u64, u64), &str> = symbols
        .iter()
        .flat_map(|r| r.symbols.iter().map(move |s| (r.pid, s)))
        .filter_map(|(pid, s)| Some(((pid, s.address), s.frames.last()?.function.as_str())))
        .collect();
    let mut report = Report::default();
    for s in &trace.samples {
        let name = |f: &u64| names.get(&(s.pid, *f)).copied().unwrap_or("");
        report.samples += 1;
        report.named += s.frames.first().is_some_and(|f| !name(f).is_empty()) as u64;
        report.deepest = report.deepest.max(s.frames.len());
        // A worker on the stack: a return address (frames after the
        // first) in it.
        let calls = |worker: &str| {
            s.frames
                .iter()
                .skip(1)
                .any(|f| name(f).ends_with(&format!("::{worker}")))
        };
        let (in_a, in_b) = (calls("worker_a"), calls("worker_b"));
        report.in_a += in_a as u64;
        report.in_b += in_b as u64;
        if phase1.contains(&s.timestamp) {
            report.phase1 += 1;
            report.phase1_in_a += in_a as u64;
        }
    }
    report
}

#[allow(dead_code)]
/// `pub` so that `crates/fxt-cli/tests/doc_commands.rs` can run it.
pub fn main() {
    let session = fxt::start_from_env().expect("start");
    let hz: u64 = std::env::var("FXT_SAMPLE_HZ")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let (a, b) = phases(400);
    let cpu = a + b;
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
        "named (interrupted pc has a function name in the trace): {} of {}",
        r.named, r.samples
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
