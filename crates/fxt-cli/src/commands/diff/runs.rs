//! One run of a side: a trace read into its durations per category and
//! name (the durations `fxt stats` counts: complete events, and begin/end
//! pairs matched per thread by [`crate::durations`]), its CPU samples per
//! innermost function ([`crate::samples`], named as every command names
//! them) and, for the differential flame graph, its folded stacks of slices
//! ([`crate::folded`]) and of samples.

use std::collections::{BTreeMap, HashMap};

use fxt_format::decode::{Context, Event, EventKind, Record, Text, Thread, View};
use fxt_format::encode::OBJ_TYPE_THREAD;
use rustc_hash::FxHashMap;

use crate::durations::{Closed, Durations, Mark};
use crate::error::Error;
use crate::folded::{Collector, Filter};
use crate::input::{ticks_to_ns, Input};
use crate::samples::allocs::AllocCollector;
use crate::samples::{self, Gather, Sampled, Timeline};
use fxt_format::samples::Sampling;
use fxt_format::time::ticks_per_second_or_default;

/// What to keep of a trace.
#[derive(Default, Clone)]
pub struct Select {
    /// Only the thread with this name, koid, or `name [koid]` label.
    pub thread: Option<String>,
    /// Only durations of this category.
    pub category: Option<String>,
    /// Only durations of this name.
    pub name: Option<String>,
}

/// A category and name.
pub type Key = (String, String);

/// One trace, read.
pub struct Run {
    /// The file's name, for messages.
    pub file: String,
    /// Per category and name, the durations in nanoseconds.
    pub durations: BTreeMap<Key, Vec<u64>>,
    /// Folded stacks (`thread;outer;inner` → self ns), threads named
    /// without their koid so that runs line up; empty unless asked for.
    pub stacks: BTreeMap<String, u64>,
    /// Samples per innermost function (on the selected thread, inside a
    /// slice of the selected name).
    pub samples: BTreeMap<String, u64>,
    /// The same as sampled CPU time (samples times the sampling period of
    /// their process, from its `fxt.sampling`), when every selected sample
    /// has a known period.
    pub sampled_ns: Option<BTreeMap<String, u64>>,
    /// The samples' folded stacks (`thread;outer;inner` → samples), as
    /// [`Run::stacks`]; empty unless asked for.
    pub sample_stacks: BTreeMap<String, u64>,
    /// Estimated bytes of the sampled allocations made while a slice of
    /// each name was open on their thread (issue 45; each allocation
    /// counted once per name open).
    pub allocated: BTreeMap<String, f64>,
    /// The decode error that ended the read early, if any.
    pub damage: Option<String>,
}

/// A walk's CPU samples and what names and places them.
#[derive(Default)]
struct SampleWalk {
    gather: Gather,
    collector: samples::Collector,
    timeline: Timeline,
    /// The sampled allocations.
    allocs: AllocCollector,
    /// The sampling period of each process that says it.
    periods: HashMap<u64, u64>,
}

impl SampleWalk {
    fn see(&mut self, provider: Option<u32>, tps: u64, offset: u64, record: &Record) {
        self.gather.see(offset, record);
        if let Record::Blob(blob) = record {
            if let Some(Ok(s)) = Sampling::from_blob(blob) {
                if let Some(period) = s.period_ns() {
                    self.periods.insert(s.pid, period);
                }
            }
        }
        self.collector.see(provider, tps, record);
        self.allocs.see(provider, tps, record);
        self.timeline.see(provider, tps, record);
    }

