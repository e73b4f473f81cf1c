//! What Tokio's task hooks and `fxt::tokio::wake_layer` cost, and whose
//! cost it is: plain `tokio::spawn` tasks on an instrumented runtime,
//! whose wakes the layer reads from Tokio's `tracing` events. Only
//! meaningful built with `--cfg tokio_unstable`:
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR=target/tokio-unstable \
//!     cargo run --release -p fxt-bench --features tokio-wakes --bin bench-tokio-wakes -- [--reps R] [--scale S]
//! ```
//!
//! The workload is bench-tasks' (a): 64 pairs of tasks on a two-worker
//! runtime sending a number back and forth over channels (`500 * S` trips
//! each, `S` 10 unless given), round trips per second, here spawned with
//! plain `tokio::spawn`. Settings, measured in one run, `R` repetitions
//! interleaved across them (each repetition in another order), medians,
//! bests and the spread:
//!
//! * `without fxt`: a runtime without hooks, no session;
//! * `empty hooks`: Tokio's task, park and unpark hooks, each an empty
//!   closure: what Tokio's hook machinery costs by itself;
//! * `empty hooks + delay`: the same with Tokio's scheduling-delay
//!   measurement (`track_task_schedule_latency`, which `instrument` turns
//!   on: two clock reads per wake and poll);
//! * `hooks, session off`: `instrument`ed, no subscriber, no session: what
//!   is fxt's is its difference from `empty hooks + delay`;
//! * `hooks without delay, session off`: `instrument_without_delay`, no
//!   subscriber, no session: what is fxt's is its difference from `empty
//!   hooks`;
//! * `hooks, other subscriber, session off`: the same with a `tracing`
//!   subscriber that is not fxt's and wants none of Tokio's spans and
//!   events: what a subscriber's mere existence costs Tokio's `tracing`
//!   instrumentation;
//! * `subscriber, session off`: `instrument`ed, `wake_subscriber()` (what
//!   `install_wake_layer` installs), no session: fxt's part is its
//!   difference from the line above;
//! * `layer beside another, session off`: `instrument`ed, `wake_layer()`
//!   (a per-layer filter) beside a layer that does nothing with a filter
//!   of its own at `INFO` (a program's logging), no session;
//! * `hooks, recording`: instrumented, no layer, recording (polls and
//!   Tokio's delay, no `woken_by`);
//! * `subscriber, recording`: instrumented, `wake_subscriber()`, recording
//!   (each task a span, each waker operation an event).
//!
//! The subscriber is each runtime thread's default (and the thread that
//! blocks on it's), not the global one, so the settings share a process;
//! each setting starts from no subscriber (the interest cache rebuilt, so
//! a subscriber of an earlier setting leaves nothing behind).

use std::cell::RefCell;
use std::hint::black_box;
use std::time::Instant;

use tokio::runtime::{Builder, Runtime};
use tracing::dispatcher::{self, DefaultGuard, Dispatch};
use tracing::subscriber::Interest;
use tracing::Metadata;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

#[derive(Clone, Copy, PartialEq)]
enum Setting {
    Without,
    EmptyHooks,
    EmptyHooksDelay,
    HooksOff,
    NoDelayOff,
    OtherOff,
    LayerOff,
    BesideOff,
    Hooks,
    HooksLayer,
}

const SETTINGS: [Setting; 10] = [
    Setting::Without,
    Setting::EmptyHooks,
    Setting::EmptyHooksDelay,
    Setting::HooksOff,
    Setting::NoDelayOff,
    Setting::OtherOff,
    Setting::LayerOff,
    Setting::BesideOff,
    Setting::Hooks,
    Setting::HooksLayer,
];

thread_local! {
    /// The setting's subscriber as this runtime thread's, for its life.
    static DEFAULT: RefCell<Option<DefaultGuard>> = const { RefCell::new(None) };
}

/// A subscriber's layer that wants nothing of Tokio's (a program's own
/// logging, say): every callsite `never`, and no level hint, as a layer
/// that filters by target has none.
struct Others;

impl<S: tracing::Subscriber> Layer<S> for Others {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::never()
    }

    fn enabled(&self, _: &Metadata<'_>, _: Context<'_, S>) -> bool {
        false
    }
}

/// A program's logging layer, which does nothing here: what matters is
/// its per-layer filter, beside the wake layer's.
struct Logging;

