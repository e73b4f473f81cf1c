//! Which slices were open on a sample's thread when it was taken: the
//! durations (complete events, begin/end pairs matched per thread) of a
//! trace, joined to its samples by thread and time.

use std::collections::HashMap;

use fxt_format::decode::{EventKind, Record, Text, Thread};
use fxt_format::time::ticks_to_ns;

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
    slices: HashMap<Key, Vec<Slice>>,
}

impl Timeline {
    /// Takes the record if it begins, ends or is a duration.
    pub fn see(&mut self, provider: Option<u32>, ticks_per_second: u64, record: &Record) {
        let Record::Event(e) = record else {
            return;
        };
        let Thread::Known { process, thread } = e.thread else {
            return;
        };
        let key = (provider, process, thread);
        let ns = |t| ticks_to_ns(t, ticks_per_second);
        match e.kind {
            EventKind::DurationBegin => self
                .open
                .entry(key)
                .or_default()
                .push((ns(e.timestamp), e.name.clone())),
            EventKind::DurationEnd => {
                if let Some((begin, name)) = self.open.get_mut(&key).and_then(Vec::pop) {
                    self.slices.entry(key).or_default().push(Slice {
                        begin,
                        end: ns(e.timestamp),
                        name,
                    });
                }
            }
            EventKind::DurationComplete { end } => {
                self.slices.entry(key).or_default().push(Slice {
                    begin: ns(e.timestamp),
                    end: ns(end),
                    name: e.name.clone(),
                })
            }
            _ => {}
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
