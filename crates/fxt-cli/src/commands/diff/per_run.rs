//! One value per run on each side, compared: the sides' means per run,
//! the change and the rank-sum test on the per-run values
//! ([`super::ranktest`]), as CPU samples and sampled allocations are
//! compared (one number per run, since the values of one run share its
//! machine state; a side of one run gives a change but no test).

use std::cmp::Ordering;

use super::ranktest;

/// The comparison of one key's per-run values.
#[derive(Clone, Copy)]
pub struct Change {
    /// The mean per run, each side (every run of the side counted).
    pub base_per_run: f64,
    pub new_per_run: f64,
    /// New over base, minus 1 (`None` when the base's mean is 0).
    pub change: Option<f64>,
    /// Two-sided p-value (`None` with fewer than two runs on a side).
    pub p_value: Option<f64>,
    pub significant: bool,
}

impl Change {
    /// `base` and `new` (one value per run) at significance level `alpha`.
    pub fn of(base: &[f64], new: &[f64], alpha: f64) -> Change {
        let (bm, nm) = (mean(base), mean(new));
        let testable = base.len() >= 2 && new.len() >= 2;
        let p_value = testable.then(|| ranktest::p_value(base, new));
        Change {
            base_per_run: bm,
            new_per_run: nm,
            change: (bm > 0.0).then(|| nm / bm - 1.0),
            p_value,
            significant: p_value.is_some_and(|p| p < alpha),
        }
    }

    /// The order rows are listed in: the significant changes first, then
    /// by how much each moved per run (ties by `tie`).
    pub fn order(&self, other: &Change, tie: Ordering) -> Ordering {
        let moved = |c: &Change| (c.new_per_run - c.base_per_run).abs();
        other
            .significant
            .cmp(&self.significant)
            .then(moved(other).total_cmp(&moved(self)))
            .then(tie)
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// One key (a function, a slice name) compared.
pub struct Keyed {
    pub key: String,
    pub c: Change,
}

/// Each of `keys` compared from its per-run values on each side
/// (`values(key)` gives base's, then new's), at significance level
/// `alpha`: the significant changes first, then by how much each moved.
pub fn compare_each<'k>(
    keys: impl IntoIterator<Item = &'k String>,
    alpha: f64,
    values: impl Fn(&String) -> (Vec<f64>, Vec<f64>),
) -> Vec<Keyed> {
    let mut rows: Vec<Keyed> = keys
        .into_iter()
        .map(|key| {
            let (base, new) = values(key);
            Keyed {
                key: key.clone(),
                c: Change::of(&base, &new, alpha),
            }
        })
        .collect();
    rows.sort_by(|a, b| a.c.order(&b.c, a.key.cmp(&b.key)));
    rows
}
