//! CPU samples per function, base runs against new runs: where the CPU
//! time went when "compute got 35% slower". Each run's value for a
//! function is its self CPU time: the samples whose innermost frame it was
//! times the sampling period (from the trace's `fxt.sampling`), or the
//! samples alone where a run does not say its rate (0 in a run where it
//! was never sampled), and
//! with `--name` only the samples taken while a slice of that name was
//! open on their thread. The change compares the sides' means per run;
//! its significance is the rank-sum test ([`super::ranktest`]) on those
//! per-run values, as for durations: one number per run, since the
//! samples of one run share its machine state. A side of one run gives a
//! change but no test.

use std::collections::BTreeSet;
use std::io::{self, Write};

use serde_json::Value;

use super::per_run::{compare_each, Keyed};
use super::runs::Run;
use super::table::{self, Layout};
use crate::durations::readable_ns;

/// Every sampled function compared, and the unit of their values.
pub struct Sampled {
    /// Per function (`0x…` where no name was found), per run, each side
    /// (every run of the side, 0 where the function was not sampled).
    pub rows: Vec<Keyed>,
    /// Whether the values are CPU nanoseconds (else samples).
    pub in_ns: bool,
}

/// Every sampled function of `base` and `new` at significance level
/// `alpha`: the significant changes first, then by the samples they gained
/// or lost per run. Empty when neither side has samples.
pub fn compare(base: &[Run], new: &[Run], alpha: f64) -> Sampled {
    let functions: BTreeSet<&String> = base
        .iter()
        .chain(new)
        .flat_map(|r| r.samples.keys())
        .collect();
    // CPU time when every run says its rate, else sample counts.
    let in_ns = base.iter().chain(new).all(|r| r.sampled_ns.is_some());
    let value = |r: &Run, f: &String| -> f64 {
        let map = match (&r.sampled_ns, in_ns) {
            (Some(ns), true) => ns,
            _ => &r.samples,
        };
        map.get(f).copied().unwrap_or(0) as f64
    };
    let per_run =
        |side: &[Run], f: &String| -> Vec<f64> { side.iter().map(|r| value(r, f)).collect() };
    let rows = compare_each(functions, alpha, |f| (per_run(base, f), per_run(new, f)));
    Sampled { rows, in_ns }
}

/// The `samples` member of the JSON document: every sampled function.
pub fn json(s: &Sampled) -> Value {
    table::json(&s.rows, "function", if s.in_ns { "ns" } else { "samples" })
}

/// The CPU samples per innermost function, the largest moves first
/// (nothing when no side has samples).
pub fn table(out: &mut dyn Write, s: &Sampled) -> io::Result<()> {
    let title = format!(
        "CPU samples per function (innermost frame; {} per run)",
        if s.in_ns {
            "sampled CPU time"
        } else {
            "samples"
        }
    );
    let value = |v: f64| {
        if s.in_ns {
            readable_ns(v)
        } else {
            format!("{v:.1}")
        }
    };
    let layout = Layout {
        title: &title,
        key: "function",
        width: 10,
        value: &value,
        more: Some("functions"),
    };
    table::write(out, &s.rows, &layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(samples: &[(&str, u64)]) -> Run {
        Run {
            file: "t".into(),
            durations: Default::default(),
            stacks: Default::default(),
            samples: samples.iter().map(|(f, n)| ((*f).to_owned(), *n)).collect(),
            sampled_ns: None,
            sample_stacks: Default::default(),
            allocated: Default::default(),
            damage: None,
        }
    }

    #[test]
    fn a_function_that_took_more_samples_in_every_run_is_significant() {
        // compute: 100..104 samples per base run, 135..139 per new run;
        // parse: the same on both sides; fresh: only in the new runs.
        let base: Vec<Run> = (0..5)
            .map(|i| run(&[("compute", 100 + i), ("parse", 50 + i)]))
            .collect();
        let new: Vec<Run> = (0..5)
            .map(|i| run(&[("compute", 135 + i), ("parse", 54 - i), ("fresh", 3)]))
            .collect();
        let rows = compare(&base, &new, 0.05).rows;
        assert_eq!(rows[0].key, "compute");
        assert!(rows[0].c.significant);
        assert!((rows[0].c.change.unwrap() - (137.0 / 102.0 - 1.0)).abs() < 1e-9);
        assert!((rows[0].c.p_value.unwrap() - 2.0 / 252.0).abs() < 1e-9);
        let by = |f: &str| rows.iter().find(|r| r.key == f).unwrap();
        assert!(!by("parse").c.significant);
        assert_eq!(by("fresh").c.change, None);
        assert_eq!(by("fresh").c.base_per_run, 0.0);
        assert!((by("fresh").c.new_per_run - 3.0).abs() < 1e-9);
    }

    #[test]
    fn one_run_a_side_gives_a_change_and_no_test() {
        let rows = compare(&[run(&[("f", 10)])], &[run(&[("f", 15)])], 0.05).rows;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].c.change, Some(0.5));
        assert!(rows[0].c.p_value.is_none() && !rows[0].c.significant);
        assert!(compare(&[run(&[])], &[run(&[])], 0.05).rows.is_empty());
    }
}
