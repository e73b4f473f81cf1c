//! Durations as folded stacks (`thread;outer;inner NANOSECONDS`), the text
//! that inferno, `flamegraph.pl` and speedscope read.
//!
//! Every thread's durations (begin/end pairs matched per thread, an end
//! closing the innermost open begin, as `fxt stats` matches them; and
//! complete events) are nested by time: sorted by start, longest first, a
//! span is inside the innermost span still open when it starts. Each stack
//! is weighted by its *self* time: its duration less its children's, so the
//! counts of one thread's lines add up to the durations of its outermost
//! spans, and the lines under a frame add up to that frame's duration.
//! Times are nanoseconds, each timestamp converted with its provider's
//! ticks per second before subtracting (the figures `fxt stats` gives).
//!
//! Async spans (async begin/end matched by provider, process, category,
//! name and id) have no thread to nest in: each is a stack of its own under
//! a root frame `async`, weighted by its whole duration (left out when a
//! thread is selected).
//!
//! A span that ends after its parent (a partial overlap, which Perfetto
//! drops) is cut at its parent's end, and counted in
//! [`Folded::overlaps`], so that no stack's self time goes negative.
//!
//! `fxt flame` folds as it goes ([`Collector::folding`], [`thread`]):
//! each thread holds its open begins, the spans closed since it last
//! folded, and its call tree, so that memory is bounded by open depth and
//! distinct stacks, not by the trace; the stacks are those that nesting
//! every span at the end gives ([`Collector::new`]), byte for byte, or
//! the collector says it could not be sure of that.

use std::collections::{BTreeMap, HashMap};

use fxt_format::decode::{
    Context, EventKind, Head, HeadAt, Record, StrRef, Text, Thread, ThreadRef, View,
};
use fxt_format::encode::OBJ_TYPE_THREAD;
use fxt_format::time::{ticks_per_second_or_default, ticks_to_ns};
use rustc_hash::FxHashMap;

use crate::epoch::Epoch;

mod direct;
#[cfg(test)]
mod tests;
mod thread;
mod tree;

use thread::{ThreadOf, Threads};
use tree::{add, Blob, Span};

/// Which spans to fold.
#[derive(Default, Clone)]
pub struct Filter {
    /// Only the thread whose name, koid or frame label is this.
    pub thread: Option<String>,
    /// Only spans of this category (others are left out; their children of
    /// this category nest in the nearest span kept).
    pub category: Option<String>,
    /// Label each thread's root frame by its name alone (`thread` when it
    /// has none), not `name [koid]`: what lines up runs whose koids
    /// differ (`fxt diff`).
    pub names_only: bool,
}

/// The folded stacks of a trace.
#[derive(Default)]
pub struct Folded {
    /// Stack (frames joined by `;`) → self time in nanoseconds; stacks of
    /// zero self time are left out.
    pub stacks: BTreeMap<String, u64>,
    /// Spans cut at their parent's end (partial overlaps).
    pub overlaps: u64,
    /// Duration ends with no open begin on their thread, and async ends
    /// with no open begin.
    pub unmatched_ends: u64,
    /// Begins never ended (left out).
    pub unclosed_begins: u64,
}

impl Folded {
    /// The folded-stack lines, `stack count`, sorted by stack.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        self.stacks.iter().map(|(s, n)| format!("{s} {n}"))
    }
}

/// An async operation: provider, process, category, name, id.
type AsyncKey = (Option<u32>, u64, Text, Text, u64);

