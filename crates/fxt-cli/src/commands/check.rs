//! `fxt check`: strict validation, or (`--perfetto`) what Perfetto and
//! Tracy would misread or drop.
//!
//! The strict check reports, each with its byte offset:
//!
//! * records the decoder rejects (malformed, cut short, size 0);
//! * a trace that does not start with a magic number record;
//! * reserved bits that are not zero, in record headers, in the large blob
//!   format header and in argument headers (read from the raw words, see
//!   [`fxt_format::reserved`]);
//! * references to string or thread indices no earlier record defined;
//! * duration complete events that end before they begin;
//! * duration begin / end events not matched per thread (an end with no
//!   open begin, a begin never ended, an end whose name is not its begin's,
//!   an end before its begin).
//!
//! Prints `FILE: offset 0x..: problem` lines and a summary; exits 1 if
//! there is any problem. Records of types this tool does not know are not
//! problems (readers skip them by their size); the summary counts them.
//!
//! The rules live in [`crate::problems`] and [`crate::durations`]:
//! `fxt recover` drops or repairs records by the same rules, so that what
//! it writes passes.
//!
//! With `--perfetto`, [`fxt_format::compat::check_perfetto`] runs instead:
//! records sized differently by header bits 4–15 (large records), slices
//! Perfetto's import drops (or cuts short: a warning, not a problem), and
//! references used before their definition.

use std::io::{self, Write};
use std::process::ExitCode;

use fxt_format::compat::{check_perfetto, framing::decoder_walk};
use fxt_format::decode::{
    Context, EventHead, EventKind, Head, HeadAt, Record, Text, Thread, ThreadRef, View,
};
use fxt_format::encode::header::event_type::{DURATION_BEGIN, DURATION_END};

use crate::durations::{end_without_begin, never_ended, ById, Closed, Durations, Mark};
use crate::epoch::ByThreadIndex;
use crate::error::Error;
use crate::input::Input;
use crate::interned::Interned;
use crate::problems::{event_problems_after, record_problems, LastClean, Problem, Reason};
use crate::walk::Views;

/// Arguments of `fxt check`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// Report what Perfetto and Tracy would misread or drop (records sized
    /// wrongly by header bits 4-15, slices Perfetto drops, references used
    /// before their definition) instead of the strict check.
    #[arg(long)]
    perfetto: bool,
}

/// Runs `fxt check`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_trace_bytes(&args.file)?;
    if args.perfetto {
        return run_perfetto(&input);
    }
    input.quiet = true;
    let (walk, ranges) = input.walk_view_ranges("check", RangeCheck::default, check_range)?;
    let mut problems: Vec<Problem> = Vec::new();
    let mut durations = Durations::default();
    let mut first_seen = false;
    let mut unknown = 0u64;
    for range in ranges {
        if let (false, Some((offset, magic))) = (first_seen, range.first) {
            first_seen = true;
            if !magic {
                problems.push(Problem {
                    offset,
                    reason: Reason::NoMagic,
                    message: "the trace does not start with a magic number record".into(),
                });
            }
        }
        problems.extend(range.problems);
        for (provider, offset, e) in range.pending_ends {
            match durations.end(provider, offset, &e) {
                Closed::Nothing => problems.push(end_without_begin(offset, &e)),
                Closed::Begin(_, pair) => problems.extend(pair),
            }
        }
        durations.append(range.durations.into_durations(&range.names));
        unknown += range.unknown;
    }
    for (t, begin) in durations.never_ended() {
        problems.push(never_ended(&t, &begin));
    }
    for e in walk.skipped.iter().chain(&walk.damage) {
        let mut message = e.to_string();
        if e.is_fatal() {
            message.push_str("; nothing after it can be read");
        }
        problems.push(Problem {
            offset: e.offset(),
            reason: Reason::Malformed,
            message,
        });
    }
    problems.sort_by_key(|p| p.offset);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let name = &input.name;
    for p in &problems {
        writeln!(out, "{name}: offset {:#x}: {}", p.offset, p.message)?;
    }
    let notes = if unknown > 0 {
        format!(", {unknown} of unknown types (skipped)")
    } else {
        String::new()
    };
    if problems.is_empty() {
        writeln!(out, "{name}: ok, {} records{notes}", walk.records)?;
        Ok(ExitCode::SUCCESS)
    } else {
        let n = problems.len();
        writeln!(
            out,
            "{name}: {n} problem{} in {} records{notes}",
            plural(n),
            walk.records
        )?;
        Ok(ExitCode::from(1))
    }
}

