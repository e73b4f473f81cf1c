//! Duration begin / end matching per provider and thread, by the strict
//! check's rules (an end closes the innermost open begin of its thread; a
//! pair whose names or times disagree is a problem), shared by `fxt check`,
//! `fxt recover` and `fxt diff`.

use rustc_hash::FxHashMap;

use fxt_format::decode::{Event, Text, Thread};

use crate::problems::{thread_label, Problem, Reason};

/// A duration begin or end as matching sees it: where, what and when
/// (from a decoded event, or from a view's fields).
pub struct Mark {
    pub thread: Thread,
    pub category: Text,
    pub name: Text,
    /// In its provider's ticks.
    pub timestamp: u64,
}

impl From<&Event> for Mark {
    fn from(e: &Event) -> Mark {
        Mark {
            thread: e.thread,
            category: e.category.clone(),
            name: e.name.clone(),
            timestamp: e.timestamp,
        }
    }
}

/// An open duration begin.
pub struct Open {
    /// Byte offset of the begin record.
    pub offset: u64,
    category: Text,
    name: Text,
    timestamp: u64,
}

impl Open {
    /// The begin's category.
    pub fn category(&self) -> &Text {
        &self.category
    }

    /// The begin's name (an end may leave its name empty).
    pub fn name(&self) -> &Text {
        &self.name
    }

    /// The begin's timestamp, in its provider's ticks.
    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }
}

/// What a duration end closed.
pub enum Closed {
    /// No begin was open on its thread.
    Nothing,
    /// The innermost open begin of its thread, with the problems of the
    /// pair (none when the names agree and the end is not before the
    /// begin).
    Begin(Open, Vec<Problem>),
}

/// Per-thread matching of duration begin and end events (per provider:
/// thread koids are the provider's).
#[derive(Default)]
pub struct Durations {
    /// Keyed by the trace's own thread koids with a fast hasher: a trace
    /// that collides them only slows itself.
    open: FxHashMap<(Option<u32>, Thread), Vec<Open>>,
}

impl Durations {
    /// Opens a duration begin.
    pub fn begin(&mut self, provider: Option<u32>, offset: u64, e: Mark) {
        self.open
            .entry((provider, e.thread))
            .or_default()
            .push(Open {
                offset,
                category: e.category,
                name: e.name,
                timestamp: e.timestamp,
            });
    }

    /// Closes the innermost open begin of the end's thread.
    pub fn end(&mut self, provider: Option<u32>, offset: u64, e: &Mark) -> Closed {
        let Some(begin) = self.open.get_mut(&(provider, e.thread)).and_then(Vec::pop) else {
            return Closed::Nothing;
        };
        let mut problems = Vec::new();
        if e.name != begin.name && e.name != "" {
            problems.push(Problem {
                offset,
                reason: Reason::MismatchedEnd,
                message: format!(
                    "duration end {} closes duration begin {} (offset {:#x})",
                    e.name, begin.name, begin.offset
                ),
            });
        }
        if e.timestamp < begin.timestamp {
            problems.push(Problem {
                offset,
                reason: Reason::MismatchedEnd,
                message: format!(
                    "duration end {} (ts {}) is before its begin (ts {}, offset {:#x})",
                    e.name, e.timestamp, begin.timestamp, begin.offset
                ),
            });
        }
        Closed::Begin(begin, problems)
    }

    /// Stacks the begins `later` left open (a later range of the walk)
    /// above the ones open here.
    pub fn append(&mut self, later: Durations) {
        for (thread, stack) in later.open {
            self.open.entry(thread).or_default().extend(stack);
        }
    }

    /// The begins still open (never ended), with their threads.
    pub fn never_ended(self) -> impl Iterator<Item = (Thread, Open)> {
        self.open
            .into_iter()
            .flat_map(|((_, t), stack)| stack.into_iter().map(move |o| (t, o)))
    }
}

/// The problem of a duration end that closes no begin.
pub fn end_without_begin(offset: u64, e: &Mark) -> Problem {
    Problem {
        offset,
        reason: Reason::EndWithoutBegin,
        message: format!(
            "duration end {} on thread {} has no matching begin",
            e.name,
            thread_label(&e.thread)
        ),
    }
}

/// The problem of a duration begin never ended.
pub fn never_ended(t: &Thread, begin: &Open) -> Problem {
    Problem {
        offset: begin.offset,
        reason: Reason::NeverEnded,
        message: format!(
            "duration begin {} on thread {} is never ended",
            begin.name,
            thread_label(t)
        ),
    }
}

/// A duration in nanoseconds with a readable unit (`fxt stats`, `fxt diff`).
pub fn readable_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.2}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.3}s", ns / 1e9)
    }
}
