//! The differential flame graph: the new runs' stacks drawn by self time,
//! colored by how much each frame's self time changed against the base
//! runs (inferno's `differential`: red where it grew, blue where it
//! shrank). Each side's stacks are the mean per run, so that sides with
//! different numbers of runs compare. The stacks are the CPU samples'
//! when both sides have samples (what code ran), else the slices'.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};

use inferno::differential;
use inferno::flamegraph::{self, Options};

use super::runs::Run;
use crate::error::Error;

/// Writes the differential flame graph of `base` against `new` to `path`.
pub fn write(path: &str, base: &[Run], new: &[Run]) -> Result<(), Error> {
    let sampled = |side: &[Run]| side.iter().any(|r| !r.sample_stacks.is_empty());
    let of_samples = sampled(base) && sampled(new);
    fn of_samples_of(r: &Run) -> &BTreeMap<String, u64> {
        &r.sample_stacks
    }
    fn of_slices_of(r: &Run) -> &BTreeMap<String, u64> {
        &r.stacks
    }
    let stacks = if of_samples {
        of_samples_of
    } else {
        of_slices_of
    };
    let before = folded(base, stacks);
    let after = folded(new, stacks);
    if after.is_empty() && before.is_empty() {
        return Err(Error::msg(format!(
            "diff: no durations to draw in {path} (with the selection given)"
        )));
    }
    let mut both = Vec::new();
    differential::from_readers(
        differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut both,
    )
    .map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8_lossy(&both);
    let mut options = Options::default();
    options.title = "fxt diff".into();
    let what = if of_samples {
        "CPU samples"
    } else {
        "self time"
    };
    options.subtitle = Some(format!(
        "{what} per thread, mean of {} new run(s) against {} base run(s): red grew, blue shrank",
        new.len(),
        base.len()
    ));
    options.count_name = if of_samples { "samples" } else { "ns" }.into();
    options.name_type = if of_samples { "Function:" } else { "Span:" }.into();
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut out = BufWriter::new(file);
    flamegraph::from_lines(&mut options, text.lines(), &mut out).map_err(|e| Error::io(path, e))?;
    out.flush().map_err(|e| Error::io(path, e))
}

/// A side's stacks, mean nanoseconds per run, as folded lines.
fn folded(side: &[Run], stacks: fn(&Run) -> &BTreeMap<String, u64>) -> String {
    let mut sum: BTreeMap<&str, u64> = BTreeMap::new();
    for run in side {
        for (stack, &ns) in stacks(run) {
            let n = sum.entry(stack).or_default();
            *n = n.saturating_add(ns);
        }
    }
    let runs = side.len().max(1) as u64;
    sum.into_iter()
        .filter(|&(_, ns)| ns / runs > 0)
        .map(|(stack, ns)| format!("{stack} {}\n", ns / runs))
        .collect()
}
