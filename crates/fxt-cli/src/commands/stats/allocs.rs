//! `fxt stats` on sampled allocations (issue 45): how many allocations
//! were sampled, the bytes allocated and still live at the end that they
//! stand for, and the sites that allocated most and hold most of what is
//! live ([`crate::samples::allocs::site`]: the innermost function outside
//! the allocator, with its caller).

use std::io::{self, Write};

use fxt_format::decode::{Context, View};
use fxt_format::time::ticks_per_second_or_default;
use serde_json::{json, Value};

use crate::error::Error;
use crate::samples::allocs::{self, AllocCollector};
use crate::samples::Gather;

/// Sites listed.
const TOP_SITES: usize = 10;

/// Allocation records and what names them, collected during a walk in
/// file order.
#[derive(Default)]
pub struct AllocTally {
    collector: AllocCollector,
    gather: Gather,
}

impl AllocTally {
    /// Takes a record of a walk in file order, as its view (no event
    /// decoded but those that name allocation sites).
    pub fn see_view(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        if let View::Record(record) = view {
            // Allocation records are blobs, never events.
            let tps = ticks_per_second_or_default(ctx.ticks_per_second());
            self.collector.see(ctx.provider_id(), tps, record);
        }
        self.gather.see_view(ctx, view)
    }
}

/// The section's content.
#[derive(Debug, Default)]
pub struct AllocReport {
    sampled: usize,
    frees: usize,
    untracked: usize,
    malformed: u64,
    allocated: f64,
    live: f64,
    top_allocated: Vec<(String, f64)>,
    top_live: Vec<(String, f64)>,
}

/// Pairs the frees and names the stacks.
pub fn report(tally: AllocTally) -> AllocReport {
    let AllocTally {
        collector,
        mut gather,
    } = tally;
    if collector.allocs.is_empty() && collector.frees.is_empty() {
        return AllocReport {
            malformed: collector.malformed,
            ..AllocReport::default()
        };
    }
    let samples = collector.as_samples();
    for s in &samples {
        gather.add(s.sample.clone());
    }
    let names = gather.finish();
    let bytes: Vec<f64> = collector.allocs.iter().map(|a| a.bytes()).collect();
    let all = vec![true; samples.len()];
    let live = collector.live();
    let sum = |keep: &[bool]| -> f64 {
        bytes
            .iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            .map(|(b, _)| b)
            .sum()
    };
    AllocReport {
        sampled: samples.len(),
        frees: collector.frees.len(),
        untracked: collector.untracked(),
        malformed: collector.malformed,
        allocated: sum(&all),
        live: sum(&live),
        top_allocated: allocs::top_sites(&samples, &bytes, &all, &names, TOP_SITES),
        top_live: allocs::top_sites(&samples, &bytes, &live, &names, TOP_SITES),
    }
}

/// Bytes for people: `12.3 MiB`.
fn human(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The table section (nothing for a trace without allocation records).
pub fn write_table(w: &mut impl Write, r: &AllocReport) -> io::Result<()> {
    if r.sampled == 0 && r.frees == 0 {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "allocations   {} sampled ({} freed in the trace), estimated {} allocated, {} live at the end",
        r.sampled,
        r.frees,
        human(r.allocated),
        human(r.live)
    )?;
    if r.untracked > 0 {
        writeln!(
            w,
            "              {} untracked (their frees not recorded; counted live)",
            r.untracked
        )?;
    }
    if r.malformed > 0 {
        writeln!(
            w,
            "              {} malformed records left out",
            r.malformed
        )?;
    }
    for (title, list) in [("allocated", &r.top_allocated), ("live", &r.top_live)] {
        if list.is_empty() {
            continue;
        }
        writeln!(w, "{:<60} {:>12}", format!("site (bytes {title})"), "bytes")?;
        for (site, bytes) in list {
            writeln!(w, "{site:<60} {:>12}", human(*bytes))?;
        }
    }
    Ok(())
}

/// The JSON member (`null` for a trace without allocation records).
pub fn document(r: &AllocReport) -> Value {
    if r.sampled == 0 && r.frees == 0 {
        return Value::Null;
    }
    let sites = |list: &[(String, f64)]| -> Vec<Value> {
        list.iter()
            .map(|(site, bytes)| json!({"site": site, "bytes": bytes.round() as u64}))
            .collect()
    };
    json!({
        "sampled": r.sampled,
        "frees": r.frees,
        "untracked": r.untracked,
        "malformed": r.malformed,
        "allocated_bytes": r.allocated.round() as u64,
        "live_bytes": r.live.round() as u64,
        "top_allocated": sites(&r.top_allocated),
        "top_live": sites(&r.top_live),
    })
}
