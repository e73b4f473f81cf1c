//! One thread's durations as a walk meets them: its begins still open,
//! the spans closed since it last folded, and the call tree of those it
//! folded ([`tree`](super::tree)), so that what a thread holds is bounded
//! by its open depth and its distinct stacks, not by the trace.
//!
//! A thread folds what it holds (once it holds [`FOLD_SPANS`] spans) at
//! an end that leaves none of its begins open and that every span held
//! has ended by: a span that comes later starts, as its events are
//! written, after those end. That is checked, not assumed: when a later span starts before the folded
//! ones end, they nest again as a [`Blob`], whole inside a span that holds
//! them all (a complete event written after its children); anything else
//! (a span starting among them) is [`ThreadState::inexact`], and the
//! caller walks again keeping every span. A thread whose complete events
//! hold spans written before them keeps its spans (folded at the end),
//! as does every thread of a collector that does not fold as it goes.
//!
//! Most threads' spans are folded as they close ([`direct`](super::direct)),
//! so that a fold adds their self times to the tree rather than sorting
//! and nesting them; the spans held are kept all the same, for a fold that
//! must nest them after all and for the merge.
//!
//! A range of a walk after the first cannot know which begins earlier
//! ranges left open: an end that closes none of its own is kept in file
//! order ([`END`]), what was folded before it sealed as a blob, for the
//! merge to close and nest in the earlier ranges' spans.

use crate::epoch::ByThreadIndex;
use crate::recent::ByThread;
use fxt_format::decode::{Context, Thread};

use super::direct::{Begin, Direct};
use super::tree::{sort_spans, Blob, Span, Tree, BLOB, END};

/// A thread: provider, process koid, thread koid.
pub(super) type ThreadKey = (Option<u32>, u64, u64);

/// Where an event's thread is found: its koids (of its provider), or its
/// index in its provider's thread table (an event head's).
#[derive(Clone, Copy)]
pub(super) enum ThreadOf {
    Thread(Thread),
    Index(u8),
}

impl ThreadOf {
    /// The thread, with the reader's tables at the event (`ctx`).
    #[inline]
    pub fn thread(self, ctx: &Context<'_>) -> Thread {
        match self {
            ThreadOf::Thread(thread) => thread,
            ThreadOf::Index(index) => ctx.thread(index),
        }
    }
}

/// The key of a provider's thread (an undefined one's koids are 0).
#[inline(always)]
fn key(provider: Option<u32>, thread: Thread) -> ThreadKey {
    match thread {
        Thread::Known { process, thread } => (provider, process, thread),
        Thread::Undefined(_) => (provider, 0, 0),
    }
}

/// The threads' spans, found by key ([`ByThread`]: the last one found
/// and the last of its slot with no hashing), or by a head's thread index.
#[derive(Default)]
pub(super) struct Threads {
    pub states: ByThread<ThreadKey, ThreadState>,
    /// Per thread index of an event head: its index in `states`, while
    /// the threads epoch holds, so that a head's thread is found with no
    /// koids read.
    by_index: ByThreadIndex,
}

impl Threads {
    /// The state of the thread `thread` of the provider of the record
    /// `ctx` is at, made empty if new.
    #[inline(always)]
    pub fn of(&mut self, ctx: &Context<'_>, thread: ThreadOf) -> &mut ThreadState {
        let at = match thread {
            ThreadOf::Thread(thread) => self.at(key(ctx.provider_id(), thread)),
            ThreadOf::Index(index) => self.at_index(ctx, index),
        };
        &mut self.states.entries[at].1
    }

    /// The state of thread `t`, made empty if new.
    #[inline]
    pub fn get(&mut self, t: ThreadKey) -> &mut ThreadState {
        self.states.get(t)
    }

    /// The index in `states` of thread `t`, made empty if new.
    #[inline]
    fn at(&mut self, t: ThreadKey) -> usize {
        self.states.at(t)
    }

    /// The index in `states` of the thread of index `index` in the
    /// provider's table, remembered while the threads epoch holds.
    #[inline(always)]
    fn at_index(&mut self, ctx: &Context<'_>, index: u8) -> usize {
        self.check_epoch(ctx);
        match self.known_index(index) {
            Some(at) => at,
            None => self.find_index(ctx, index),
        }
    }

    /// Forgets the states found by thread index if the threads epoch of
    /// the record `ctx` is at is not theirs.
    #[inline(always)]
    pub fn check_epoch(&mut self, ctx: &Context<'_>) {
        self.by_index.check(ctx);
    }

