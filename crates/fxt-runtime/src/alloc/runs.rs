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
    /// Plans the `len` words that `word(i)` reads: a pass of two tight
    /// loops, one over a stretch of zero words and one over the stretch of
    /// words that follows it, deciding once per stretch.
    pub(crate) fn plan(len: usize, word: impl Fn(usize) -> u64) -> Runs {
        let mut plan = Runs {
            runs: [Run::default(); MAX_RUNS],
            len: 0,
        };
        let mut run = Run::default();
        let mut i = 0;
        while i < len {
            let from = i;
            // Four words at a time through a long stretch of zeros (the
            // stack's unwritten locals and padding), then one at a time.
            while i + 4 <= len && (word(i) | word(i + 1) | word(i + 2) | word(i + 3)) == 0 {
                i += 4;
            }
            while i < len && word(i) == 0 {
                i += 1;
            }
            let zeros = (i - from) as u32;
            let from = i;
            while i < len && word(i) != 0 {
                i += 1;
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
        stack.extend([4, 0, 0, 0, 0, 5]);
        stack.extend([0; 7]);
        let plan = Runs::plan(stack.len(), |i| stack[i]);
        assert_eq!(expand(&plan, &stack), stack);
        let runs: Vec<(u32, u32)> = plan.runs().iter().map(|r| (r.zeros, r.literals)).collect();
        assert_eq!(runs, [(10, 4), (20, 1), (4, 1), (7, 0)]);
        assert_eq!(plan.words(), 4 + 6);

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
}
