//! The Wilcoxon–Mann–Whitney rank-sum test, two-sided: whether one sample
//! tends to be larger than the other, with no assumption on the shape of
//! their distribution (latencies are skewed, with long right tails, so a
//! t-test's normality does not hold).
//!
//! Small samples (the usual 3 to 20 runs per side) get the exact p-value:
//! the rank sum's distribution over every way of splitting the pooled
//! values into the two sides, counted by dynamic programming over the
//! doubled mid-ranks, so ties are exact too. Larger ones get the normal
//! approximation with the tie correction and a continuity correction.

/// Pooled sizes up to this get the exact distribution (at most 41 x 1,641
/// counts per step): beyond it the normal approximation is within a few
/// percent of it.
const EXACT_MAX: usize = 40;

/// The two-sided p-value that `x` and `y` come from one distribution
/// (1 when either is empty).
pub fn p_value(x: &[f64], y: &[f64]) -> f64 {
    let (m, n) = (x.len(), y.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    let (ranks2, ties) = doubled_ranks(x, y);
    let w2: u64 = ranks2[..m].iter().sum();
    if m + n <= EXACT_MAX {
        exact(&ranks2, m, w2)
    } else {
        normal(m, n, w2, ties)
    }
}

/// The smallest two-sided p-value samples of `m` and `n` values can reach
/// (no ties): `2 / C(m + n, m)`. Below the significance level, the test can
/// say something.
pub fn smallest_p(m: usize, n: usize) -> f64 {
    let mut ways = 1.0f64;
    for i in 0..m.min(n) {
        ways = ways * (m + n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / ways).min(1.0)
}

/// Twice the mid-rank (1-based) of every value of `x` then `y`, and the
/// tie term `sum(t^3 - t)` over groups of `t` equal values.
fn doubled_ranks(x: &[f64], y: &[f64]) -> (Vec<u64>, f64) {
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let mut order: Vec<usize> = (0..pooled.len()).collect();
    order.sort_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
    let mut ranks2 = vec![0u64; pooled.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && pooled[order[j + 1]] == pooled[order[i]] {
            j += 1;
        }
        // Positions i+1 ..= j+1 share the rank (i + j + 2) / 2.
        for &k in &order[i..=j] {
            ranks2[k] = (i + j + 2) as u64;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (ranks2, ties)
}

/// The exact two-sided p-value of the doubled rank sum `w2` of the first
/// `m` of `ranks2`.
fn exact(ranks2: &[u64], m: usize, w2: u64) -> f64 {
    let total: u64 = ranks2.iter().sum();
    let width = total as usize + 1;
    // ways[k * width + s]: subsets of k of the values seen so far whose
    // doubled ranks add up to s.
    let mut ways = vec![0.0f64; (m + 1) * width];
    ways[0] = 1.0;
    for &r in ranks2 {
        let r = r as usize;
        for k in (1..=m).rev() {
            for s in (r..width).rev() {
                let from = ways[(k - 1) * width + s - r];
                if from != 0.0 {
                    ways[k * width + s] += from;
                }
            }
        }
    }
    let dist = &ways[m * width..];
    let all: f64 = dist.iter().sum();
    let below: f64 = dist[..=w2 as usize].iter().sum();
    let above: f64 = dist[w2 as usize..].iter().sum();
    (2.0 * below.min(above) / all).min(1.0)
}

/// The normal approximation of the p-value, with the tie and continuity
/// corrections.
fn normal(m: usize, n: usize, w2: u64, ties: f64) -> f64 {
    let (mf, nf) = (m as f64, n as f64);
    let big_n = mf + nf;
    let u = w2 as f64 / 2.0 - mf * (mf + 1.0) / 2.0;
    let mean = mf * nf / 2.0;
    let var = mf * nf / 12.0 * ((big_n + 1.0) - ties / (big_n * (big_n - 1.0)));
    if var <= 0.0 {
        return 1.0; // every value equal
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    libm::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn exact_p_values_match_the_published_table() {
        // Fully separated 5 vs 5: 2 of the C(10,5) = 252 splits are as
        // extreme (scipy.stats.mannwhitneyu(..., method="exact") agrees).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(p_value(&a, &b), 2.0 / 252.0));
        assert!(close(p_value(&b, &a), 2.0 / 252.0));
        assert!(close(smallest_p(5, 5), 2.0 / 252.0));
        // U = 2 for 5 vs 5 (two pairs where the first is larger): P(U <= 2)
        // = 4/252, two-sided 0.0317, the tables' critical value at 0.05.
        let c = [1.0, 2.0, 3.0, 5.5, 6.5];
        let d = [4.0, 7.0, 8.0, 9.0, 10.0];
        assert!(close(p_value(&c, &d), 8.0 / 252.0), "{}", p_value(&c, &d));
        // U = 3: P(U <= 3) = 7/252, two-sided 0.0556 > 0.05.
        let e = [1.0, 2.0, 3.0, 5.5, 7.5];
        let f = [4.0, 6.0, 8.0, 9.0, 10.0];
        assert!(close(p_value(&e, &f), 14.0 / 252.0), "{}", p_value(&e, &f));
        // Identical samples: nothing to see.
        assert!(close(p_value(&a, &a), 1.0));
    }

    #[test]
    fn ties_are_counted_exactly() {
        // Every value equal: the statistic cannot move.
        assert!(close(p_value(&[3.0; 4], &[3.0; 4]), 1.0));
        // x = [1,1], y = [2,2]: doubled mid-ranks 3,3 and 7,7; the 6 ways
        // to pick 2 of them add up to 6 (1 way), 10 (4 ways), 14 (1 way).
        assert!(close(p_value(&[1.0, 1.0], &[2.0, 2.0]), 2.0 / 6.0));
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_distribution() {
        // 25 vs 25 with a shift: both ways of computing it agree to a few
        // percent of the p-value.
        let x: Vec<f64> = (0..25).map(|i| (i * 7 % 25) as f64).collect();
        let y: Vec<f64> = (0..25).map(|i| (i * 11 % 25) as f64 + 4.5).collect();
        let (r, ties) = doubled_ranks(&x, &y);
        let w2: u64 = r[..25].iter().sum();
        let e = exact(&r, 25, w2);
        let n = normal(25, 25, w2, ties);
        assert!(e < 0.05 && (e - n).abs() / e < 0.1, "exact {e}, normal {n}");
    }
}
