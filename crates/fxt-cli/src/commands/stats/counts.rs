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

/// Events by kind: a count per event type (0..=10), named by
/// [`event_kind_name`] when taken ([`KindCounts::named`]). A slot for
/// every value of the type's four bits, so that counting one checks no
/// bounds.
#[derive(Default)]
pub struct KindCounts([u64; 16]);

impl KindCounts {
    /// Counts an event of type `event_type` (0..=10).
    #[inline(always)]
    pub fn add(&mut self, event_type: u8) {
        self.0[usize::from(event_type & 0xf)] += 1;
    }

    /// Adds the counts of `other`.
    pub fn merge(&mut self, other: &KindCounts) {
        for (n, m) in self.0.iter_mut().zip(other.0) {
            *n += m;
        }
    }

    /// Events of every kind.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The counts by kind name, in type order, with the types never seen.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        EventKind::EACH_TYPE
            .iter()
            .zip(self.0)
            .map(|(kind, n)| (event_kind_name(kind), n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each slot is named by the kind of its own event type.
    #[test]
    fn each_type_is_named_by_its_kind() {
        let mut counts = KindCounts::default();
        counts.add(4);
        counts.add(4);
        counts.add(10);
        let named: Vec<_> = counts.named().filter(|(_, n)| *n > 0).collect();
        assert_eq!(named, [("duration_complete", 2), ("flow_end", 1)]);
    }
}
