//! Per category and name: each side's figures, the change of the median,
//! and whether it is significant.
//!
//! The change is `new p50 / base p50 - 1` over all the slices of each
//! side (`+0.35`: 35% slower). Its significance comes from the rank-sum
//! test ([`super::ranktest`]) on one value per run, the run's median: the
//! slices of one run share its machine state (frequency, cache, load), so
//! they are not independent samples of the build, and a run-to-run
//! difference must show in several runs to count. Five runs per side can
//! reach p = 0.008; fewer than four per side can never get below 0.05,
//! and the name is then reported as not significant.
//!
//! With a single run on a side, there is no run-to-run spread to measure:
//! the test is then on the slices themselves, which says whether these two
//! runs differ, not whether the builds do (see README).

use std::cmp::Ordering;

use super::ranktest;
use super::runs::{Key, Run};

/// One side's figures for a name.
pub struct Summary {
    /// Runs of the side in which the name occurs.
    pub runs: usize,
    pub count: u64,
    /// Slices per run of the side (all its runs, with the name or not).
    pub count_per_run: f64,
    pub total_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    /// The median of each run holding the name.
    medians: Vec<f64>,
    /// Every slice, sorted.
    slices: Vec<u64>,
}

/// Where a name is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Both,
    /// Only in the new runs.
    Appeared,
    /// Only in the base runs.
    Vanished,
}

/// Which values the test compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Test {
    /// One median per run.
    Runs,
    /// Every slice (a side of one run).
    Slices,
}

/// One name compared.
pub struct Row {
    pub key: Key,
    pub status: Status,
    pub base: Option<Summary>,
    pub new: Option<Summary>,
    /// New median over base median, minus 1 (`None` unless on both sides
    /// with a base median above zero).
    pub change: Option<f64>,
    /// New slices per run over base slices per run, minus 1.
    pub count_change: Option<f64>,
    pub test: Option<Test>,
    /// Two-sided p-value of the test (`None` if too few values to test).
    pub p_value: Option<f64>,
    pub significant: bool,
    /// Why the test could not conclude, if it could not.
    pub note: Option<&'static str>,
}

/// Compares every name of `base` and `new` at significance level `alpha`;
/// rows sorted with the largest significant changes first, then the other
/// names in both sides by the size of their change, then those that
/// appeared, then those that vanished.
pub fn compare(base: &[Run], new: &[Run], alpha: f64) -> Vec<Row> {
    let mut keys: Vec<&Key> = base
        .iter()
        .chain(new)
        .flat_map(|r| r.durations.keys())
        .collect();
    keys.sort();
    keys.dedup();
    let test = if base.len() == 1 || new.len() == 1 {
        Test::Slices
    } else {
        Test::Runs
    };
    let mut rows: Vec<Row> = keys
        .into_iter()
        .map(|key| row(key, summary(base, key), summary(new, key), test, alpha))
        .collect();
    rows.sort_by(order);
    rows
}

fn order(a: &Row, b: &Row) -> Ordering {
    let rank = |r: &Row| match r.status {
        Status::Both if r.significant => 0,
        Status::Both => 1,
        Status::Appeared => 2,
        Status::Vanished => 3,
    };
    let size = |r: &Row| r.change.map_or(0.0, f64::abs);
    rank(a)
        .cmp(&rank(b))
        .then(size(b).total_cmp(&size(a)))
        .then(a.key.cmp(&b.key))
}

/// The side's figures for `key`, if any of its runs holds it.
fn summary(side: &[Run], key: &Key) -> Option<Summary> {
    let mut slices = Vec::new();
    let mut medians = Vec::new();
    for run in side {
        if let Some(d) = run.durations.get(key) {
            let mut d = d.clone();
            d.sort_unstable();
            medians.push(median(&d));
            slices.extend(d);
        }
    }
    if slices.is_empty() {
        return None;
    }
    slices.sort_unstable();
    let n = slices.len();
    // Nearest rank, as `fxt stats`: the smallest value with at least p% at
    // or below it.
    let rank = |p: usize| slices[(n * p).div_ceil(100).clamp(1, n) - 1];
    Some(Summary {
        runs: medians.len(),
        count: n as u64,
        count_per_run: n as f64 / side.len() as f64,
        total_ns: slices.iter().fold(0u64, |a, &d| a.saturating_add(d)),
        p50_ns: rank(50),
        p90_ns: rank(90),
        p99_ns: rank(99),
        medians,
        slices,
    })
}

