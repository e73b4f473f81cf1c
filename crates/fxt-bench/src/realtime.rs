//! The `realtime` section: the default path (`Config::new()`, a fresh
//! session per repetition) recorded by a writer at the normal policy, at
//! `SCHED_RR` and at `SCHED_FIFO`, next to the floor measured under the
//! same policy; and one row with the helper threads left to inherit the
//! writer's real-time policy (`HelperScheduling::Inherit`, what every
//! helper did before it set its own).
//!
//! Each row is also run with every event timed on its own, in separate
//! processes: the events over [`LONG_EVENT_US`] and the longest, which the
//! floor's columns show the machine itself causes.
//!
//! Each cell is a child process ([`child`]) that gives its main thread
//! the row's policy with `sched_setscheduler` before it starts the session
//! (so the session's helpers are spawned by a real-time thread, as in a
//! real-time program) and before it spawns the measured writer (which
//! inherits it).

use fxt::{Config, HelperScheduling};

use crate::adapters;
use crate::harness::{measure, measure_latency, ns_per_event, ticks_per_ns, Scenario, Tracer};

/// One row: its label, the writer's policy (`normal`, `rr`, `fifo`) and
/// the helpers' scheduling (`FXT_HELPER_SCHED` syntax).
pub struct Row {
    /// What the table says.
    pub label: &'static str,
    /// The writer's policy.
    pub policy: &'static str,
    /// The session's `HelperScheduling`.
    pub helpers: &'static str,
}

/// The rows, in table order.
pub const ROWS: [Row; 4] = [
    Row {
        label: "normal",
        policy: "normal",
        helpers: "normal",
    },
    Row {
        label: "`SCHED_RR` 1",
        policy: "rr",
        helpers: "normal",
    },
    Row {
        label: "`SCHED_FIFO` 1",
        policy: "fifo",
        helpers: "normal",
    },
    Row {
        label: "`SCHED_RR` 1, helpers inherit it",
        policy: "rr",
        helpers: "inherit",
    },
];

/// Gives the calling thread `policy` at priority 1 (`normal`: unchanged).
fn set_policy(policy: &str) -> std::io::Result<()> {
    let policy = match policy {
        "rr" => libc::SCHED_RR,
        "fifo" => libc::SCHED_FIFO,
        _ => return Ok(()),
    };
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Events longer than this are counted in the latency run (µs).
pub const LONG_EVENT_US: f64 = 50.0;

/// Child `--realtime POLICY HELPERS TRACER EVENTS [latency]` (TRACER:
/// `floor` or `fxt`, one thread, instants): prints `RESULT <ns per
/// event>`, or with `latency` (every event timed on its own, a separate
/// fresh process so that the timing does not weigh on the ns per event)
/// `RESULT <events over LONG_EVENT_US> <longest event, ns>`; or `RESULT
/// n/a <why>`.
pub fn child(args: &[String]) {
    let (policy, helpers, tracer, events, latency) = match args {
        [p, h, t, e] => (p, h, t, e, false),
        [p, h, t, e, l] if l == "latency" => (p, h, t, e, true),
        _ => panic!("--realtime POLICY HELPERS TRACER EVENTS [latency]"),
    };
    let events: u64 = events.parse().expect("events");
    if let Err(e) = set_policy(policy) {
        println!("RESULT n/a {policy}: {e}");
        return;
    }
    let tracer: Box<dyn Tracer> = if tracer == "fxt" {
        let helpers = HelperScheduling::parse(helpers).expect("helper scheduling");
        let config = Config::new().helper_scheduling(helpers);
        Box::new(adapters::fxt::Fxt::configured(config).named("fxt"))
    } else {
        adapters::by_name(tracer).expect("known tracer")
    };
    if latency {
        let per_ns = ticks_per_ns(std::time::Duration::from_millis(20));
        let ticks = measure_latency(tracer.as_ref(), Scenario::Instant, 1, events)
            .expect("floor and fxt time single events");
        let note = tracer.finish();
        let ns = |t: u64| t as f64 / per_ns;
        let over = ticks
            .iter()
            .filter(|&&t| ns(t) > LONG_EVENT_US * 1000.0)
            .count();
        let longest = ticks.iter().copied().max().map_or(0.0, ns);
        println!("RESULT {over} {longest:.0} {note}");
        return;
    }
    let wall = measure(tracer.as_ref(), Scenario::Instant, 1, events);
    let note = tracer.finish();
    println!("RESULT {:.3} {note}", ns_per_event(wall, 1, events));
}