    /// Samples per innermost function, and the folded stacks (each under
    /// its thread's name) if `stacks`, of the selected samples.
    fn finish(
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
        let mut open = self.timeline.enclosing(&placed);
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
struct Selected {
    counts: BTreeMap<String, u64>,
    ns: Option<BTreeMap<String, u64>>,
    stacks: BTreeMap<String, u64>,
    allocated: BTreeMap<String, f64>,
}

/// Reads the trace at `path`, keeping what `select` selects (and the
/// folded stacks if `stacks`). Damage is warned about on stderr by the
/// walk and kept in [`Run::damage`]. Events are walked as views: only
/// durations and the events that name samples are decoded whole.
pub fn read(path: &str, select: &Select, stacks: bool) -> Result<Run, Error> {
    // Refuses what does not begin as a trace (exit 2), before reading.
    let mut input = Input::open_trace(path)?;
    let mut reading = Reading {
        select,
        collector: stacks.then(|| {
            Collector::new(Filter {
                thread: select.thread.clone(),
                category: select.category.clone(),
                // Koids differ from run to run, names do not.
                names_only: true,
            })
        }),
        matching: Durations::default(),
        slices: FxHashMap::default(),
        thread_names: HashMap::new(),
        sampled: SampleWalk::default(),
    };
    let walk = input.walk_views_in_order("diff", |ctx, view| reading.view(ctx, view))?;
    let Reading {
        slices,
        thread_names,
        collector,
        sampled,
        ..
    } = reading;
    let mut durations: BTreeMap<Key, Vec<u64>> = BTreeMap::new();
    for ((category, name), list) in slices {
        let kept: Vec<u64> = list
            .into_iter()
            .filter(|&(t, _)| thread_selected(select, t, &thread_names))
            .map(|(_, ns)| ns)
            .collect();
        if !kept.is_empty() {
            durations
                .entry((category.to_string(), name.to_string()))
                .or_default()
                .extend(kept);
        }
    }
    let sampled = sampled.finish(select, &thread_names, stacks);
    Ok(Run {
        file: input.name.clone(),
        durations,
        stacks: match collector {
            Some(c) => through(c.finish().stacks, select.name.as_deref()),
            None => BTreeMap::new(),
        },
        samples: sampled.counts,
        sampled_ns: sampled.ns,
        sample_stacks: sampled.stacks,
        allocated: sampled.allocated,
        damage: walk.damage.map(|d| format!("{}: {d}", input.name)),
    })
}

/// What [`read`] keeps of a trace as it walks it.
struct Reading<'s> {
    select: &'s Select,
    matching: Durations,
    /// (category, name) → (thread koid, ns): threads are selected at the
    /// end, once every thread record has been seen.
    slices: FxHashMap<(Text, Text), Vec<(u64, u64)>>,
    thread_names: HashMap<u64, String>,
    collector: Option<Collector>,
    sampled: SampleWalk,
}

impl Reading<'_> {
    /// Takes one record of the walk.
    fn view(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        let provider = ctx.provider_id();
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let offset = ctx.record_offset();
        if let Some(c) = self.collector.as_mut() {
            c.view(ctx, view);
        }
        let e = match view {
            View::Record(record) => {
                self.sampled.see(provider, tps, offset, record);
                if let Record::KernelObject(o) = record {
                    if o.object_type == OBJ_TYPE_THREAD {
                        self.thread_names.insert(o.koid, o.name.to_string());
                    }
                }
                return Ok(());
            }
            View::Event(e) => e,
        };
        let duration = matches!(
            e.kind,
            EventKind::DurationComplete { .. } | EventKind::DurationBegin | EventKind::DurationEnd
        );
        if !duration && !ctx.str(e.name).is_some_and(Gather::wants) {
            return Ok(()); // nothing of the run's
        }
        let e = ctx
            .event(e)
            .map_err(|err| Error::msg(format!("internal error: a view does not decode: {err}")))?;
        let record = Record::Event(e);
        self.sampled.see(provider, tps, offset, &record);
        let Record::Event(e) = &record else {
            return Ok(());
        };
        self.duration(provider, tps, offset, e);
        Ok(())
    }

    /// Takes a duration event (complete, or a begin or end to match).
    fn duration(&mut self, provider: Option<u32>, tps: u64, offset: u64, e: &Event) {
        let thread = match e.thread {
            Thread::Known { thread, .. } => thread,
            Thread::Undefined(_) => 0,
        };
        let (category, name, ns) = match e.kind {
            EventKind::DurationComplete { end } => (
                e.category.clone(),
                e.name.clone(),
                ticks_to_ns(end, tps).saturating_sub(ticks_to_ns(e.timestamp, tps)),
            ),
            EventKind::DurationBegin => {
                self.matching.begin(provider, offset, Mark::from(e));
                return;
            }
            EventKind::DurationEnd => match self.matching.end(provider, offset, &Mark::from(e)) {
                Closed::Begin(open, _) => (
                    open.category().clone(),
                    open.name().clone(),
                    ticks_to_ns(e.timestamp, tps)
                        .saturating_sub(ticks_to_ns(open.timestamp(), tps)),
                ),
                Closed::Nothing => return,
            },
            _ => return,
        };
        if selected(self.select, &category, &name) {
            self.slices
                .entry((category, name))
                .or_default()
                .push((thread, ns));
        }
    }
}

fn selected(select: &Select, category: &Text, name: &Text) -> bool {
    select.category.as_deref().is_none_or(|c| category == c)
        && select.name.as_deref().is_none_or(|n| name == n)
}

fn thread_selected(select: &Select, koid: u64, names: &HashMap<u64, String>) -> bool {
    let Some(want) = &select.thread else {
        return true;
    };
    let name = names.get(&koid).map(String::as_str).unwrap_or("");
    *want == koid.to_string() || want == name || *want == format!("{name} [{koid}]")
}

/// The stacks, or with `name` only those through a frame of that name.
fn through(stacks: BTreeMap<String, u64>, name: Option<&str>) -> BTreeMap<String, u64> {
    match name {
        None => stacks,
        Some(want) => stacks
            .into_iter()
            .filter(|(stack, _)| stack.split(';').skip(1).any(|f| f == want))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_selects_the_stacks_through_a_frame_of_it() {
        let stacks: BTreeMap<String, u64> = [
            ("w;a;b".to_owned(), 12),
            ("w;c".to_owned(), 3),
            ("b;c".to_owned(), 4),
        ]
        .into();
        assert_eq!(through(stacks.clone(), None), stacks);
        let only_b = through(stacks, Some("b"));
        assert_eq!(only_b.len(), 1, "the thread frame is not a span");
        assert_eq!(only_b["w;a;b"], 12);
    }
}
