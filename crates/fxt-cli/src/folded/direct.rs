//! A thread's spans folded as they close, for what most threads write:
//! begin/end pairs nested in time order, complete events among them that
//! hold nothing. Each span's node and self time are known when it closes
//! (its parent is the begin below it, its children closed inside it), so
//! the spans a thread holds need no sort and no nesting when it folds
//! them ([`thread`](super::thread)): their self times are added to the
//! tree, what nesting them would have given.
//!
//! That is checked, not assumed: the spans held must start in time order
//! and after everything folded before them ends, nothing may start inside
//! a complete event, a child may not outlast its parent nor start and end
//! with it (a tie, which nesting breaks by file order, the child then
//! outermost), and a complete event may not be outermost (it may hold
//! spans written before it). Anything else, and the spans held are
//! folded by sorting and nesting them, as before, until the next fold:
//! the self times added are taken back ([`Direct::spoil`]). Nodes made
//! for spans that were then nested otherwise keep no time, and a node of
//! no time folds to no line.

use super::tree::{Span, Tree};

/// The spans a thread holds, folded as they close while they can be.
pub(super) struct Direct {
    /// The self time of every span held since the last fold is in the
    /// tree, exactly as nesting them would put it there.
    clean: bool,
    /// Per span held: its node and the self time added to it, to be
    /// taken back if the spans held are nested after all.
    added: Vec<(u32, u64)>,
    /// The start of the first span held.
    first: u64,
    /// The latest time met in the spans held (or the end of what was
    /// folded before them): no later span may start before it.
    last: u64,
    /// The end of the last complete event held: no later span may start
    /// before it (it would be inside).
    leaf_end: u64,
    /// Nodes found lately, each as (parent, name, node) in a slot of its
    /// parent and name (node 0, the root, is no one's child: an empty
    /// slot): a thread's spans are named as a few before them were, and a
    /// slot is a compare where the tree walks a list. Emptied whenever the
    /// tree may be another.
    found: [(u32, u32, u32); FOUND_SLOTS],
}

/// Slots of [`Direct::found`], and the bits that pick one.
const FOUND_BITS: u32 = 4;
const FOUND_SLOTS: usize = 1 << FOUND_BITS;

/// A begin open on a thread: its name and start, and, while the spans
/// held are clean, its node and what its children closed so far say.
#[derive(Clone, Copy)]
pub(super) struct Begin {
    pub name: u32,
    pub start: u64,
    node: u32,
    /// The durations of its children.
    children: u64,
    /// The latest end of its children that start with it.
    tied_end: u64,
    /// The latest end of its complete children.
    complete_end: u64,
}

impl Begin {
    /// A begin of `name` at `start`, with nothing known of its children.
    pub fn new(name: u32, start: u64) -> Begin {
        Begin {
            name,
            start,
            node: 0,
            children: 0,
            tied_end: 0,
            complete_end: 0,
        }
    }
}

impl Default for Direct {
    fn default() -> Self {
        Direct {
            clean: true,
            added: Vec::new(),
            first: 0,
            last: 0,
            leaf_end: 0,
            found: [(0, 0, 0); FOUND_SLOTS],
        }
    }
}

impl Direct {
    /// Whether the self times of the spans held are in the tree exactly.
    #[inline(always)]
    pub fn is_clean(&self) -> bool {
        self.clean
    }

    /// Starts over with nothing held and no begin open, what was folded
    /// before ending at `end`.
    pub fn reset(&mut self, end: u64) {
        debug_assert!(self.added.is_empty() || self.clean);
        self.clean = true;
        self.added.clear();
        self.last = end;
        self.leaf_end = 0;
        self.found = [(0, 0, 0); FOUND_SLOTS];
    }

    /// The spans held will be nested, not folded here: their self times
    /// are taken back from `tree`.
    #[cold]
    pub fn spoil(&mut self, tree: &mut Tree) {
        for (node, ns) in self.added.drain(..) {
            tree.take_self(node, ns);
        }
        self.clean = false;
        self.found = [(0, 0, 0); FOUND_SLOTS];
    }

    /// A begin of `name` at `start` inside `parent` (the innermost
    /// begin open, if any), its node made in `tree`: the begin to push.
    #[inline(always)]
    pub fn begin(
        &mut self,
        tree: &mut Tree,
        parent: Option<&Begin>,
        name: u32,
        start: u64,
    ) -> Begin {
        let mut begin = Begin::new(name, start);
        if !self.clean {
            return begin;
        }
        if start < self.last || start < self.leaf_end {
            self.spoil(tree);
            return begin;
        }
        if parent.is_none() && self.added.is_empty() {
            self.first = start;
        }
        begin.node = self.node(tree, parent.map_or(0, |p| p.node), name);
        self.last = start;
        begin
    }

    /// The end at `end` of `begin`, the innermost begin open (`parent`
    /// the one below it, if any).
    #[inline(always)]
    pub fn end(&mut self, tree: &mut Tree, begin: &Begin, parent: Option<&mut Begin>, end: u64) {
        if !self.clean {
            return;
        }
        let duration = end - begin.start;
        let tied = begin.tied_end == end && duration > 0;
        if end < self.last || begin.complete_end > end || tied {
            return self.spoil(tree);
        }
        let Some(self_ns) = duration.checked_sub(begin.children) else {
            return self.spoil(tree);
        };
        self.add(tree, begin.node, self_ns);
        if let Some(parent) = parent {
            closed(parent, begin.start, end);
        }
        self.last = end;
    }

    /// A complete event's span inside `parent`, the innermost begin open
    /// (an outermost one spoils).
    #[inline(always)]
    pub fn complete(&mut self, tree: &mut Tree, parent: Option<&mut Begin>, span: Span) {
        if !self.clean {
            return;
        }
        let Some(parent) = parent else {
            return self.spoil(tree);
        };
        if span.start < self.last || span.start < self.leaf_end {
            return self.spoil(tree);
        }
        let node = self.node(tree, parent.node, span.name);
        self.add(tree, node, span.end - span.start);
        closed(parent, span.start, span.end);
        parent.complete_end = parent.complete_end.max(span.end);
        self.last = span.start;
        self.leaf_end = span.end;
    }

    /// The child named `name` of node `parent` in `tree`, made if new.
    #[inline(always)]
    fn node(&mut self, tree: &mut Tree, parent: u32, name: u32) -> u32 {
        // The top bits of a multiplicative hash of both.
        let mixed = parent.wrapping_mul(0x9E37_79B9) ^ name.wrapping_mul(0x85EB_CA6B);
        let slot = (mixed >> (32 - FOUND_BITS)) as usize;
        let (p, n, node) = self.found[slot];
        if (p, n) == (parent, name) && node != 0 {
            return node;
        }
        let node = tree.node(parent, name);
        self.found[slot] = (parent, name, node);
        node
    }

    /// Adds `ns` to node `node`'s self time.
    #[inline(always)]
    fn add(&mut self, tree: &mut Tree, node: u32, ns: u64) {
        tree.add_self(node, ns);
        self.added.push((node, ns));
    }

    /// Keeps the self times of the spans held (when clean: what nesting
    /// them gives); the start of the first of them (the earliest: they
    /// start in time order).
    pub fn commit(&mut self) -> u64 {
        debug_assert!(self.clean);
        self.added.clear();
        self.first
    }
}

/// A span from `start` to `end` closed inside `parent`.
#[inline(always)]
fn closed(parent: &mut Begin, start: u64, end: u64) {
    parent.children += end - start;
    if start == parent.start {
        parent.tied_end = parent.tied_end.max(end);
    }
}
