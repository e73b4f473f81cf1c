//! Counts of a range of `fxt stats`'s walk by a static name: records by
//! type, events by kind.

use fxt_format::decode::EventKind;

use crate::names::event_kind_name;

/// Counts by a static name: a handful of names, so a short list, and
/// the entry counted last (records of one type come in runs).
#[derive(Default)]
pub struct Counts(pub Vec<(&'static str, u64)>, usize);

impl Counts {
    #[inline]
    pub fn add(&mut self, name: &'static str) {
        // The names are literals: the same pointer (compared first, for
        // every entry), but for a compiler that did not merge them.
        if let Some((n, count)) = self.0.get_mut(self.1) {
            if std::ptr::eq(*n, name) {
                *count += 1;
                return;
            }
        }
        if let Some(at) = self.0.iter().position(|(n, _)| std::ptr::eq(*n, name)) {
            self.0[at].1 += 1;
            self.1 = at;
        } else {
            self.add_slowly(name);
        }
    }

    #[cold]
    fn add_slowly(&mut self, name: &'static str) {
        match self.0.iter().position(|(n, _)| *n == name) {
            Some(at) => self.0[at].1 += 1,
            None => self.0.push((name, 1)),
        }
    }
}

/// Events by kind: a slot per event type (0..=10), named by
/// [`event_kind_name`].
#[derive(Default)]
pub struct KindCounts(pub [(&'static str, u64); 11]);

impl KindCounts {
    #[inline]
    pub fn add(&mut self, kind: &EventKind) {
        let slot = &mut self.0[kind_index(kind)];
        if slot.1 == 0 {
            slot.0 = event_kind_name(kind);
        }
        slot.1 += 1;
    }
}

/// The event type (0..=10) of a kind.
fn kind_index(kind: &EventKind) -> usize {
    kind.event_type() as usize
}
