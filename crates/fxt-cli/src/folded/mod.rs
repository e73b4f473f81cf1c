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

use std::collections::{BTreeMap, HashMap};

use fxt_format::decode::{Context, EventKind, EventView, Record, StrRef, Text, Thread, View};
use fxt_format::encode::OBJ_TYPE_THREAD;
use fxt_format::time::{ticks_per_second_or_default, ticks_to_ns};
use rustc_hash::FxHashMap;

use crate::interned::Interned;

mod tree;

use tree::{add, sort_spans, Span, Tree};

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

/// A thread: provider, process koid, thread koid.
type ThreadKey = (Option<u32>, u64, u64);

/// An async operation: provider, process, category, name, id.
type AsyncKey = (Option<u32>, u64, Text, Text, u64);

/// One thread's spans so far and its begins still open (name, ns).
#[derive(Default)]
struct ThreadSpans {
    spans: Vec<Span>,
    open: Vec<(u32, u64)>,
}

/// The threads' spans, found by key with the last one found remembered:
/// a thread's events come several in a row, so most events hash nothing.
#[derive(Default)]
struct Threads {
    index: FxHashMap<ThreadKey, usize>,
    states: Vec<(ThreadKey, ThreadSpans)>,
    last: Option<(ThreadKey, usize)>,
    /// Per slot (the low bits of a thread's koids): the index in `states`
    /// of the last thread there, so that threads taking turns are found
    /// with no hashing.
    recent: [u32; THREAD_SLOTS],
}

/// Slots of [`Threads::recent`].
const THREAD_SLOTS: usize = 16;

impl Threads {
    /// The state of thread `t`, made empty if new.
    #[inline]
    fn get(&mut self, t: ThreadKey) -> &mut ThreadSpans {
        let at = match self.last {
            Some((key, at)) if key == t => at,
            _ => {
                let slot = crate::recent::thread_slot(t.2, THREAD_SLOTS);
                let recent = self.recent[slot] as usize;
                let at = match self.states.get(recent) {
                    Some((key, _)) if *key == t => recent,
                    _ => self.find(t),
                };
                self.recent[slot] = at as u32;
                self.last = Some((t, at));
                at
            }
        };
        &mut self.states[at].1
    }

    /// The index of thread `t` in `states`, made empty if new.
    #[inline(never)]
    fn find(&mut self, t: ThreadKey) -> usize {
        let next = self.states.len();
        let at = *self.index.entry(t).or_insert(next);
        if at == next {
            self.states.push((t, ThreadSpans::default()));
        }
        at
    }
}

/// Collects the spans of a trace, record by record.
#[derive(Default)]
pub struct Collector {
    filter: Filter,
    names: Vec<String>,
    ids: HashMap<String, u32>,
    /// Strings of a view walk by id, and each id's name id (or
    /// `u32::MAX`): a name is interned once per string index.
    strings: Interned,
    by_string: Vec<u32>,
    threads: Threads,
    open_async: FxHashMap<AsyncKey, Vec<u64>>,
    async_spans: Vec<Span>,
    thread_names: HashMap<u64, String>,
    unmatched_ends: u64,
    /// Duration ends with no begin open on their thread (thread, ns, and
    /// how many spans of the thread came before it), in file order, for
    /// [`Collector::merge`] to close against the begins an earlier range
    /// left open.
    pending_ends: Vec<(ThreadKey, u64, usize)>,
    /// Async ends with no begin open (key, ns, name), likewise.
    pending_async: Vec<(AsyncKey, u64, u32)>,
}

impl Collector {
    /// A collector keeping what `filter` selects.
    pub fn new(filter: Filter) -> Collector {
        Collector {
            filter,
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
            View::Event(e) => self.event(ctx, e),
            View::Record(Record::KernelObject(o)) if o.object_type == OBJ_TYPE_THREAD => {
                self.thread_names.insert(o.koid, o.name.to_string());
            }
            View::Record(_) => {}
        }
    }

    /// Takes one event that is part of a span.
    #[inline(never)]
    fn event(&mut self, ctx: &Context<'_>, e: &EventView<'_>) {
        if let Some(c) = &self.filter.category {
            if ctx.text(e.category) != c.as_str() {
                return;
            }
        }
        let provider = ctx.provider_id();
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let (process, thread) = match e.thread {
            Thread::Known { process, thread } => (process, thread),
            Thread::Undefined(_) => (0, 0),
        };
        let t = (provider, process, thread);
        let start = ticks_to_ns(e.timestamp, tps);
        match e.kind {
            EventKind::DurationComplete { end } => {
                let name = self.name_id(ctx, e.name);
                let end = ticks_to_ns(end, tps).max(start);
                let span = Span { start, end, name };
                self.threads.get(t).spans.push(span);
            }
            EventKind::DurationBegin => {
                let name = self.name_id(ctx, e.name);
                self.threads.get(t).open.push((name, start));
            }
            EventKind::DurationEnd => {
                let thread = self.threads.get(t);
                match thread.open.pop() {
                    Some((name, begin)) => thread.spans.push(Span {
                        start: begin,
                        end: start.max(begin),
                        name,
                    }),
                    None => self.pending_ends.push((t, start, thread.spans.len())),
                }
            }
            EventKind::AsyncBegin { id } => {
                let k = (
                    provider,
                    process,
                    ctx.text(e.category),
                    ctx.text(e.name),
                    id,
                );
                self.open_async.entry(k).or_default().push(start);
            }
            EventKind::AsyncEnd { id } => {
                let k = (
                    provider,
                    process,
                    ctx.text(e.category),
                    ctx.text(e.name),
                    id,
                );
                let name = self.name_id(ctx, e.name);
                match self.open_async.get_mut(&k).and_then(Vec::pop) {
                    Some(begin) => self.async_spans.push(Span {
                        start: begin,
                        end: start.max(begin),
                        name,
                    }),
                    None => self.pending_async.push((k, start, name)),
                }
            }
            _ => {}
        }
    }

