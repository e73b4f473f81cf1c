//! `fxt stats` on CPU samples (issue 31): for each duration name, how many
//! samples were taken while a slice of that name was open on their thread,
//! and the functions they were in most (the innermost frame, by name where
//! the trace holds symbols).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

use fxt_format::decode::Record;
use serde_json::{json, Value};

use crate::input::Reader;
use crate::samples::{Collector, Gather, Timeline};

/// Functions listed per duration name.
const TOP: usize = 3;

/// Samples and slices, collected during a walk in file order (nothing when
/// the trace, read from a file, holds no sample: it was walked in ranges).
pub struct SampleTally {
    active: bool,
    collector: Collector,
    timeline: Timeline,
    gather: Gather,
}

impl SampleTally {
    /// A tally that collects (`active`), or one that stays empty.
    pub fn new(active: bool) -> Self {
        Self {
            active,
            collector: Collector::default(),
            timeline: Timeline::default(),
            gather: Gather::default(),
        }
    }

    /// Takes a record.
    pub fn see(&mut self, reader: &Reader<'_>, record: &Record) {
        if self.active {
            let (provider, tps) = (reader.provider_id(), reader.ticks_per_second());
            self.collector.see(provider, tps, record);
            self.timeline.see(provider, tps, record);
            self.gather.see(reader.record_offset(), record);
        }
    }
}

/// Samples of one duration name.
pub struct Inside {
    name: String,
    samples: u64,
    /// Function and samples, most first.
    top: Vec<(String, u64)>,
}

/// What the samples say.
pub struct SampleReport {
    total: u64,
    threads: usize,
    symbolized: bool,
    /// Most samples first.
    inside: Vec<Inside>,
}

/// The report of `tally`, with the names the trace holds.
pub fn report(tally: SampleTally) -> SampleReport {
    let names = tally.gather.finish();
    let samples = tally.collector.samples;
    let threads: HashSet<_> = samples
        .iter()
        .map(|s| (s.sample.pid, s.sample.tid))
        .collect();
    let enclosing = tally.timeline.enclosing(&samples);
    let mut by_name: BTreeMap<String, HashMap<String, u64>> = BTreeMap::new();
    for (s, open) in samples.iter().zip(&enclosing) {
        let leaf = names.leaf(&s.sample);
        let distinct: HashSet<String> = open.iter().map(ToString::to_string).collect();
        for name in distinct {
            *by_name
                .entry(name)
                .or_default()
                .entry(leaf.clone())
                .or_default() += 1;
        }
    }
    let mut inside: Vec<Inside> = by_name
        .into_iter()
        .map(|(name, functions)| {
            let mut top: Vec<(String, u64)> = functions.into_iter().collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Inside {
                name,
                samples: top.iter().map(|f| f.1).sum(),
                top: top.into_iter().take(TOP).collect(),
            }
        })
        .collect();
    inside.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.name.cmp(&b.name)));
    SampleReport {
        total: samples.len() as u64,
        threads: threads.len(),
        symbolized: !names.is_empty(),
        inside,
    }
}

/// The table section (nothing for a trace without samples).
pub fn write_table(w: &mut impl Write, r: &SampleReport) -> io::Result<()> {
    if r.total == 0 {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "CPU samples   {} on {} thread{}{}",
        r.total,
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        if r.symbolized {
            ""
        } else {
            " (no symbols: `fxt symbolize` names them)"
        }
    )?;
    if r.inside.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "{:<32} {:>8}  functions sampled most",
        "inside duration", "samples"
    )?;
    for d in &r.inside {
        let top: Vec<String> = d
            .top
            .iter()
            .map(|(f, n)| format!("{f} {:.1}%", 100.0 * *n as f64 / d.samples as f64))
            .collect();
        writeln!(w, "{:<32} {:>8}  {}", d.name, d.samples, top.join(", "))?;
    }
    Ok(())
}

/// The JSON member (`null` for a trace without samples).
pub fn document(r: &SampleReport) -> Value {
    if r.total == 0 {
        return Value::Null;
    }
    json!({
        "total": r.total,
        "threads": r.threads,
        "symbolized": r.symbolized,
        "inside": r.inside.iter().map(|d| json!({
            "name": d.name,
            "samples": d.samples,
            "top": d.top.iter().map(|(f, n)| json!({"function": f, "samples": n})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
