//! One run of a side: a trace read into its durations per category and
//! name (the durations `fxt stats` counts: complete events, and begin/end
//! pairs matched per thread), its CPU samples per innermost function
//! ([`crate::samples`], named as every command names them) and, for the
//! differential flame graph, its folded stacks of slices
//! ([`crate::folded`]) and of samples. A file is read on every core, a
//! range at a time, the ranges merged in file order
//! ([`reading`](super::reading)).

use std::collections::BTreeMap;

use fxt_format::samples::{ALLOC_NAME, SAMPLE_NAME};

use super::reading::{RangeRead, Read};
use super::select::{thread_selected, Select};
use crate::error::Error;
use crate::input::Input;
use crate::samples::may_hold;

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

/// Reads the trace at `path`, keeping what `select` selects (and the
/// folded stacks if `stacks`). Damage is warned about on stderr by the
/// walk and kept in [`Run::damage`]. A file is read on every core, its
/// ranges merged in file order; events are walked as views, and only
/// those that name samples are decoded whole.
pub fn read(path: &str, select: &Select, stacks: bool) -> Result<Run, Error> {
    // Refuses what does not begin as a trace (exit 2), before reading.
    let mut input = Input::open_trace(path)?;
    // The slices are kept for the samples and allocations only: a trace
    // in memory holds neither if their names are nowhere in its bytes.
    let timeline = input
        .bytes()
        .is_none_or(|b| may_hold(b, SAMPLE_NAME) || may_hold(b, ALLOC_NAME));
    let new = || RangeRead::new(select, stacks, timeline);
    let (walk, ranges) = input.walk_view_ranges("diff", new, |range, views| {
        views.each(|ctx, view| range.view(ctx, view))
    })?;
    let mut read = Read::default();
    for range in ranges {
        read.merge(range, select);
    }
    let Read {
        slices,
        thread_names,
        collector,
        sampled,
        ..
    } = read;
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