impl<S: tracing::Subscriber> Layer<S> for Logging {}

impl Setting {
    fn label(self) -> &'static str {
        match self {
            Setting::Without => "without fxt",
            Setting::EmptyHooks => "empty hooks",
            Setting::EmptyHooksDelay => "empty hooks + delay",
            Setting::HooksOff => "hooks, session off",
            Setting::NoDelayOff => "hooks without delay, session off",
            Setting::OtherOff => "hooks, other subscriber, session off",
            Setting::LayerOff => "subscriber, session off",
            Setting::BesideOff => "layer beside another, session off",
            Setting::Hooks => "hooks, recording",
            Setting::HooksLayer => "subscriber, recording",
        }
    }

    fn subscriber(self) -> Option<Dispatch> {
        match self {
            Setting::LayerOff | Setting::HooksLayer => {
                Some(Dispatch::new(fxt::tokio::wake_subscriber()))
            }
            Setting::OtherOff => Some(Dispatch::new(tracing_subscriber::registry().with(Others))),
            Setting::BesideOff => Some(Dispatch::new(
                tracing_subscriber::registry()
                    .with(Logging.with_filter(LevelFilter::INFO))
                    .with(fxt::tokio::wake_layer()),
            )),
            _ => None,
        }
    }

    fn runtime(self, subscriber: Option<Dispatch>) -> Runtime {
        let mut b = Builder::new_multi_thread();
        b.worker_threads(2);
        match self {
            Setting::Without => {}
            Setting::EmptyHooks => fxt_bench::tokio_hooks::empty_hooks(&mut b),
            Setting::EmptyHooksDelay => {
                fxt_bench::tokio_hooks::empty_hooks(&mut b);
                #[cfg(tokio_unstable)]
                b.track_task_schedule_latency();
            }
            Setting::NoDelayOff => {
                fxt::tokio::instrument_without_delay(&mut b);
            }
            _ => {
                fxt::tokio::instrument(&mut b);
            }
        }
        if let Some(d) = subscriber {
            b.on_thread_start(move || {
                DEFAULT.with(|g| *g.borrow_mut() = Some(dispatcher::set_default(&d)));
            });
        }
        b.build().expect("a runtime")
    }
}

/// Round trips per second of `pairs` ping-pong pairs of plain tasks.
fn ping_pong(setting: Setting, pairs: usize, trips: u32) -> f64 {
    // No subscriber of an earlier setting is left (its runtime and its
    // dispatch are dropped): the interest cache and the maximum level go
    // back to none before this setting's subscriber (if any) is made.
    tracing::callsite::rebuild_interest_cache();
    let layer = setting.subscriber();
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
    println!("load average before: {}", fxt_bench::host::load_average());
    let mut runs = vec![Vec::new(); SETTINGS.len()];
    for rep in 0..reps as usize {
        // Each repetition in another order, so no setting always follows
        // the same one (a runtime's teardown, a session's end).
        for k in 0..SETTINGS.len() {
            let i = (k + rep) % SETTINGS.len();
            runs[i].push(ping_pong(SETTINGS[i], 64, 500 * scale));
        }
    }
    let best: Vec<f64> = runs
        .iter()
        .map(|v| v.iter().copied().fold(0.0, f64::max))
        .collect();
    let worst: Vec<f64> = runs
        .iter()
        .map(|v| v.iter().copied().fold(f64::MAX, f64::min))
        .collect();
    let medians: Vec<f64> = runs.iter_mut().map(|v| median(v)).collect();
    println!();
    println!(
        "{:<38} {:>10} {:>6} {:>10} {:>6} {:>17}",
        "(a) ping-pong, trips/s", "median", "ratio", "best", "ratio", "spread (min-max)"
    );
    for (i, s) in SETTINGS.iter().enumerate() {
        println!(
            "{:<38} {:>10.0} {:>6.3} {:>10.0} {:>6.3} {:>8.3}-{:.3}",
            s.label(),
            medians[i],
            medians[i] / medians[0],
            best[i],
            best[i] / best[0],
            worst[i] / medians[i],
            best[i] / medians[i],
        );
    }
    println!();
    println!("spread: the slowest and fastest repetition over the setting's median");
    println!();
    println!("load average after: {}", fxt_bench::host::load_average());
}
