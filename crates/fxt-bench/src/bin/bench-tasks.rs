//! What tracing async tasks (`fxt::task`, `fxt::tokio::instrument`) costs.
//!
//! ```text
//! cargo run --release -p fxt-bench --bin bench-tasks -- [--reps R] [--scale S] [--parts] [--prefault P]
//! cargo run --release -p fxt-bench --bin bench-tasks -- --instructions   # needs valgrind
//! ```
//!
//! Five settings, measured in one run, `R` repetitions interleaved across
//! them (each repetition in another order), medians, bests and spread
//! reported:
//!
//! * `without fxt`: the program as written, no wrapper, no hooks;
//! * `empty hooks`: no wrapper, the runtime with the hooks `instrument`
//!   installs each replaced by an empty closure: Tokio's own cost of
//!   calling hooks, the baseline of fxt's;
//! * `session off`: every task wrapped with `.traced(..)` and the runtime
//!   instrumented, no session;
//! * `category off`: the same with a session whose category `task` is off;
//! * `recording`: the same, recording (circular 64 MiB buffer, so a long
//!   run keeps writing at the same cost).
//!
//! The sessions fault their buffer in before they start
//! (`Prefault::AtStart`; `--prefault background` for fxt's default, a
//! thread that does it while the program runs, sharing the cores with
//! the workload's first milliseconds).
//!
//! Three workloads:
//!
//! * `poll`: one future polled by hand, each poll waking itself and
//!   returning `Pending` (a poll and a wake per iteration): ns per poll,
//!   the cost of a recorded poll being its difference from `without fxt`;
//! * `(a) ping-pong`: 64 pairs of tasks on a two-worker runtime sending a
//!   number back and forth over channels (`5000 * S` trips each): round
//!   trips per second;
//! * `(b) TCP echo`: a server (a task per connection) and 16 client tasks
//!   sending 64-byte messages over loopback in the same runtime: round
//!   trips per second.
//!
//! Then the parts of a recorded poll, each measured alone while recording
//! (`parts`): a clock read, three in a row (a woken poll's reads alone),
//! a record, a poll no wake caused and one its own wake caused.
//! `--parts` measures only those, in the thread's CPU time (what other
//! processes take of the core is not counted).
//!
//! `--instructions` counts instead, under callgrind (in a child process
//! per line), the instructions per poll of `poll` without fxt, with the
//! session off, with the category off, and recording (a poll no wake
//! caused, and one its own wake caused, the wake's included): a figure
//! the load of other processes does not move.
//!
//! Each line gives the throughput and its ratio to `without fxt` in the
//! same run: the medians of the repetitions, then the best of each (load
//! from other processes only slows a repetition down). The load average is printed before and after: on a machine
//! others are using, the ratios of one run are what can be compared.

use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use fxt::task::TracedExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::{Builder, Runtime};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Setting {
    Without,
    EmptyHooks,
    SessionOff,
    CategoryOff,
    Recording,
}

const SETTINGS: [Setting; 5] = [
    Setting::Without,
    Setting::EmptyHooks,
    Setting::SessionOff,
    Setting::CategoryOff,
    Setting::Recording,
];

impl Setting {
    fn label(self) -> &'static str {
        match self {
            Setting::Without => "without fxt",
            Setting::EmptyHooks => "empty hooks",
            Setting::SessionOff => "session off",
            Setting::CategoryOff => "category off",
            Setting::Recording => "recording",
        }
    }

    /// Whether the tasks are wrapped and the runtime instrumented.
    fn traced(self) -> bool {
        !matches!(self, Setting::Without | Setting::EmptyHooks)
    }

    /// Runs `f` under the setting's session (if any).
    fn run<T>(self, f: impl FnOnce() -> T) -> T {
        let session = match self {
            Setting::Without | Setting::EmptyHooks | Setting::SessionOff => None,
            Setting::CategoryOff | Setting::Recording => {
                let prefault = *PREFAULT.get_or_init(|| fxt::Prefault::AtStart);
                let config = fxt::Config::new()
                    .mode(fxt::Mode::Circular)
                    .prefault(prefault);
                Some(fxt::start(config).expect("a session"))
            }
        };
        if self == Setting::CategoryOff {
            fxt::disable_category("task");
        }
        let out = f();
        fxt::enable_category("task");
        if let Some(s) = session {
            s.finish_to_writer(std::io::sink()).expect("collected");
        }
        out
    }

    fn runtime(self, workers: usize) -> Runtime {
        let mut b = Builder::new_multi_thread();
        b.worker_threads(workers).enable_io();
        if self.traced() {
            fxt::tokio::instrument(&mut b);
        } else if self == Setting::EmptyHooks {
            fxt_bench::tokio_hooks::empty_hooks(&mut b);
        }
        b.build().expect("a runtime")
    }
}

