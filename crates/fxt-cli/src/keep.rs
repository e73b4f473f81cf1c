//! Which records `fxt recover` keeps, decided in one pass over a trace by
//! the strict check's rules (see `recover`'s table), for every command that
//! must read a damaged trace as `fxt recover` would write it (`recover`
//! itself, `export`).

use std::collections::HashMap;

use fxt_format::decode::{EventKind, Record};

use crate::durations::{Closed, Durations, Mark};
use crate::problems::{record_problems, Reason};

/// What happens to a well-formed record that is not kept as it is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fix {
    /// Kept with its reserved bits cleared.
    ClearReserved,
    /// Left out.
    Drop(Reason),
}

/// What a record is, as far as [`Keep::see`] can tell when it arrives.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Verdict {
    /// Left out.
    Dropped,
    /// Kept (a duration begin may still be left out later, when its end
    /// does not fit it or never comes).
    Kept,
    /// A duration end kept, closing the begin at `begin_ts` (ticks).
    Ended {
        /// The begin's timestamp, in ticks.
        begin_ts: u64,
    },
}

/// The decisions of one pass, by record offset.
#[derive(Default)]
pub struct Keep {
    /// Whether repairs are noted (see [`Keep::new`]).
    note_repairs: bool,
    fixes: HashMap<u64, Fix>,
    durations: Durations,
    /// Timestamps of the open begins, by offset.
    begins: HashMap<u64, u64>,
}

impl Keep {
    /// Decisions to come; `note_repairs`: whether records to repair are
    /// noted too (a writer needs them; a reader, which reads a repaired
    /// record as it is, does not, and saves their memory).
    pub fn new(note_repairs: bool) -> Keep {
        Keep {
            note_repairs,
            ..Keep::default()
        }
    }

    /// Decides about the record at `offset` (`raw`: its bytes, when at
    /// hand, for the reserved-bits check) of provider `provider`.
    pub fn see(
        &mut self,
        provider: Option<u32>,
        offset: u64,
        record: &Record,
        raw: Option<&[u8]>,
    ) -> Verdict {
        let problems = record_problems(offset, record, raw);
        if let Some(p) = problems.iter().find(|p| p.reason != Reason::ReservedBits) {
            self.fixes.insert(offset, Fix::Drop(p.reason));
            return Verdict::Dropped;
        }
        if !problems.is_empty() && self.note_repairs {
            self.fixes.insert(offset, Fix::ClearReserved);
        }
        let Record::Event(e) = record else {
            return Verdict::Kept;
        };
        match e.kind {
            EventKind::DurationBegin => {
                self.durations.begin(provider, offset, Mark::from(e));
                self.begins.insert(offset, e.timestamp);
                Verdict::Kept
            }
            EventKind::DurationEnd => match self.durations.end(provider, offset, &Mark::from(e)) {
                Closed::Nothing => {
                    self.fixes
                        .insert(offset, Fix::Drop(Reason::EndWithoutBegin));
                    Verdict::Dropped
                }
                Closed::Begin(begin, pair) => {
                    let begin_ts = self.begins.remove(&begin.offset).unwrap_or(0);
                    if pair.is_empty() {
                        return Verdict::Ended { begin_ts };
                    }
                    // Both go: the records between them stay matched as
                    // they were (an end closes the innermost begin).
                    self.fixes.insert(offset, Fix::Drop(Reason::MismatchedEnd));
                    self.fixes
                        .insert(begin.offset, Fix::Drop(Reason::MismatchedEnd));
                    Verdict::Dropped
                }
            },
            _ => Verdict::Kept,
        }
    }

    /// Every decision, the begins never ended among them.
    pub fn finish(mut self) -> HashMap<u64, Fix> {
        for (_, begin) in self.durations.never_ended() {
            self.fixes
                .insert(begin.offset, Fix::Drop(Reason::NeverEnded));
        }
        self.fixes
    }
}
