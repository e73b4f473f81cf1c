//! Which slices were open on a sample's thread when it was taken: the
//! durations (complete events, begin/end pairs matched per thread) of a
//! trace, joined to its samples by thread and time.
//!
//! An event is read as the walk of views hands it ([`Timeline::see_view`]):
//! its kind, time and thread from the view, its name resolved only for a
//! slice. A walk in ranges keeps a timeline per range and merges them in
//! file order ([`Timeline::merge`]).

use std::collections::HashMap;

#[cfg(test)]
use fxt_format::decode::Record;
use fxt_format::decode::{Context, EventKind, Text, Thread, View};
use fxt_format::time::{ticks_per_second_or_default, ticks_to_ns};

use super::Sampled;

/// A slice on a thread, in nanoseconds.
#[derive(Debug, Clone)]
struct Slice {
    begin: u64,
    end: u64,
    name: Text,
}

/// A thread of a provider.
type Key = (Option<u32>, u64, u64);

/// The slices of a trace per thread, collected during a walk.
#[derive(Default)]
pub struct Timeline {
    open: HashMap<Key, Vec<(u64, Text)>>,
    /// Each thread's slices, in the file order of the records that close
    /// them.
    slices: HashMap<Key, Vec<Slice>>,
    /// Duration ends that closed no begin (thread, ns, and how many slices
    /// of the thread came before), in file order: [`Timeline::merge`]
    /// closes them against the begins an earlier range left open.
    pending_ends: Vec<(Key, u64, usize)>,
}

/// What the timeline reads of an event: its kind, time and thread.
type At = (EventKind, u64, Thread);

impl Timeline {
    /// Takes a record of a view walk if it begins, ends or is a duration.
    #[inline]
    pub fn see_view(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        if let View::Event(e) = view {
            if is_duration(e.kind) {
                let tps = ticks_per_second_or_default(ctx.ticks_per_second());
                let at = (e.kind, e.timestamp, e.thread);
                self.event(ctx.provider_id(), tps, at, || ctx.text(e.name));
            }
        }
    }

    /// [`Timeline::see_view`] of a record decoded whole: the tests' way in
    /// (the commands walk views).
    #[cfg(test)]
    pub fn see(
        &mut self,
        provider: Option<u32>,
        ticks_per_second: u64,
        record: &fxt_format::decode::Record,
    ) {
        if let Record::Event(e) = record {
            let at = (e.kind, e.timestamp, e.thread);
            self.event(provider, ticks_per_second, at, || e.name.clone());
        }
    }

    /// Takes an event of provider `provider` (its clock at
    /// `ticks_per_second`): what it is, when and where (`at`), and its
    /// name (asked only for a slice's begin).
    fn event(
        &mut self,
        provider: Option<u32>,
        ticks_per_second: u64,
        at: At,
        name: impl FnOnce() -> Text,
    ) {
        let (kind, timestamp, thread) = at;
        let Thread::Known { process, thread } = thread else {
            return;
        };
        let key = (provider, process, thread);
        let ns = |t| ticks_to_ns(t, ticks_per_second);
        match kind {
            EventKind::DurationBegin => self
                .open
                .entry(key)
                .or_default()
                .push((ns(timestamp), name())),
            EventKind::DurationEnd => {
                let slices = self.slices.entry(key).or_default();
                match self.open.get_mut(&key).and_then(Vec::pop) {
                    Some((begin, name)) => slices.push(Slice {
                        begin,
                        end: ns(timestamp),
                        name,
                    }),
                    None => self.pending_ends.push((key, ns(timestamp), slices.len())),
                }
            }
            EventKind::DurationComplete { end } => {
                self.slices.entry(key).or_default().push(Slice {
                    begin: ns(timestamp),
                    end: ns(end),
                    name: name(),
                })
            }
            _ => {}
        }
    }

    /// Folds in the timeline of the next range of a walk (ranges in file
    /// order, the first one first): its slices, the begins it left open
    /// above this one's, and its ends that closed no begin closed against
    /// the begins this one left open, so that every thread's slices stay
    /// in the file order of the records that close them.
    pub fn merge(&mut self, later: Timeline) {
        let Timeline {
            open,
            mut slices,
            pending_ends,
        } = later;
        // Per thread, the slices the later range's ends close, each with
        // how many of the range's own slices of the thread come before it.
        let mut closed: HashMap<Key, Vec<(usize, Slice)>> = HashMap::new();
        for (key, end, before) in pending_ends {
            // With nothing open here either, the end closes nothing: this
            // timeline starts at the walk's first range.
            if let Some((begin, name)) = self.open.get_mut(&key).and_then(Vec::pop) {
                let slice = Slice { begin, end, name };
                closed.entry(key).or_default().push((before, slice));
            }
        }
        for (key, closing) in closed {
            let own = slices.remove(&key).unwrap_or_default();
            let into = self.slices.entry(key).or_default();
            let mut own = own.into_iter();
            let mut taken = 0;
            for (before, slice) in closing {
                into.extend(own.by_ref().take(before - taken));
                taken = before;
                into.push(slice);
            }
            into.extend(own);
        }
        for (key, own) in slices {
            self.slices.entry(key).or_default().extend(own);
        }
        for (key, stack) in open {
            self.open.entry(key).or_default().extend(stack);
        }
    }