    /// The index in `states` of the thread of index `index`, if looked up
    /// since [`Threads::check_epoch`] last forgot: for a record the
    /// epoch was checked at, or one after it with no other record
    /// between (only another record changes the threads epoch).
    #[inline(always)]
    pub fn known_index(&self, index: u8) -> Option<usize> {
        self.by_index.get(index)
    }

    /// The state at index `at` of `states` ([`Threads::known_index`]).
    #[inline(always)]
    pub fn state(&mut self, at: usize) -> &mut ThreadState {
        &mut self.states.entries[at].1
    }

    /// [`Threads::at_index`] of an index not looked up in this epoch.
    #[inline(never)]
    fn find_index(&mut self, ctx: &Context<'_>, index: u8) -> usize {
        let at = self.at(key(ctx.provider_id(), ctx.thread(index)));
        self.by_index.set(index, at);
        at
    }
}

/// Spans a thread holds before it folds them, at the next end that leaves
/// none of its begins open.
const FOLD_SPANS: usize = 512;

/// One thread's durations so far.
pub(super) struct ThreadState {
    /// Begins still open.
    pub open: Vec<Begin>,
    /// Spans closed and not folded, in file order; those before `sealed`
    /// wait for the merge (blobs, and ends that closed no begin).
    buf: Vec<Span>,
    sealed: usize,
    /// The spans folded since `sealed`, and the time they cover (`start`
    /// past `end` when there are none).
    tree: Tree,
    start: u64,
    end: u64,
    /// The last end of the spans held since `sealed`.
    held_end: u64,
    /// Spans cut at their parent's end.
    pub overlaps: u64,
    /// Complete events hold spans written before them: fold at the end.
    keep: bool,
    /// Spans that could not be folded exactly as they went.
    pub inexact: bool,
    /// The spans held, folded as they close while they can be.
    direct: Direct,
    /// Folds that added what [`Direct`] held (for the tests to see it
    /// taken).
    #[cfg(test)]
    direct_folds: usize,
}

impl Default for ThreadState {
    fn default() -> Self {
        ThreadState {
            open: Vec::new(),
            buf: Vec::new(),
            sealed: 0,
            tree: Tree::default(),
            start: u64::MAX,
            end: 0,
            held_end: 0,
            overlaps: 0,
            keep: false,
            inexact: false,
            direct: Direct::default(),
            #[cfg(test)]
            direct_folds: 0,
        }
    }
}

impl ThreadState {
    /// Takes a begin of `name` at `start` (folded as it closes if `fold`
    /// and it can be).
    #[inline]
    pub fn begin(&mut self, name: u32, start: u64, fold: bool) {
        if !fold && self.direct.is_clean() {
            self.direct.spoil(&mut self.tree);
        }
        let parent = self.open.last();
        let begin = self.direct.begin(&mut self.tree, parent, name, start);
        self.open.push(begin);
    }

    /// Takes a complete event's span.
    #[inline]
    pub fn complete(&mut self, span: Span) {
        let held = self.buf[self.sealed..].last();
        if held.is_some_and(|last| span.start <= last.start) || span.start < self.end {
            self.keep = true;
        }
        self.held_end = self.held_end.max(span.end);
        self.buf.push(span);
        if self.keep {
            self.direct.spoil(&mut self.tree);
        } else {
            let parent = self.open.last_mut();
            self.direct.complete(&mut self.tree, parent, span);
        }
    }

    /// Takes a duration end at `ns`, folding what is held if `fold` and
    /// it closes the last begin open.
    #[inline]
    pub fn end(&mut self, ns: u64, blobs: &mut Vec<Blob>, fold: bool) {
        let Some(open) = self.open.pop() else {
            return self.unmatched(ns, blobs);
        };
        let (name, begin) = (open.name, open.start);
        let end = ns.max(begin);
        self.buf.push(Span {
            start: begin,
            end,
            name,
        });
        self.held_end = self.held_end.max(end);
        let parent = self.open.last_mut();
        self.direct.end(&mut self.tree, &open, parent, end);
        // Every span held is over (and later ones start from here on).
        let over = self.open.is_empty() && self.held_end <= end;
        if fold && over && !self.keep && self.buf.len() - self.sealed >= FOLD_SPANS {
            if self.direct.is_clean() {
                // The tree holds them already; they cover from the first
                // to this end (which every span held has ended by).
                let first = self.direct.commit();
                self.start = self.start.min(first);
                self.end = self.end.max(end);
                self.buf.truncate(self.sealed);
                #[cfg(test)]
                {
                    self.direct_folds += 1;
                }
            } else {
                self.fold(self.sealed, blobs);
            }
            self.held_end = 0;
            self.direct.reset(self.end);
        }
    }