    /// The id of an event's name: by its string index (the text interned
    /// once per index).
    #[inline]
    fn name_id(&mut self, ctx: &Context<'_>, name: StrRef<'_>) -> u32 {
        let string = self.strings.id(ctx, name) as usize;
        match self.by_string.get(string) {
            Some(&id) if id != u32::MAX => id,
            _ => {
                let id = self.intern(&ctx.text(name));
                if string >= self.by_string.len() {
                    self.by_string.resize(string + 1, u32::MAX);
                }
                self.by_string[string] = id;
                id
            }
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

    /// Folds in the collector of the next range of the walk (ranges in
    /// file order, each collected with the same filter): its spans, its
    /// open begins above this one's, and its unmatched ends closed against
    /// this one's open begins.
    pub fn merge(&mut self, later: Collector) {
        let ids: Vec<u32> = later.names.iter().map(|n| self.intern_name(n)).collect();
        let fix = |s: Span| Span {
            name: ids[s.name as usize],
            ..s
        };
        // The spans the later range's ends close, per thread, each with
        // how many of the range's own spans of the thread come before it
        // (so that every thread's spans stay in file order).
        let mut closed: FxHashMap<ThreadKey, Vec<(usize, Span)>> = FxHashMap::default();
        for (t, end, before) in later.pending_ends {
            let thread = self.threads.get(t);
            match thread.open.pop() {
                Some((name, begin)) => closed.entry(t).or_default().push((
                    before,
                    Span {
                        start: begin,
                        end: end.max(begin),
                        name,
                    },
                )),
                None => self.unmatched_ends += 1,
            }
        }
        for (k, end, name) in later.pending_async {
            match self.open_async.get_mut(&k).and_then(Vec::pop) {
                Some(begin) => self.async_spans.push(Span {
                    start: begin,
                    end: end.max(begin),
                    name: ids[name as usize],
                }),
                None => self.unmatched_ends += 1,
            }
        }
        for (t, later) in later.threads.states {
            let thread = self.threads.get(t);
            let mut spans = later.spans.into_iter().map(fix);
            let mut taken = 0;
            for (before, span) in closed.remove(&t).unwrap_or_default() {
                thread.spans.extend(spans.by_ref().take(before - taken));
                taken = before;
                thread.spans.push(span);
            }
            thread.spans.extend(spans);
            let open = later.open.into_iter();
            thread
                .open
                .extend(open.map(|(name, ns)| (ids[name as usize], ns)));
        }
        // Never met: an end made its thread's state in the later range.
        for (t, spans) in closed {
            let thread = self.threads.get(t);
            thread.spans.extend(spans.into_iter().map(|(_, span)| span));
        }
        for (k, open) in later.open_async {
            self.open_async.entry(k).or_default().extend(open);
        }
        self.async_spans
            .extend(later.async_spans.into_iter().map(fix));
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

    /// Nests every thread's spans and folds them.
    pub fn finish(mut self) -> Folded {
        // Ends still pending closed nothing: no earlier range is left.
        let pending = self.pending_ends.len() + self.pending_async.len();
        let mut folded = Folded {
            unmatched_ends: self.unmatched_ends + pending as u64,
            unclosed_begins: (self.threads.states.iter())
                .map(|(_, t)| t.open.len() as u64)
                .sum::<u64>()
                + self
                    .open_async
                    .values()
                    .map(|v| v.len() as u64)
                    .sum::<u64>(),
            ..Folded::default()
        };
        let threads = std::mem::take(&mut self.threads.states);
        for ((_, _, thread), ThreadSpans { mut spans, .. }) in threads {
            let label = self.thread_label(thread);
            if !self.thread_selected(thread, &label) {
                continue;
            }
            sort_spans(&mut spans);
            let mut tree = Tree::default();
            folded.overlaps += tree.nest(&spans);
            tree.fold(&label, &self.names, &mut folded.stacks);
        }
        if self.filter.thread.is_none() {
            for s in &self.async_spans {
                let stack = format!("async;{}", self.names[s.name as usize]);
                add(&mut folded.stacks, stack, s.end - s.start);
            }
        }
        folded
    }
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