/// Collects the spans of a trace, record by record, and folds them: as it
/// goes ([`Collector::folding`]), or at the end ([`Collector::new`]).
#[derive(Default)]
pub struct Collector {
    filter: Filter,
    /// Fold each thread's spans as it goes ([`thread`]).
    folding: bool,
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// Per string index, while the strings epoch `epoch` holds: the
    /// name id of a name of that index ([`NO_NAME`] if not looked up
    /// yet), and whether a category of that index is the one the filter
    /// keeps ([`UNKNOWN`] if not looked up yet), so that an event's text
    /// is looked up once per index, not per event.
    by_index: Vec<u32>,
    kept: Vec<u8>,
    epoch: Epoch,
    threads: Threads,
    /// Spans folded already that wait to nest ([`thread`]).
    blobs: Vec<Blob>,
    open_async: FxHashMap<AsyncKey, Vec<u64>>,
    /// Per name id, the durations of its async spans (each a stack of its
    /// own, so added as they close).
    async_ns: FxHashMap<u32, u64>,
    thread_names: HashMap<u64, String>,
    unmatched_ends: u64,
    /// Async ends with no begin open (key, ns, name), in file order, for
    /// [`Collector::merge`] to close against the begins an earlier range
    /// left open.
    pending_async: Vec<(AsyncKey, u64, u32)>,
    /// The ticks per second of the event heads since the last other
    /// record, once the epochs of what is kept by string and thread index
    /// were checked at the first of them ([`Collector::start_heads`]):
    /// only another record changes the tables. `None` after another
    /// record, and always when a category is selected.
    heads: Option<u64>,
}

impl Collector {
    /// A collector keeping what `filter` selects, every thread's spans
    /// kept until [`Collector::finish`] folds them (exact whatever the
    /// order of the spans).
    pub fn new(filter: Filter) -> Collector {
        Collector {
            filter,
            ..Collector::default()
        }
    }

    /// A collector that folds each thread's spans as it goes, holding its
    /// open spans and distinct stacks rather than every span: exact, or
    /// [`Collector::finish_exact`] says it could not be, for a walk again
    /// with [`Collector::new`].
    pub fn folding(filter: Filter) -> Collector {
        Collector {
            filter,
            folding: true,
            ..Collector::default()
        }
    }

    /// Takes one record of a view walk
    /// ([`crate::input::Input::walk_view_ranges`]), the one form an
    /// event comes in (a walk of views yields every event of a known type
    /// as [`View::Event`]): an event's name is looked up by its string
    /// index, once per index. Nothing but the kind is looked at for an
    /// event that is no part of a span (an instant, a counter...).
    #[inline(always)]
    pub fn view(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        match view {
            View::Event(e) if !is_span_part(e.kind) => {}
            View::Event(e) => self.part(
                ctx,
                Part {
                    kind: e.kind,
                    timestamp: e.timestamp,
                    thread: ThreadOf::Thread(e.thread),
                    category: e.category,
                    name: e.name,
                },
            ),
            View::Record(record) => {
                // It may change the tables ([`Collector::heads`]).
                self.heads = None;
                if let Record::KernelObject(o) = record {
                    if o.object_type == OBJ_TYPE_THREAD {
                        self.thread_names.insert(o.koid, o.name.to_string());
                    }
                }
            }
        }
    }

    /// Takes one record of a head walk (`Views::heads`): an event of the
    /// usual shape by its head, its thread found by its thread index and
    /// its name by its string index (nothing but its type looked at if it
    /// is no part of a span); any other record as [`Collector::view`].
    /// A duration's head whose thread and name were met since the tables
    /// last changed is taken here; any other as a view's event is, through
    /// a call that is handed where the head was read ([`HeadAt`], two
    /// words in registers), so that nothing is written to memory for it
    /// per event.
    #[inline(always)]
    pub fn head(&mut self, ctx: &Context<'_>, head: Head<'_, '_>) {
        let (e, place) = match head {
            Head::Event(e, place) => (e, place),
            Head::Other(view) => return self.other(ctx, view),
        };
        let event_type = e.event_type();
        if !matches!(event_type, 2..=5 | 7) {
            return;
        }
        let Some(tps) = self.heads.filter(|_| event_type <= 4) else {
            return self.head_slowly(place);
        };
        let ThreadRef::Indexed(index) = e.thread_ref() else {
            return self.head_slowly(place);
        };
        let Some(at) = self.threads.known_index(index) else {
            return self.head_slowly(place);
        };
        let start = ticks_to_ns(e.timestamp(), tps);
        let fold = self.folding;
        if event_type == 3 {
            let thread = self.threads.state(at);
            return thread.end(start, &mut self.blobs, fold);
        }
        let name = match self.by_index.get(usize::from(e.name_index())) {
            Some(&name) if name != NO_NAME => name,
            _ => return self.head_slowly(place),
        };
        let thread = self.threads.state(at);
        if event_type == 2 {
            thread.begin(name, start, fold);
        } else {
            let end = ticks_to_ns(e.end_ts().unwrap_or_default(), tps).max(start);
            thread.complete(Span { start, end, name });
        }
    }

