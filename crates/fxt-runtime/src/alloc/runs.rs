//! A sampled allocation's stack copy in zero runs
//! (`fxt_format::samples::raw_stack`): the copy of a thread's stack holds
//! long runs of zeros (locals not written yet, the thread-locals at the
//! top of a thread's block), which a run word stands for. Planned in one
//! pass over the stack, on the hook's own stack (a fixed number of runs,
//! no allocation), then written in a second that follows the plan, so the
//! record's length is known before it is reserved.

use fxt_format::samples::Run;

/// Most runs a plan holds (past it, zeros are kept as words).
const MAX_RUNS: usize = 64;
/// The shortest run of zeros worth a run word of its own.
const MIN_ZEROS: u32 = 4;

/// How a stack of some words is written in zero runs.
pub(crate) struct Runs {
    runs: [Run; MAX_RUNS],
    len: usize,
}

impl Runs {
    /// Plans the `len` words that `word(i)` reads: one pass, four words
    /// at a time through stretches of zeros and of other words alike
    /// (word by word only at a stretch's ends), deciding once per
    /// stretch. A stretch of zeros is found by a group of four zero words
    /// in it: one of seven or more always is, a shorter one may be kept
    /// as words.
    pub(crate) fn plan(len: usize, word: impl Fn(usize) -> u64) -> Runs {
        let mut plan = Runs {
            runs: [Run::default(); MAX_RUNS],
            len: 0,
        };
        let group = |i: usize| word(i) | word(i + 1) | word(i + 2) | word(i + 3);
        let mut run = Run::default();
        let mut i = 0;
        while i < len {
            let from = i;
            while i + 4 <= len && group(i) == 0 {
                i += 4;
            }
            while i < len && word(i) == 0 {
                i += 1;
            }
            let zeros = (i - from) as u32;
            // Other words up to the next group of four zeros, whose
            // stretch starts at the zeros just before it (or up to the
            // zeros that end the copy).
            let from = i;
            // A group's last word first: through a stack dense with other
            // words (as most are), one read decides most groups.
            while i + 4 <= len && (word(i + 3) != 0 || group(i) != 0) {
                i += 4;
            }
            if i + 4 > len {
                i = len;
            }
            while i > from && word(i - 1) == 0 {
                i -= 1;
            }
            let literals = (i - from) as u32;
            if run.literals == 0 {
                run.zeros += zeros;
            } else if zeros >= MIN_ZEROS && plan.len + 1 < MAX_RUNS {
                plan.push(run);
                run = Run { zeros, literals: 0 };
            } else {
                run.literals += zeros;
            }
            run.literals += literals;
        }
        if run.zeros + run.literals > 0 {
            plan.push(run);
        }
        plan
    }

    fn push(&mut self, run: Run) {
        self.runs[self.len] = run;
        self.len += 1;
    }

    /// The runs, lowest address first.
    pub(crate) fn runs(&self) -> &[Run] {
        &self.runs[..self.len]
    }

    /// Words the runs take written: a run word each and their literals.
    pub(crate) fn words(&self) -> usize {
        self.runs().iter().map(|r| 1 + r.literals as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expands the runs over `stack` as a reader does.
    fn expand(plan: &Runs, stack: &[u64]) -> Vec<u64> {
        let mut out = Vec::new();
        for r in plan.runs() {
            out.resize(out.len() + r.zeros as usize, 0);
            let at = out.len();
            out.extend_from_slice(&stack[at..at + r.literals as usize]);
        }
        out
    }

    /// Runs cover the words exactly and give them back; short zero runs
    /// stay words, long ones (and leading and trailing ones) become run
    /// words; past the most runs, zeros are kept as words.
    #[test]
    fn runs_give_the_words_back() {
        let mut stack = vec![0u64; 10];
        stack.extend([1, 2, 0, 3]);
        stack.extend([0; 20]);
        stack.extend([4, 0, 0, 0, 0, 5, 6]);
        stack.extend([0; 7]);
        stack.extend([7, 0, 0, 0, 0, 0, 0, 0, 8]);
        stack.extend([0; 2]);
        let plan = Runs::plan(stack.len(), |i| stack[i]);
        assert_eq!(expand(&plan, &stack), stack);
        let runs: Vec<(u32, u32)> = plan.runs().iter().map(|r| (r.zeros, r.literals)).collect();
        // The four zeros after 4 hold no group of four of the planner's
        // (kept as words); every stretch of seven or more is a run.
        assert_eq!(runs, [(10, 4), (20, 7), (7, 1), (7, 3)]);
        assert_eq!(plan.words(), 4 + 15);

        let empty = Runs::plan(0, |_| unreachable!());
        assert!(empty.runs().is_empty() && empty.words() == 0);
        let zeros = Runs::plan(5, |_| 0);
        assert_eq!(expand(&zeros, &[0; 5]), [0; 5]);
        assert_eq!(zeros.words(), 1);

        let many: Vec<u64> = (0..1000).map(|i| u64::from(i % 10 == 0)).collect();
        let plan = Runs::plan(many.len(), |i| many[i]);
        assert_eq!(plan.runs().len(), MAX_RUNS);
        assert_eq!(expand(&plan, &many), many);
    }

    /// Stacks of every length up to 300, of stretches of zeros and other
    /// words of random lengths: the runs give the words back, and every
    /// stretch of seven or more zeros between words is a run of its own
    /// (fewer runs than `MAX_RUNS` here).
    #[test]
    fn runs_cover_random_stacks() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for len in 0..300 {
            let mut stack = Vec::with_capacity(len);
            while stack.len() < len {
                stack.extend(std::iter::repeat_n(0, next(12) as usize));
                stack.extend((0..next(6)).map(|_| next(1000) + 1));
            }
            stack.truncate(len);
            // Stretches of seven zeros or more after a word.
            let long = stack
                .split(|&w| w != 0)
                .skip(1)
                .filter(|zeros| zeros.len() >= 7)
                .count();
            let plan = Runs::plan(len, |i| stack[i]);
            assert_eq!(expand(&plan, &stack), stack, "length {len}");
            assert!(plan.runs().len() < MAX_RUNS || long >= MAX_RUNS - 1);
            let split = plan.runs().iter().skip(1).filter(|r| r.zeros >= 7).count();
            assert!(
                split >= long.min(MAX_RUNS - 1),
                "length {len}: {split} < {long}"
            );
        }
    }
}