/// When the sessions fault their buffer in (`--prefault`).
static PREFAULT: OnceLock<fxt::Prefault> = OnceLock::new();

/// Pending `left` times, waking itself each time.
struct Spin {
    left: u64,
}

impl Future for Spin {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.left == 0 {
            return Poll::Ready(());
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Polls `f` to completion by hand; the number of polls.
fn drive(f: impl Future<Output = ()>) -> u64 {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 1;
    while f.as_mut().poll(&mut cx).is_pending() {
        polls += 1;
    }
    polls
}

/// `--instructions`: the polls counted, by child process.
const COUNTED: [(&str, &str); 5] = [
    ("without", "without fxt"),
    ("session-off", "session off"),
    ("category-off", "category off"),
    ("idle", "recording, not woken"),
    ("woken", "recording, woken"),
];
const COUNTED_POLLS: u64 = 200_000;

/// What callgrind counts (`--toggle-collect=*measure*`): `f` polled to
/// completion.
#[inline(never)]
fn measure(f: impl Future<Output = ()>) -> u64 {
    // Opaque, so that the polls without fxt are not folded into a count.
    drive(black_box(f))
}

/// The child of [`instructions`]: `variant`'s polls, in its setting.
fn counted_child(variant: &str) {
    let n = COUNTED_POLLS;
    let setting = match variant {
        "without" => Setting::Without,
        "session-off" => Setting::SessionOff,
        "category-off" => Setting::CategoryOff,
        _ => Setting::Recording,
    };
    setting.run(|| match variant {
        "without" => black_box(measure(Spin { left: n })),
        "idle" => black_box(measure(Idle { left: n }.traced("idle"))),
        _ => black_box(measure(Spin { left: n }.traced("spin"))),
    });
}

/// Instructions per poll of each of [`COUNTED`], counted by callgrind in
/// a child process (robust where time is not: a loaded machine); a woken
/// poll's include its wake's.
fn instructions() {
    println!("instructions per poll (callgrind, {COUNTED_POLLS} polls)");
    for (variant, label) in COUNTED {
        let count = fxt_bench::callgrind::expect(&["--instructions-child", variant], "*measure*")
            .instructions;
        println!(
            "{label:<22} {:>8.1}",
            count as f64 / (COUNTED_POLLS + 1) as f64
        );
    }
}

/// ns per poll of a self-waking future.
fn poll_ns(setting: Setting, polls: u64) -> f64 {
    setting.run(|| {
        let t = Instant::now();
        let n = if setting.traced() {
            drive(Spin { left: polls }.traced("spin"))
        } else {
            drive(Spin { left: polls })
        };
        black_box(n);
        t.elapsed().as_nanos() as f64 / n as f64
    })
}

/// Pending `left` times without waking itself: a poll no wake caused.
struct Idle {
    left: u64,
}

impl Future for Idle {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.left == 0 {
            return Poll::Ready(());
        }
        self.left -= 1;
        Poll::Pending
    }
}

/// CPU ns of the calling thread per unit of what `f` returns (how many
/// iterations or polls it ran).
fn cpu_ns_per(f: impl FnOnce() -> u64) -> f64 {
    // The thread's CPU time: the time other processes hold the core (on
    // a shared machine, half of it or more) is not counted as the part's.
    let t = fxt_bench::host::thread_cpu_ns();
    let n = f();
    (fxt_bench::host::thread_cpu_ns() - t) as f64 / n as f64
}

/// CPU ns per iteration of `f`, `n` iterations, in a recording session.
fn recorded_ns(n: u64, f: impl Fn(u64)) -> f64 {
    Setting::Recording.run(|| {
        cpu_ns_per(|| {
            for i in 0..n {
                f(i);
            }
            n
        })
    })
}

/// What a recorded poll is made of, each measured alone while recording
/// (ns of the thread's CPU time): a clock read, three in a row (what a
/// woken poll's reads cost alone: the floor of its cost), a record of
/// four words (an instant with a `u64` argument), a poll no wake caused
/// (its thread slice: one record, two clock reads), the same poll with a
/// wake of its own (the wake's clock read and stores, the poll's longer
/// argument list) and the bare loop of each.
fn parts(n: u64) -> [f64; 6] {
    let clock = recorded_ns(n, |_| {
        black_box(fxt::__macro_support::now());
    });
    let clocks = recorded_ns(n, |_| {
        for _ in 0..3 {
            black_box(fxt::__macro_support::now());
        }
    });
    let record = recorded_ns(n, |i| fxt::trace_instant!("task", "part", "i" => i));
    let idle = Setting::Recording.run(|| cpu_ns_per(|| drive(Idle { left: n }.traced("idle"))));
    let woken = Setting::Recording.run(|| cpu_ns_per(|| drive(Spin { left: n }.traced("spin"))));
    let bare = cpu_ns_per(|| black_box(drive(Spin { left: n })));
    [clock, clocks, record, idle, woken, bare]
}

/// The lines of [`parts`].
const PARTS: [&str; 6] = [
    "clock read",
    "3 clock reads",
    "record (4 words)",
    "poll, not woken",
    "poll, woken",
    "poll without fxt",
];

/// Wraps `f` as a task named `name` when the setting traces.
fn spawn<F>(setting: Setting, name: &'static str, f: F) -> tokio::task::JoinHandle<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    if setting.traced() {
        tokio::spawn(f.traced(name))
    } else {
        tokio::spawn(f)
    }
}

