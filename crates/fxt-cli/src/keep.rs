//! Which records `fxt recover` keeps, decided in one pass over a trace by
//! the strict check's rules (see `recover`'s table), for every command that
//! must read a damaged trace as `fxt recover` would write it (`recover`
//! itself, `export`).

use std::collections::HashMap;

use fxt_format::decode::{Context, EventHead, EventKind, HeadAt, Thread, ThreadRef, View};
use fxt_format::encode::header::event_type::{DURATION_BEGIN, DURATION_END};

use crate::durations::ById;
use crate::epoch::ByThreadIndex;
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
        /// The number of its provider's thread ([`Keep::thread`]).
        thread: u32,
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
    /// Per thread index of an event head: its thread's number
    /// ([`Keep::thread`]), while the threads epoch holds.
    by_thread_index: ByThreadIndex,
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
                let name = self.names.id(ctx, e.name);
                let thread = self.thread(ctx.provider_id(), e.thread);
                let begin = e.kind == EventKind::DurationBegin;
                self.duration(thread, begin, (offset, name, e.timestamp))
            }
            _ => Verdict::Kept,
        }
    }

    /// [`Keep::see`] of an event read by its head (`at`: where the walk
    /// read it), as `fxt check` reads one: `None`, and nothing noted, when
    /// its shape is not one found clean since the tables last changed
    /// (the caller then hands its view to [`Keep::see`]). No view is made
    /// and the thread is looked up only for a duration begin or end.
    #[inline(always)]
    pub fn see_head(&mut self, at: HeadAt<'_, '_>, e: &EventHead<'_>) -> Option<Verdict> {
        let backwards = e.end_ts().is_some_and(|end| end < e.timestamp());
        if backwards || !self.last_clean.matches_head(e) {
            return None;
        }
        let event_type = u64::from(e.event_type());
        if event_type != DURATION_BEGIN && event_type != DURATION_END {
            return Some(Verdict::Kept);
        }
        let name = self.names.id_at(at, e.name());
        let thread = self.head_thread(at, e);
        let mark = (e.offset(), name, e.timestamp());
        Some(self.duration(thread, event_type == DURATION_BEGIN, mark))
    }

    /// The number of a provider's thread: one per thread for the whole
    /// walk, from 0 in the order threads are first met (the index of its
    /// stack of open begins).
    #[inline]
    pub fn thread(&mut self, provider: Option<u32>, thread: Thread) -> u32 {
        self.durations.at((provider, thread)) as u32
    }

    /// [`Keep::thread`] of an event read by its head: by its thread
    /// index, remembered while the threads epoch holds.
    #[inline(always)]
    pub fn head_thread(&mut self, at: HeadAt<'_, '_>, e: &EventHead<'_>) -> u32 {
        let index = match e.thread_ref() {
            ThreadRef::Indexed(index) => index,
            ThreadRef::Inline { process, thread } => {
                let thread = Thread::Known { process, thread };
                return self.thread(at.context().provider_id(), thread);
            }
        };
        self.by_thread_index.check_epoch(at.threads_epoch());
        match self.by_thread_index.get(index) {
            Some(known) => known as u32,
            None => self.find_head_thread(at, index),
        }
    }

    /// [`Keep::head_thread`] of a thread index not looked up since the
    /// threads epoch changed.
    #[inline(never)]
    fn find_head_thread(&mut self, at: HeadAt<'_, '_>, index: u8) -> u32 {
        let ctx = at.context();
        let thread = self.thread(ctx.provider_id(), ctx.thread(index));
        self.by_thread_index.set(index, thread as usize);
        thread
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

    /// Matches a duration begin (`begin`) or end on thread `thread`
    /// ([`Keep::thread`]; `mark`: its offset, name id and ticks): an end
    /// that closes no begin, or one whose name or time does not fit it,
    /// is left out (with that begin).
    #[inline(always)]
    fn duration(&mut self, thread: u32, begin: bool, mark: (u64, u32, u64)) -> Verdict {
        let (offset, name, timestamp) = mark;
        let at = thread as usize;
        if begin {
            self.durations.begin_at(at, offset, name, timestamp);
            return Verdict::Kept;
        }
        match self.durations.close_at(at, mark, &self.names) {
            None => {
                self.fixes
                    .insert(offset, Fix::Drop(Reason::EndWithoutBegin));
                Verdict::Dropped
            }
            Some((begin, sound)) => {
                let begin_ts = begin.timestamp;
                if sound {
                    return Verdict::Ended { begin_ts, thread };
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
