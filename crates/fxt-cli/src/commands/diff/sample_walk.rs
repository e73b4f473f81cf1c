//! The samples and sampled allocations of one run of `fxt diff`: gathered
//! as the trace is walked (a range at a time, merged in file order), then
//! named, placed among the slices open on their thread, and selected.

use std::collections::{BTreeMap, HashMap};

use fxt_format::decode::{Context, Record, View};
use fxt_format::samples::Sampling;
use fxt_format::time::ticks_per_second_or_default;

use super::select::{thread_selected, Select};
use crate::error::Error;
use crate::samples::allocs::AllocCollector;
use crate::samples::{self, Gather, Sampled, Timeline};

/// A walk's CPU samples and what names and places them (of one range of
/// the walk, or of the ranges merged).
#[derive(Default)]
pub struct SampleWalk {
    gather: Gather,
    collector: samples::Collector,
    /// The slices, if the samples and allocations are to be placed among
    /// them (a trace without either has nothing to place).
    timeline: Option<Timeline>,
    /// The sampled allocations.
    allocs: AllocCollector,
    /// The sampling period of each process that says it.
    periods: HashMap<u64, u64>,
}

impl SampleWalk {
    /// A walk that places the samples among the slices if `timeline`.
    pub fn new(timeline: bool) -> SampleWalk {
        SampleWalk {
            timeline: timeline.then(Timeline::default),
            ..SampleWalk::default()
        }
    }

    /// Takes one record of the walk.
    #[inline]
    pub fn see(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        self.gather.see_view(ctx, view)?;
        if let Some(t) = &mut self.timeline {
            t.see_view(ctx, view);
        }
        let View::Record(record) = view else {
            return Ok(());
        };
        if let Record::Blob(blob) = record {
            if let Some(Ok(s)) = Sampling::from_blob(blob) {
                if let Some(period) = s.cpu_ns_per_sample() {
                    self.periods.insert(s.pid, period);
                }
            }
        }
        let (provider, tps) = (ctx.provider_id(), ctx.ticks_per_second());
        let tps = ticks_per_second_or_default(tps);
        self.collector.see(provider, tps, record);
        self.allocs.see(provider, tps, record);
        Ok(())
    }

    /// Folds in the next range of the walk (ranges in file order).
    pub fn merge(&mut self, later: SampleWalk) {
        self.gather.merge(later.gather);
        self.collector.merge(later.collector);
        if let Some(later) = later.timeline {
            match &mut self.timeline {
                Some(t) => t.merge(later),
                None => self.timeline = Some(later),
            }
        }
        self.allocs.merge(later.allocs);
        self.periods.extend(later.periods);
    }

    /// Samples per innermost function, and the folded stacks (each under
    /// its thread's name) if `stacks`, of the selected samples.
    pub fn finish(
        self,
        select: &Select,
        thread_names: &HashMap<u64, String>,
        stacks: bool,
    ) -> Selected {
        let names = self.gather.finish();
        let all = self.collector.samples;
        // One pass of the timeline places the samples and the allocations.
        let allocs = self.allocs.as_samples();
        let mut placed: Vec<Sampled> = allocs.clone();
        placed.extend(all.iter().cloned());
        let mut open = match self.timeline {
            Some(t) => t.enclosing(&placed),
            None => vec![Vec::new(); placed.len()],
        };
        let samples_open = open.split_off(allocs.len());
        let mut allocated: BTreeMap<String, f64> = BTreeMap::new();
        for ((a, s), names_open) in self.allocs.allocs.iter().zip(&allocs).zip(&open) {
            if !thread_selected(select, s.sample.tid, thread_names) {
                continue;
            }
            let mut distinct: Vec<String> = names_open.iter().map(|t| t.to_string()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            for name in distinct {
                if select.name.as_deref().is_none_or(|n| n == name) {
                    *allocated.entry(name).or_default() += a.bytes();
                }
            }
        }
        let enclosing = select.name.as_ref().map(|_| samples_open);
        let mut leaves = BTreeMap::new();
        let mut ns: Option<BTreeMap<String, u64>> = Some(BTreeMap::new());
        let mut folded = BTreeMap::new();
        for (i, s) in all.iter().enumerate() {
            let inside = match (&select.name, &enclosing) {
                (Some(want), Some(open)) => open[i].iter().any(|t| t == want.as_str()),
                _ => true,
            };
            if !inside || !thread_selected(select, s.sample.tid, thread_names) {
                continue;
            }
            let leaf = names.leaf(&s.sample);
            ns = match (ns, self.periods.get(&s.sample.pid)) {
                (Some(mut map), Some(&period)) => {
                    *map.entry(leaf.clone()).or_default() += period;
                    Some(map)
                }
                _ => None,
            };
            *leaves.entry(leaf).or_default() += 1;
            if stacks {
                let thread = thread_names
                    .get(&s.sample.tid)
                    .filter(|n| !n.is_empty())
                    .map_or("thread", String::as_str);
                let mut stack = names.stack(&s.sample);
                stack.reverse();
                let frames: Vec<String> = stack.iter().map(|f| f.replace(';', ":")).collect();
                *folded
                    .entry(format!("{thread};{}", frames.join(";")))
                    .or_default() += 1;
            }
        }
        Selected {
            counts: leaves,
            ns,
            stacks: folded,
            allocated,
        }
    }
}

/// A run's selected samples and allocations.
pub struct Selected {
    /// Samples per innermost function.
    pub counts: BTreeMap<String, u64>,
    /// The same as sampled CPU time, when every sample's period is known.
    pub ns: Option<BTreeMap<String, u64>>,
    /// Folded stacks of the samples (`thread;outer;inner` → samples).
    pub stacks: BTreeMap<String, u64>,
    /// Estimated bytes allocated while a slice of each name was open.
    pub allocated: BTreeMap<String, f64>,
}
