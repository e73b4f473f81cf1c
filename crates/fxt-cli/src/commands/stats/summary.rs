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
        // All wide: the order of the parts holds with no other part.
        Summary::of_lengths(&mut Lengths {
            counts: Vec::new(),
            narrow: Vec::new(),
            wide: v,
        })
    }

    /// The summary of `v` (not empty; its lists reordered in place). The
    /// percentiles are found by selection, not by sorting: a few values
    /// of each list are put in place, at linear cost.
    pub(super) fn of_lengths(v: &mut Lengths) -> Summary {
        let counted: u64 = v.counts.iter().sum();
        let total = (v.counts.iter().enumerate())
            .map(|(ns, &n)| (ns as u64).saturating_mul(n))
            .chain(v.narrow.iter().map(|&d| u64::from(d)))
            .chain(v.wide.iter().copied())
            .fold(0u64, |a, d| a.saturating_add(d));
        let n = counted + v.len_listed() as u64;
        // Nearest rank: the smallest value with at least p% at or below it.
        let rank = |p: u64| (n * p).div_ceil(100).clamp(1, n) - 1;
        let mut ordered = Ordered::new(v, counted);
        Summary {
            count: n,
            total,
            mean: total as f64 / n as f64,
            // In ascending order of rank, as `Ordered::at` needs.
            p50: ordered.at(rank(50)),
            p99: ordered.at(rank(99)),
            max: ordered.at(n - 1),
        }
    }
}

/// A [`Lengths`] read in the order of its values, for ranks asked in
/// ascending order: the counted values (each below every listed one),
/// then the narrow list, then the wide one (each wide value over every
/// narrow one); a list's values put in place by selection as ranks in it
/// are asked ([`nth`]).
struct Ordered<'a> {
    lengths: &'a mut Lengths,
    counted: u64,
    /// The last index put in place in `narrow` and in `wide`.
    narrow_placed: Option<usize>,
    wide_placed: Option<usize>,
}

impl<'a> Ordered<'a> {
    fn new(lengths: &'a mut Lengths, counted: u64) -> Self {
        Ordered {
            lengths,
            counted,
            narrow_placed: None,
            wide_placed: None,
        }
    }

    /// The value of rank `i` (from 0; at least the rank asked before).
    fn at(&mut self, i: u64) -> u64 {
        if i < self.counted {
            return counted_nth(&self.lengths.counts, i);
        }
        let i = (i - self.counted) as usize;
        let narrow = self.lengths.narrow.len();
        if i < narrow {
            return u64::from(nth(&mut self.lengths.narrow, &mut self.narrow_placed, i));
        }
        nth(&mut self.lengths.wide, &mut self.wide_placed, i - narrow)
    }
}

/// The value of rank `i` among the values counted by `counts` (a count
/// per value).
fn counted_nth(counts: &[u64], i: u64) -> u64 {
    let mut below = 0u64;
    for (ns, &n) in counts.iter().enumerate() {
        below += n;
        if i < below {
            return ns as u64;
        }
    }
    unreachable!("a rank among the counted values")
}

/// The value of rank `j` of `v`, put in place by selection; `placed`:
/// the last index put in place so far (at most `j`), below which every
/// value is at most its value and above which every value is at least
/// it, so the selection looks only from there.
fn nth<T: Ord + Copy>(v: &mut [T], placed: &mut Option<usize>, j: usize) -> T {
    if *placed != Some(j) {
        let from = placed.unwrap_or(0);
        v[from..].select_nth_unstable(j - from);
        *placed = Some(j);
    }
    v[j]
}

/// Durations below this (ns) are counted per value once a set holds
/// many ([`Lengths::counts`]).
const SHORT: usize = 1 << 16;

/// Durations a set lists in 4 bytes each before it counts the short
/// ones: as many bytes as the counts take.
const COUNT_FROM: usize = 2 * SHORT;

/// A set of durations (ns) kept in 4 bytes each while they fit (under
/// 4.3 s: nearly all), 8 past that: what exact percentiles need, in half
/// the memory a trace of many short spans would fill. Once it holds many,
/// the short ones are counted per value instead (a trace's spans are
/// mostly short): the memory stops growing with them, and no page of
/// it is written for each.
#[derive(Default)]
pub struct Lengths {
    /// Per duration below [`SHORT`]: how many there are. Empty until the
    /// narrow list first fills past [`COUNT_FROM`]; from then on no such
    /// duration is listed.
    counts: Vec<u64>,
    narrow: Vec<u32>,
    /// Those over `u32::MAX` (every one, for [`Summary::of`]).
    wide: Vec<u64>,
}

impl Lengths {
    /// Adds a duration.
    #[inline(always)]
    pub fn push(&mut self, ns: u64) {
        // No count once the counts are made: an index past their end.
        let at = usize::try_from(ns).unwrap_or(usize::MAX);
        match self.counts.get_mut(at) {
            Some(count) => *count += 1,
            None => self.list(ns),
        }
    }

    /// Adds a duration that is not counted.
    #[inline(always)]
    fn list(&mut self, ns: u64) {
        match u32::try_from(ns) {
            Ok(ns) if self.narrow.len() == self.narrow.capacity() => self.grow(ns),
            Ok(ns) => self.narrow.push(ns),
            Err(_) => self.wide.push(ns),
        }
    }

