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

use super::per_run::Change;
use super::runs::Run;

/// One function compared.
pub struct SampleRow {
    /// The function's name (`0x…` where no name was found).
    pub function: String,
    /// Whether the values are CPU nanoseconds (else samples).
    pub in_ns: bool,
    /// Per run, each side (every run of the side, 0 where the function
    /// was not sampled).
    pub c: Change,
}

/// Every sampled function of `base` and `new` at significance level
/// `alpha`: the significant changes first, then by the samples they gained
/// or lost per run. Empty when neither side has samples.
pub fn compare(base: &[Run], new: &[Run], alpha: f64) -> Vec<SampleRow> {
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
    let mut rows: Vec<SampleRow> = functions
        .into_iter()
        .map(|f| {
            let per_run = |side: &[Run]| -> Vec<f64> { side.iter().map(|r| value(r, f)).collect() };
            SampleRow {
                function: f.clone(),
                in_ns,
                c: Change::of(&per_run(base), &per_run(new), alpha),
            }
        })
        .collect();
    rows.sort_by(|a, b| a.c.order(&b.c, a.function.cmp(&b.function)));
    rows
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
        let rows = compare(&base, &new, 0.05);
        assert_eq!(rows[0].function, "compute");
        assert!(rows[0].c.significant);
        assert!((rows[0].c.change.unwrap() - (137.0 / 102.0 - 1.0)).abs() < 1e-9);
        assert!((rows[0].c.p_value.unwrap() - 2.0 / 252.0).abs() < 1e-9);
        let by = |f: &str| rows.iter().find(|r| r.function == f).unwrap();
        assert!(!by("parse").c.significant);
        assert_eq!(by("fresh").c.change, None);
        assert_eq!(by("fresh").c.base_per_run, 0.0);
        assert!((by("fresh").c.new_per_run - 3.0).abs() < 1e-9);
    }

    #[test]
    fn one_run_a_side_gives_a_change_and_no_test() {
        let rows = compare(&[run(&[("f", 10)])], &[run(&[("f", 15)])], 0.05);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].c.change, Some(0.5));
        assert!(rows[0].c.p_value.is_none() && !rows[0].c.significant);
        assert!(compare(&[run(&[])], &[run(&[])], 0.05).is_empty());
    }
}
