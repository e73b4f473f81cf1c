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

use fxt_format::decode::{
    Context, Event, EventKind, EventView, Record, StrRef, Text, Thread, View,
};
use fxt_format::time::{ticks_per_second_or_default, ticks_to_ns};
use rustc_hash::FxHashMap;

use crate::interned::Interned;

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

/// A span: nanoseconds and its interned name. A thread's spans are kept
/// in file order (of the events that end them), which is what breaks
/// ties when they are sorted: the order costs no field (a trace of many
/// spans writes every one of them).
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    name: u32,
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

/// An event's category and name, as a decoded record or a view holds them.
enum Names<'e, 'c> {
    Decoded(&'e Event),
    Viewed(&'e Context<'c>, StrRef<'e>, StrRef<'e>),
}

impl Names<'_, '_> {
    fn category(&self) -> Text {
        match self {
            Names::Decoded(e) => e.category.clone(),
            Names::Viewed(ctx, category, _) => ctx.text(*category),
        }
    }

    fn name(&self) -> Text {
        match self {
            Names::Decoded(e) => e.name.clone(),
            Names::Viewed(ctx, _, name) => ctx.text(*name),
        }
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

    /// Takes one record of provider `provider` (whose clock runs at `tps`
    /// ticks per second).
    pub fn record(&mut self, provider: Option<u32>, tps: u64, record: &Record) {
        let e = match record {
            Record::KernelObject(o) if o.object_type == 2 => {
                self.thread_names.insert(o.koid, o.name.to_string());
                return;
            }
            Record::Event(e) => e,
            _ => return,
        };
        let at = (e.kind, e.timestamp, e.thread);
        self.event(provider, tps, at, Names::Decoded(e));
    }

    /// Takes one record of a view walk
    /// ([`crate::input::Input::walk_view_ranges`]): an event's name is
    /// looked up by its string index, once per index.
    /// Nothing but the kind is looked at for an event that is no part of
    /// a span (an instant, a counter...).
    #[inline(always)]
    pub fn view(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        match view {
            View::Event(e) if !is_span_part(e.kind) => {}
            View::Event(e) => self.span_view(ctx, e),
            View::Record(record) => {
                let tps = ticks_per_second_or_default(ctx.ticks_per_second());
                self.record(ctx.provider_id(), tps, record)
            }
        }
    }

    /// [`Collector::view`] of an event that is part of a span.
    #[inline(never)]
    fn span_view(&mut self, ctx: &Context<'_>, e: &EventView<'_>) {
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let at = (e.kind, e.timestamp, e.thread);
        let names = Names::Viewed(ctx, e.category, e.name);
        self.event(ctx.provider_id(), tps, at, names);
    }

    /// Takes one event: what it is, when and where (`at`), and its names.
    fn event(
        &mut self,
        provider: Option<u32>,
        tps: u64,
        at: (EventKind, u64, Thread),
        names: Names<'_, '_>,
    ) {
        let (kind, timestamp, thread) = at;
        if !is_span_part(kind) {
            // Nothing to do.
            return;
        }
        if let Some(c) = &self.filter.category {
            if names.category() != c.as_str() {
                return;
            }
        }
        let (process, thread) = match thread {
            Thread::Known { process, thread } => (process, thread),
            Thread::Undefined(_) => (0, 0),
        };
        let t = (provider, process, thread);
        let start = ticks_to_ns(timestamp, tps);
        match kind {
            EventKind::DurationComplete { end } => {
                let name = self.name_id(&names);
                let end = ticks_to_ns(end, tps).max(start);
                let span = Span { start, end, name };
                self.threads.get(t).spans.push(span);
            }
            EventKind::DurationBegin => {
                let name = self.name_id(&names);
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
                let k = (provider, process, names.category(), names.name(), id);
                self.open_async.entry(k).or_default().push(start);
            }
            EventKind::AsyncEnd { id } => {
                let k = (provider, process, names.category(), names.name(), id);
                let name = self.name_id(&names);
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

    /// The id of an event's name: by its string index for a view (the
    /// text interned once per index), by its text for a decoded event.
    #[inline]
    fn name_id(&mut self, names: &Names<'_, '_>) -> u32 {
        let Names::Viewed(ctx, _, name) = *names else {
            return self.intern(&names.name());
        };
        let string = self.strings.id(ctx, name) as usize;
        match self.by_string.get(string) {
            Some(&id) if id != u32::MAX => id,
            _ => {
                let id = self.intern(&names.name());
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

/// Sorts a thread's spans (in file order) by start, longest first, then
/// file order.
///
/// The spans come in file order, which is nearly time order: where every
/// span before a place ends before every span after it starts, no span
/// crosses that place in the sorted order either, so the pieces between
/// such places are sorted alone (each a few spans), which orders the
/// whole exactly as one sort of it would.
fn sort_spans(spans: &mut [Span]) {
    // The least start of the spans from each place on.
    let mut later_start = vec![u64::MAX; spans.len() + 1];
    for (i, s) in spans.iter().enumerate().rev() {
        later_start[i] = later_start[i + 1].min(s.start);
    }
    let (mut piece, mut end) = (0, 0);
    for i in 0..spans.len() {
        end = end.max(spans[i].end);
        if end < later_start[i + 1] {
            sort_piece(&mut spans[piece..=i]);
            piece = i + 1;
        }
    }
    sort_piece(&mut spans[piece..]);
}

fn sort_piece(spans: &mut [Span]) {
    // Stable: spans that start and end together keep their file order.
    spans.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
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

/// One thread's call tree: node 0 the thread, then a node per (parent,
/// name) with its self time. A node's children are found by a walk of
/// their list while they are few (most nodes: no hashing per span), by
/// `index` past that.
struct Tree {
    /// (parent node, name) → node, for every node but the root.
    index: FxHashMap<(u32, u32), u32>,
    nodes: Vec<Node>,
}

/// A node of a [`Tree`]; 0 in `first_child` and `next` is no node (the
/// root is no one's child).
#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    name: u32,
    self_ns: u64,
    first_child: u32,
    next: u32,
    children: u32,
}

/// Children of a node found by a walk of their list, not by `index`.
const FEW_CHILDREN: u32 = 8;

impl Default for Tree {
    fn default() -> Self {
        let root = Node {
            parent: 0,
            name: u32::MAX,
            self_ns: 0,
            first_child: 0,
            next: 0,
            children: 0,
        };
        Tree {
            index: FxHashMap::default(),
            nodes: vec![root],
        }
    }
}

/// A span open while nesting: its end, node, duration and the time of its
/// direct children.
struct Frame {
    end: u64,
    node: u32,
    duration: u64,
    children: u64,
}

impl Tree {
    /// The child named `name` of node `parent`, made if new.
    #[inline]
    fn node(&mut self, parent: u32, name: u32) -> u32 {
        let p = self.nodes[parent as usize];
        if p.children <= FEW_CHILDREN {
            let mut at = p.first_child;
            while at != 0 {
                let child = &self.nodes[at as usize];
                if child.name == name {
                    return at;
                }
                at = child.next;
            }
        } else if let Some(&at) = self.index.get(&(parent, name)) {
            return at;
        }
        self.add_node(parent, name)
    }

    /// A new child named `name` of node `parent`.
    #[cold]
    fn add_node(&mut self, parent: u32, name: u32) -> u32 {
        let node = self.nodes.len() as u32;
        let p = &mut self.nodes[parent as usize];
        let next = p.first_child;
        p.first_child = node;
        p.children += 1;
        self.nodes.push(Node {
            parent,
            name,
            self_ns: 0,
            first_child: 0,
            next,
            children: 0,
        });
        self.index.insert((parent, name), node);
        node
    }

    fn close(&mut self, f: Frame) {
        self.nodes[f.node as usize].self_ns += f.duration - f.children;
    }

    /// Nests `spans` (sorted by start, longest first); returns how many
    /// were cut at their parent's end.
    fn nest(&mut self, spans: &[Span]) -> u64 {
        let mut stack: Vec<Frame> = Vec::new();
        let mut cut = 0;
        for s in spans {
            while let Some(f) = stack.pop_if(|top| top.end <= s.start) {
                self.close(f);
            }
            let mut end = s.end;
            let parent = match stack.last_mut() {
                Some(top) => {
                    if end > top.end {
                        end = top.end;
                        cut += 1;
                    }
                    top.children += end - s.start;
                    top.node
                }
                None => 0,
            };
            let node = self.node(parent, s.name);
            stack.push(Frame {
                end,
                node,
                duration: end - s.start,
                children: 0,
            });
        }
        while let Some(f) = stack.pop() {
            self.close(f);
        }
        cut
    }

    /// Adds every node's self time to `stacks`, under the root frame `root`.
    fn fold(&self, root: &str, names: &[String], stacks: &mut BTreeMap<String, u64>) {
        for (i, node) in self.nodes.iter().enumerate().skip(1) {
            if node.self_ns == 0 {
                continue;
            }
            let mut frames = Vec::new();
            let mut at = i as u32;
            while at != 0 {
                let Node { parent, name, .. } = self.nodes[at as usize];
                frames.push(names[name as usize].as_str());
                at = parent;
            }
            frames.push(root);
            frames.reverse();
            add(stacks, frames.join(";"), node.self_ns);
        }
    }
}

fn add(stacks: &mut BTreeMap<String, u64>, stack: String, ns: u64) {
    if ns > 0 {
        let n = stacks.entry(stack).or_default();
        *n = n.saturating_add(ns);
    }
}

/// A name as one frame: `;` separates frames and a line ends the stack, so
/// they become `:` and a space.
fn frame_name(name: &str) -> String {
    name.replace(';', ":").replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spans as a thread writes them: nested begin/end pairs pushed at
    /// their end, complete events written late (before their parent's
    /// end), ties in start and end, zero-length spans, and some out of
    /// time order.
    fn written(seed: u64, n: usize) -> Vec<Span> {
        written_with(seed, n, 5)
    }

    /// [`written`] with `names` names.
    fn written_with(seed: u64, n: usize, names: u64) -> Vec<Span> {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let (mut spans, mut at) = (Vec::new(), 0u64);
        for _ in 0..n {
            at += next(4);
            let start = if next(10) == 0 {
                at.saturating_sub(next(20))
            } else {
                at
            };
            let end = start + next(3) * next(8);
            let name = next(names) as u32;
            spans.push(Span { start, end, name });
        }
        spans
    }

    /// The stacks of sorted spans folded by their paths of names, the
    /// tree's nesting written plainly (a path per open span, no nodes).
    fn folded_by_paths(spans: &[Span], names: &[String]) -> BTreeMap<String, u64> {
        let mut stacks = BTreeMap::new();
        // Per open span: its end, path, duration and children's time.
        let mut open: Vec<(u64, String, u64, u64)> = Vec::new();
        let close = |stacks: &mut BTreeMap<String, u64>,
                     (_, path, d, c): (u64, String, u64, u64)| {
            add(stacks, path, d - c)
        };
        for s in spans {
            while let Some(top) = open.pop_if(|top| top.0 <= s.start) {
                close(&mut stacks, top);
            }
            let (end, path) = match open.last_mut() {
                Some(top) => {
                    let end = s.end.min(top.0);
                    top.3 += end - s.start;
                    (end, format!("{};{}", top.1, names[s.name as usize]))
                }
                None => (s.end, format!("t;{}", names[s.name as usize])),
            };
            open.push((end, path, end - s.start, 0));
        }
        while let Some(top) = open.pop() {
            close(&mut stacks, top);
        }
        stacks
    }

    /// The tree finds a node's children by a walk of their list while
    /// they are few, by hashing past that: either way it folds as the
    /// paths of names do.
    #[test]
    fn tree_folds_as_paths_of_names() {
        for (seed, names) in (0..60).map(|seed| (seed, [3, 9, 40][seed as usize % 3])) {
            let names: Vec<String> = (0..names).map(|i| format!("n{i}")).collect();
            let mut spans = written_with(seed, 50 + seed as usize * 20, names.len() as u64);
            sort_spans(&mut spans);
            let mut tree = Tree::default();
            tree.nest(&spans);
            if names.len() == 40 && seed > 10 {
                // The hashed lookup is met, not only the walk of a list.
                assert!(tree.nodes.iter().any(|n| n.children > FEW_CHILDREN));
            }
            let mut stacks = BTreeMap::new();
            tree.fold("t", &names, &mut stacks);
            assert_eq!(stacks, folded_by_paths(&spans, &names), "seed {seed}");
        }
    }

    /// Sorted in pieces, spans come in the order one sort of them all by
    /// start, longest first, then file order gives (each span named by
    /// its place in the file here, so that ties are told apart).
    #[test]
    fn sorting_in_pieces_orders_as_one_sort() {
        // Traces with spans that start and end together (ties).
        let mut tied = 0;
        for seed in 0..200 {
            let mut spans = written(seed, 1 + seed as usize * 3);
            for (place, s) in spans.iter_mut().enumerate() {
                s.name = place as u32;
            }
            let mut whole = spans.clone();
            whole.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end), s.name));
            let same = |w: &[Span]| (w[0].start, w[0].end) == (w[1].start, w[1].end);
            tied += usize::from(whole.windows(2).any(same));
            let mut pieces = spans;
            sort_spans(&mut pieces);
            let key = |s: &Span| (s.start, s.end, s.name);
            let whole: Vec<_> = whole.iter().map(key).collect();
            let pieces: Vec<_> = pieces.iter().map(key).collect();
            assert_eq!(pieces, whole, "seed {seed}");
        }
        assert!(tied > 100, "{tied} traces with ties");
    }
}
