//! The first and last time a range or a provider of `fxt stats`'s walk
//! saw, and the run of ticks that gathers them.

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

/// The first and last ticks of a run of records of one provider (by
/// index in `RangeTally::providers`) at one clock rate. Converting
/// ticks to nanoseconds keeps their order, so the run's span converts
/// once, when the run ends, instead of every timestamp.
pub struct TickRun {
    pub provider: usize,
    pub tps: u64,
    pub first: u64,
    pub last: u64,
    /// The first and last end of the run's duration complete events,
    /// which count in the range's span only.
    pub ends: (u64, u64),
}

impl Default for TickRun {
    fn default() -> Self {
        // Empty: `first` after `last`.
        TickRun {
            provider: 0,
            tps: 0,
            first: u64::MAX,
            last: 0,
            ends: (u64::MAX, 0),
        }
    }
}
