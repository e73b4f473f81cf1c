//! What sampled allocations (`fxt::alloc::Sampled`, issue 45) cost an
//! allocation-heavy program.
//!
//! ```text
//! cargo run --release -p fxt-bench --bin bench-alloc -- [--threads T] [--ops N] [--reps R] [--workload alloc|mixed] [--mean BYTES] [--setting I]
//! cargo run --release -p fxt-bench --bin bench-alloc -- --instructions [--ops N] [--mean BYTES]   # under callgrind
//! cargo run --release -p fxt-bench --bin bench-alloc -- --idle [--reps R]   # what a session costs by itself
//! cargo run --release -p fxt-bench --bin bench-alloc -- --neighbour [--ops N] [--reps R]   # a hot static beside the wrapper
//! ```
//!
//! Two workloads, each on `T` threads:
//!
//! * *allocation only* (the harsh one): each thread makes `N` allocations
//!   (mostly small, 16 to 512 bytes; one in 64 of 64 KiB) and frees them
//!   in turn, keeping 64 blocks live, doing nothing else;
//! * *mixed* (a program that also works): each thread runs `N / 8` steps
//!   that build a key string, a vector of a few dozen numbers which it
//!   sorts and sums, and file them in a map of vectors that is emptied
//!   when it holds 1024 keys (strings, vectors, a hash map growing and
//!   dropped: std's collections through the global allocator).
//!
//! Each under five settings measured in the same run: the system
//! allocator (the baseline), the system allocator while a session records
//! (what the session itself costs: its buffer, the helper threads that
//! fault it in and stream it, with no wrapper), the wrapper with no
//! session, the wrapper with a session that does not sample memory, and
//! the wrapper sampling at the default mean
//! (`fxt::DEFAULT_ALLOC_SAMPLE_BYTES`). Each setting's times
//! are the wall time until every thread is done, the CPU time the
//! process used meanwhile (its threads', fxt's helpers' included: on a
//! machine shared with other work the CPU time varies less), and the
//! workload's threads' own CPU time (what the allocator costs the
//! program's threads, without the session's helpers, which `--idle`
//! measures, and less moved by threads that share a core), `R`
//! repetitions interleaved across the settings (each repetition starting
//! at another), the medians reported with their ratios to the baseline's,
//! and the sampled allocations of the sampling runs. `--mean` samples at
//! another mean than the default; `--setting I` runs the `I`th setting
//! (0 to 4, in the order above) alone, to profile it.
//!
//! `--idle` measures instead what a session costs a program that does
//! nothing: the CPU time of its start (and first 100 ms), then per second
//! of sleep (its helper threads' wake-ups).
//!
//! `--neighbour` measures instead what a static of the program's that
//! lies beside the wrapper and that another thread writes all the time
//! (a counter) costs the allocating thread: the allocation-only workload
//! on one thread through a wrapper with such a neighbour, the neighbour
//! still and written, against the same loop gated by a flag that shares
//! its neighbour's cache line, as the wrapper's word did before it took
//! a line of its own (the workload thread's CPU time, median of `R`;
//! needs two cores).
//!
//! `--instructions` counts instead, with callgrind (no load moves the
//! counts), the instructions one thread of the allocation-only workload
//! runs under each setting (this program run again under
//! `valgrind --tool=callgrind --toggle-collect=*bench_alloc*work*`, so
//! only the workload's own thread is counted: fxt's streamer writing the
//! records to the file is not), per allocation and free, and per sampled
//! allocation or free: the sampling run's instructions less those of a
//! run sampling at 1 GiB (almost nothing sampled: the countdown and the
//! free's check alone), over its samples.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use fxt::alloc::Sampled;

static WRAPPER: Sampled<System> = Sampled::new(System);

/// The program's allocator: the system's while [`BARE`] is set, else the
/// wrapper (the mixed workload reaches it through std's collections).
/// Both settings pay the switch's load and branch.
struct Switch;

/// The mixed workload's allocations go to the system allocator directly.
static BARE: AtomicBool = AtomicBool::new(false);