    /// Adds a narrow duration to a full list: the short ones counted
    /// instead if there are enough of them.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, ns: u32) {
        if self.counts.is_empty() && self.narrow.len() >= COUNT_FROM {
            self.count_short();
            self.push(u64::from(ns));
        } else {
            self.narrow.push(ns);
        }
    }

    /// Counts the short durations listed, and every one from now on.
    fn count_short(&mut self) {
        let mut counts = vec![0u64; SHORT];
        self.narrow.retain(|&ns| match counts.get_mut(ns as usize) {
            Some(count) => {
                *count += 1;
                false
            }
            None => true,
        });
        self.counts = counts;
    }

    /// How many durations are listed (not counted).
    fn len_listed(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        // Counts are made only for durations listed before.
        self.len_listed() == 0 && self.counts.is_empty()
    }

    /// Adds the durations of `other`.
    pub fn append(&mut self, mut other: Lengths) {
        if self.is_empty() {
            *self = other;
            return;
        }
        if self.counts.is_empty() && !other.counts.is_empty() {
            std::mem::swap(self, &mut other);
        }
        if !other.counts.is_empty() {
            // Both count: every short one of `self` is counted already.
            for (count, n) in self.counts.iter_mut().zip(other.counts) {
                *count += n;
            }
            self.narrow.extend(other.narrow);
        } else if self.counts.is_empty() {
            self.narrow.extend(other.narrow);
            // As a list that fills by pushes would.
            if self.narrow.len() >= COUNT_FROM {
                self.count_short();
            }
        } else {
            for ns in other.narrow {
                self.push(u64::from(ns));
            }
        }
        self.wide.extend(other.wide);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linear congruential generator's next value.
    fn next(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *x
    }

    /// A duration: about one in four over `u32::MAX`, a few at its edge
    /// or at [`SHORT`]'s, some repeated, the rest short or long.
    fn duration(x: &mut u64) -> u64 {
        let x = next(x);
        match x >> 61 {
            0 | 1 => u64::from(u32::MAX) + (x >> 40) % 3,
            2 => (x >> 20) % (1 << 40),
            3 => SHORT as u64 - 2 + (x >> 40) % 4,
            4 => 7,
            _ => (x >> 33) % 1000,
        }
    }

    /// What [`Summary::of_lengths`] must give for `all`, by a sort.
    fn sorted_summary(mut all: Vec<u64>) -> (u64, u64, u64, u64, u64) {
        all.sort_unstable();
        let n = all.len();
        let total = all.iter().fold(0u64, |a, &d| a.saturating_add(d));
        let rank = |p: u64| all[((n as u64 * p).div_ceil(100) as usize).clamp(1, n) - 1];
        (n as u64, total, rank(50), rank(99), all[n - 1])
    }

    fn figures(s: &Summary) -> (u64, u64, u64, u64, u64) {
        (s.count, s.total, s.p50, s.p99, s.max)
    }

    /// The summary of durations kept in parts (listed narrow or wide, or
    /// counted from any point on) is that of them all in one sorted
    /// vector, whichever part each falls in.
    #[test]
    fn lengths_summarize_as_one_sorted_vector() {
        let mut x = 7u64;
        for n in 1..300usize {
            let (mut lengths, mut all) = (Lengths::default(), Vec::new());
            // Counted from this duration on (never for some).
            let count_from = next(&mut x) as usize % (n + n / 4 + 1);
            for i in 0..n {
                if i == count_from {
                    lengths.count_short();
                }
                let d = duration(&mut x);
                lengths.push(d);
                all.push(d);
            }
            let want = sorted_summary(all);
            let s = Summary::of_lengths(&mut lengths);
            assert_eq!(figures(&s), want, "n {n}, counted from {count_from}");
            assert_eq!(s.mean, want.1 as f64 / n as f64);
        }
    }

    /// A set that fills past [`COUNT_FROM`] counts its short durations
    /// (its lists keep only the others) and summarizes as before.
    #[test]
    fn a_full_set_counts_its_short_durations() {
        let mut x = 11u64;
        let (mut lengths, mut all) = (Lengths::default(), Vec::new());
        for _ in 0..3 * COUNT_FROM {
            let d = duration(&mut x);
            lengths.push(d);
            all.push(d);
        }
        assert_eq!(lengths.counts.len(), SHORT);
        assert!(lengths.narrow.iter().all(|&d| d as usize >= SHORT));
        let want = sorted_summary(all.clone());
        assert_eq!(figures(&Summary::of_lengths(&mut lengths)), want);
        // Halves that count nothing (each lists fewer narrow durations
        // than `COUNT_FROM`) count once appended.
        let some = &all[..2 * COUNT_FROM];
        let (mut a, mut b) = (Lengths::default(), Lengths::default());
        for (i, &d) in some.iter().enumerate() {
            [&mut a, &mut b][i % 2].push(d);
        }
        assert!(a.counts.is_empty() && b.counts.is_empty());
        a.append(b);
        assert_eq!(a.counts.len(), SHORT);
        assert_eq!(
            figures(&Summary::of_lengths(&mut a)),
            sorted_summary(some.to_vec())
        );
    }

    /// Sets appended, each counting or not, summarize as all their
    /// durations.
    #[test]
    fn appended_lengths_summarize_as_all_their_durations() {
        let mut x = 3u64;
        for case in 0..64 {
            let (mut a, mut b, mut all) = (Lengths::default(), Lengths::default(), Vec::new());
            for (i, part) in [&mut a, &mut b].into_iter().enumerate() {
                // Empty in some cases, counting in others.
                let n = (next(&mut x) % 3) as usize * 40;
                if case >> i & 1 == 1 {
                    part.count_short();
                }
                for _ in 0..n {
                    let d = duration(&mut x);
                    part.push(d);
                    all.push(d);
                }
            }
            a.append(b);
            if all.is_empty() {
                continue;
            }
            let want = sorted_summary(all);
            assert_eq!(figures(&Summary::of_lengths(&mut a)), want, "case {case}");
        }
    }
}
