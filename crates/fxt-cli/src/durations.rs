//! Duration begin / end matching per provider and thread, by the strict
//! check's rules (an end closes the innermost open begin of its thread; a
//! pair whose names or times disagree is a problem), shared by `fxt check`,
//! `fxt recover` and `fxt diff`.

use rustc_hash::FxHashMap;

use fxt_format::decode::{Event, Text, Thread};

use crate::interned::Interned;
use crate::problems::{thread_label, Problem, Reason};
use crate::recent::ByThread;

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
        let end = (offset, &e.name, e.timestamp);
        let problems = pair_problems(end, (begin.offset, &begin.name, begin.timestamp));
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

/// An open duration begin of [`ById`]: its name as an id of the walk's
/// [`Interned`] texts (equal ids, equal texts).
pub struct OpenId {
    /// Byte offset of the begin record.
    pub offset: u64,
    name: u32,
    /// The begin's timestamp, in its provider's ticks.
    pub timestamp: u64,
}

/// [`Durations`]' matching for one range of a walk, by name id rather than
/// by text: an event's name is resolved once per string index and epoch
/// ([`Interned`]), so a begin or end copies no text; the texts are looked
/// at only for a pair with problems. [`ById::into_durations`] hands the
/// begins left open to a [`Durations`] that matches across ranges.
#[derive(Default)]
pub struct ById {
    stacks: ByThread<ThreadKey, Vec<OpenId>>,
}

/// A provider and one of its threads.
type ThreadKey = (Option<u32>, Thread);

impl ById {
    /// Closes the innermost open begin of stack `at` ([`ById::at`]; `end`:
    /// the end's offset, name id of `texts` and ticks), as
    /// [`Durations::end`] does, and gives it with whether the pair is
    /// sound (has no problems: nothing is made or dropped for a sound
    /// pair); `None`: no begin was open on its thread.
    #[inline(always)]
    pub fn close_at(
        &mut self,
        at: usize,
        end: (u64, u32, u64),
        texts: &Interned,
    ) -> Option<(OpenId, bool)> {
        let begin = self.stacks.entries[at].1.pop()?;
        let sound = mismatch(&begin, end, texts).is_none_or(|pair| pair.is_empty());
        Some((begin, sound))
    }

    /// The index of a provider's thread among the stacks, which
    /// [`ById::begin_at`] and [`ById::end_at`] take: a reader that knows
    /// an event's thread by a smaller key (its index in the thread table,
    /// while the table holds) keeps this instead of the thread.
    #[inline]
    pub fn at(&mut self, key: ThreadKey) -> usize {
        self.stacks.at(key)
    }

    /// The provider and thread of stack `at` ([`ById::at`]).
    pub fn thread_at(&self, at: usize) -> ThreadKey {
        self.stacks.entries[at].0
    }

    /// Opens a duration begin on stack `at` ([`ById::at`]; `name`: an id
    /// of the walk's texts).
    #[inline]
    pub fn begin_at(&mut self, at: usize, offset: u64, name: u32, timestamp: u64) {
        self.stacks.entries[at].1.push(OpenId {
            offset,
            name,
            timestamp,
        });
    }

    /// [`ById::close_at`], the problems of the pair added to `problems`:
    /// false if no begin was open there.
    #[inline(always)]
    pub fn end_at(
        &mut self,
        at: usize,
        (offset, name, timestamp): (u64, u32, u64),
        texts: &Interned,
        problems: &mut Vec<Problem>,
    ) -> bool {
        let Some(begin) = self.stacks.entries[at].1.pop() else {
            return false;
        };
        // Only a pair that has problems touches `problems` (an extend of
        // an empty `Option<Vec>` costs a call and a drop per end).
        if let Some(pair) = mismatch(&begin, (offset, name, timestamp), texts) {
            problems.extend(pair);
        }
        true
    }

    /// The begins left open, as a [`Durations`] holding them (names from
    /// `texts`; categories, which the check never shows, empty).
    pub fn into_durations(self, texts: &Interned) -> Durations {
        let mut durations = Durations::default();
        for ((provider, thread), stack) in self.stacks.entries {
            for open in stack {
                let mark = Mark {
                    thread,
                    category: Text::default(),
                    name: texts.text(open.name).clone(),
                    timestamp: open.timestamp,
                };
                durations.begin(provider, open.offset, mark);
            }
        }
        durations
    }
}

/// The problems of an end (`(offset, name id, ticks)`) that closes
/// `begin`, `None` when the pair is sound: the one rule of [`ById::close_at`]
/// and [`ById::end_at`].
#[inline(always)]
fn mismatch(begin: &OpenId, end: (u64, u32, u64), texts: &Interned) -> Option<Vec<Problem>> {
    let (_, name, timestamp) = end;
    if begin.name == name && timestamp >= begin.timestamp {
        return None;
    }
    Some(mismatched(begin, end, texts))
}

/// [`mismatch`] of a pair that has problems, out of the way of the sound
/// ones.
#[cold]
#[inline(never)]
fn mismatched(begin: &OpenId, end: (u64, u32, u64), texts: &Interned) -> Vec<Problem> {
    let (offset, name, timestamp) = end;
    let end = (offset, texts.text(name), timestamp);
    let open = (begin.offset, texts.text(begin.name), begin.timestamp);
    pair_problems(end, open)
}

/// The problems of a pair: its end (offset, name, ticks) names another
/// begin (an end may leave its name empty) or is before its begin.
fn pair_problems(end: (u64, &Text, u64), begin: (u64, &Text, u64)) -> Vec<Problem> {
    let ((offset, name, timestamp), (begin_offset, begin_name, begin_ts)) = (end, begin);
    let mut problems = Vec::new();
    if name != begin_name && *name != "" {
        problems.push(Problem {
            offset,
            reason: Reason::MismatchedEnd,
            message: format!(
                "duration end {name} closes duration begin {begin_name} (offset {begin_offset:#x})"
            ),
        });
    }
    if timestamp < begin_ts {
        problems.push(Problem {
            offset,
            reason: Reason::MismatchedEnd,
            message: format!(
                "duration end {name} (ts {timestamp}) is before its begin (ts {begin_ts}, offset {begin_offset:#x})"
            ),
        });
    }
    problems
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