/// (a): round trips per second of `pairs` ping-pong pairs.
fn ping_pong(setting: Setting, pairs: usize, trips: u32) -> f64 {
    let rt = setting.runtime(2);
    setting.run(|| {
        let t = Instant::now();
        rt.block_on(async {
            let mut handles = Vec::new();
            for _ in 0..pairs {
                let (to_b, mut from_a) = tokio::sync::mpsc::channel::<u32>(1);
                let (to_a, mut from_b) = tokio::sync::mpsc::channel::<u32>(1);
                handles.push(spawn(setting, "ping", async move {
                    for i in 0..trips {
                        to_b.send(i).await.unwrap();
                        black_box(from_b.recv().await.unwrap());
                    }
                }));
                handles.push(spawn(setting, "pong", async move {
                    while let Some(v) = from_a.recv().await {
                        if to_a.send(v).await.is_err() {
                            break;
                        }
                    }
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
        });
        (pairs as f64 * f64::from(trips)) / t.elapsed().as_secs_f64()
    })
}

/// (b): round trips per second of `clients` echo clients over loopback.
fn echo(setting: Setting, clients: usize, trips: u32) -> f64 {
    let rt = setting.runtime(2);
    setting.run(|| {
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let server = spawn(setting, "accept", async move {
                loop {
                    let Ok((mut socket, _)) = listener.accept().await else {
                        return;
                    };
                    socket.set_nodelay(true).unwrap();
                    spawn(setting, "echo", async move {
                        let mut buf = [0u8; 64];
                        while socket.read_exact(&mut buf).await.is_ok() {
                            if socket.write_all(&buf).await.is_err() {
                                return;
                            }
                        }
                    });
                }
            });
            let t = Instant::now();
            let mut handles = Vec::new();
            for c in 0..clients {
                handles.push(spawn(setting, "client", async move {
                    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
                    socket.set_nodelay(true).unwrap();
                    let mut buf = [c as u8; 64];
                    for _ in 0..trips {
                        socket.write_all(&buf).await.unwrap();
                        socket.read_exact(&mut buf).await.unwrap();
                    }
                }));
            }
            for h in handles {
                h.await.unwrap();
            }
            let rate = (clients as f64 * f64::from(trips)) / t.elapsed().as_secs_f64();
            server.abort();
            rate
        })
    })
}

/// The median (NaN for no values: `--parts` runs no workload).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn arg(args: &[String], name: &str, default: u32) -> u32 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, variant] = &args[..] {
        if flag == "--instructions-child" {
            return counted_child(variant);
        }
    }
    if args.iter().any(|a| a == "--instructions") {
        return instructions();
    }
    let reps = arg(&args, "--reps", 7) as usize;
    let scale = arg(&args, "--scale", 1);
    if let Some(i) = args.iter().position(|a| a == "--prefault") {
        let mode = args.get(i + 1).and_then(|m| fxt::Prefault::parse(m));
        let _ = PREFAULT.set(mode.expect("--prefault background|start|off"));
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("bench-tasks: {reps} reps, scale {scale}, {cores} cores");
    println!("load average before: {}", fxt_bench::host::load_average());
    // `--parts`: only the parts of a recorded poll (quick, for comparing
    // builds).
    if !args.iter().any(|a| a == "--parts") {
        let runs = Runs::measure(reps, scale);
        runs.print_tables();
        runs.print_spread();
    }
    print_parts(reps, scale);
    println!();
    println!("load average after: {}", fxt_bench::host::load_average());
}

/// Every repetition's figure of each setting, by setting: ns per poll,
/// ping-pong and echo round trips per second.
struct Runs {
    polls: Vec<Vec<f64>>,
    pings: Vec<Vec<f64>>,
    echoes: Vec<Vec<f64>>,
}

impl Runs {
    fn measure(reps: usize, scale: u32) -> Self {
        let mut runs = Runs {
            polls: vec![Vec::new(); SETTINGS.len()],
            pings: vec![Vec::new(); SETTINGS.len()],
            echoes: vec![Vec::new(); SETTINGS.len()],
        };
        for rep in 0..reps {
            // Each repetition in another order, so no setting always
            // follows the same one.
            for k in 0..SETTINGS.len() {
                let i = (k + rep) % SETTINGS.len();
                let s = SETTINGS[i];
                runs.polls[i].push(poll_ns(s, 1_000_000 * u64::from(scale)));
                runs.pings[i].push(ping_pong(s, 64, 5_000 * scale));
                runs.echoes[i].push(echo(s, 16, 1_000 * scale));
            }
        }
        runs
    }

    /// The medians, and the best of the repetitions too: another
    /// process's load only ever slows a repetition down, so the best is
    /// the least disturbed.
    fn print_tables(&self) {
        let medians = |runs: &[Vec<f64>]| -> Vec<f64> {
            runs.iter().map(|v| median(&mut v.clone())).collect()
        };
        let tables = [
            (
                "median",
                medians(&self.polls),
                medians(&self.pings),
                medians(&self.echoes),
            ),
            (
                "best",
                lowest(&self.polls),
                highest(&self.pings),
                highest(&self.echoes),
            ),
        ];
        for (what, polls, pings, echoes) in tables {
            println!();
            println!(
                "{what:<14} {:>10} {:>16} {:>7} {:>16} {:>7}",
                "ns/poll", "(a) trips/s", "ratio", "(b) trips/s", "ratio"
            );
            for (i, s) in SETTINGS.iter().enumerate() {
                println!(
                    "{:<14} {:>10.1} {:>16.0} {:>7.3} {:>16.0} {:>7.3}",
                    s.label(),
                    polls[i],
                    pings[i],
                    pings[i] / pings[0],
                    echoes[i],
                    echoes[i] / echoes[0],
                );
            }
        }
    }

    /// The slowest and the fastest repetition of (a) and (b) against the
    /// median.
    fn print_spread(&self) {
        let (worst_pings, worst_echoes) = (lowest(&self.pings), lowest(&self.echoes));
        let (best_pings, best_echoes) = (highest(&self.pings), highest(&self.echoes));
        println!();
        println!(
            "{:<14} {:>21} {:>21}",
            "spread", "(a) min-max/median", "(b) min-max/median"
        );
        for (i, s) in SETTINGS.iter().enumerate() {
            let ping = median(&mut self.pings[i].clone());
            let echo = median(&mut self.echoes[i].clone());
            println!(
                "{:<14} {:>10.3}-{:<10.3} {:>10.3}-{:.3}",
                s.label(),
                worst_pings[i] / ping,
                best_pings[i] / ping,
                worst_echoes[i] / echo,
                best_echoes[i] / echo,
            );
        }
    }
}

/// The least of each setting's repetitions.
fn lowest(runs: &[Vec<f64>]) -> Vec<f64> {
    runs.iter()
        .map(|v| v.iter().copied().fold(f64::MAX, f64::min))
        .collect()
}

/// The greatest of each setting's repetitions.
fn highest(runs: &[Vec<f64>]) -> Vec<f64> {
    runs.iter()
        .map(|v| v.iter().copied().fold(0.0, f64::max))
        .collect()
}

/// The parts of a recorded poll, `reps` times: median and best.
fn print_parts(reps: usize, scale: u32) {
    let mut part_runs: Vec<Vec<f64>> = Vec::new();
    for _ in 0..reps {
        for (i, ns) in parts(1_000_000 * u64::from(scale)).into_iter().enumerate() {
            if part_runs.len() <= i {
                part_runs.push(Vec::new());
            }
            part_runs[i].push(ns);
        }
    }
    println!();
    println!("parts, recording      median ns     best ns");
    for (label, runs) in PARTS.iter().zip(&mut part_runs) {
        let best = runs.iter().copied().fold(f64::MAX, f64::min);
        println!("{label:<20} {:>10.1} {:>11.1}", median(runs), best);
    }
}
