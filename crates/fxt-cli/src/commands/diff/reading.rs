//! What `fxt diff` reads of one trace, on every core: each range of the
//! walk ([`crate::input::Input::walk_view_ranges`]) is read into a
//! [`RangeRead`] (durations by id of the range's texts, begins left open
//! and ends that closed no begin of the range kept for the merge), and the
//! ranges are merged in file order into a [`Read`] (durations by text, as
//! one walk in file order would have found them).

use std::collections::HashMap;

use fxt_format::decode::{Context, EventKind, EventView, Record, Text, Thread, View};
use fxt_format::encode::OBJ_TYPE_THREAD;
use fxt_format::time::ticks_per_second_or_default;
use rustc_hash::FxHashMap;

use super::sample_walk::SampleWalk;
use super::select::{selected, Select};
use crate::durations::{Closed, Durations, Mark};
use crate::error::Error;
use crate::folded::{Collector, Filter};
use crate::input::ticks_to_ns;
use crate::interned::Interned;
use crate::recent::ByThread;

/// A provider and one of its threads: where a duration's begin and end
/// are matched.
type ThreadKey = (Option<u32>, Thread);

/// Durations of one category and name: (thread koid, ns).
type Slices = Vec<(u64, u64)>;

/// A duration begin of a range, not ended yet: its offset, category and
/// name (ids of the range's texts) and ticks.
struct Begin {
    offset: u64,
    category: u32,
    name: u32,
    ticks: u64,
}

/// A duration end that closed no begin of its range.
struct PendingEnd {
    offset: u64,
    thread: ThreadKey,
    ticks: u64,
    /// Ticks per second of its provider.
    tps: u64,
}

/// One range of the walk, read.
pub struct RangeRead {
    /// The texts of the range's categories and names, numbered.
    texts: Interned,
    /// Durations by name id, then by category id (a name nearly always
    /// has one): (thread koid, ns).
    slices: Vec<Vec<(u32, Slices)>>,
    open: OpenBegins,
    /// In file order.
    pending_ends: Vec<PendingEnd>,
    thread_names: HashMap<u64, String>,
    collector: Option<Collector>,
    sampled: SampleWalk,
}

impl RangeRead {
    /// A range to read; folded stacks of the slices collected if `stacks`
    /// (with `select`'s thread and category); the slices placed for the
    /// samples if `timeline`.
    pub fn new(select: &Select, stacks: bool, timeline: bool) -> RangeRead {
        RangeRead {
            texts: Interned::default(),
            slices: Vec::new(),
            open: OpenBegins::default(),
            pending_ends: Vec::new(),
            thread_names: HashMap::new(),
            collector: stacks.then(|| {
                Collector::new(Filter {
                    thread: select.thread.clone(),
                    category: select.category.clone(),
                    // Koids differ from run to run, names do not.
                    names_only: true,
                })
            }),
            sampled: SampleWalk::new(timeline),
        }
    }

    /// Takes one record of the walk.
    #[inline]
    pub fn view(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        if let Some(c) = self.collector.as_mut() {
            c.view(ctx, view);
        }
        self.sampled.see(ctx, view)?;
        match view {
            View::Event(e) => self.event(ctx, e),
            View::Record(Record::KernelObject(o)) if o.object_type == OBJ_TYPE_THREAD => {
                self.thread_names.insert(o.koid, o.name.to_string());
            }
            View::Record(_) => {}
        }
        Ok(())
    }

