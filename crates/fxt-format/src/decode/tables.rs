//! Per-provider reader state: string table, thread table, ticks per second.
//!
//! The specification asks a reader to keep this state separately for each
//! provider and to switch whenever a provider info or provider section
//! metadata record appears. Records before any provider metadata belong to
//! an anonymous provider (`None`).
//!
//! Lookups happen for nearly every record, so the tables are arrays indexed
//! by the string or thread index. They are not allocated at their full
//! 32768 or 256 entries, though: memory must stay proportional to what the
//! input defines (one string record naming index 0x7fff must not cost an
//! array of every index), so an array grows only as far as a small multiple of
//! the number of definitions seen, and indices beyond that go to a hash map.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::record::{Process, Text, Thread};

/// Entries an [`IndexTable`] may hold in its array, per definition seen,
/// beyond [`DENSE_SLACK`].
const DENSE_PER_DEFINITION: usize = 4;
/// Entries an [`IndexTable`] may always hold in its array.
const DENSE_SLACK: usize = 16;

/// A table from small indices to values: an array for the indices a trace
/// typically uses (dense from 1 up), a hash map for scattered ones.
#[derive(Clone)]
struct IndexTable<T> {
    dense: Vec<Option<T>>,
    /// Indices past the array. Std's hasher serves: a lookup reaches the
    /// map only when the trace scattered its indices (`get` checks
    /// `is_empty` first), and its keyed hashing keeps crafted indices from a
    /// hostile trace from colliding.
    sparse: HashMap<usize, T>,
    definitions: usize,
}

impl<T> Default for IndexTable<T> {
    fn default() -> Self {
        Self {
            dense: Vec::new(),
            sparse: HashMap::new(),
            definitions: 0,
        }
    }
}

impl<T: Clone> IndexTable<T> {
    #[inline]
    fn get(&self, index: usize) -> Option<&T> {
        match self.dense.get(index) {
            Some(slot) => slot.as_ref(),
            None if self.sparse.is_empty() => None,
            None => self.sparse.get(&index),
        }
    }

    fn insert(&mut self, index: usize, value: T) {
        self.definitions += 1;
        if index >= self.dense.len() {
            let allowed = self.definitions * DENSE_PER_DEFINITION + DENSE_SLACK;
            if index >= allowed {
                self.sparse.insert(index, value);
                return;
            }
            self.dense.resize(index + 1, None);
            // Entries that now fall inside the array move into it.
            if !self.sparse.is_empty() {
                let len = self.dense.len();
                let moved: Vec<usize> = self.sparse.keys().copied().filter(|&k| k < len).collect();
                for k in moved {
                    self.dense[k] = self.sparse.remove(&k);
                }
            }
        }
        self.dense[index] = Some(value);
    }
}

/// What the reader knows about one provider.
#[derive(Default, Clone)]
pub(crate) struct ProviderTables {
    strings: IndexTable<Text>,
    threads: IndexTable<(u64, u64)>,
    /// The dense part of `threads` as the [`Thread`] each index resolves
    /// to: a lookup is one copy of a whole value, with no branch on
    /// whether the index is defined (the event's view is written from it
    /// as it was read).
    resolved: Vec<Thread>,
    ticks_per_second: Option<u64>,
    name: Option<Arc<str>>,
}

impl ProviderTables {
    /// Resolves an indexed string ref (1..=0x7fff).
    #[inline]
    pub(crate) fn string(&self, index: u16) -> Text {
        match self.strings.get(usize::from(index)) {
            Some(s) => s.clone(),
            None => Text::undefined(index),
        }
    }

    /// The text of an indexed string ref, borrowed (`None` if undefined).
    #[inline]
    pub(crate) fn str(&self, index: u16) -> Option<&str> {
        self.strings.get(usize::from(index)).and_then(Text::as_str)
    }

    /// Whether the table holds index `index`.
    #[inline]
    pub(crate) fn has_string(&self, index: u16) -> bool {
        self.strings.get(usize::from(index)).is_some()
    }

    /// The thread an indexed thread ref (1..=255) resolves to, lent from
    /// the dense table of resolved threads; `None` past it (where
    /// [`ProviderTables::thread`] looks further).
    #[inline(always)]
    pub(crate) fn resolved_thread(&self, index: u8) -> Option<&Thread> {
        self.resolved.get(usize::from(index))
    }

