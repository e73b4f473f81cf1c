//! Instructions per uncontended lock + unlock of `fxt::sync::Mutex`
//! (tracing off, category `lock` off, on) next to `parking_lot` and
//! `std::sync`, counted by callgrind: robust where wall-clock figures are
//! not (a loaded machine).
//!
//! ```text
//! cargo build --release -p fxt-bench --bin lock-instructions
//! target/release/lock-instructions          # runs itself under valgrind
//! ```
//!
//! Each variant runs `measure` (lock, increment, unlock, N times) in a
//! child process under `valgrind --tool=callgrind --toggle-collect=*measure*`,
//! so only the loop is counted; the figure is the count over N. A second
//! table gives the thread CPU time per lock + unlock (`CLOCK_THREAD_CPUTIME_ID`:
//! time the thread ran, not time it waited for a core), the best of 7
//! rounds that interleave the variants.

use std::hint::black_box;
use std::process::Command;

const N: u64 = 200_000;
const VARIANTS: &[&str] = &[
    "parking_lot",
    "std",
    "fxt-tracing-off",
    "fxt-category-off",
    "fxt-category-on",
];

#[inline(never)]
fn measure<G>(n: u64, mut lock_once: G)
where
    G: FnMut(),
{
    for _ in 0..n {
        lock_once();
    }
}

/// Runs `variant` `n` times in its tracing state.
fn child(variant: &str, n: u64) {
    let config = fxt::Config::new().buffer_size(1 << 20);
    let session = match variant {
        "fxt-category-off" => Some(fxt::start(config.categories(&["other"])).unwrap()),
        "fxt-category-on" => Some(fxt::start(config).unwrap()),
        _ => None,
    };
    match variant {
        "parking_lot" => {
            let m = parking_lot::Mutex::new(0u64);
            measure(n, || *black_box(&m).lock() += 1);
        }
        "std" => {
            let m = std::sync::Mutex::new(0u64);
            measure(n, || *black_box(&m).lock().unwrap() += 1);
        }
        _ => {
            let m = fxt::sync::Mutex::named("bench", 0u64);
            measure(n, || *black_box(&m).lock() += 1);
        }
    }
    if let Some(s) = session {
        s.finish_to_vec().unwrap();
    }
}

/// CPU time of this thread (ns).
fn thread_cpu_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec the call fills.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Best thread CPU ns per lock + unlock of each variant over interleaved rounds.
fn cpu_times() -> Vec<f64> {
    const ROUNDS: usize = 7;
    const OPS: u64 = 5_000_000;
    let mut best = vec![f64::MAX; VARIANTS.len()];
    for _ in 0..ROUNDS {
        for (i, v) in VARIANTS.iter().enumerate() {
            let start = thread_cpu_ns();
            child(v, OPS);
            let per = (thread_cpu_ns() - start) as f64 / OPS as f64;
            best[i] = best[i].min(per);
        }
    }
    best
}

/// Instructions callgrind collected in `measure` for `variant`.
fn count(variant: &str) -> u64 {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--toggle-collect=*measure*",
        ])
        .arg(exe)
        .args(["--child", variant])
        .output()
        .expect("valgrind runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    err.lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, n)| n.trim().to_owned())
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no instruction count in: {err}"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, variant] = &args[..] {
        if flag == "--child" {
            return child(variant, N);
        }
    }
    let base = count("parking_lot") as f64 / N as f64;
    let cpu = cpu_times();
    println!(
        "| lock + unlock (uncontended) | instructions | vs parking_lot | CPU ns | vs parking_lot |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (v, ns) in VARIANTS.iter().zip(&cpu) {
        let per = count(v) as f64 / N as f64;
        println!(
            "| {v} | {per:.1} | {:.2}x | {ns:.1} | {:.2}x |",
            per / base,
            ns / cpu[0]
        );
    }
}
