//! The `realtime` section: the default path (`Config::new()`, a fresh
//! session per repetition) recorded by a writer at the normal policy, at
//! `SCHED_RR` and at `SCHED_FIFO`, next to the floor measured under the
//! same policy; and one row with the helper threads left to inherit the
//! writer's real-time policy (`HelperScheduling::Inherit`, what every
//! helper did before it set its own).
//!
//! Each cell is a child process ([`child`]) that gives its main thread
//! the row's policy with `sched_setscheduler` before it starts the session
//! (so the session's helpers are spawned by a real-time thread, as in a
//! real-time program) and before it spawns the measured writer (which
//! inherits it).

use fxt::{Config, HelperScheduling};

use crate::adapters;
use crate::harness::{measure, ns_per_event, Scenario, Tracer};

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

/// Child `--realtime POLICY HELPERS TRACER EVENTS` (TRACER: `floor` or
/// `fxt`, one thread, instants): prints `RESULT <ns>` or `RESULT n/a
/// <why>`.
pub fn child(args: &[String]) {
    let [policy, helpers, tracer, events] = args else {
        panic!("--realtime POLICY HELPERS TRACER EVENTS")
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
    let wall = measure(tracer.as_ref(), Scenario::Instant, 1, events);
    let note = tracer.finish();
    println!("RESULT {:.3} {note}", ns_per_event(wall, 1, events));
}