    /// An end that closes no begin of this range: what was folded is
    /// sealed as a blob before it, for the merge.
    #[cold]
    fn unmatched(&mut self, ns: u64, blobs: &mut Vec<Blob>) {
        // What was held is sealed below, not folded.
        self.direct.spoil(&mut self.tree);
        if let Some(blob) = self.take_folded(blobs) {
            self.buf.insert(self.sealed, blob);
        }
        self.buf.push(Span {
            start: ns,
            end: ns,
            name: END,
        });
        self.sealed = self.buf.len();
        // Nothing is held now.
        self.direct.reset(self.end);
    }

    /// What was folded as a blob item (added to `blobs`), if anything
    /// was.
    fn take_folded(&mut self, blobs: &mut Vec<Blob>) -> Option<Span> {
        if self.start > self.end {
            return None;
        }
        let tree = std::mem::take(&mut self.tree);
        let blob = Blob {
            total: tree.total(),
            tree,
            start: self.start,
            end: self.end,
        };
        let item = Span {
            start: blob.start,
            end: blob.end,
            name: BLOB | blobs.len() as u32,
        };
        blobs.push(blob);
        (self.start, self.end) = (u64::MAX, 0);
        Some(item)
    }

    /// Folds the spans held from `from` on into the tree (with what was
    /// folded before as a blob, if they start before it ends).
    fn fold(&mut self, from: usize, blobs: &mut Vec<Blob>) {
        if self.buf.len() <= from {
            return;
        }
        let end = self.end;
        if self.buf[from..].iter().any(|s| s.start < end) {
            if let Some(blob) = self.take_folded(blobs) {
                self.buf.insert(from, blob);
            }
        }
        let held = &mut self.buf[from..];
        sort_spans(held);
        match self.tree.nest(held, blobs) {
            Ok(cut) => self.overlaps += cut,
            Err(_) => self.inexact = true,
        }
        self.cover(from);
        self.buf.truncate(from);
    }

    /// Widens the time the tree covers to the spans held from `from` on.
    fn cover(&mut self, from: usize) {
        for s in &self.buf[from..] {
            self.start = self.start.min(s.start);
            self.end = self.end.max(s.end);
        }
    }

    /// Ends held that closed no begin (of any range, once merged).
    pub fn unmatched_ends(&self) -> u64 {
        self.buf.iter().filter(|s| s.name == END).count() as u64
    }

    /// Folds everything held; the thread's call tree.
    pub fn finish(mut self, blobs: &mut Vec<Blob>) -> (Tree, ThreadState) {
        self.direct.spoil(&mut self.tree);
        self.buf.retain(|s| s.name != END);
        self.sealed = 0;
        self.fold(0, blobs);
        let tree = std::mem::take(&mut self.tree);
        (tree, self)
    }

