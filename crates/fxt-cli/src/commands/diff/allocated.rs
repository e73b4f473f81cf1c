//! Sampled allocations per slice name, base runs against new runs (issue
//! 45): "this request allocates twice what it did". Each run's value for a
//! name is the estimated bytes of the sampled allocations made while a
//! slice of that name was open on their thread ([`super::runs::Run::allocated`]);
//! the change compares the sides' means per run, its significance is the
//! rank-sum test on the per-run values ([`super::ranktest`]), as for
//! durations and CPU samples.

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::Value;

use super::per_run::{compare_each, Keyed};
use super::runs::Run;
use super::table::{self, Layout};

/// Every name under which `base` or `new` allocated (its estimated bytes
/// per run, each side, 0 in a run without any), at significance level
/// `alpha`: the significant changes first, then by the bytes moved.
/// Empty when neither side has sampled allocations.
pub fn compare(base: &[Run], new: &[Run], alpha: f64) -> Vec<Keyed> {
    let names: BTreeSet<&String> = base
        .iter()
        .chain(new)
        .flat_map(|r| r.allocated.keys())
        .collect();
    let per_run = |side: &[Run], name: &String| -> Vec<f64> {
        side.iter()
            .map(|r| r.allocated.get(name).copied().unwrap_or(0.0))
            .collect()
    };
    compare_each(names, alpha, |n| (per_run(base, n), per_run(new, n)))
}

/// The `allocations` member of the JSON document.
pub fn json(rows: &[Keyed]) -> Value {
    table::json(rows, "name", "bytes")
}

/// The table (nothing when no side has sampled allocations).
pub fn table(out: &mut dyn Write, rows: &[Keyed]) -> io::Result<()> {
    let layout = Layout {
        title: "Allocated bytes per name (sampled, estimated; per run)",
        key: "name",
        width: 12,
        value: &|v| format!("{v:.0}"),
        more: None,
    };
    table::write(out, rows, &layout)
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
        assert_eq!(rows[0].key, "request");
        assert!(rows[0].c.significant);
        assert!((rows[0].c.change.unwrap() - (2002.0 / 1002.0 - 1.0)).abs() < 1e-9);
        let idle = rows.iter().find(|r| r.key == "idle").unwrap();
        assert!(!idle.c.significant);
        assert_eq!(idle.c.change, Some(0.0));
        assert!(compare(&[run(&[])], &[run(&[])], 0.05).is_empty());
    }
}
