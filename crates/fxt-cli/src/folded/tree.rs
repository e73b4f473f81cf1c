//! One thread's spans nested by time and folded: sorted by start, longest
//! first (file order breaking ties), a span is inside the innermost span
//! still open when it starts; each node of the call tree keeps its self
//! time.
//!
//! Spans already folded come back as a [`Blob`]: a tree of their own, the
//! time they cover, and the sum of their top-level durations, which nests
//! whole inside a span that holds all of it (a span that encloses them
//! but was written after them), as its spans one by one would. Where a
//! blob would not nest whole (a span that starts among its spans, or cuts
//! it), nesting says so ([`Inexact`]) rather than guess.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

/// A span: nanoseconds and its interned name. A thread's spans are kept
/// in file order (of the events that end them), which is what breaks
/// ties when they are sorted: the order costs no field (a trace of many
/// spans writes every one of them).
#[derive(Clone, Copy)]
pub(super) struct Span {
    pub start: u64,
    pub end: u64,
    /// The name's id; or [`BLOB`] and a blob's index (its first start and
    /// last end as `start` and `end`); or [`END`] (see there).
    pub name: u32,
}

/// The flag of a [`Span::name`] that is a [`Blob`]'s index: names are
/// fewer (each takes bytes of the trace).
pub(super) const BLOB: u32 = 1 << 31;

/// The [`Span::name`] of a duration end that closed no begin of its range
/// (at `start`), kept in file order for the merge with earlier ranges.
pub(super) const END: u32 = u32::MAX;

/// Spans folded already: their tree (node 0 the place they nest in), the
/// time from their first start to their last end, and their top-level
/// durations' sum (the time they take of a span they nest in).
pub(super) struct Blob {
    pub tree: Tree,
    pub start: u64,
    pub end: u64,
    pub total: u64,
}

/// Spans that cannot be folded exactly as they went: a span starts among
/// the spans of a [`Blob`] (or with it), or would cut it.
#[derive(Debug)]
pub(super) struct Inexact;

/// Sorts a thread's spans (in file order) by start, longest first, then
/// file order.
///
/// The spans come in file order, which is nearly time order: where every
/// span before a place ends before every span after it starts, no span
/// crosses that place in the sorted order either, so the pieces between
/// such places are sorted alone (each a few spans), which orders the
/// whole exactly as one sort of it would.
pub(super) fn sort_spans(spans: &mut [Span]) {
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

/// One thread's call tree: node 0 the thread, then a node per (parent,
/// name) with its self time. A node's children are found by a walk of
/// their list while they are few (most nodes: no hashing per span), by
/// `index` past that.
pub(super) struct Tree {
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
    /// A blob's (which nothing nests in).
    blob: bool,
}

impl Tree {
    /// The child named `name` of node `parent`, made if new.
    #[inline]
    pub(super) fn node(&mut self, parent: u32, name: u32) -> u32 {
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

    /// Adds `ns` to the self time of node `node`.
    #[inline]
    pub(super) fn add_self(&mut self, node: u32, ns: u64) {
        self.nodes[node as usize].self_ns += ns;
    }

    /// Takes `ns` back from the self time of node `node`.
    pub(super) fn take_self(&mut self, node: u32, ns: u64) {
        self.nodes[node as usize].self_ns -= ns;
    }

    fn close(&mut self, f: Frame) {
        self.nodes[f.node as usize].self_ns += f.duration - f.children;
    }

    /// Nests `spans` (sorted by start, longest first), the blobs among
    /// them from `blobs`; returns how many were cut at their parent's end.
    pub(super) fn nest(&mut self, spans: &[Span], blobs: &[Blob]) -> Result<u64, Inexact> {
        let mut stack: Vec<Frame> = Vec::new();
        let (mut cut, mut last_start) = (0, None);
        for s in spans {
            while let Some(f) = stack.pop_if(|top| top.end <= s.start) {
                self.close(f);
            }
            if stack.last().is_some_and(|top| top.blob) {
                return Err(Inexact);
            }
            if s.name & BLOB != 0 {
                let blob = &blobs[(s.name & !BLOB) as usize];
                // A span that starts with the blob holds every span of it
                // only if it ends after them all (else file order decides).
                let tie = last_start == Some(s.start);
                if tie && stack.last().is_none_or(|top| top.end <= blob.end) {
                    return Err(Inexact);
                }
                let parent = match stack.last_mut() {
                    Some(top) if top.end < blob.end => return Err(Inexact),
                    Some(top) => {
                        top.children += blob.total;
                        top.node
                    }
                    None => 0,
                };
                self.graft(parent, &blob.tree, |name| name);
                stack.push(Frame {
                    end: blob.end,
                    node: parent,
                    duration: 0,
                    children: 0,
                    blob: true,
                });
                last_start = Some(s.start);
                continue;
            }
            last_start = Some(s.start);
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
                blob: false,
            });
        }
        while let Some(f) = stack.pop() {
            self.close(f);
        }
        Ok(cut)
    }

    /// Adds the tree `from` under node `at`, node by node (a node comes
    /// after its parent in `nodes`), its names' ids changed by `rename`.
    fn graft(&mut self, at: u32, from: &Tree, rename: impl Fn(u32) -> u32) {
        let mut placed = vec![at; from.nodes.len()];
        for (i, n) in from.nodes.iter().enumerate().skip(1) {
            let node = self.node(placed[n.parent as usize], rename(n.name));
            self.nodes[node as usize].self_ns += n.self_ns;
            placed[i] = node;
        }
    }

    /// The sum of every node's self time: the durations of the top-level
    /// spans.
    pub(super) fn total(&self) -> u64 {
        self.nodes
            .iter()
            .fold(0u64, |sum, n| sum.wrapping_add(n.self_ns))
    }

    /// The tree with its names' ids changed by `rename` (to those of the
    /// collector it is merged into).
    pub(super) fn renamed(self, rename: impl Fn(u32) -> u32) -> Tree {
        let mut tree = Tree::default();
        tree.graft(0, &self, rename);
        tree
    }

    /// Adds every node's self time to `stacks`, under the root frame `root`.
    pub(super) fn fold(&self, root: &str, names: &[String], stacks: &mut BTreeMap<String, u64>) {
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

pub(super) fn add(stacks: &mut BTreeMap<String, u64>, stack: String, ns: u64) {
    if ns > 0 {
        let n = stacks.entry(stack).or_default();
        *n = n.saturating_add(ns);
    }
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
            tree.nest(&spans, &[]).unwrap();
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