/// Checks a range's records into `range`. A function of its own, not
/// inlined into the walk (as `stats`' `tally_range`): the reader's loop is
/// then compiled apart from the walk's setup, pool and merge.
#[inline(never)]
fn check_range(range: &mut RangeCheck, views: &mut Views<'_>) -> Result<(), Error> {
    // Compiled into the reader's loop: a call per record shows.
    views.heads(
        #[inline(always)]
        |ctx, head| {
            match head {
                Head::Event(e, at) => range.add_head(at, &e),
                Head::Other(view) => range.add(ctx, view),
            }
            Ok(())
        },
    )
}

/// What the strict check finds in one range of the walk (see
/// [`Input::walk_view_ranges`]); `run` merges the ranges in file order.
#[derive(Default)]
struct RangeCheck {
    /// The offset of the range's first record, and whether it is a magic
    /// number record.
    first: Option<(u64, bool)>,
    problems: Vec<Problem>,
    /// Begins and ends matched by name id (of `names`).
    durations: ById,
    names: Interned,
    /// Duration ends that closed no begin of this range, in file order:
    /// the merge closes them against the begins earlier ranges left open.
    pending_ends: Vec<(Option<u32>, u64, Mark)>,
    unknown: u64,
    /// The last event without problems (see [`event_problems_after`]).
    last_clean: LastClean,
    /// Per thread index of an event head: its stack in `durations`,
    /// while the threads epoch holds.
    by_thread_index: ByThreadIndex,
}

impl RangeCheck {
    /// Checks one record of a view walk: an event from its view (decoded
    /// whole only by its texts: see [`event_problems_after`]), anything else
    /// decoded.
    #[inline(always)]
    fn add(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        let e = match view {
            View::Record(record) => return self.add_record(ctx, record),
            View::Event(e) => e,
        };
        if self.first.is_none() {
            self.first = Some((ctx.record_offset(), false));
        }
        event_problems_after(ctx, e, &mut self.last_clean, &mut self.problems);
        if is_begin_or_end(e.kind) {
            // The check says a pair's names and times, never a category:
            // none is looked at, and the name is matched by its id.
            let name = self.names.id(ctx, e.name);
            let at = (e.thread, name, e.timestamp);
            self.duration(ctx.provider_id(), ctx.record_offset(), e.kind, at);
        }
    }

    /// Checks an event read by its head: its view is made only when its
    /// shape is not one found clean since the tables last changed (see
    /// [`event_problems_after`]), and its thread looked up only for a
    /// duration begin or end. Calls out of the walk's loop are handed
    /// where the head was read (`at`), not its context, so that nothing
    /// is written to memory for it per event.
    #[inline(always)]
    fn add_head(&mut self, at: HeadAt<'_, '_>, e: &EventHead<'_>) {
        if self.first.is_none() {
            self.first = Some((e.offset(), false));
        }
        let backwards = e.end_ts().is_some_and(|end| end < e.timestamp());
        if backwards || !self.last_clean.matches_head(e) {
            self.add_view_of(at);
            return;
        }
        let event_type = u64::from(e.event_type());
        if event_type == DURATION_BEGIN || event_type == DURATION_END {
            let name = self.names.id_at(at, e.name());
            let stack = self.head_stack(at, e);
            let mark = (e.offset(), name, e.timestamp());
            self.duration_at(stack, event_type == DURATION_BEGIN, mark);
        }
    }

    /// The stack in `durations` of an event head's thread: by its thread
    /// index, remembered while the threads epoch holds.
    #[inline(always)]
    fn head_stack(&mut self, at: HeadAt<'_, '_>, e: &EventHead<'_>) -> usize {
        let index = match e.thread_ref() {
            ThreadRef::Indexed(index) => index,
            ThreadRef::Inline { process, thread } => {
                let thread = Thread::Known { process, thread };
                return self.durations.at((at.context().provider_id(), thread));
            }
        };
        self.by_thread_index.check_epoch(at.threads_epoch());
        match self.by_thread_index.get(index) {
            Some(known) => known,
            None => self.find_head_stack(at, index),
        }
    }

    /// [`RangeCheck::head_stack`] of a thread index not looked up since
    /// the threads epoch changed.
    #[inline(never)]
    fn find_head_stack(&mut self, at: HeadAt<'_, '_>, index: u8) -> usize {
        let ctx = at.context();
        let thread = ctx.thread(index);
        let stack = self.durations.at((ctx.provider_id(), thread));
        self.by_thread_index.set(index, stack);
        stack
    }

