//! puffin 0.20: scopes only (no instants, arguments or counters).
//!
//! puffin hands a thread's stream to the global profiler whenever its
//! outermost scope closes; the adapter starts a new frame after each
//! measurement (untimed) so the frame data, with no sink attached, is
//! dropped and memory stays bounded. Disabled is `set_scopes_on(false)`.

use std::hint::black_box;

use crate::harness::{Scenario, Tracer};

/// The puffin adapter.
#[derive(Debug)]
pub struct Puffin;

impl Puffin {
    /// Turns puffin's scopes on (process-global).
    pub fn new() -> Puffin {
        puffin::set_scopes_on(true);
        Puffin
    }
}

impl Default for Puffin {
    fn default() -> Self {
        Puffin::new()
    }
}

#[inline(never)]
fn traced_fn() {
    puffin::profile_function!();
    black_box(());
}

#[inline(never)]
fn guarded_fn() {
    puffin::profile_scope!("guard");
    black_box(());
}

impl Tracer for Puffin {
    fn name(&self) -> &'static str {
        "puffin"
    }

    fn supports(&self, scenario: Scenario) -> bool {
        matches!(
            scenario,
            Scenario::DurationAttr | Scenario::DurationGuard | Scenario::Disabled
        )
    }

    fn prepare(&self, scenario: Scenario) {
        puffin::set_scopes_on(scenario != Scenario::Disabled);
    }

    fn run(&self, scenario: Scenario, events: u64) {
        match scenario {
            Scenario::DurationAttr => (0..events).for_each(|_| traced_fn()),
            Scenario::DurationGuard | Scenario::Disabled => (0..events).for_each(|_| guarded_fn()),
            Scenario::Instant | Scenario::InstantArg | Scenario::Counter => {}
        }
    }

    fn after_run(&self) {
        puffin::GlobalProfiler::lock().new_frame();
    }
}