    /// For each sample, the names of the slices open on its thread when it
    /// was taken, outermost first (begins never ended count as open until
    /// the end of the trace).
    pub fn enclosing(mut self, samples: &[Sampled]) -> Vec<Vec<Text>> {
        for (key, open) in self.open.drain() {
            let slices = self.slices.entry(key).or_default();
            slices.extend(open.into_iter().map(|(begin, name)| Slice {
                begin,
                end: u64::MAX,
                name,
            }));
        }
        let mut by_thread: HashMap<Key, Vec<usize>> = HashMap::new();
        for (i, s) in samples.iter().enumerate() {
            by_thread
                .entry((s.provider, s.sample.pid, s.sample.tid))
                .or_default()
                .push(i);
        }
        let mut out = vec![Vec::new(); samples.len()];
        for (key, mut indices) in by_thread {
            let Some(slices) = self.slices.get_mut(&key) else {
                continue;
            };
            // Outer slices first among those that begin together.
            slices.sort_by(|a, b| a.begin.cmp(&b.begin).then(b.end.cmp(&a.end)));
            indices.sort_by_key(|&i| samples[i].ns);
            sweep(slices, &indices, samples, &mut out);
        }
        out
    }
}

/// One thread: walks its slices (sorted by begin) and samples (sorted by
/// time) together, keeping the stack of slices open at each sample.
fn sweep(slices: &[Slice], indices: &[usize], samples: &[Sampled], out: &mut [Vec<Text>]) {
    let mut stack: Vec<&Slice> = Vec::new();
    let mut next = slices.iter().peekable();
    for &i in indices {
        let ts = samples[i].ns;
        while let Some(slice) = next.next_if(|s| s.begin <= ts) {
            while stack.last().is_some_and(|top| top.end < slice.begin) {
                stack.pop();
            }
            stack.push(slice);
        }
        out[i] = stack
            .iter()
            .filter(|s| s.end >= ts)
            .map(|s| s.name.clone())
            .collect();
    }
}

/// Whether an event of kind `kind` is part of a slice.
#[inline(always)]
fn is_duration(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::DurationBegin | EventKind::DurationEnd | EventKind::DurationComplete { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use fxt_format::decode::Event;
    use fxt_format::samples::{SampleRecord, Walk};

    /// An event of kind `kind` at `ts` on thread 2 of process 1, or on
    /// thread 3 if `other`.
    fn event(kind: EventKind, ts: u64, name: &str, other: bool) -> Record {
        Record::Event(Event {
            kind,
            timestamp: ts,
            thread: Thread::Known {
                process: 1,
                thread: if other { 3 } else { 2 },
            },
            category: Text::from("c"),
            name: Text::from(name),
            args: Vec::new(),
        })
    }

    fn sample(ns: u64, tid: u64) -> Sampled {
        Sampled {
            provider: Some(1),
            ns,
            sample: SampleRecord {
                timestamp: ns,
                pid: 1,
                tid,
                walk: Walk::FramePointers,
                truncated: false,
                frames: vec![1],
                raw_stack: None,
            },
        }
    }

    /// Slices nested, in turns on two threads, one that ends before its
    /// name's twin begins, complete events that tie with a pair, an end
    /// with no begin and a begin never ended.
    fn records() -> Vec<Record> {
        use EventKind::{DurationBegin as B, DurationComplete as C, DurationEnd as E};
        vec![
            event(E, 1, "orphan", false),
            event(B, 10, "outer", false),
            event(B, 12, "t3", true),
            event(B, 20, "inner", false),
            event(C { end: 40 }, 20, "tie", false),
            event(E, 40, "inner", false),
            event(E, 45, "t3", true),
            event(B, 50, "second", false),
            event(C { end: 60 }, 50, "tie2", false),
            event(E, 60, "second", false),
            event(E, 90, "outer", false),
            event(B, 95, "open", false),
            event(B, 96, "open3", true),
        ]
    }

    fn samples() -> Vec<Sampled> {
        let mut all: Vec<Sampled> = (0..100).step_by(5).map(|ns| sample(ns, 2)).collect();
        all.extend((0..100).step_by(7).map(|ns| sample(ns, 3)));
        all
    }

    /// The timeline of `records`, read in ranges cut at `cuts` and merged
    /// in file order.
    fn in_ranges(records: &[Record], cuts: &[usize]) -> Timeline {
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(records.len());
        let mut merged: Option<Timeline> = None;
        for range in bounds.windows(2) {
            let mut t = Timeline::default();
            for r in &records[range[0]..range[1]] {
                t.see(Some(1), 1_000_000_000, r);
            }
            match &mut merged {
                Some(m) => m.merge(t),
                None => merged = Some(t),
            }
        }
        merged.unwrap_or_default()
    }

    /// Cut anywhere, once or twice, the merged ranges place every sample
    /// among the same slices, in the same order, as one walk does.
    #[test]
    fn ranges_merged_place_samples_as_one_walk_does() {
        let (records, samples) = (records(), samples());
        let whole = in_ranges(&records, &[]).enclosing(&samples);
        assert!(whole.iter().any(|open| open.len() >= 3), "{whole:?}");
        for a in 0..=records.len() {
            let once = in_ranges(&records, &[a]).enclosing(&samples);
            assert_eq!(once, whole, "cut at {a}");
            for b in a..=records.len() {
                let twice = in_ranges(&records, &[a, b]).enclosing(&samples);
                assert_eq!(twice, whole, "cut at {a} and {b}");
            }
        }
    }
}