    /// Resolves an indexed thread ref (1..=255).
    #[inline]
    pub(crate) fn thread(&self, index: u8) -> Thread {
        match self.resolved.get(usize::from(index)) {
            Some(&thread) => thread,
            None => self.thread_past_dense(index),
        }
    }

    /// [`ProviderTables::thread`] of an index past the dense table.
    #[inline(never)]
    fn thread_past_dense(&self, index: u8) -> Thread {
        match self.threads.get(usize::from(index)) {
            Some(&(process, thread)) => Thread::Known { process, thread },
            None => Thread::Undefined(index),
        }
    }

    /// Resolves an indexed thread ref to the thread's process.
    pub(crate) fn process(&self, index: u8) -> Process {
        match self.threads.get(usize::from(index)) {
            Some(&(process, _)) => Process::Known(process),
            None => Process::Undefined(index),
        }
    }

    /// Registers a string; index 0 is reserved and ignored.
    pub(crate) fn define_string(&mut self, index: u16, value: &Arc<str>) {
        if index != 0 {
            self.strings
                .insert(usize::from(index), Text::from(Arc::clone(value)));
        }
    }

    /// Registers a thread; index 0 is reserved and ignored.
    pub(crate) fn define_thread(&mut self, index: u8, process: u64, thread: u64) {
        if index != 0 {
            self.threads.insert(usize::from(index), (process, thread));
            let dense = &self.threads.dense;
            if self.resolved.len() == dense.len() {
                // The array did not grow: only this index can have changed.
                if let Some(slot) = self.resolved.get_mut(usize::from(index)) {
                    *slot = Thread::Known { process, thread };
                }
            } else {
                // Grown (at most once per index), perhaps taking entries
                // from the map: copied whole.
                self.resolved = (0..dense.len())
                    .map(|i| match dense[i] {
                        Some((process, thread)) => Thread::Known { process, thread },
                        // Fits: the dense table holds thread indices only.
                        None => Thread::Undefined(i as u8),
                    })
                    .collect();
            }
        }
    }
}

/// The tables of every provider seen so far, with the current one at hand.
#[derive(Default, Clone)]
pub(crate) struct Providers {
    current_id: Option<u32>,
    /// Changes whenever an indexed string may resolve to other text
    /// ([`Providers::strings_epoch`]).
    epoch: u64,
    /// Changes whenever a thread index may resolve to other koids
    /// ([`Providers::threads_epoch`]).
    threads_epoch: u64,
    /// The current provider's tables, kept out of the map so that resolving
    /// a reference costs no provider lookup.
    pub(crate) current: ProviderTables,
    /// Looked up only when a provider section switches providers.
    others: HashMap<Option<u32>, ProviderTables>,
}

impl Providers {
    /// The current provider's id (`None` before any provider metadata).
    pub(crate) fn current_id(&self) -> Option<u32> {
        self.current_id
    }

    /// Ticks per second of the current provider, if it sent an
    /// initialization record.
    pub(crate) fn ticks_per_second(&self) -> Option<u64> {
        self.current.ticks_per_second
    }

    /// The current provider's name, if a provider info record named it.
    pub(crate) fn name(&self) -> Option<&str> {
        self.current.name.as_deref()
    }

    /// A number that changes whenever an indexed string of the current
    /// provider may resolve to other text (a string defined, the provider
    /// switched or restarted), and that no other decoder's tables ever had
    /// (0, before any change, stands for empty tables): what a reader
    /// resolved from string indices holds while it is unchanged.
    pub(crate) fn strings_epoch(&self) -> u64 {
        self.epoch
    }

    /// As [`Providers::strings_epoch`], for thread indices: changes
    /// whenever a thread index of the current provider may resolve to
    /// other koids (a thread defined, the provider switched or
    /// restarted).
    pub(crate) fn threads_epoch(&self) -> u64 {
        self.threads_epoch
    }

    /// A fresh epoch, taken from a count shared by every decoder. Only
    /// uniqueness matters: no other memory is ordered by it.
    fn fresh() -> u64 {
        static EPOCHS: AtomicU64 = AtomicU64::new(1);
        EPOCHS.fetch_add(1, Ordering::Relaxed)
    }

    /// Fresh epochs of strings and threads: every index may read
    /// otherwise.
    fn new_epoch(&mut self) {
        self.epoch = Self::fresh();
        self.threads_epoch = Self::fresh();
    }

    /// Registers a thread of the current provider; index 0 is reserved
    /// and ignored.
    pub(crate) fn define_thread(&mut self, index: u8, process: u64, thread: u64) {
        self.current.define_thread(index, process, thread);
        self.threads_epoch = Self::fresh();
    }

