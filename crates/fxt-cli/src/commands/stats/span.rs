//! The first and last time a range or a provider of `fxt stats`'s walk
//! saw.

/// The first and last time seen (ns).
#[derive(Default, Clone, Copy)]
pub struct Span {
    pub first_ns: Option<u64>,
    pub last_ns: Option<u64>,
}

impl Span {
    #[inline]
    pub fn add(&mut self, ns: u64) {
        match (&mut self.first_ns, &mut self.last_ns) {
            (Some(first), Some(last)) => {
                *first = (*first).min(ns);
                *last = (*last).max(ns);
            }
            _ => {
                *self = Span {
                    first_ns: Some(self.first_ns.map_or(ns, |f| f.min(ns))),
                    last_ns: Some(self.last_ns.map_or(ns, |l| l.max(ns))),
                }
            }
        }
    }

    pub fn merge(&mut self, other: Span) {
        for ns in [other.first_ns, other.last_ns].into_iter().flatten() {
            self.add(ns);
        }
    }

    /// Last minus first (0 when nothing was seen).
    pub fn length(&self) -> u64 {
        match (self.first_ns, self.last_ns) {
            (Some(f), Some(l)) => l - f,
            _ => 0,
        }
    }
}