    /// Takes the next range's state of this thread (its names and blobs
    /// renamed by `name` and `blob`): its ends close this one's open
    /// begins (or are counted in `unmatched`), its spans and what it
    /// folded follow this one's in file order, its open begins go above
    /// this one's.
    pub fn merge(
        &mut self,
        mut later: ThreadState,
        blobs: &mut Vec<Blob>,
        name: impl Fn(u32) -> u32,
        blob: impl Fn(u32) -> u32,
        unmatched: &mut u64,
    ) {
        // Spans and begins join those held: they are nested at the end.
        self.direct.spoil(&mut self.tree);
        later.direct.spoil(&mut later.tree);
        let folded = later.take_folded(blobs).map(|mut item| {
            // `take_folded` named it in `blobs` already, renamed below.
            let last = blobs.len() - 1;
            let Blob { tree, .. } = &mut blobs[last];
            *tree = std::mem::take(tree).renamed(&name);
            item.name = BLOB | last as u32;
            item
        });
        let folded_at = later.sealed;
        for (i, s) in later.buf.iter().enumerate() {
            if i == folded_at {
                self.buf.extend(folded);
            }
            match s.name {
                END => match self.open.pop() {
                    Some(open) => self.buf.push(Span {
                        start: open.start,
                        end: s.start.max(open.start),
                        name: open.name,
                    }),
                    None => *unmatched += 1,
                },
                n if n & BLOB != 0 => self.buf.push(Span {
                    name: BLOB | blob(n & !BLOB),
                    ..*s
                }),
                n => self.buf.push(Span {
                    name: name(n),
                    ..*s
                }),
            }
        }
        if folded_at >= later.buf.len() {
            self.buf.extend(folded);
        }
        let open = later.open.into_iter();
        self.open
            .extend(open.map(|b| Begin::new(name(b.name), b.start)));
        self.overlaps += later.overlaps;
        self.inexact |= later.inexact;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// One duration event of a thread.
    #[derive(Clone, Copy)]
    enum Ev {
        Begin(u32, u64),
        End(u64),
        Complete(Span),
    }

    /// A small random number source.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, m: u64) -> u64 {
            self.0 = (self.0)
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % m
        }
    }

    /// Writes one span and what it holds, as a program would: a begin/end
    /// pair, a complete event written when it ends (after what it holds)
    /// or when it starts; steps of 0 make ties (none if `step` is 1).
    fn span(rng: &mut Rng, out: &mut Vec<Ev>, t: &mut u64, depth: u32, kinds: u64, step: u64) {
        let name = rng.below(5) as u32;
        let kind = rng.below(kinds);
        *t += step + rng.below(3);
        let start = *t;
        let at = out.len();
        if kind == 0 {
            out.push(Ev::Begin(name, start));
        } else if kind == 1 {
            out.push(Ev::End(0)); // its place, filled below
        }
        for _ in 0..rng.below(if depth < 4 { 4 } else { 0 } + 1) {
            span(rng, out, t, depth + 1, kinds, step);
        }
        *t += step + rng.below(3);
        let end = *t;
        match kind {
            0 => out.push(Ev::End(end)),
            1 => out[at] = Ev::Complete(Span { start, end, name }),
            _ => out.push(Ev::Complete(Span { start, end, name })),
        }
    }

    /// A thread's events: `n` top-level spans of the first `kinds` kinds
    /// (pairs, complete events written at their start, at their end),
    /// with a few ends closing nothing, begins never ended, and
    /// timestamps going back, if `odd`.
    fn events(seed: u64, n: usize, kinds: u64, odd: bool) -> Vec<Ev> {
        events_stepped(seed, n, kinds, odd, 0)
    }

    /// [`events`] with every step of time at least `step`.
    fn events_stepped(seed: u64, n: usize, kinds: u64, odd: bool, step: u64) -> Vec<Ev> {
        let mut rng = Rng(seed);
        let (mut out, mut t) = (Vec::new(), 0);
        for _ in 0..n {
            span(&mut rng, &mut out, &mut t, 0, kinds, step);
            if odd && rng.below(20) == 0 {
                match rng.below(3) {
                    0 => out.push(Ev::End(t)),
                    1 => out.push(Ev::Begin(9, t)),
                    _ => t = t.saturating_sub(rng.below(30)),
                }
            }
        }
        out
    }

    /// What a thread's events fold to: its stacks, the spans cut and the
    /// ends that closed nothing.
    type Folds = (BTreeMap<String, u64>, u64, u64);

    /// What a thread's events fold to (cut into ranges at `cuts`, merged
    /// as the collector merges them), how many blobs nested and how many
    /// folds took the spans as they closed ([`Direct`]); `None` if not
    /// exactly.
    fn folded(events: &[Ev], cuts: &[usize], fold: bool) -> Option<(Folds, usize, usize)> {
        let mut ranges = Vec::new();
        let (mut from, mut direct) = (0, 0);
        for &cut in cuts.iter().chain([events.len()].iter()) {
            let (mut state, mut blobs) = (ThreadState::default(), Vec::new());
            for e in &events[from..cut.max(from)] {
                match *e {
                    Ev::Begin(name, ns) => state.begin(name, ns, fold),
                    Ev::End(ns) => state.end(ns, &mut blobs, fold),
                    Ev::Complete(span) => state.complete(span),
                }
            }
            direct += state.direct_folds;
            ranges.push((state, blobs));
            from = cut.max(from);
        }
        let mut ranges = ranges.into_iter();
        let (mut whole, mut blobs) = ranges.next().unwrap();
        let mut unmatched = 0;
        for (later, later_blobs) in ranges {
            let offset = blobs.len() as u32;
            blobs.extend(later_blobs);
            whole.merge(later, &mut blobs, |n| n, |b| b + offset, &mut unmatched);
        }
        unmatched += whole.unmatched_ends();
        let (tree, state) = whole.finish(&mut blobs);
        let names: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
        let mut stacks = BTreeMap::new();
        tree.fold("t", &names, &mut stacks);
        let folds = (stacks, state.overlaps, unmatched);
        (!state.inexact).then_some((folds, blobs.len(), direct))
    }

    /// Folded as they go, in one range or cut into many, a thread's
    /// spans give what folding them all at the end gives, or say that
    /// they could not; pairs and complete events written at their start
    /// always fold exactly in one range (cut, a span that an earlier range
    /// began may start and end with the first it holds, which only file
    /// order places).
    #[test]
    fn folding_as_it_goes_folds_as_at_the_end() {
        let (mut exact, mut inexact, mut blobbed) = (0, 0, 0);
        for seed in 0..300 {
            let kinds = [1, 2, 3][seed as usize % 3];
            let odd = seed % 2 == 1;
            let events = events(seed, 20 + seed as usize, kinds, odd);
            let (all, _, none) = folded(&events, &[], false).expect("kept, spans fold exactly");
            assert_eq!(
                none, 0,
                "seed {seed}: a collector that keeps every span folds none"
            );
            let len = events.len();
            let mut rng = Rng(seed);
            let mut cuts: Vec<usize> = (0..1 + seed % 7)
                .map(|_| rng.below(len as u64) as usize)
                .collect();
            cuts.sort_unstable();
            let kept = folded(&events, &cuts, false).expect("kept, spans fold exactly");
            assert!(kept.0 == all, "seed {seed}: kept, cut at {cuts:?}");
            for cuts in [&[][..], &cuts[..]] {
                match folded(&events, cuts, true) {
                    Some((f, blobs, _)) => {
                        assert!(f == all, "seed {seed}, cuts {cuts:?}");
                        exact += 1;
                        blobbed += usize::from(blobs > 0);
                    }
                    None => {
                        let one_range = cuts.is_empty();
                        assert!(kinds == 3 || odd || !one_range, "seed {seed}: inexact");
                        inexact += 1;
                    }
                }
            }
        }
        assert!(exact > 500, "{exact} exact, {inexact} not");
        assert!(blobbed > 50, "{blobbed} exact with blobs");
    }

    /// Threads long enough to fold many times, spans of every kind, in
    /// time order or not: folded as they go, in one range or cut into
    /// many, they give what nesting them all at the end gives (or say
    /// they could not), and the folds of threads of pairs in time order
    /// take their spans as they closed ([`Direct`]), what they gave
    /// checked against nesting them.
    #[test]
    fn spans_taken_as_they_close_fold_as_at_the_end() {
        let (mut direct, mut exact) = (0, 0);
        for seed in 0..48u64 {
            let kinds = [1, 1, 2, 3][seed as usize % 4];
            let odd = seed % 6 == 5;
            let step = u64::from(seed % 3 != 0);
            let events = events_stepped(seed, 1500, kinds, odd, step);
            let (all, _, _) = folded(&events, &[], false).expect("kept, spans fold exactly");
            let mut rng = Rng(seed);
            let mut cuts: Vec<usize> = (0..1 + seed % 5)
                .map(|_| rng.below(events.len() as u64) as usize)
                .collect();
            cuts.sort_unstable();
            for cuts in [&[][..], &cuts[..]] {
                match folded(&events, cuts, true) {
                    Some((f, _, folds)) => {
                        assert!(f == all, "seed {seed}, cuts {cuts:?}");
                        direct += folds;
                        exact += 1;
                    }
                    None => assert!(kinds == 3 || odd || !cuts.is_empty(), "seed {seed}"),
                }
            }
        }
        assert!(exact > 60, "{exact} exact");
        assert!(direct > 100, "{direct} folds of spans taken as they closed");
    }

    /// A thread of begin/end pairs holds its open spans and a few hundred
    /// closed ones, however long the trace.
    #[test]
    fn a_thread_of_pairs_holds_a_bounded_number_of_spans() {
        let events = events(7, 5_000, 1, false);
        let (mut state, mut blobs) = (ThreadState::default(), Vec::new());
        let mut most = 0;
        for e in &events {
            match *e {
                Ev::Begin(name, ns) => state.begin(name, ns, true),
                Ev::End(ns) => state.end(ns, &mut blobs, true),
                Ev::Complete(span) => state.complete(span),
            }
            most = most.max(state.buf.len());
        }
        assert!(most < 2 * FOLD_SPANS, "{most} spans held");
        assert!(blobs.is_empty() && !state.inexact);
    }
}