    /// Takes an event: a complete duration, or a begin or end to match.
    #[inline]
    fn event(&mut self, ctx: &Context<'_>, e: &EventView<'_>) {
        if !matches!(
            e.kind,
            EventKind::DurationComplete { .. } | EventKind::DurationBegin | EventKind::DurationEnd
        ) {
            return;
        }
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let thread = (ctx.provider_id(), e.thread);
        let ns = |ticks| ticks_to_ns(ticks, tps);
        let (category, name, ns) = match e.kind {
            EventKind::DurationComplete { end } => {
                let category = self.texts.id(ctx, e.category);
                let name = self.texts.id(ctx, e.name);
                (category, name, ns(end).saturating_sub(ns(e.timestamp)))
            }
            EventKind::DurationBegin => {
                let begin = Begin {
                    offset: e.offset(),
                    category: self.texts.id(ctx, e.category),
                    name: self.texts.id(ctx, e.name),
                    ticks: e.timestamp,
                };
                self.open.get(thread).push(begin);
                return;
            }
            _ => match self.open.get(thread).pop() {
                Some(b) => (
                    b.category,
                    b.name,
                    ns(e.timestamp).saturating_sub(ns(b.ticks)),
                ),
                None => {
                    self.pending_ends.push(PendingEnd {
                        offset: e.offset(),
                        thread,
                        ticks: e.timestamp,
                        tps,
                    });
                    return;
                }
            },
        };
        let slot = name as usize;
        if slot >= self.slices.len() {
            self.slices.resize_with(slot + 1, Vec::new);
        }
        let by_category = &mut self.slices[slot];
        let at = match by_category.iter().position(|(c, _)| *c == category) {
            Some(at) => at,
            None => {
                by_category.push((category, Vec::new()));
                by_category.len() - 1
            }
        };
        by_category[at].1.push((koid(e.thread), ns));
    }
}

/// The begins of a range left open, per provider and thread.
type OpenBegins = ByThread<ThreadKey, Vec<Begin>>;

/// The koid a duration is counted under (0 for an undefined thread).
fn koid(thread: Thread) -> u64 {
    match thread {
        Thread::Known { thread, .. } => thread,
        Thread::Undefined(_) => 0,
    }
}

/// A trace read, its ranges merged in file order.
#[derive(Default)]
pub struct Read {
    /// (category, name) → (thread koid, ns) of the selected category and
    /// name: threads are selected at the end, once every thread record
    /// has been seen.
    pub slices: FxHashMap<(Text, Text), Slices>,
    /// The begins left open.
    open: Durations,
    pub thread_names: HashMap<u64, String>,
    pub collector: Option<Collector>,
    pub sampled: SampleWalk,
}

impl Read {
    /// Folds in the next range of the walk (ranges in file order, the
    /// first one first): its ends that closed no begin of its range close
    /// the begins left open before it, its slices of the selected
    /// category and name are added, and the begins it left open are
    /// stacked above those left open before it.
    pub fn merge(&mut self, later: RangeRead, select: &Select) {
        let RangeRead {
            texts,
            slices,
            open,
            pending_ends,
            thread_names,
            collector,
            sampled,
        } = later;
        for end in pending_ends {
            let (provider, thread) = end.thread;
            let mark = Mark {
                thread,
                category: Text::default(),
                name: Text::default(),
                timestamp: end.ticks,
            };
            // With no begin open before the range either, the end closes
            // nothing: this read starts at the walk's first range.
            let Closed::Begin(open, _) = self.open.end(provider, end.offset, &mark) else {
                continue;
            };
            let ns = ticks_to_ns(end.ticks, end.tps)
                .saturating_sub(ticks_to_ns(open.timestamp(), end.tps));
            if selected(select, open.category(), open.name()) {
                let key = (open.category().clone(), open.name().clone());
                self.slices.entry(key).or_default().push((koid(thread), ns));
            }
        }
        for (name, by_category) in slices.into_iter().enumerate() {
            for (category, list) in by_category {
                let name = texts.text(name as u32);
                let key = (texts.text(category).clone(), name.clone());
                if selected(select, &key.0, &key.1) {
                    self.slices.entry(key).or_default().extend(list);
                }
            }
        }
        let mut left_open = Durations::default();
        for ((provider, thread), stack) in open.entries {
            for b in stack {
                let mark = Mark {
                    thread,
                    category: texts.text(b.category).clone(),
                    name: texts.text(b.name).clone(),
                    timestamp: b.ticks,
                };
                left_open.begin(provider, b.offset, mark);
            }
        }
        self.open.append(left_open);
        self.thread_names.extend(thread_names);
        if let Some(later) = collector {
            match &mut self.collector {
                Some(c) => c.merge(later),
                None => self.collector = Some(later),
            }
        }
        self.sampled.merge(sampled);
    }
}