    /// [`RangeCheck::add`] of the view of an event read by its head.
    #[cold]
    #[inline(never)]
    fn add_view_of(&mut self, at: HeadAt<'_, '_>) {
        // Always read: `at` is where a head was read.
        if let Some((e, ctx)) = at.read() {
            self.add(&ctx, &View::Event(e.view(&ctx)));
        }
    }

    /// Checks a record that is not an event view.
    fn add_record(&mut self, ctx: &Context<'_>, record: &Record) {
        // It may change what the string and thread indices mean.
        self.last_clean.forget();
        let offset = ctx.record_offset();
        if self.first.is_none() {
            self.first = Some((offset, *record == Record::Magic));
        }
        let raw = Some(ctx.record_bytes());
        self.problems.extend(record_problems(offset, record, raw));
        match record {
            Record::Unknown(_) => self.unknown += 1,
            Record::Event(e) => {
                let at = (e.thread, self.names.intern(e.name.clone()), e.timestamp);
                self.duration(ctx.provider_id(), offset, e.kind, at)
            }
            _ => {}
        }
    }

    /// Matches a duration begin or end (`at`: its thread, name id and
    /// ticks).
    fn duration(
        &mut self,
        provider: Option<u32>,
        offset: u64,
        kind: EventKind,
        at: (Thread, u32, u64),
    ) {
        let (thread, name, timestamp) = at;
        if is_begin_or_end(kind) {
            let stack = self.durations.at((provider, thread));
            let begin = kind == EventKind::DurationBegin;
            self.duration_at(stack, begin, (offset, name, timestamp));
        }
    }

    /// Matches a duration begin (`begin`) or end on stack `stack` of
    /// `durations` (`at`: its offset, name id and ticks).
    #[inline(always)]
    fn duration_at(&mut self, stack: usize, begin: bool, at: (u64, u32, u64)) {
        let (offset, name, timestamp) = at;
        if begin {
            self.durations.begin_at(stack, offset, name, timestamp);
        } else if !self
            .durations
            .end_at(stack, at, &self.names, &mut self.problems)
        {
            self.pending_end(stack, at);
        }
    }

    /// Keeps an end that closed no begin of this range for the merge.
    #[cold]
    fn pending_end(&mut self, stack: usize, (offset, name, timestamp): (u64, u32, u64)) {
        let (provider, thread) = self.durations.thread_at(stack);
        let mark = Mark {
            thread,
            category: Text::default(),
            name: self.names.text(name).clone(),
            timestamp,
        };
        self.pending_ends.push((provider, offset, mark));
    }
}

/// Whether an event of kind `kind` is a duration begin or end, the
/// events [`RangeCheck::duration`] matches.
#[inline(always)]
fn is_begin_or_end(kind: EventKind) -> bool {
    matches!(kind, EventKind::DurationBegin | EventKind::DurationEnd)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `fxt check --perfetto`: one line per finding, in file order, then a
/// summary; exit status 1 if anything would be misread or dropped.
fn run_perfetto(input: &Input) -> Result<ExitCode, Error> {
    let bytes = input.bytes().unwrap_or_default();
    let report = check_perfetto(bytes);
    let mut lines: Vec<(u64, String)> = Vec::new();
    for issue in &report.framing {
        lines.push((issue.offset(), issue.to_string()));
    }
    let mut cut = 0usize;
    for drop in &report.slices {
        if drop.is_dropped() {
            lines.push((drop.offset, drop.to_string()));
        } else {
            cut += 1;
            lines.push((drop.offset, format!("warning: {drop}")));
        }
    }
    for r in &report.refs {
        lines.push((r.offset, r.to_string()));
    }
    // Stable: findings about one record keep the order above.
    lines.sort_by_key(|l| l.0);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let name = &input.name;
    for (_, line) in &lines {
        writeln!(out, "{name}: {line}")?;
    }
    let records = decoder_walk(bytes).starts.len();
    let warnings = if cut > 0 {
        format!(", {cut} slice{} cut short (warnings)", plural(cut))
    } else {
        String::new()
    };
    if report.is_clean() {
        writeln!(
            out,
            "{name}: ok for Perfetto and Tracy, {records} records{warnings}"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let dropped = report.slices.iter().filter(|s| s.is_dropped()).count();
    let n = report.len();
    writeln!(
        out,
        "{name}: {n} problem{} for Perfetto and Tracy in {records} records: {} misframed, {dropped} slice{} dropped, {} undefined reference{}{warnings}",
        plural(n),
        report.framing.len(),
        plural(dropped),
        report.refs.len(),
        plural(report.refs.len()),
    )?;
    Ok(ExitCode::from(1))
}