    /// [`Collector::head`] of a span's part it does not take itself: as
    /// [`Collector::part`] takes it.
    #[inline(never)]
    fn head_slowly(&mut self, at: HeadAt<'_, '_>) {
        // Always read: `at` is where a head was read.
        let Some((e, ctx)) = at.read() else {
            return;
        };
        if self.heads.is_none() {
            self.start_heads(&ctx);
        }
        let thread = match e.thread_ref() {
            ThreadRef::Indexed(index) => ThreadOf::Index(index),
            ThreadRef::Inline { process, thread } => {
                ThreadOf::Thread(Thread::Known { process, thread })
            }
        };
        let part = Part {
            kind: e.kind(),
            timestamp: e.timestamp(),
            thread,
            category: e.category(),
            name: e.name(),
        };
        self.part(&ctx, part)
    }

    /// The first event head after another record: what is kept by string
    /// and thread index is checked against the tables, and the heads'
    /// clock kept, till the next other record ([`Collector::heads`]).
    fn start_heads(&mut self, ctx: &Context<'_>) {
        self.forget_if_changed(ctx);
        self.threads.check_epoch(ctx);
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        self.heads = self.filter.category.is_none().then_some(tps);
    }

    /// [`Collector::head`] of a record that is not an event head: a call
    /// of its own, out of the heads' loop. The tables may change here.
    #[inline(never)]
    fn other(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        // An event that comes as a view (an inline text, a blob) changes
        // no table; any other record is `view`'s to see.
        self.view(ctx, view)
    }

    /// Takes one event that is part of a span.
    #[inline(never)]
    fn part(&mut self, ctx: &Context<'_>, e: Part<'_>) {
        if !self.category_kept(ctx, e.category) {
            return;
        }
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let start = ticks_to_ns(e.timestamp, tps);
        match e.kind {
            EventKind::DurationComplete { end } => {
                let name = self.name_id(ctx, e.name);
                let end = ticks_to_ns(end, tps).max(start);
                let thread = self.threads.of(ctx, e.thread);
                thread.complete(Span { start, end, name });
            }
            EventKind::DurationBegin => {
                let name = self.name_id(ctx, e.name);
                let fold = self.folding;
                let thread = self.threads.of(ctx, e.thread);
                thread.begin(name, start, fold);
            }
            EventKind::DurationEnd => {
                let fold = self.folding;
                let thread = self.threads.of(ctx, e.thread);
                thread.end(start, &mut self.blobs, fold);
            }
            EventKind::AsyncBegin { id } => {
                let k = async_key(ctx, ctx.provider_id(), &e, id);
                self.open_async.entry(k).or_default().push(start);
            }
            EventKind::AsyncEnd { id } => {
                let k = async_key(ctx, ctx.provider_id(), &e, id);
                let name = self.name_id(ctx, e.name);
                match self.open_async.get_mut(&k).and_then(Vec::pop) {
                    Some(begin) => self.add_async(name, start.saturating_sub(begin)),
                    None => self.pending_async.push((k, start, name)),
                }
            }
            _ => {}
        }
    }

    /// Whether an event of category `category` is kept by the filter:
    /// its text compared once per string index.
    #[inline]
    fn category_kept(&mut self, ctx: &Context<'_>, category: StrRef<'_>) -> bool {
        if self.filter.category.is_none() {
            return true;
        }
        let StrRef::Indexed(index) = category else {
            return self.is_category(ctx, category);
        };
        self.forget_if_changed(ctx);
        let slot = usize::from(index);
        match self.kept.get(slot) {
            Some(&kept) if kept != UNKNOWN => kept == KEPT,
            _ => {
                let kept = self.is_category(ctx, category);
                if slot >= self.kept.len() {
                    self.kept.resize(slot + 1, UNKNOWN);
                }
                self.kept[slot] = if kept { KEPT } else { LEFT_OUT };
                kept
            }
        }
    }

