//! The `tracing` route: what one `tracing` call site costs with each layer
//! a user would pick to get a trace file, next to the registry alone (what
//! `tracing` itself costs) and fxt's own macros for the same record.
//!
//! | subscriber | what it is |
//! |---|---|
//! | `registry` | `tracing_subscriber::registry()` with no layer: span ids and the span stack, nothing recorded |
//! | `fxt-layer` | registry + `fxt::tracing_layer::FxtLayer`, in a session with `Config::new()` |
//! | `fxt-layer-prefault` | the same in a session with `.prefault(true)` |
//! | `tracing-chrome` | registry + tracing-chrome 0.7 (arguments included), JSON to `io::sink()` on its writer thread |
//! | `tracing-perfetto` | registry + tracing-perfetto 0.1 (debug annotations on: the fields), protobuf to `io::sink()` |
//! | `tracing-tracy` | registry + tracing-tracy 0.12 (default config), no profiler connected (see [`crate::adapters::tracy`]) |
//! | `tracing-perfetto-sdk` | registry + tracing-perfetto-sdk 1.0 (the official Perfetto SDK; feature `perfetto-sdk`), an in-process session as in the `perfetto-sdk` adapter, every event counted in the trace it returns |
//! | `fxt-macro` | no `tracing`: fxt's `trace_instant!` / `trace_duration_scope!`, `Config::new()` |
//! | `fxt-macro-prefault` | the same with `.prefault(true)` (the macro at its floor) |
//!
//! Every subscriber is installed as the global default, as a program does
//! with `.init()`; each cell runs in a fresh process with a fresh session.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

use tracing::{event, span, Level};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Every subscriber name, in column order.
pub const SUBSCRIBERS: [&str; 9] = [
    "registry",
    "fxt-layer",
    "fxt-layer-prefault",
    "tracing-chrome",
    "tracing-perfetto",
    "tracing-tracy",
    "tracing-perfetto-sdk",
    "fxt-macro",
    "fxt-macro-prefault",
];

/// The subscribers of [`SUBSCRIBERS`] in this build (`tracing-perfetto-sdk`
/// needs the `perfetto-sdk` feature).
pub fn subscribers() -> Vec<&'static str> {
    SUBSCRIBERS
        .into_iter()
        .filter(|s| *s != "tracing-perfetto-sdk" || cfg!(feature = "perfetto-sdk"))
        .collect()
}

/// Every call shape, in row order: `(id, description)`.
pub const CALLS: [(&str, &str); 3] = [
    ("event", "`event!(INFO, \"ev\")` (fxt: `trace_instant!`)"),
    (
        "event-arg",
        "`event!(INFO, arg = i, \"ev\")` (fxt: `trace_instant!` + u64)",
    ),
    (
        "span",
        "`span!(INFO, \"sp\")` + `enter()` (fxt: `trace_duration_scope!`)",
    ),
];

/// Events recorded before timing (warms the call sites and the first chunk).
const WARMUP: u64 = 1_000;

/// Events per instruction-count run (plus the warm-up).
const PROFILE_EVENTS: u64 = 20_000;

/// What keeps a subscriber's state alive for the measurement.
enum Installed {
    None,
    Session(fxt::Session),
    Chrome(tracing_chrome::FlushGuard),
    Tracy(std::net::TcpListener),
    #[cfg(feature = "perfetto-sdk")]
    PerfettoSdk(crate::perfetto::Capture),
}

/// A session prefaulted in `start`, or with the defaults (the background
/// prefaulter: `.prefault(false)` would turn it off).
fn session(prefault: bool) -> fxt::Session {
    let config = fxt::Config::new()
        .output(std::env::temp_dir().join(format!("fxt-route-{}.fxt", std::process::id())));
    let config = if prefault {
        config.prefault(true)
    } else {
        config
    };
    fxt::start(config).expect("start an fxt session")
}

