//! A set of durations summarized: what the report, the lock and the task
//! sections each print per name.

/// Count, total, mean and percentiles of a set of durations (ns).
pub struct Summary {
    pub count: u64,
    pub total: u64,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Summary {
    /// The summary of `v` (not empty; sorted in place).
    pub(super) fn of(v: &mut [u64]) -> Summary {
        v.sort_unstable();
        let total: u64 = v.iter().fold(0u64, |a, &d| a.saturating_add(d));
        let n = v.len();
        // Nearest rank: the smallest value with at least p% at or below it.
        let rank = |p: u64| v[((n as u64 * p).div_ceil(100) as usize).clamp(1, n) - 1];
        Summary {
            count: n as u64,
            total,
            mean: total as f64 / n as f64,
            p50: rank(50),
            p99: rank(99),
            max: v[n - 1],
        }
    }
}
