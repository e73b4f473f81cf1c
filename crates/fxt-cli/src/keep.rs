//! Which records `fxt recover` keeps, decided in one pass over a trace by
//! the strict check's rules (see `recover`'s table), for every command that
//! must read a damaged trace as `fxt recover` would write it (`recover`
//! itself, `export`).

use std::collections::HashMap;

use fxt_format::decode::{Context, EventKind, EventView, Record, Thread};

use crate::durations::ById;
use crate::interned::Interned;
use crate::problems::{
    event_problems, event_problems_but_reserved, record_problems, Problem, Reason,
};

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
    /// Open duration begins, matched by name id: a view's name is
    /// resolved once per string index, not copied per event.
    durations: ById,
    /// The names of durations, numbered.
    names: Interned,
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
        match record {
            Record::Event(e) => self.decide(provider, offset, &problems, e.kind, |names| {
                (e.thread, names.intern(e.name.clone()), e.timestamp)
            }),
            _ => self.decide(provider, offset, &problems, EventKind::Instant, |_| {
                unreachable!("only duration events are matched")
            }),
        }
    }

    /// [`Keep::see`] of an event walked as a view: the same decision,
    /// without decoding the event (its texts only for duration matching).
    pub fn see_view(
        &mut self,
        provider: Option<u32>,
        ctx: &Context<'_>,
        e: &EventView<'_>,
    ) -> Verdict {
        let mut problems = Vec::new();
        if self.note_repairs {
            event_problems(ctx, e, &mut problems);
        } else {
            // Repairs are not noted: reserved bits change no decision.
            event_problems_but_reserved(ctx, e, &mut problems);
        }
        let mark = |names: &mut Interned| (e.thread, names.id(ctx, e.name), e.timestamp);
        self.decide(provider, e.offset(), &problems, e.kind, mark)
    }

    /// Decides about a record with `problems`, of event kind `kind` (any
    /// other record passes as an instant), `mark` its duration's thread,
    /// name (numbered by the names given) and ticks.
    fn decide(
        &mut self,
        provider: Option<u32>,
        offset: u64,
        problems: &[Problem],
        kind: EventKind,
        mark: impl FnOnce(&mut Interned) -> (Thread, u32, u64),
    ) -> Verdict {
        if let Some(p) = problems.iter().find(|p| p.reason != Reason::ReservedBits) {
            self.fixes.insert(offset, Fix::Drop(p.reason));
            return Verdict::Dropped;
        }
        if !problems.is_empty() && self.note_repairs {
            self.fixes.insert(offset, Fix::ClearReserved);
        }
        match kind {
            EventKind::DurationBegin => {
                let mark = mark(&mut self.names);
                self.durations.begin(provider, offset, mark);
                Verdict::Kept
            }
            EventKind::DurationEnd => {
                match self
                    .durations
                    .close(provider, offset, mark(&mut self.names), &self.names)
                {
                    None => {
                        self.fixes
                            .insert(offset, Fix::Drop(Reason::EndWithoutBegin));
                        Verdict::Dropped
                    }
                    Some((begin, pair)) => {
                        let begin_ts = begin.timestamp;
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
                }
            }
            _ => Verdict::Kept,
        }
    }

    /// Every decision, the begins never ended among them.
    pub fn finish(mut self) -> HashMap<u64, Fix> {
        let open = self.durations.into_durations(&self.names);
        for (_, begin) in open.never_ended() {
            self.fixes
                .insert(begin.offset, Fix::Drop(Reason::NeverEnded));
        }
        self.fixes
    }
}
