//! What sampled allocations (`fxt::alloc::Sampled`, issue 45) cost an
//! allocation-heavy program.
//!
//! ```text
//! cargo run --release -p fxt-bench --bin bench-alloc -- [--threads T] [--ops N] [--reps R]
//! ```
//!
//! `T` threads each make `N` allocations (mostly small, 16 to 512 bytes;
//! one in 64 of 64 KiB) and free them in turn, keeping 64 blocks live, all
//! through one allocator, under four settings measured in the same run:
//! the system allocator called directly (the baseline), the wrapper with
//! no session, the wrapper with a session that does not sample memory,
//! and the wrapper sampling at the default mean
//! (`fxt::DEFAULT_ALLOC_SAMPLE_BYTES`). Each setting's time is the wall
//! time until every thread is done, `R` repetitions interleaved across the
//! settings (each repetition starting at another), the median reported, with its ratio to the baseline's median
//! and the sampled allocations of the sampling runs.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Instant;

use fxt::alloc::Sampled;

#[global_allocator]
static WRAPPER: Sampled<System> = Sampled::new(System);

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

/// The wall time of `threads` threads running [`work`] through `a`.
fn run(a: &'static (dyn GlobalAlloc + Sync), threads: usize, ops: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || work(a, ops, 0x9e37_79b9 + t as u64));
        }
    });
    start.elapsed().as_secs_f64()
}

#[derive(Clone, Copy, PartialEq)]
enum Setting {
    Bare,
    NoSession,
    NotSampling,
    Sampling,
}

const SETTINGS: [(Setting, &str); 4] = [
    (Setting::Bare, "system allocator, called directly"),
    (Setting::NoSession, "wrapper, no session"),
    (Setting::NotSampling, "wrapper, session not sampling memory"),
    (Setting::Sampling, "wrapper, sampling at the default mean"),
];

/// One measurement of `setting`; the sampled allocations and frees.
fn measure(setting: Setting, threads: usize, ops: usize) -> (f64, u64) {
    let path = std::env::temp_dir().join(format!("fxt-bench-alloc-{}.fxt", std::process::id()));
    let config = match setting {
        Setting::Bare | Setting::NoSession => None,
        Setting::NotSampling => Some(fxt::Config::new().output(&path)),
        Setting::Sampling => Some(
            fxt::Config::new()
                .output(&path)
                .alloc_sample_bytes(fxt::DEFAULT_ALLOC_SAMPLE_BYTES),
        ),
    };
    let session = config.map(|c| fxt::start(c).expect("session"));
    let allocator: &'static (dyn GlobalAlloc + Sync) = match setting {
        Setting::Bare => &System,
        _ => &WRAPPER,
    };
    let secs = run(allocator, threads, ops);
    let samples = session
        .map(|s| s.finish().expect("finish").alloc_samples)
        .unwrap_or(0);
    let _ = std::fs::remove_file(&path);
    (secs, samples)
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let threads = arg("--threads", 4);
    let ops = arg("--ops", 2_000_000);
    let reps = arg("--reps", 7);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); SETTINGS.len()];
    let mut samples = 0;
    // Warm-up: the allocator's arenas, the unwinder's module list.
    for (setting, _) in SETTINGS {
        measure(setting, threads, ops / 10);
    }
    for rep in 0..reps {
        // Each repetition starts at another setting: no setting always
        // runs after the same one.
        for k in 0..SETTINGS.len() {
            let i = (rep + k) % SETTINGS.len();
            let setting = &SETTINGS[i].0;
            let (secs, n) = measure(*setting, threads, ops);
            times[i].push(secs);
            if *setting == Setting::Sampling {
                samples = n;
            }
        }
    }
    println!(
        "{threads} threads x {ops} allocations (16-512 B, 1 in 64 of 64 KiB), median of {reps}; \
         default mean {} KiB",
        fxt::DEFAULT_ALLOC_SAMPLE_BYTES >> 10
    );
    println!("| setting | time | vs system allocator |");
    println!("|---|---|---|");
    let base = median(&mut times[0].clone());
    for (i, (_, name)) in SETTINGS.iter().enumerate() {
        let t = median(&mut times[i]);
        println!("| {name} | {:.1} ms | {:.3}x |", t * 1e3, t / base);
    }
    println!("sampled allocations and frees in the last sampling run: {samples}");
}
