//! Sampled allocations per slice name, base runs against new runs (issue
//! 45): "this request allocates twice what it did". Each run's value for a
//! name is the estimated bytes of the sampled allocations made while a
//! slice of that name was open on their thread ([`super::runs::Run::allocated`]);
//! the change compares the sides' means per run, its significance is the
//! rank-sum test on the per-run values ([`super::ranktest`]), as for
//! durations and CPU samples.

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::per_run::Change;
use super::runs::Run;

/// One slice name compared: its estimated bytes per run, each side (0 in
/// a run without any).
pub struct AllocRow {
    /// The slice name.
    pub name: String,
    pub c: Change,
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
    let mut rows: Vec<AllocRow> = names
        .into_iter()
        .map(|name| {
            let per_run = |side: &[Run]| -> Vec<f64> {
                side.iter()
                    .map(|r| r.allocated.get(name).copied().unwrap_or(0.0))
                    .collect()
            };
            AllocRow {
                name: name.clone(),
                c: Change::of(&per_run(base), &per_run(new), alpha),
            }
        })
        .collect();
    rows.sort_by(|a, b| a.c.order(&b.c, a.name.cmp(&b.name)));
    rows
}

/// The `allocations` member of the JSON document.
pub fn json(rows: &[AllocRow]) -> Value {
    rows.iter()
        .map(|r| {
            json!({
                "name": r.name,
                "unit": "bytes",
                "base_per_run": r.c.base_per_run,
                "new_per_run": r.c.new_per_run,
                "change": r.c.change,
                "p_value": r.c.p_value,
                "significant": r.c.significant,
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
        let p = match r.c.p_value {
            None => "-".into(),
            Some(p) if p < 0.001 => "<0.001".into(),
            Some(p) => format!("{p:.3}"),
        };
        writeln!(
            out,
            "{:<width$}  {:>12.0} {:>12.0}  {:>8} {:>7}{}",
            r.name,
            r.c.base_per_run,
            r.c.new_per_run,
            r.c.change
                .map_or("new".into(), |c| format!("{:+.1}%", c * 100.0)),
            p,
            if r.c.significant { "  *" } else { "" }
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
        assert!(rows[0].c.significant);
        assert!((rows[0].c.change.unwrap() - (2002.0 / 1002.0 - 1.0)).abs() < 1e-9);
        let idle = rows.iter().find(|r| r.name == "idle").unwrap();
        assert!(!idle.c.significant);
        assert_eq!(idle.c.change, Some(0.0));
        assert!(compare(&[run(&[])], &[run(&[])], 0.05).is_empty());
    }
}