/// The median of sorted, non-empty `v` (the mean of the middle two for an
/// even count).
fn median(v: &[u64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2] as f64
    } else {
        (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
    }
}

fn row(key: &Key, base: Option<Summary>, new: Option<Summary>, test: Test, alpha: f64) -> Row {
    let status = match (&base, &new) {
        (Some(_), Some(_)) => Status::Both,
        (None, _) => Status::Appeared,
        (_, None) => Status::Vanished,
    };
    let mut row = Row {
        key: key.clone(),
        status,
        base: None,
        new: None,
        change: None,
        count_change: None,
        test: None,
        p_value: None,
        significant: false,
        note: None,
    };
    if let (Some(b), Some(n)) = (&base, &new) {
        row.change = (b.p50_ns > 0).then(|| n.p50_ns as f64 / b.p50_ns as f64 - 1.0);
        row.count_change = Some(n.count_per_run / b.count_per_run - 1.0);
        row.test = Some(test);
        let (x, y): (Vec<f64>, Vec<f64>) = match test {
            Test::Runs => (b.medians.clone(), n.medians.clone()),
            Test::Slices => (
                b.slices.iter().map(|&v| v as f64).collect(),
                n.slices.iter().map(|&v| v as f64).collect(),
            ),
        };
        if x.len() < 2 || y.len() < 2 {
            row.note = Some(match test {
                Test::Runs => "in one run only on a side: no run-to-run spread to test",
                Test::Slices => "one slice on a side: nothing to test",
            });
        } else {
            let p = ranktest::p_value(&x, &y);
            row.p_value = Some(p);
            row.significant = p < alpha;
            if !row.significant && ranktest::smallest_p(x.len(), y.len()) >= alpha {
                row.note = Some("too few runs with this name for the test to reach the level");
            }
        }
    }
    row.base = base;
    row.new = new;
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(durations: &[(&str, &[u64])]) -> Run {
        Run {
            file: "t".into(),
            durations: durations
                .iter()
                .map(|(n, d)| (("c".to_owned(), (*n).to_owned()), d.to_vec()))
                .collect(),
            stacks: Default::default(),
            samples: Default::default(),
            sampled_ns: None,
            sample_stacks: Default::default(),
            allocated: Default::default(),
            damage: None,
        }
    }

    #[test]
    fn ten_slices_of_one_run_are_not_ten_runs() {
        // Every base run a little faster than every new run, 200 slices
        // each: a slice test would call it significant, but with 3 runs a
        // side the run test cannot get below 0.05 and says so.
        let base: Vec<Run> = (0..3).map(|i| run(&[("f", &[100 + i; 200])])).collect();
        let new: Vec<Run> = (0..3).map(|i| run(&[("f", &[110 + i; 200])])).collect();
        let rows = compare(&base, &new, 0.05);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert!(r.test == Some(Test::Runs) && !r.significant);
        assert!(r.note.is_some());
        // The pooled medians: 101 and 111.
        assert!((r.change.unwrap() - (111.0 / 101.0 - 1.0)).abs() < 1e-9);
        // With five runs a side the same separation is significant.
        let base: Vec<Run> = (0..5).map(|i| run(&[("f", &[100 + i; 20])])).collect();
        let new: Vec<Run> = (0..5).map(|i| run(&[("f", &[110 + i; 20])])).collect();
        let r = &compare(&base, &new, 0.05)[0];
        assert!(r.significant && (r.p_value.unwrap() - 2.0 / 252.0).abs() < 1e-9);
    }

    #[test]
    fn appeared_vanished_and_counts() {
        let base = [run(&[("kept", &[10, 10]), ("gone", &[5])])];
        let new = [run(&[("kept", &[10, 10, 10, 10]), ("fresh", &[7])])];
        let rows = compare(&base, &new, 0.05);
        let by = |n: &str| rows.iter().find(|r| r.key.1 == n).unwrap();
        assert!(by("gone").status == Status::Vanished && by("gone").change.is_none());
        assert!(by("fresh").status == Status::Appeared);
        let kept = by("kept");
        assert_eq!(kept.count_change, Some(1.0));
        assert_eq!(kept.change, Some(0.0));
        assert_eq!(kept.test, Some(Test::Slices));
        assert_eq!(rows.last().unwrap().key.1, "gone");
    }
}
