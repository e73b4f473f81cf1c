//! What a window of `fxt trace` takes: from `fxt trace start` until the
//! providers record, and `fxt trace stop` (Stop to every provider, the
//! merge into one archive), for 1 and 16 providers.
//!
//! ```text
//! cargo bench -p fxt-cli --bench trace
//! ```
//!
//! The providers are this binary again (`FXT_TRACE_BENCH_ROLE`): each
//! registers with `fxt::register_provider` and emits one instant every
//! 50 µs until killed. A round reads `CLOCK_MONOTONIC_RAW` just before it
//! runs `fxt trace start`, keeps the window open for 200 ms, and runs
//! `fxt trace stop`; the archive (on that same clock) gives each
//! provider's first event. Reported, medians of 7 rounds:
//!
//! * `start`: the `fxt trace start` command, launch to exit;
//! * `first event`: launch of `start` to the first recorded event of the
//!   last provider to record (all of them tracing);
//! * `stop + merge`: the `fxt trace stop` command, launch to exit, and the
//!   archive's size.

#[path = "../tests/cli_support/mod.rs"]
mod cli_support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli_support::raw_ns;
use fxt_format::decode::{decode_all, Record, Thread};

const ROLE: &str = "FXT_TRACE_BENCH_ROLE";
const ROUNDS: usize = 7;
const WINDOW: Duration = Duration::from_millis(200);

fn provider() -> ! {
    let _p = fxt::register_provider("bench").expect("register");
    println!("ready");
    loop {
        fxt::trace_instant!("bench", "tick");
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn fxt(xdg: &Path, args: &[&str]) -> Duration {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fxt"))
        .arg("trace")
        .args(args)
        .env("XDG_RUNTIME_DIR", xdg)
        .output()
        .unwrap();
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "fxt trace {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// The first event's time of every process of an archive.
fn first_events(path: &Path) -> Vec<u64> {
    let records = decode_all(&std::fs::read(path).unwrap()).unwrap();
    let mut first = std::collections::BTreeMap::new();
    for r in records {
        if let Record::Event(e) = r {
            if let Thread::Known { process, .. } = e.thread {
                let t = first.entry(process).or_insert(u64::MAX);
                *t = (*t).min(e.timestamp);
            }
        }
    }
    first.into_values().collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn measure(n: usize, dir: &Path) {
    let xdg = dir.join(format!("xdg-{n}"));
    std::fs::create_dir_all(&xdg).unwrap();
    let mut children: Vec<Child> = (0..n)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .env(ROLE, "provider")
                .env("XDG_RUNTIME_DIR", &xdg)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in &mut children {
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(c.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
    }
    let out = dir.join("w.fxt");
    let (mut start, mut first, mut stop, mut size) = (vec![], vec![], vec![], 0);
    for _ in 0..ROUNDS {
        let t0 = raw_ns();
        start.push(fxt(&xdg, &["start"]).as_secs_f64() * 1e3);
        std::thread::sleep(WINDOW);
        stop.push(fxt(&xdg, &["stop", "-o", out.to_str().unwrap()]).as_secs_f64() * 1e3);
        let firsts = first_events(&out);
        assert_eq!(firsts.len(), n, "every provider recorded");
        let last = firsts.into_iter().max().unwrap();
        first.push(last.saturating_sub(t0) as f64 / 1e6);
        size = std::fs::metadata(&out).unwrap().len();
    }
    println!(
        "| {n} | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} KB |",
        median(start),
        median(first),
        median(stop),
        size as f64 / 1e3
    );
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

fn main() {
    if std::env::var(ROLE).is_ok() {
        provider();
    }
    // `cargo bench` passes `--bench`; a filter is not supported.
    let dir = std::env::temp_dir().join(format!("fxt-trace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "fxt trace: a {} ms window, median of {ROUNDS} rounds",
        WINDOW.as_millis()
    );
    println!("| providers | start | first event (all) | stop + merge | archive |");
    println!("|---:|---:|---:|---:|---:|");
    for n in [1, 16] {
        measure(n, &dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