    /// Registers a string of the current provider; index 0 is reserved
    /// and ignored.
    pub(crate) fn define_string(&mut self, index: u16, value: &Arc<str>) {
        self.current.define_string(index, value);
        self.epoch = Self::fresh();
    }

    pub(crate) fn set_ticks_per_second(&mut self, ticks: u64) {
        self.current.ticks_per_second = Some(ticks);
    }

    /// Provider info: the provider (re)starts with fresh tables, as the
    /// reference reader does, and becomes current.
    pub(crate) fn start_provider(&mut self, id: u32, name: &str) {
        self.switch_to(Some(id));
        self.current = ProviderTables {
            name: Some(Arc::from(name)),
            ..ProviderTables::default()
        };
        self.new_epoch();
    }

    /// Provider section: the provider becomes current, keeping its tables
    /// (a provider never introduced by provider info starts empty).
    pub(crate) fn switch_to(&mut self, id: Option<u32>) {
        if id == self.current_id {
            return;
        }
        let next = self.others.remove(&id).unwrap_or_default();
        let previous = std::mem::replace(&mut self.current, next);
        self.others.insert(self.current_id, previous);
        self.current_id = id;
        self.new_epoch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_index_resolves_as_defined_in_the_array_or_past_it() {
        let mut t = ProviderTables::default();
        let known = |process, thread| Thread::Known { process, thread };
        assert_eq!(t.thread(1), Thread::Undefined(1));
        t.define_thread(1, 10, 11);
        t.define_thread(3, 30, 31);
        // Scattered: past the array, in the map.
        t.define_thread(250, 50, 51);
        assert_eq!(t.thread(1), known(10, 11));
        assert_eq!(t.thread(2), Thread::Undefined(2));
        assert_eq!(t.thread(3), known(30, 31));
        assert_eq!(t.thread(250), known(50, 51));
        assert_eq!(t.thread(251), Thread::Undefined(251));
        // Redefined, and the array grown past where the map held one.
        t.define_thread(1, 12, 13);
        for i in 4..=40 {
            t.define_thread(i, u64::from(i), 0);
        }
        assert_eq!(t.thread(1), known(12, 13));
        assert_eq!(t.thread(40), known(40, 0));
        assert_eq!(t.thread(250), known(50, 51));
        assert_eq!(t.thread(0), Thread::Undefined(0));
    }

    #[test]
    fn the_strings_epoch_changes_whenever_an_index_may_read_otherwise() {
        let mut p = Providers::default();
        let start = p.strings_epoch();
        p.define_string(1, &Arc::from("a"));
        let defined = p.strings_epoch();
        assert_ne!(defined, start);
        // Nothing a string index resolves to: the same epoch.
        p.set_ticks_per_second(5);
        p.current.define_thread(1, 2, 3);
        p.switch_to(None);
        assert_eq!(p.strings_epoch(), defined);
        p.switch_to(Some(3));
        let switched = p.strings_epoch();
        assert_ne!(switched, defined);
        p.start_provider(4, "x");
        assert_ne!(p.strings_epoch(), switched);
        // Another decoder's tables, once changed, never share an epoch.
        let mut q = Providers::default();
        q.define_string(1, &Arc::from("a"));
        assert!(![start, defined, switched, p.strings_epoch()].contains(&q.strings_epoch()));
    }

    #[test]
    fn the_threads_epoch_changes_whenever_a_thread_index_may_read_otherwise() {
        let mut p = Providers::default();
        let start = p.threads_epoch();
        p.define_thread(1, 2, 3);
        let defined = p.threads_epoch();
        assert_ne!(defined, start);
        // Nothing a thread index resolves to: the same epoch.
        p.set_ticks_per_second(5);
        p.define_string(1, &Arc::from("a"));
        p.switch_to(None);
        assert_eq!(p.threads_epoch(), defined);
        p.switch_to(Some(3));
        let switched = p.threads_epoch();
        assert_ne!(switched, defined);
        p.start_provider(4, "x");
        assert_ne!(p.threads_epoch(), switched);
        // Never an epoch of strings, nor another decoder's.
        let mut q = Providers::default();
        q.define_thread(1, 2, 3);
        let all = [
            start,
            defined,
            switched,
            p.threads_epoch(),
            p.strings_epoch(),
        ];
        assert!(!all.contains(&q.threads_epoch()));
    }
}