    /// Whether `category` is the text the filter keeps.
    fn is_category(&self, ctx: &Context<'_>, category: StrRef<'_>) -> bool {
        let want = self.filter.category.as_deref();
        want.is_some_and(|want| ctx.text(category) == want)
    }

    /// The id of an event's name: by its string index, the text interned
    /// once per index while the strings epoch holds.
    #[inline(always)]
    fn name_id(&mut self, ctx: &Context<'_>, name: StrRef<'_>) -> u32 {
        let StrRef::Indexed(index) = name else {
            return self.intern(&ctx.text(name));
        };
        self.forget_if_changed(ctx);
        let slot = usize::from(index);
        match self.by_index.get(slot) {
            Some(&id) if id != NO_NAME => id,
            _ => {
                let id = self.intern(&ctx.text(name));
                if slot >= self.by_index.len() {
                    self.by_index.resize(slot + 1, NO_NAME);
                }
                self.by_index[slot] = id;
                id
            }
        }
    }

    /// Forgets what was resolved from string indices if the record `ctx`
    /// is at reads them otherwise than the last one did.
    #[inline(always)]
    fn forget_if_changed(&mut self, ctx: &Context<'_>) {
        if self.epoch.changed(ctx) {
            self.by_index.fill(NO_NAME);
            self.kept.fill(UNKNOWN);
        }
    }

    fn intern(&mut self, name: &Text) -> u32 {
        // Most names are plain strings already in the table: no allocation.
        if let Some(&id) = name.as_str().and_then(|n| self.ids.get(n)) {
            return id;
        }
        let name = frame_name(&name.to_string());
        if let Some(&id) = self.ids.get(&name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.clone());
        self.ids.insert(name, id);
        id
    }

    /// An async span's duration, under its name.
    fn add_async(&mut self, name: u32, ns: u64) {
        let sum = self.async_ns.entry(name).or_default();
        *sum = sum.saturating_add(ns);
    }

    /// Folds in the collector of the next range of the walk (ranges in
    /// file order, each collected with the same filter): per thread, its
    /// ends close this one's open begins, its spans and what it folded
    /// follow this one's, its open begins go above this one's.
    pub fn merge(&mut self, later: Collector) {
        let ids: Vec<u32> = later.names.iter().map(|n| self.intern_name(n)).collect();
        let name = |n: u32| ids[n as usize];
        let offset = self.blobs.len() as u32;
        for blob in later.blobs {
            let tree = blob.tree.renamed(name);
            self.blobs.push(Blob { tree, ..blob });
        }
        for (k, end, n) in later.pending_async {
            match self.open_async.get_mut(&k).and_then(Vec::pop) {
                Some(begin) => self.add_async(name(n), end.saturating_sub(begin)),
                None => self.unmatched_ends += 1,
            }
        }
        for (t, state) in later.threads.states.entries {
            let blob = |b: u32| b + offset;
            let unmatched = &mut self.unmatched_ends;
            (self.threads.get(t)).merge(state, &mut self.blobs, name, blob, unmatched);
        }
        for (k, open) in later.open_async {
            self.open_async.entry(k).or_default().extend(open);
        }
        for (n, ns) in later.async_ns {
            self.add_async(name(n), ns);
        }
        self.thread_names.extend(later.thread_names);
        self.unmatched_ends += later.unmatched_ends;
    }

