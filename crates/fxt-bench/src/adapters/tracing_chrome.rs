//! tracing 0.1 with tracing-subscriber's registry and tracing-chrome 0.7
//! (default trace style, arguments included) writing JSON to `io::sink()`
//! on its own writer thread.
//!
//! tracing has no counters: a counter is an event with the value as a
//! field. Disabled is a `trace!` event under a global `INFO` level filter.

use std::hint::black_box;
use std::sync::Mutex;

use tracing_chrome::{ChromeLayerBuilder, FlushGuard};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::prelude::*;

use crate::harness::{Scenario, Tracer};

/// The tracing + tracing-chrome adapter.
pub struct TracingChrome {
    // The guard is `!Sync`; the mutex only makes the adapter shareable.
    _guard: Mutex<FlushGuard>,
}

impl std::fmt::Debug for TracingChrome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingChrome").finish_non_exhaustive()
    }
}

impl TracingChrome {
    /// Installs the global subscriber (once per process).
    pub fn new() -> TracingChrome {
        let (layer, guard) = ChromeLayerBuilder::new()
            .writer(std::io::sink())
            .include_args(true)
            .build();
        tracing_subscriber::registry()
            .with(layer)
            .with(LevelFilter::INFO)
            .init();
        TracingChrome {
            _guard: Mutex::new(guard),
        }
    }
}

impl Default for TracingChrome {
    fn default() -> Self {
        TracingChrome::new()
    }
}

#[tracing::instrument]
#[inline(never)]
fn traced_fn() {
    black_box(());
}

#[inline(never)]
fn guarded_fn() {
    let _span = tracing::info_span!("guard").entered();
    black_box(());
}

impl Tracer for TracingChrome {
    fn name(&self) -> &'static str {
        "tracing-chrome"
    }

    fn supports(&self, _scenario: Scenario) -> bool {
        true
    }

    fn run(&self, scenario: Scenario, events: u64) {
        match scenario {
            Scenario::Instant => (0..events).for_each(|_| tracing::info!("instant")),
            Scenario::InstantArg => {
                (0..events).for_each(|i| tracing::info!(value = black_box(i), "instant"))
            }
            Scenario::Counter => {
                (0..events).for_each(|i| tracing::info!(series = black_box(i as i64), "counter"))
            }
            Scenario::DurationAttr => (0..events).for_each(|_| traced_fn()),
            Scenario::DurationGuard => (0..events).for_each(|_| guarded_fn()),
            Scenario::Disabled => (0..events).for_each(|_| tracing::trace!("off")),
        }
    }
}
