//! Sampled allocations per slice name, base runs against new runs (issue
//! 45): "this request allocates twice what it did". Each run's value for a
//! name is the estimated bytes of the sampled allocations made while a
//! slice of that name was open on their thread ([`super::runs::Run::allocated`]);
//! the change compares the sides' means per run, its significance is the
//! rank-sum test on the per-run values ([`super::ranktest`]), as for
//! durations and CPU samples.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::ranktest;
use super::runs::Run;

/// One slice name compared.
pub struct AllocRow {
    /// The slice name.
    pub name: String,
    /// Estimated bytes per run, each side (0 in a run without any).
    pub base_per_run: f64,
    pub new_per_run: f64,
    /// New over base, minus 1 (`None` when the base allocated nothing).
    pub change: Option<f64>,
    /// Two-sided p-value (`None` with fewer than two runs on a side).
    pub p_value: Option<f64>,
    pub significant: bool,
}

/// Every name under which `base` or `new` allocated, at significance
/// level `alpha`: the significant changes first, then by the bytes moved.
/// Empty when neither side has sampled allocations.
pub fn compare(base: &[Run], new: &[Run], alpha: f64) -> Vec<AllocRow> {
    let names: BTreeSet<&String> = base
        .iter()
        .chain(new)
        .flat_map(|r| r.allocated.keys())
        .collect();
    let testable = base.len() >= 2 && new.len() >= 2;
    let mut rows: Vec<AllocRow> = names
        .into_iter()
        .map(|name| {
            let per_run = |side: &[Run]| -> Vec<f64> {
                side.iter()
                    .map(|r| r.allocated.get(name).copied().unwrap_or(0.0))
                    .collect()
            };
            let (b, n) = (per_run(base), per_run(new));
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
            let (bm, nm) = (mean(&b), mean(&n));
            let p_value = testable.then(|| ranktest::p_value(&b, &n));
            AllocRow {
                name: name.clone(),
                base_per_run: bm,
                new_per_run: nm,
                change: (bm > 0.0).then(|| nm / bm - 1.0),
                p_value,
                significant: p_value.is_some_and(|p| p < alpha),
            }
        })
        .collect();
    rows.sort_by(order);
    rows
}

fn order(a: &AllocRow, b: &AllocRow) -> Ordering {
    let moved = |r: &AllocRow| (r.new_per_run - r.base_per_run).abs();
    b.significant
        .cmp(&a.significant)
        .then(moved(b).total_cmp(&moved(a)))
        .then(a.name.cmp(&b.name))
}

/// The `allocations` member of the JSON document.
pub fn json(rows: &[AllocRow]) -> Value {
    rows.iter()
        .map(|r| {
            json!({
                "name": r.name,
                "unit": "bytes",
                "base_per_run": r.base_per_run,
                "new_per_run": r.new_per_run,
                "change": r.change,
                "p_value": r.p_value,
                "significant": r.significant,
            })
        })
        .collect()
}

/// Names listed in the table.
const TOP: usize = 20;

/// The table (nothing when no side has sampled allocations).
pub fn table(out: &mut dyn Write, rows: &[AllocRow]) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let shown = &rows[..rows.len().min(TOP)];
    let width = shown
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 70);
    writeln!(
        out,
        "\nAllocated bytes per name (sampled, estimated; per run)\n{:<width$}  {:>12} {:>12}  {:>8} {:>7}",
        "name", "base", "new", "change", "p"
    )?;
    for r in shown {
        let p = match r.p_value {
            None => "-".into(),
            Some(p) if p < 0.001 => "<0.001".into(),
            Some(p) => format!("{p:.3}"),
        };
        writeln!(
            out,
            "{:<width$}  {:>12.0} {:>12.0}  {:>8} {:>7}{}",
            r.name,
            r.base_per_run,
            r.new_per_run,
            r.change
                .map_or("new".into(), |c| format!("{:+.1}%", c * 100.0)),
            p,
            if r.significant { "  *" } else { "" }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(allocated: &[(&str, f64)]) -> Run {
        Run {
            file: "t".into(),
            durations: Default::default(),
            stacks: Default::default(),
            samples: Default::default(),
            sampled_ns: None,
            sample_stacks: Default::default(),
            allocated: allocated
                .iter()
                .map(|(n, b)| ((*n).to_owned(), *b))
                .collect(),
            damage: None,
        }
    }

    #[test]
    fn a_name_that_allocated_more_in_every_run_is_significant() {
        let base: Vec<Run> = (0..5)
            .map(|i| run(&[("request", 1000.0 + i as f64), ("idle", 10.0)]))
            .collect();
        let new: Vec<Run> = (0..5)
            .map(|i| run(&[("request", 2000.0 + i as f64), ("idle", 10.0)]))
            .collect();
        let rows = compare(&base, &new, 0.05);
        assert_eq!(rows[0].name, "request");
        assert!(rows[0].significant);
        assert!((rows[0].change.unwrap() - (2002.0 / 1002.0 - 1.0)).abs() < 1e-9);
        let idle = rows.iter().find(|r| r.name == "idle").unwrap();
        assert!(!idle.significant);
        assert_eq!(idle.change, Some(0.0));
        assert!(compare(&[run(&[])], &[run(&[])], 0.05).is_empty());
    }
}
