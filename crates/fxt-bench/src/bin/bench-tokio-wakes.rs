//! What `fxt::tokio::wake_layer` costs: plain `tokio::spawn` tasks on an
//! instrumented runtime, whose wakes the layer reads from Tokio's
//! `tracing` events. Only meaningful built with `--cfg tokio_unstable`:
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR=target/tokio-unstable \
//!     cargo run --release -p fxt-bench --features tokio-wakes --bin bench-tokio-wakes -- [--reps R] [--scale S]
//! ```
//!
//! The workload is bench-tasks' (a): 64 pairs of tasks on a two-worker
//! runtime sending a number back and forth over channels (`500 * S` trips
//! each, `S` 10 unless given), round trips per second, here spawned with plain `tokio::spawn`. Settings, measured in
//! one run, `R` repetitions interleaved across them, medians and bests:
//!
//! * `without fxt`: a runtime without hooks, no session;
//! * `hooks, session off`: instrumented, no layer, no session;
//! * `subscriber, session off`: instrumented, `wake_subscriber()` (what
//!   `install_wake_layer` installs), no session (each spawn asks the
//!   layer whether to make its span);
//! * `hooks, recording`: instrumented, no layer, recording (polls and
//!   Tokio's delay, no `woken_by`);
//! * `subscriber, recording`: instrumented, `wake_subscriber()`, recording
//!   (each task a span, each waker operation an event).
//!
//! The layer is each runtime thread's default subscriber (and the thread
//! that blocks on it), not the global one, so the settings share a process.
//! `wake_layer()` beside other layers (a per-layer filter) is not
//! measured here.

use std::cell::RefCell;
use std::hint::black_box;
use std::time::Instant;

use tokio::runtime::{Builder, Runtime};
use tracing::dispatcher::{self, DefaultGuard, Dispatch};
use tracing_subscriber::layer::SubscriberExt;

#[derive(Clone, Copy, PartialEq)]
enum Setting {
    Without,
    HooksOff,
    LayerOff,
    Hooks,
    HooksLayer,
}

const SETTINGS: [Setting; 5] = [
    Setting::Without,
    Setting::HooksOff,
    Setting::LayerOff,
    Setting::Hooks,
    Setting::HooksLayer,
];

thread_local! {
    /// The setting's subscriber as this runtime thread's, for its life.
    static DEFAULT: RefCell<Option<DefaultGuard>> = const { RefCell::new(None) };
}

impl Setting {
    fn label(self) -> &'static str {
        match self {
            Setting::Without => "without fxt",
            Setting::HooksOff => "hooks, session off",
            Setting::LayerOff => "subscriber, session off",
            Setting::Hooks => "hooks, recording",
            Setting::HooksLayer => "subscriber, recording",
        }
    }

    fn layer(self) -> Option<Dispatch> {
        matches!(self, Setting::LayerOff | Setting::HooksLayer)
            .then(|| Dispatch::new(tracing_subscriber::registry().with(fxt::tokio::wake_layer())))
    }

    fn runtime(self, layer: Option<Dispatch>) -> Runtime {
        let mut b = Builder::new_multi_thread();
        b.worker_threads(2);
        if self != Setting::Without {
            fxt::tokio::instrument(&mut b);
        }
        if let Some(d) = layer {
            b.on_thread_start(move || {
                DEFAULT.with(|g| *g.borrow_mut() = Some(dispatcher::set_default(&d)));
            });
        }
        b.build().expect("a runtime")
    }
}

/// Round trips per second of `pairs` ping-pong pairs of plain tasks.
fn ping_pong(setting: Setting, pairs: usize, trips: u32) -> f64 {
    let layer = setting.layer();
    let rt = setting.runtime(layer.clone());
    let session = matches!(setting, Setting::Hooks | Setting::HooksLayer)
        .then(|| fxt::start(fxt::Config::new().mode(fxt::Mode::Circular)).expect("a session"));
    let run = || {
        let t = Instant::now();
        rt.block_on(async {
            let mut handles = Vec::new();
            for _ in 0..pairs {
                let (to_b, mut from_a) = tokio::sync::mpsc::channel::<u32>(1);
                let (to_a, mut from_b) = tokio::sync::mpsc::channel::<u32>(1);
                handles.push(tokio::spawn(async move {
                    for i in 0..trips {
                        to_b.send(i).await.unwrap();
                        black_box(from_b.recv().await.unwrap());
                    }
                }));
                handles.push(tokio::spawn(async move {
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
    };
    let rate = match &layer {
        Some(d) => dispatcher::with_default(d, run),
        None => run(),
    };
    if let Some(s) = session {
        s.finish_to_writer(std::io::sink()).expect("collected");
    }
    rate
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn main() {
    if !cfg!(tokio_unstable) {
        println!("bench-tokio-wakes: build with RUSTFLAGS=\"--cfg tokio_unstable\" (Tokio reports no wakes without it)");
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u32| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().expect("a number"))
    };
    let (reps, scale) = (arg("--reps", 7), arg("--scale", 10));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("bench-tokio-wakes: {reps} reps, scale {scale}, {cores} cores");
    println!("load average before: {}", load_average());
    let mut runs = vec![Vec::new(); SETTINGS.len()];
    for _ in 0..reps {
        for (i, &s) in SETTINGS.iter().enumerate() {
            runs[i].push(ping_pong(s, 64, 500 * scale));
        }
    }
    let best: Vec<f64> = runs
        .iter()
        .map(|v| v.iter().copied().fold(0.0, f64::max))
        .collect();
    let medians: Vec<f64> = runs.iter_mut().map(|v| median(v)).collect();
    println!();
    println!(
        "{:<24} {:>14} {:>7} {:>14} {:>7}",
        "(a) ping-pong", "median trips/s", "ratio", "best trips/s", "ratio"
    );
    for (i, s) in SETTINGS.iter().enumerate() {
        println!(
            "{:<24} {:>14.0} {:>7.3} {:>14.0} {:>7.3}",
            s.label(),
            medians[i],
            medians[i] / medians[0],
            best[i],
            best[i] / best[0],
        );
    }
    println!();
    println!("load average after: {}", load_average());
}
