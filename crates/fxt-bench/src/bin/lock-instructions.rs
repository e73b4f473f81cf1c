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

/// Best thread CPU ns per lock + unlock of each variant over interleaved rounds.
fn cpu_times() -> Vec<f64> {
    const ROUNDS: usize = 7;
    const OPS: u64 = 5_000_000;
    let mut best = vec![f64::MAX; VARIANTS.len()];
    for _ in 0..ROUNDS {
        for (i, v) in VARIANTS.iter().enumerate() {
            let start = fxt_bench::host::thread_cpu_ns();
            child(v, OPS);
            let per = (fxt_bench::host::thread_cpu_ns() - start) as f64 / OPS as f64;
            best[i] = best[i].min(per);
        }
    }
    best
}

/// Instructions callgrind collected in `measure` for `variant`.
fn count(variant: &str) -> u64 {
    fxt_bench::callgrind::expect(&["--child", variant], "*measure*").instructions
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
