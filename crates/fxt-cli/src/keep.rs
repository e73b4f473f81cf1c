//! Which records `fxt recover` keeps, decided in one pass over a trace by
//! the strict check's rules (see `recover`'s table), for every command that
//! must read a damaged trace as `fxt recover` would write it (`recover`
//! itself, `export`).

use std::collections::HashMap;

use fxt_format::decode::{Context, EventKind, Thread, View};

use crate::durations::ById;
use crate::interned::Interned;
use crate::problems::{event_problems_after, record_problems, LastClean, Problem, Reason};

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
    /// The shapes of the last events found without problems (see
    /// [`event_problems_after`]): most events are one of them.
    last_clean: LastClean,
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

    /// Decides about a record of a view walk (provider, offset and bytes
    /// from `ctx`): an event from its view, without decoding it (its name
    /// looked up only for duration matching).
    pub fn see(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Verdict {
        let offset = ctx.record_offset();
        let e = match view {
            View::Event(e) => e,
            View::Record(record) => {
                // It may change what string and thread indices mean.
                self.last_clean.forget();
                // Reserved bits change no decision of a reader, which
                // notes no repairs.
                let raw = self.note_repairs.then(|| ctx.record_bytes());
                let problems = record_problems(offset, record, raw);
                return self.judge(offset, &problems).unwrap_or(Verdict::Kept);
            }
        };
        // Reserved bits are found too, and judged as the caller asked.
        let mut problems = Vec::new();
        event_problems_after(ctx, e, &mut self.last_clean, &mut problems);
        if let Some(verdict) = self.judge(offset, &problems) {
            return verdict;
        }
        match e.kind {
            EventKind::DurationBegin | EventKind::DurationEnd => {
                let mark = (e.thread, self.names.id(ctx, e.name), e.timestamp);
                self.duration(ctx.provider_id(), offset, e.kind, mark)
            }
            _ => Verdict::Kept,
        }
    }

    /// Notes what `problems`, those of the record at `offset` on its own,
    /// call for: `Some(Dropped)` if any but reserved bits (the record is
    /// left out), else `None` (kept; repaired if it has reserved bits set
    /// and repairs are noted).
    fn judge(&mut self, offset: u64, problems: &[Problem]) -> Option<Verdict> {
        if let Some(p) = problems.iter().find(|p| p.reason != Reason::ReservedBits) {
            self.fixes.insert(offset, Fix::Drop(p.reason));
            return Some(Verdict::Dropped);
        }
        if !problems.is_empty() && self.note_repairs {
            self.fixes.insert(offset, Fix::ClearReserved);
        }
        None
    }

    /// Matches a duration begin or end of kind `kind` (`mark`: its thread,
    /// name id and ticks): an end that closes no begin, or one whose name
    /// or time does not fit it, is left out (with that begin).
    fn duration(
        &mut self,
        provider: Option<u32>,
        offset: u64,
        kind: EventKind,
        mark: (Thread, u32, u64),
    ) -> Verdict {
        if kind == EventKind::DurationBegin {
            self.durations.begin(provider, offset, mark);
            return Verdict::Kept;
        }
        match self.durations.close(provider, offset, mark, &self.names) {
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