    /// The id of a frame name already made by [`frame_name`].
    fn intern_name(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    /// The label of a thread's root frame: its name and koid (or its name
    /// alone, [`Filter::names_only`]).
    fn thread_label(&self, thread: u64) -> String {
        match self.thread_names.get(&thread) {
            Some(name) if !name.is_empty() && self.filter.names_only => frame_name(name),
            Some(name) if !name.is_empty() => frame_name(&format!("{name} [{thread}]")),
            _ if self.filter.names_only => "thread".to_owned(),
            _ => format!("thread {thread}"),
        }
    }

    fn thread_selected(&self, thread: u64, label: &str) -> bool {
        match &self.filter.thread {
            None => true,
            Some(want) => {
                want == label
                    || *want == thread.to_string()
                    || self.thread_names.get(&thread) == Some(want)
                    || self
                        .thread_names
                        .get(&thread)
                        .is_some_and(|name| *want == format!("{name} [{thread}]"))
            }
        }
    }

    /// Nests every thread's spans and folds them; for a collector made
    /// by [`Collector::new`], which keeps every span until now (one made
    /// by [`Collector::folding`] says with [`Collector::finish_exact`]
    /// whether it folded exactly).
    pub fn finish(self) -> Folded {
        debug_assert!(!self.folding, "finish_exact says if folding was exact");
        let (folded, _exact) = self.fold();
        folded
    }

    /// Nests every thread's spans and folds them: `None` if the spans of
    /// a thread selected could not be folded exactly as they went (walk
    /// again with [`Collector::new`]).
    pub fn finish_exact(self) -> Option<Folded> {
        let (folded, exact) = self.fold();
        exact.then_some(folded)
    }

    fn fold(mut self) -> (Folded, bool) {
        let threads = std::mem::take(&mut self.threads.states.entries);
        // Ends still pending closed nothing: no earlier range is left.
        let ends = threads.iter().map(|(_, t)| t.unmatched_ends());
        let begins = threads.iter().map(|(_, t)| t.open.len() as u64);
        let open_async = self.open_async.values().map(|v| v.len() as u64);
        let mut folded = Folded {
            unmatched_ends: self.unmatched_ends
                + self.pending_async.len() as u64
                + ends.sum::<u64>(),
            unclosed_begins: begins.sum::<u64>() + open_async.sum::<u64>(),
            ..Folded::default()
        };
        let mut exact = true;
        for ((_, _, thread), state) in threads {
            let label = self.thread_label(thread);
            if !self.thread_selected(thread, &label) {
                continue;
            }
            let (tree, state) = state.finish(&mut self.blobs);
            exact &= !state.inexact;
            folded.overlaps += state.overlaps;
            tree.fold(&label, &self.names, &mut folded.stacks);
        }
        if self.filter.thread.is_none() {
            for (&name, &ns) in &self.async_ns {
                add(
                    &mut folded.stacks,
                    format!("async;{}", self.names[name as usize]),
                    ns,
                );
            }
        }
        (folded, exact)
    }
}

/// An event that is part of a span, as its view or its head gives it.
struct Part<'a> {
    kind: EventKind,
    timestamp: u64,
    thread: ThreadOf,
    category: StrRef<'a>,
    name: StrRef<'a>,
}

/// An entry of [`Collector::by_index`] that names nothing yet.
const NO_NAME: u32 = u32::MAX;

/// Entries of [`Collector::kept`]: not looked up yet, kept, left out.
const UNKNOWN: u8 = 0;
const KEPT: u8 = 1;
const LEFT_OUT: u8 = 2;

/// The key of an async event with id `id`: provider, process, category,
/// name, id.
fn async_key(ctx: &Context<'_>, provider: Option<u32>, e: &Part<'_>, id: u64) -> AsyncKey {
    let process = match e.thread.thread(ctx) {
        Thread::Known { process, .. } => process,
        Thread::Undefined(_) => 0,
    };
    (
        provider,
        process,
        ctx.text(e.category),
        ctx.text(e.name),
        id,
    )
}

/// Whether an event of kind `kind` begins, ends or is a span (what
/// [`Collector`] folds).
#[inline(always)]
fn is_span_part(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::DurationComplete { .. }
            | EventKind::DurationBegin
            | EventKind::DurationEnd
            | EventKind::AsyncBegin { .. }
            | EventKind::AsyncEnd { .. }
    )
}

/// A name as one frame: `;` separates frames and a line ends the stack, so
/// they become `:` and a space.
fn frame_name(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}