fn install(subscriber: &str) -> Installed {
    let registry = tracing_subscriber::registry();
    match subscriber {
        "registry" => {
            registry.init();
            Installed::None
        }
        "fxt-layer" | "fxt-layer-prefault" => {
            let s = session(subscriber == "fxt-layer-prefault");
            registry.with(fxt::tracing_layer::FxtLayer::new()).init();
            Installed::Session(s)
        }
        "tracing-chrome" => {
            let (layer, guard) = tracing_chrome::ChromeLayerBuilder::new()
                .writer(std::io::sink())
                .include_args(true)
                .build();
            registry.with(layer).init();
            Installed::Chrome(guard)
        }
        "tracing-perfetto" => {
            let layer =
                tracing_perfetto::PerfettoLayer::new(std::io::sink as fn() -> std::io::Sink)
                    .with_debug_annotations(true);
            registry.with(layer).init();
            Installed::None
        }
        "tracing-tracy" => {
            // As in the tracy adapter: occupy Tracy's port so that, with no
            // profiler able to connect, the client drops its queues
            // periodically and memory stays bounded.
            let blocker = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
            let port = blocker.local_addr().expect("local address").port();
            std::env::set_var("TRACY_PORT", port.to_string());
            registry.with(tracing_tracy::TracyLayer::default()).init();
            Installed::Tracy(blocker)
        }
        #[cfg(feature = "perfetto-sdk")]
        "tracing-perfetto-sdk" => {
            crate::perfetto::init(|| {
                tracing_perfetto_sdk::perfetto_te_ns::register().expect("register the category")
            });
            let capture = crate::perfetto::Capture::start("tracing");
            registry
                .with(tracing_perfetto_sdk::PerfettoLayer::new())
                .init();
            Installed::PerfettoSdk(capture)
        }
        "fxt-macro" => Installed::Session(session(false)),
        "fxt-macro-prefault" => Installed::Session(session(true)),
        other => panic!("unknown subscriber {other:?}"),
    }
}

#[inline(never)]
fn tracing_calls(call: &str, events: u64) {
    match call {
        "event" => (0..events).for_each(|_| event!(Level::INFO, "ev")),
        "event-arg" => (0..events).for_each(|i| event!(Level::INFO, arg = black_box(i), "ev")),
        "span" => (0..events).for_each(|_| {
            let span = span!(Level::INFO, "sp");
            let _entered = span.enter();
            black_box(());
        }),
        other => panic!("unknown call {other:?}"),
    }
}

#[inline(never)]
fn fxt_calls(call: &str, events: u64) {
    match call {
        "event" => (0..events).for_each(|_| fxt::trace_instant!("bench", "ev")),
        "event-arg" => {
            (0..events).for_each(|i| fxt::trace_instant!("bench", "ev", "arg" => black_box(i)))
        }
        "span" => (0..events).for_each(|_| {
            let _scope = fxt::trace_duration_scope!("bench", "sp");
            black_box(());
        }),
        other => panic!("unknown call {other:?}"),
    }
}

/// Child `--tracing-cell SUBSCRIBER CALL EVENTS`: prints `RESULT <ns per
/// event>` (one thread).
pub fn cell_child(args: &[String]) {
    let [subscriber, call, events] = args else {
        panic!("--tracing-cell SUBSCRIBER CALL EVENTS")
    };
    let events: u64 = events.parse().expect("events");
    let installed = install(subscriber);
    let run = if subscriber.starts_with("fxt-macro") {
        fxt_calls
    } else {
        tracing_calls
    };
    run(call, WARMUP);
    let start = Instant::now();
    run(call, events);
    let wall = start.elapsed();
    let note = match installed {
        Installed::Session(s) => {
            let stats = s.finish_to_writer(std::io::sink()).expect("collect");
            if stats.records_dropped > 0 {
                format!("{} dropped", stats.records_dropped)
            } else {
                String::new()
            }
        }
        Installed::Chrome(guard) => {
            drop(guard);
            String::new()
        }
        Installed::Tracy(blocker) => {
            drop(blocker);
            String::new()
        }
        #[cfg(feature = "perfetto-sdk")]
        Installed::PerfettoSdk(capture) => perfetto_missing(capture, call, WARMUP + events),
        Installed::None => String::new(),
    };
    println!(
        "RESULT {:.3} {note}",
        wall.as_nanos() as f64 / events as f64
    );
}

