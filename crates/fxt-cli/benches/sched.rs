//! What `fxt record --sched` costs the traced program.
//!
//! ```text
//! cargo bench -p fxt-cli --bench sched
//! ```
//!
//! The bench runs workloads (this binary again, `FXT_SCHED_BENCH_ROLE`)
//! under `fxt record` with and without `--sched`, alternating, 7 times
//! each, and prints the median time each workload measured for itself and
//! the ratio: the cost of capturing the kernel's scheduling, as the program
//! sees it. Workloads, each traced with one instant per iteration:
//!
//! * `ping-pong`: two threads hand a token back and forth 20,000 times
//!   through channels (two context switches and two wakeups per round
//!   trip: the worst case for scheduling capture);
//! * `compute`: one thread computes 50,000,000 iterations (few switches).
//!
//! Needs root (or `CAP_PERFMON`); without it, says so and measures
//! nothing.

use std::process::Command;
use std::sync::mpsc;
use std::time::Instant;

const ROLE: &str = "FXT_SCHED_BENCH_ROLE";
const REPS: usize = 7;

fn workload(role: &str) {
    let session = fxt::start(fxt::Config::from_env()).expect("start");
    let t = Instant::now();
    match role {
        "ping-pong" => {
            let (to, from_main) = mpsc::channel::<u64>();
            let (back, from_worker) = mpsc::channel::<u64>();
            let worker = std::thread::spawn(move || {
                while let Ok(v) = from_main.recv() {
                    fxt::trace_instant!("bench", "pong");
                    if back.send(v + 1).is_err() {
                        break;
                    }
                }
            });
            let mut v = 0;
            for _ in 0..20_000 {
                fxt::trace_instant!("bench", "ping");
                to.send(v).unwrap();
                v = from_worker.recv().unwrap();
            }
            drop(to);
            worker.join().unwrap();
            assert_eq!(v, 20_000);
        }
        "compute" => {
            let mut x = 1u64;
            for i in 0..50_000_000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
                if i % 16 == 0 {
                    fxt::trace_instant!("bench", "step");
                }
            }
            std::hint::black_box(x);
        }
        r => panic!("unknown workload {r}"),
    }
    println!("{}", t.elapsed().as_nanos());
    drop(session);
}

/// One run under `fxt record` (with `--sched` or not): the workload's own
/// time in ns, or why scheduling capture is unavailable.
fn run(role: &str, sched: bool, out: &std::path::Path) -> Result<u64, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fxt"));
    cmd.arg("record").arg("-o").arg(out);
    if sched {
        cmd.arg("--sched");
    }
    let r = cmd
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, role)
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&r.stderr);
    if let Some(l) = stderr.lines().find(|l| l.contains("--sched:")) {
        return Err(l.to_string());
    }
    if !r.status.success() {
        return Err(stderr.into_owned());
    }
    String::from_utf8_lossy(&r.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("no time printed: {stderr}"))
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    if let Ok(role) = std::env::var(ROLE) {
        workload(&role);
        return;
    }
    // `cargo bench` passes `--bench`; a filter is not supported.
    let dir = std::env::temp_dir().join(format!("fxt-sched-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("b.fxt");
    println!("fxt record --sched: the workload's own time, median of {REPS} alternating runs");
    println!("| workload | without --sched | with --sched | ratio |");
    println!("|---|---:|---:|---:|");
    for role in ["ping-pong", "compute"] {
        let (mut plain, mut sched) = (Vec::new(), Vec::new());
        for _ in 0..REPS {
            match (run(role, false, &out), run(role, true, &out)) {
                (Ok(a), Ok(b)) => {
                    plain.push(a);
                    sched.push(b);
                }
                (Err(e), _) | (_, Err(e)) => {
                    println!("not measured: {e}");
                    let _ = std::fs::remove_dir_all(&dir);
                    return;
                }
            }
        }
        let (a, b) = (median(plain), median(sched));
        println!(
            "| {role} | {:.2} ms | {:.2} ms | {:.2}x |",
            a as f64 / 1e6,
            b as f64 / 1e6,
            b as f64 / a as f64
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