// SAFETY: each call goes to the system allocator, directly or through
// the wrapper, which forwards every call to it unchanged: a block is
// freed by the allocator that allocated it whichever way the flag (which
// changes only between measurements) sent either call.
unsafe impl GlobalAlloc for Switch {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: set between runs, before the threads are spawned.
        if BARE.load(Ordering::Relaxed) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { WRAPPER.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if BARE.load(Ordering::Relaxed) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(ptr, layout) }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { WRAPPER.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if BARE.load(Ordering::Relaxed) {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.realloc(ptr, layout, new_size) }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { WRAPPER.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static GLOBAL: Switch = Switch;

/// Blocks each thread keeps live.
const LIVE: usize = 64;

/// The sizes, cycling: small ones, and one in 64 large.
fn size(i: usize, x: &mut u64) -> usize {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    if i % 64 == 63 {
        64 << 10
    } else {
        16 + (*x % 497) as usize
    }
}

/// One thread's work through `a`: `ops` allocations, each freed `LIVE`
/// allocations later.
fn work(a: &dyn GlobalAlloc, ops: usize, seed: u64) {
    site_mark();
    let mut live: [(usize, usize); LIVE] = [(0, 0); LIVE];
    let mut x = seed | 1;
    for i in 0..ops {
        let slot = i % LIVE;
        let (p, n) = live[slot];
        if p != 0 {
            let layout = Layout::from_size_align(n, 8).unwrap();
            // SAFETY: `p` came from `a.alloc` with this layout.
            unsafe { a.dealloc(p as *mut u8, layout) };
        }
        let n = size(i, &mut x);
        let layout = Layout::from_size_align(n, 8).unwrap();
        // SAFETY: a non-zero size; the block is written once and freed
        // with the same layout.
        let p = unsafe { a.alloc(layout) };
        assert!(!p.is_null());
        // SAFETY: `p` is valid for `n >= 16` bytes.
        unsafe { p.write(i as u8) };
        live[slot] = (black_box(p) as usize, n);
    }
    for (p, n) in live {
        if p != 0 {
            // SAFETY: as above.
            unsafe { a.dealloc(p as *mut u8, Layout::from_size_align(n, 8).unwrap()) };
        }
    }
}

/// An event on the thread: it records in the session from here on (its
/// sampled allocations are written).
fn site_mark() {
    fxt::trace_instant!("bench", "worker");
}

/// One thread's mixed work: `steps` steps of strings, vectors and a map
/// (see the module docs); returns a checksum.
fn mixed(steps: usize, seed: u64) -> u64 {
    site_mark();
    let mut map: HashMap<String, Vec<u64>> = HashMap::new();
    let mut x = seed | 1;
    let mut sum = 0u64;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("key-{:x}", x % 4096);
        let mut v: Vec<u64> = (0..8 + x % 56).map(|k| k.wrapping_mul(x) >> 7).collect();
        v.sort_unstable();
        sum = sum.wrapping_add(v.iter().fold(0, |a, &b| a ^ b.rotate_left(5)));
        map.entry(key).or_default().extend_from_slice(&v[..4]);
        if map.len() >= 1024 {
            sum = sum.wrapping_add(map.values().map(|v| v.len() as u64).sum::<u64>());
            map.clear();
            map.shrink_to_fit();
        }
    }
    black_box(sum)
}

/// The workloads.
#[derive(Clone, Copy, PartialEq)]
enum Workload {
    AllocOnly,
    Mixed,
}

/// The CPU time this process has used, in seconds (every thread's, fxt's
/// helpers' included).
fn process_cpu() -> f64 {
    fxt_bench::host::process_cpu_ns() as f64 * 1e-9
}

/// One run's times, in seconds.
#[derive(Clone, Copy)]
struct Times {
    /// Until every thread is done.
    wall: f64,
    /// The process's CPU time meanwhile (fxt's helper threads' included).
    process: f64,
    /// The workload's threads' own CPU time, summed: what the allocator
    /// costs the program's threads, whatever the session's helpers and
    /// other processes take.
    threads: f64,
}

/// The times while `threads` threads run `workload` through the system
/// allocator (`bare`) or the wrapper.
fn run(workload: Workload, bare: bool, threads: usize, ops: usize) -> Times {
    let a: &'static (dyn GlobalAlloc + Sync) = if bare { &System } else { &WRAPPER };
    BARE.store(bare, Ordering::Relaxed);
    let cpu = process_cpu();
    let start = Instant::now();
    let own: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let seed = 0x9e37_79b9 + t as u64;
                s.spawn(move || {
                    let cpu = fxt_bench::host::thread_cpu_ns();
                    match workload {
                        Workload::AllocOnly => work(a, ops, seed),
                        Workload::Mixed => {
                            mixed(ops / 8, seed);
                        }
                    }
                    fxt_bench::host::thread_cpu_ns() - cpu
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("worker")).sum()
    });
    let wall = start.elapsed().as_secs_f64();
    let process = process_cpu() - cpu;
    BARE.store(false, Ordering::Relaxed);
    Times {
        wall,
        process,
        threads: own as f64 * 1e-9,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Setting {
    Bare,
    BareSession,
    NoSession,
    NotSampling,
    Sampling,
}

const SETTINGS: [(Setting, &str); 5] = [
    (Setting::Bare, "system allocator, called directly"),
    (
        Setting::BareSession,
        "system allocator, called directly, in a session",
    ),
    (Setting::NoSession, "wrapper, no session"),
    (Setting::NotSampling, "wrapper, session not sampling memory"),
    (Setting::Sampling, "wrapper, sampling memory"),
];

/// One measurement of `setting`: its times, the sampled allocations and
/// frees, and the bytes of trace written.
fn measure(workload: Workload, setting: Setting, threads: usize, ops: usize) -> (Times, u64, u64) {
    let path = std::env::temp_dir().join(format!("fxt-bench-alloc-{}.fxt", std::process::id()));
    let config = match setting {
        Setting::Bare | Setting::NoSession => None,
        Setting::BareSession | Setting::NotSampling => Some(fxt::Config::new().output(&path)),
        Setting::Sampling => Some(fxt::Config::new().output(&path).alloc_sample_bytes(mean())),
    };
    let session = config.map(|c| fxt::start(c).expect("session"));
    let bare = matches!(setting, Setting::Bare | Setting::BareSession);
    let times = run(workload, bare, threads, ops);
    let (samples, bytes) = session
        .map(|s| s.finish().expect("finish"))
        .map_or((0, 0), |s| (s.alloc_samples, s.bytes_written));
    let _ = std::fs::remove_file(&path);
    (times, samples, bytes)
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The mean sampled at (`--mean`, default the runtime's).
fn mean() -> u64 {
    arg("--mean", fxt::DEFAULT_ALLOC_SAMPLE_BYTES as usize) as u64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let threads = arg("--threads", 4);
    let ops = arg("--ops", 2_000_000);
    let reps = arg("--reps", 7);
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--instructions-child") {
        let setting = SETTINGS[args[i + 1].parse::<usize>().expect("a setting")].0;
        let (_, samples, _) = measure(Workload::AllocOnly, setting, 1, ops);
        println!("samples {samples}");
        return;
    }
    if args.iter().any(|a| a == "--idle") {
        idle(reps);
        return;
    }
    if args.iter().any(|a| a == "--neighbour") {
        neighbour(arg("--ops", 2_000_000), reps);
        return;
    }
    if args.iter().any(|a| a == "--instructions") {
        instructions(arg("--ops", 200_000));
        return;
    }
    println!(
        "{threads} threads, median of {reps}; sampling mean {} KiB (default {} KiB)",
        mean() >> 10,
        fxt::DEFAULT_ALLOC_SAMPLE_BYTES >> 10
    );
    // `--workload alloc` or `--workload mixed`: that one only (to
    // profile it).
    let only = std::env::args()
        .skip_while(|a| a != "--workload")
        .nth(1)
        .unwrap_or_default();
    for (workload, name) in [
        (
            Workload::AllocOnly,
            format!("allocation only: {ops} allocations a thread (16-512 B, 1 in 64 of 64 KiB)"),
        ),
        (
            Workload::Mixed,
            format!(
                "mixed: {} steps a thread (a string, a vector sorted and summed, a map)",
                ops / 8
            ),
        ),
    ] {
        let key = if workload == Workload::Mixed {
            "mixed"
        } else {
            "alloc"
        };
        if !only.is_empty() && only != key {
            continue;
        }
        println!("\n{name}\n");
        table(workload, threads, ops, reps);
    }
}

/// What a session costs a program that does nothing (`--idle`): the
/// process's CPU time from just before the session starts to 100 ms after
/// (its start: the buffer, the helper threads, the prefaulter's first
/// faults), then over the next second of sleep (what its helper threads
/// take while nothing is recorded), the median of `reps` sessions.
fn idle(reps: usize) {
    let path = std::env::temp_dir().join(format!("fxt-bench-idle-{}.fxt", std::process::id()));
    let (mut start, mut steady) = (Vec::new(), Vec::new());
    for _ in 0..reps.max(1) {
        let before = process_cpu();
        let session = fxt::start(fxt::Config::new().output(&path)).expect("session");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let started = process_cpu();
        std::thread::sleep(std::time::Duration::from_secs(1));
        steady.push(process_cpu() - started);
        start.push(started - before);
        session.finish().expect("finish");
        let _ = std::fs::remove_file(&path);
    }
    println!(
        "an idle session, median of {}: {:.2} ms of CPU to start (and its first 100 ms), then {:.2} ms per second",
        start.len(),
        median(&mut start) * 1e3,
        median(&mut steady) * 1e3
    );
}

/// The wrapper with a neighbour (`--neighbour`): a static laid out as
/// the linker may lay out a program's, the wrapper then a counter.
#[repr(C)]
struct Neighboured {
    wrapper: Sampled<System>,
    counter: AtomicU64,
}

static NEIGHBOURED: Neighboured = Neighboured {
    wrapper: Sampled::new(System),
    counter: AtomicU64::new(0),
};

/// The control: the system allocator behind a flag that every call reads
/// (as the wrapper reads its word) and that shares its neighbour's line.
#[repr(C)]
struct Flagged {
    flag: AtomicU32,
    counter: AtomicU64,
}

static FLAGGED: Flagged = Flagged {
    flag: AtomicU32::new(0),
    counter: AtomicU64::new(0),
};

// SAFETY: every call goes to the system allocator unchanged; the flag
// only decides whether to go on (it is never set).
unsafe impl GlobalAlloc for Flagged {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: never set; read as the wrapper reads its word.
        if self.flag.load(Ordering::Relaxed) != 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// `--neighbour`: one thread's allocation-only workload through the
/// wrapper and through the flagged control, each with its neighbouring
/// counter still and written by another thread, alternated `reps` times;
/// the workload thread's CPU time per allocation and free, medians.
fn neighbour(ops: usize, reps: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        eprintln!(
            "--neighbour needs two cores (a writer beside the allocating thread): {cores} here"
        );
    }
    let cases: [(&str, &(dyn GlobalAlloc + Sync), &AtomicU64); 2] = [
        (
            "wrapper (a cache line of its own)",
            &NEIGHBOURED.wrapper,
            &NEIGHBOURED.counter,
        ),
        (
            "flag sharing the counter's line",
            &FLAGGED,
            &FLAGGED.counter,
        ),
    ];
    let mut ns = vec![Vec::new(); 4];
    for _ in 0..reps.max(1) {
        for (c, &(_, a, counter)) in cases.iter().enumerate() {
            for (w, written) in [false, true].into_iter().enumerate() {
                ns[c * 2 + w].push(beside(a, counter, written, ops) / ops as f64);
            }
        }
    }
    println!("one thread, {ops} allocations, median of {reps}: CPU ns per allocation and free\n");
    println!("| allocator | counter still | counter written by another thread | ratio |");
    println!("|---|---:|---:|---:|");
    for (c, (name, _, _)) in cases.iter().enumerate() {
        let still = median(&mut ns[c * 2]);
        let written = median(&mut ns[c * 2 + 1]);
        println!(
            "| {name} | {still:.2} | {written:.2} | {:.2}x |",
            written / still
        );
    }
}

/// The workload thread's CPU ns for `ops` allocations through `a` while
/// another thread writes `counter` (if `written`) or sleeps.
fn beside(a: &(dyn GlobalAlloc + Sync), counter: &AtomicU64, written: bool, ops: usize) -> f64 {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Relaxed: a flag and a counter nobody reads.
            while !stop.load(Ordering::Relaxed) {
                if written {
                    counter.fetch_add(1, Ordering::Relaxed);
                } else {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        });
        let cpu = fxt_bench::host::thread_cpu_ns();
        work(a, ops, 0x9e37_79b9);
        let own = fxt_bench::host::thread_cpu_ns() - cpu;
        stop.store(true, Ordering::Relaxed);
        own as f64
    })
}

/// Measures `workload` under every setting and prints its table.
fn table(workload: Workload, threads: usize, ops: usize, reps: usize) {
    let mut runs: Vec<Vec<Times>> = vec![Vec::new(); SETTINGS.len()];
    let (mut samples, mut bytes) = (0, 0);
    // Warm-up: the allocator's arenas, the unwinder's module list.
    for (setting, _) in SETTINGS {
        measure(workload, setting, threads, ops / 10);
    }
    // `--setting I` measures that setting alone (to profile it: its
    // ratio is then against nothing).
    let alone = arg("--setting", usize::MAX);
    if alone != usize::MAX && alone >= SETTINGS.len() {
        eprintln!("--setting takes 0 to {}", SETTINGS.len() - 1);
        std::process::exit(2);
    }
    for rep in 0..reps {
        // Each repetition starts at another setting: no setting always
        // runs after the same one.
        for k in 0..SETTINGS.len() {
            let i = (rep + k) % SETTINGS.len();
            if alone != usize::MAX && i != alone {
                continue;
            }
            let setting = SETTINGS[i].0;
            let (times, n, written) = measure(workload, setting, threads, ops);
            runs[i].push(times);
            if setting == Setting::Sampling {
                (samples, bytes) = (n, written);
            }
        }
    }
    if alone != usize::MAX {
        let m = medians(&runs[alone]);
        println!(
            "{}: {:.1} ms wall, {:.1} ms CPU, {:.1} ms the workload's threads",
            SETTINGS[alone].1,
            m.wall * 1e3,
            m.process * 1e3,
            m.threads * 1e3
        );
        sampled(samples, bytes);
        return;
    }
    print_table(&runs);
    sampled(samples, bytes);
}

/// Each field's median over `runs`.
fn medians(runs: &[Times]) -> Times {
    let of = |f: fn(&Times) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    Times {
        wall: of(|t| t.wall),
        process: of(|t| t.process),
        threads: of(|t| t.threads),
    }
}

/// The table of every setting's medians and their ratios to the first's.
fn print_table(runs: &[Vec<Times>]) {
    println!(
        "| setting | wall time | vs system allocator | CPU time | vs system allocator | workload threads' CPU | vs system allocator |"
    );
    println!("|---|---|---|---|---|---|---|");
    let base = medians(&runs[0]);
    for (i, (_, name)) in SETTINGS.iter().enumerate() {
        let m = medians(&runs[i]);
        println!(
            "| {name} | {:.1} ms | {:.3}x | {:.1} ms | {:.3}x | {:.1} ms | {:.3}x |",
            m.wall * 1e3,
            m.wall / base.wall,
            m.process * 1e3,
            m.process / base.process,
            m.threads * 1e3,
            m.threads / base.threads
        );
    }
    println!();
}

/// Prints what the last sampling run took and wrote.
fn sampled(samples: u64, bytes: u64) {
    println!(
        "sampled allocations and frees in the last sampling run: {samples}; trace written: {:.1} MB, {:.0} bytes per sample",
        bytes as f64 / 1e6,
        bytes as f64 / samples.max(1) as f64
    );
}

/// Prints the instructions one thread of the allocation-only workload
/// runs per allocation and free under each setting, and what sampling
/// adds: per allocation and free (the countdown and the free's check,
/// from a run sampling at 1 GiB, where almost nothing is sampled) and per
/// sampled allocation or free; counted by callgrind (see the module docs).
fn instructions(ops: usize) {
    let mean = mean();
    println!(
        "one thread, {ops} allocations (allocation only), sampling mean {} KiB; instructions counted by callgrind\n",
        mean >> 10
    );
    println!("| setting | instructions per allocation and free |");
    println!("|---|---|");
    let mut counts = Vec::new();
    for (i, (_, name)) in SETTINGS.iter().enumerate() {
        let (n, samples) = count_child(i, ops, mean);
        println!("| {name} | {:.1} |", n as f64 / ops as f64);
        counts.push((n, samples));
    }
    let (not_sampling, _) = counts[3];
    let (sampling, samples) = counts[4];
    let (unsampled, few) = count_child(4, ops, MAX_MEAN);
    println!(
        "\nsampling at 1 GiB ({few} sampled): {:.1} per allocation and free (the countdown and the free's check: {:.1})",
        unsampled as f64 / ops as f64,
        (unsampled as f64 - not_sampling as f64) / ops as f64
    );
    println!(
        "{samples} sampled allocations and frees at {} KiB: {:.0} instructions each (beyond the countdown and the check)",
        mean >> 10,
        (sampling as f64 - unsampled as f64) / (samples.saturating_sub(few)).max(1) as f64
    );
}

/// The largest mean (1 GiB): almost nothing sampled.
const MAX_MEAN: u64 = 1 << 30;

/// The instructions the workload's thread ran under setting `i` (at
/// sampling mean `mean`) in a child under callgrind, and the samples it
/// took.
fn count_child(i: usize, ops: usize, mean: u64) -> (u64, u64) {
    let (i, ops, mean) = (i.to_string(), ops.to_string(), mean.to_string());
    let args = ["--instructions-child", &i, "--ops", &ops, "--mean", &mean];
    let counted = fxt_bench::callgrind::expect(&args, "*bench_alloc*work*");
    let samples = counted
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("samples "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (counted.instructions, samples)
}