/// Stops the Perfetto SDK session and counts the events of `call` in its
/// trace: a note of what is missing, or an empty string.
#[cfg(feature = "perfetto-sdk")]
fn perfetto_missing(capture: crate::perfetto::Capture, call: &str, events: u64) -> String {
    let trace = capture.finish();
    let got = crate::perfetto::count_track_events(&trace)
        .unwrap_or_else(|e| panic!("tracing-perfetto-sdk: {e}"));
    // An event is an instant; a span a begin and an end.
    let (kept, expected) = if call == "span" {
        (got.begin.min(got.end), events)
    } else {
        (got.instant, events)
    };
    assert!(kept <= expected, "more events than recorded: {got:?}");
    if kept < expected {
        format!(
            "{} of {expected} events missing from the trace",
            expected - kept
        )
    } else {
        String::new()
    }
}

/// The instruction profile of the `tracing` route (valgrind callgrind, one
/// thread, repeatable): what the registry alone, fxt's macro and the fxt
/// layer execute per call, and how much of the layer's share is spent in
/// `tracing`'s field walk (`ValueSet::record`, the visitor included) and,
/// within it, in formatting the message (`record_debug`: the message
/// reaches a layer only as `&dyn Debug`). Markdown, or a note without
/// valgrind.
pub fn instruction_profile() -> String {
    if std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_err()
    {
        return "(valgrind not found: no instruction profile)".into();
    }
    let per_call = |sub: &str, call: &str, toggle: &str| {
        let events = PROFILE_EVENTS.to_string();
        crate::callgrind::count(&["--tracing-cell", sub, call, &events], toggle)
            .ok()
            // The child prints a `RESULT` line once it ran the calls.
            .filter(|c| c.stdout.contains("RESULT "))
            .map(|c| c.instructions as f64 / (PROFILE_EVENTS + WARMUP) as f64)
    };
    let fmt = |v: Option<f64>| v.map_or("?".to_string(), |v| format!("{v:.0}"));
    let mut out = format!(
        "Instructions per call (valgrind callgrind, 1 thread, {PROFILE_EVENTS} calls, sessions with `.prefault(true)`; goal = 1.5 × (registry + fxt macro)):\n\n\
         | call | registry | fxt macro | fxt-layer | goal | layer − registry | in `ValueSet::record` (field walk + visitor) | of which the message (`record_debug` → `core::fmt`) |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for (call, describe) in CALLS {
        eprintln!("tracing profile: {call}");
        let loop_fn = "*tracing_route::tracing_calls*";
        let registry = per_call("registry", call, loop_fn);
        let layer = per_call("fxt-layer-prefault", call, loop_fn);
        let mac = per_call("fxt-macro-prefault", call, "*tracing_route::fxt_calls*");
        let (walk, message) = if call == "span" {
            (None, None)
        } else {
            (
                per_call("fxt-layer-prefault", call, "*ValueSet*record*"),
                per_call("fxt-layer-prefault", call, "*EventVisitor*record_debug*"),
            )
        };
        let goal = registry.zip(mac).map(|(r, m)| 1.5 * (r + m));
        let _ = writeln!(
            out,
            "| {describe} | {} | {} | {} | {} | {} | {} | {} |",
            fmt(registry),
            fmt(mac),
            fmt(layer),
            fmt(goal),
            fmt(layer.zip(registry).map(|(l, r)| l - r)),
            walk.map_or("–".into(), |v| format!("{v:.0}")),
            message.map_or("–".into(), |v| format!("{v:.0}")),
        );
    }
    out
}
