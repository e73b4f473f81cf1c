//! tracy-client 0.19 (features `enable`, `only-localhost`; no broadcast, no
//! system tracing), recording with no profiler connected and bounded memory.
//!
//! Without a connected server Tracy queues every event in memory until one
//! connects. To keep memory bounded while still exercising the full
//! recording path, the adapter first occupies a loopback port and points
//! `TRACY_PORT` at it: Tracy's worker cannot listen, and then dequeues and
//! frees the queued events every 10 ms (`Profiler::ClearQueues`).
//!
//! Tracy has no function attribute and no event arguments: the attribute
//! column uses `span!` as the function's first statement, instants are
//! messages, counters are plots, and instants with an argument are n/a.

use std::hint::black_box;
use std::net::TcpListener;

use tracy_client::Client;

use crate::harness::{Scenario, Tracer};

/// The Tracy adapter.
pub struct Tracy {
    client: Client,
    _port_blocker: TcpListener,
}

impl std::fmt::Debug for Tracy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracy").finish_non_exhaustive()
    }
}

impl Tracy {
    /// Starts the Tracy client (once per process, before any other thread
    /// reads the environment).
    pub fn new() -> Tracy {
        let blocker = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = blocker.local_addr().expect("local address").port();
        std::env::set_var("TRACY_PORT", port.to_string());
        Tracy {
            client: Client::start(),
            _port_blocker: blocker,
        }
    }
}

impl Default for Tracy {
    fn default() -> Self {
        Tracy::new()
    }
}

#[inline(never)]
fn traced_fn() {
    let _span = tracy_client::span!("traced_fn");
    black_box(());
}

#[inline(never)]
fn guarded_fn() {
    let _span = tracy_client::span!("guard");
    black_box(());
}

impl Tracer for Tracy {
    fn name(&self) -> &'static str {
        "tracy"
    }

    fn supports(&self, scenario: Scenario) -> bool {
        !matches!(scenario, Scenario::InstantArg | Scenario::Disabled)
    }

    fn run(&self, scenario: Scenario, events: u64) {
        match scenario {
            Scenario::Instant => (0..events).for_each(|_| self.client.message("instant", 0)),
            Scenario::Counter => {
                (0..events).for_each(|i| tracy_client::plot!("series", black_box(i as i64) as f64))
            }
            Scenario::DurationAttr => (0..events).for_each(|_| traced_fn()),
            Scenario::DurationGuard => (0..events).for_each(|_| guarded_fn()),
            Scenario::InstantArg | Scenario::Disabled => {}
        }
    }
}
