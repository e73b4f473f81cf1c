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
    /// The summary of `v` (not empty).
    pub(super) fn of(v: Vec<u64>) -> Summary {
        // All wide: the order of the parts holds with no narrow part.
        Summary::of_lengths(&mut Lengths {
            narrow: Vec::new(),
            wide: v,
        })
    }

    /// The summary of `v` (not empty; each part sorted in place).
    pub(super) fn of_lengths(v: &mut Lengths) -> Summary {
        v.narrow.sort_unstable();
        v.wide.sort_unstable();
        let narrow = v.narrow.iter().map(|&d| u64::from(d));
        let total: u64 =
            (narrow.chain(v.wide.iter().copied())).fold(0u64, |a, d| a.saturating_add(d));
        let n = v.len();
        // The values in order: every narrow one is below every wide one.
        let at = |i: usize| match v.narrow.get(i) {
            Some(&d) => u64::from(d),
            None => v.wide[i - v.narrow.len()],
        };
        // Nearest rank: the smallest value with at least p% at or below it.
        let rank = |p: u64| at(((n as u64 * p).div_ceil(100) as usize).clamp(1, n) - 1);
        Summary {
            count: n as u64,
            total,
            mean: total as f64 / n as f64,
            p50: rank(50),
            p99: rank(99),
            max: at(n - 1),
        }
    }
}

/// A set of durations (ns) kept in 4 bytes each while they fit (under
/// 4.3 s: nearly all), 8 past that: what exact percentiles need, in half
/// the memory a trace of many short spans would fill.
#[derive(Default)]
pub struct Lengths {
    narrow: Vec<u32>,
    /// Those over `u32::MAX` (every one, for [`Summary::of`]).
    wide: Vec<u64>,
}

impl Lengths {
    /// Adds a duration.
    #[inline(always)]
    pub fn push(&mut self, ns: u64) {
        match u32::try_from(ns) {
            Ok(ns) => self.narrow.push(ns),
            Err(_) => self.wide.push(ns),
        }
    }

    /// How many durations.
    pub fn len(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the durations of `other`.
    pub fn append(&mut self, other: Lengths) {
        if self.is_empty() {
            *self = other;
            return;
        }
        self.narrow.extend(other.narrow);
        self.wide.extend(other.wide);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary of durations kept in two parts is that of them all in
    /// one sorted vector, whichever part each falls in.
    #[test]
    fn lengths_summarize_as_one_sorted_vector() {
        let mut x = 7u64;
        for n in 1..200usize {
            let (mut lengths, mut all) = (Lengths::default(), Vec::new());
            for _ in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // About one in four over u32::MAX, a few at its edge.
                let d = match x >> 62 {
                    0 => u64::from(u32::MAX) + (x >> 40) % 3,
                    1 => (x >> 20) % (1 << 40),
                    _ => (x >> 33) % 1000,
                };
                lengths.push(d);
                all.push(d);
            }
            all.sort_unstable();
            let total = all.iter().fold(0u64, |a, &d| a.saturating_add(d));
            let rank = |p: u64| all[((n as u64 * p).div_ceil(100) as usize).clamp(1, n) - 1];
            let s = Summary::of_lengths(&mut lengths);
            let got = (s.count, s.total, s.p50, s.p99, s.max);
            let want = (n as u64, total, rank(50), rank(99), all[n - 1]);
            assert_eq!(got, want, "n {n}");
            assert_eq!(s.mean, total as f64 / n as f64);
        }
    }
}
