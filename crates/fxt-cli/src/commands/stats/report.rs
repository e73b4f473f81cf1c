//! What `fxt stats` reports, derived from a [`Tally`] once the walk is
//! done: durations summarized per name, events per name (both sorted), the
//! scheduling per thread, and the lookups both outputs share.

use std::collections::BTreeMap;

use crate::walk::Walk;

use super::scheduling::{self, Totals};
use super::summary::Summary;
use super::tally::{PerProvider, Tally};

/// A category and name, as text.
pub type Name = (String, String);

/// Everything `fxt stats` prints about one input.
pub struct Report<'a> {
    /// The input's name.
    pub file: &'a str,
    /// What the walk saw (records, bytes, damage).
    pub walk: &'a Walk,
    /// The counts gathered.
    pub tally: Tally,
    /// Duration statistics per category and name, sorted by name.
    pub durations: Vec<(Name, Summary)>,
    /// Events per category and name, sorted.
    pub events: Vec<(Name, u64)>,
    /// Duration begins never ended.
    pub unclosed: u64,
    /// Scheduling per thread koid.
    pub sched: BTreeMap<u64, Totals>,
}

impl<'a> Report<'a> {
    /// Derives the report of a finished walk.
    pub fn new(file: &'a str, walk: &'a Walk, mut tally: Tally) -> Report<'a> {
        let unclosed: u64 = tally.open.values().map(|v| v.len() as u64).sum();
        let mut durations: Vec<(Name, Summary)> = tally
            .names
            .iter_mut()
            .filter(|(_, p)| !p.durations.is_empty())
            .map(|((c, n), p)| {
                (
                    (c.to_string(), n.to_string()),
                    Summary::of_lengths(&mut p.durations),
                )
            })
            .collect();
        durations.sort_by(|a, b| a.0.cmp(&b.0));
        let mut events: Vec<(Name, u64)> = tally
            .names
            .iter()
            .filter(|(_, p)| p.events > 0)
            .map(|((c, n), p)| ((c.to_string(), n.to_string()), p.events))
            .collect();
        events.sort();
        let sched = scheduling::summarize(std::mem::take(&mut tally.sched));
        Report {
            file,
            walk,
            tally,
            durations,
            events,
            unclosed,
            sched,
        }
    }

    /// The name of thread `tid` ("" if no kernel object named it).
    pub fn thread_name(&self, tid: u64) -> String {
        self.tally
            .thread_names
            .get(&tid)
            .map(|(_, n)| n.clone())
            .unwrap_or_default()
    }

    /// The process of thread `tid`, from the kernel object naming it.
    pub fn sched_process(&self, tid: u64) -> Option<u64> {
        self.tally.thread_names.get(&tid).map(|(p, _)| *p)
    }

    /// The name of provider `id` ("" if none).
    pub fn provider_name(&self, id: &Option<u32>) -> String {
        id.and_then(|id| self.tally.providers.get(&id))
            .map(|(n, _)| n.clone())
            .unwrap_or_default()
    }

    /// The providers that hold something besides their own info.
    pub fn per_provider(&self) -> Vec<(&Option<u32>, &PerProvider)> {
        self.tally
            .per_provider
            .iter()
            .filter(|(_, p)| p.records > 1 || p.events > 0)
            .collect()
    }
}
