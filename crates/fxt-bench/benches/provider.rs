//! What being a dormant provider costs a program that is not traced
//! (issue 24): `fxt::register_provider` against a program that never
//! registers, both with tracing off.
//!
//! ```text
//! cargo bench -p fxt-bench --bench provider
//! ```
//!
//! Each program is this binary again (`--role plain|registered`): it runs
//! a loop of disabled call sites (one `trace_instant!` with an argument per
//! iteration), then sleeps, and reports per call site the time (median of
//! 5 processes) and the instructions (valgrind callgrind, the loop's
//! function only, when valgrind is installed), the resident set (VmRSS),
//! its threads, and the CPU time it used while sleeping (a busy thread
//! would show there).

use std::process::Command;
use std::time::{Duration, Instant};

use fxt_bench::callgrind;

/// Call sites per timed loop.
const SITES: u64 = 20_000_000;
/// Call sites per callgrind run (instructions are exact: fewer suffice).
const COUNTED_SITES: u64 = 200_000;
const RUNS: usize = 5;
const IDLE: Duration = Duration::from_millis(500);

/// The loop of disabled call sites; kept out of line so callgrind counts
/// exactly its instructions.
#[inline(never)]
fn disabled_sites(n: u64) {
    for i in 0..n {
        fxt::trace_instant!("bench", "off", "i" => i);
    }
}

/// A field of `/proc/self/status` (the number before any unit).
fn status(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of this process so far.
fn cpu_time() -> Duration {
    // SAFETY: a zeroed rusage is a valid out-value for getrusage.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// One program: `RESULT ns_per_site rss_kb threads idle_cpu_us`.
fn role(role: &str, sites: u64) {
    let _provider =
        (role == "registered").then(|| fxt::register_provider("bench").expect("register"));
    // The first call registers the site; then every call is the disabled path.
    disabled_sites(1);
    let t = Instant::now();
    disabled_sites(sites);
    let ns = t.elapsed().as_secs_f64() * 1e9 / sites as f64;
    let before = cpu_time();
    std::thread::sleep(IDLE);
    let idle = cpu_time().saturating_sub(before);
    println!(
        "RESULT {ns:.3} {} {} {}",
        status("VmRSS:"),
        status("Threads:"),
        idle.as_micros()
    );
}

fn run(role: &str) -> Vec<f64> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--role", role, &SITES.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{role}: {}", String::from_utf8_lossy(&out.stderr)));
    line.split(' ').map(|v| v.parse().unwrap()).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--role") {
        role(&args[2], args[3].parse().unwrap());
        return;
    }
    // A temporary runtime directory: the registered programs' sockets go
    // there, not among the user's providers.
    let xdg = std::env::temp_dir().join(format!("fxt-provider-bench-{}", std::process::id()));
    std::fs::create_dir_all(&xdg).unwrap();
    std::env::set_var("XDG_RUNTIME_DIR", &xdg);
    println!(
        "Dormant provider vs a program that never registers: tracing off, {SITES} disabled call sites, median of {RUNS} processes"
    );
    println!("| program | ns per call site | instructions per call site | VmRSS | threads | CPU while idle {} ms |", IDLE.as_millis());
    println!("|---|---:|---:|---:|---:|---:|");
    for (role, label) in [
        ("plain", "never registers"),
        ("registered", "registered, dormant"),
    ] {
        let runs: Vec<Vec<f64>> = (0..RUNS).map(|_| run(role)).collect();
        let col = |i: usize| median(runs.iter().map(|r| r[i]).collect());
        let sites = COUNTED_SITES.to_string();
        let counted = callgrind::count(&["--role", role, &sites], "*disabled_sites")
            .ok()
            // The child prints a `RESULT` line once it ran the call sites.
            .filter(|c| c.stdout.contains("RESULT "));
        let instructions = match counted {
            Some(c) => format!("{:.1}", c.instructions as f64 / (COUNTED_SITES + 1) as f64),
            None => "n/a".to_owned(),
        };
        println!(
            "| {label} | {:.2} | {instructions} | {:.0} KB | {:.0} | {:.0} µs |",
            col(0),
            col(1),
            col(2),
            col(3)
        );
    }
    let _ = std::fs::remove_dir_all(&xdg);
}
