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
//! `fxt recover` drops or repairs records by the same rules
//! ([`record_problems`], [`Durations`]), so that what it writes passes.
//!
//! With `--perfetto`, [`fxt_format::compat::check_perfetto`] runs instead:
//! records sized differently by header bits 4–15 (large records), slices
//! Perfetto's import drops (or cuts short: a warning, not a problem), and
//! references used before their definition.

use std::collections::HashMap;
use std::io::{self, Write};
use std::process::ExitCode;

use fxt_format::compat::{check_perfetto, framing::decoder_walk};
use fxt_format::decode::{Arg, ArgValue, Event, EventKind, Process, Record, Text, Thread};
use fxt_format::reserved::reserved_bits;

use crate::input::Input;
use crate::Error;

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

/// Why a record fails the strict check (what `fxt recover` counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The decoder rejects the record (or the rest of the input).
    Malformed,
    /// The first record is not a magic number record.
    NoMagic,
    /// Reserved bits are set (repairable: clearing them changes nothing
    /// the decoder reads).
    ReservedBits,
    /// A reference to a string or thread index no earlier record defined.
    UndefinedRef,
    /// A duration complete event that ends before it begins.
    BackwardsDuration,
    /// A duration end with no open begin on its thread.
    EndWithoutBegin,
    /// A duration end whose name or time does not fit the begin it closes.
    MismatchedEnd,
    /// A duration begin that no end closes.
    NeverEnded,
}

impl Reason {
    /// How `fxt recover`'s summary names records dropped for this reason.
    pub fn describe(self) -> &'static str {
        match self {
            Reason::Malformed => "malformed",
            Reason::NoMagic => "no magic number record first",
            Reason::ReservedBits => "reserved bits set",
            Reason::UndefinedRef => "referring to an undefined string or thread",
            Reason::BackwardsDuration => "complete durations ending before they begin",
            Reason::EndWithoutBegin => "duration ends without a begin",
            Reason::MismatchedEnd => {
                "duration ends naming another begin or ending before it, with those begins"
            }
            Reason::NeverEnded => "duration begins never ended",
        }
    }
}

/// One problem the strict check reports.
pub struct Problem {
    /// Byte offset of the record.
    pub offset: u64,
    /// Its kind.
    pub reason: Reason,
    /// The line `check` prints after the offset.
    pub message: String,
}

/// An open duration begin.
pub struct Open {
    /// Byte offset of the begin record.
    pub offset: u64,
    name: Text,
    timestamp: u64,
}

/// What a duration end closed.
pub enum Closed {
    /// No begin was open on its thread.
    Nothing,
    /// The innermost open begin of its thread, with the problems of the
    /// pair (none when the names agree and the end is not before the
    /// begin).
    Begin(Open, Vec<Problem>),
}

/// Per-thread matching of duration begin and end events (per provider:
/// thread koids are the provider's).
#[derive(Default)]
pub struct Durations {
    open: HashMap<(Option<u32>, Thread), Vec<Open>>,
}

impl Durations {
    /// Opens a duration begin.
    pub fn begin(&mut self, provider: Option<u32>, offset: u64, e: &Event) {
        self.open
            .entry((provider, e.thread))
            .or_default()
            .push(Open {
                offset,
                name: e.name.clone(),
                timestamp: e.timestamp,
            });
    }

    /// Closes the innermost open begin of the end's thread.
    pub fn end(&mut self, provider: Option<u32>, offset: u64, e: &Event) -> Closed {
        let Some(begin) = self.open.get_mut(&(provider, e.thread)).and_then(Vec::pop) else {
            return Closed::Nothing;
        };
        let mut problems = Vec::new();
        if e.name != begin.name && e.name != "" {
            problems.push(Problem {
                offset,
                reason: Reason::MismatchedEnd,
                message: format!(
                    "duration end {} closes duration begin {} (offset {:#x})",
                    e.name, begin.name, begin.offset
                ),
            });
        }
        if e.timestamp < begin.timestamp {
            problems.push(Problem {
                offset,
                reason: Reason::MismatchedEnd,
                message: format!(
                    "duration end {} (ts {}) is before its begin (ts {}, offset {:#x})",
                    e.name, e.timestamp, begin.timestamp, begin.offset
                ),
            });
        }
        Closed::Begin(begin, problems)
    }

    /// The begins still open (never ended), with their threads.
    pub fn never_ended(self) -> impl Iterator<Item = (Thread, Open)> {
        self.open
            .into_iter()
            .flat_map(|((_, t), stack)| stack.into_iter().map(move |o| (t, o)))
    }
}

/// The problem of a duration end that closes no begin.
pub fn end_without_begin(offset: u64, e: &Event) -> Problem {
    Problem {
        offset,
        reason: Reason::EndWithoutBegin,
        message: format!(
            "duration end {} on thread {} has no matching begin",
            e.name,
            thread(&e.thread)
        ),
    }
}

/// The problem of a duration begin never ended.
pub fn never_ended(t: &Thread, begin: &Open) -> Problem {
    Problem {
        offset: begin.offset,
        reason: Reason::NeverEnded,
        message: format!(
            "duration begin {} on thread {} is never ended",
            begin.name,
            thread(t)
        ),
    }
}

/// The problems of one decoded record on its own (everything but
/// begin / end matching and the magic number): reserved bits in `raw`, its
/// bytes, undefined references, a complete duration ending before it
/// begins.
pub fn record_problems(offset: u64, record: &Record, raw: Option<&[u8]>) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut report = |reason, message| {
        problems.push(Problem {
            offset,
            reason,
            message,
        })
    };
    if let Some(raw) = raw {
        let words: Vec<u64> = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
            .collect();
        for r in reserved_bits(&words) {
            report(
                Reason::ReservedBits,
                format!("reserved bits {:#018x} of the {} are set", r.mask, r.what),
            );
        }
    }
    undefined_refs(record, &mut |m| report(Reason::UndefinedRef, m));
    if let Record::Event(e) = record {
        if let EventKind::DurationComplete { end } = e.kind {
            if end < e.timestamp {
                report(
                    Reason::BackwardsDuration,
                    format!(
                        "duration complete event {} ends (ts {end}) before it begins (ts {})",
                        e.name, e.timestamp
                    ),
                );
            }
        }
    }
    problems
}

/// Runs `fxt check`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_bytes(&args.file)?;
    if args.perfetto {
        return run_perfetto(&input);
    }
    input.quiet = true;
    let mut problems: Vec<Problem> = Vec::new();
    let mut durations = Durations::default();
    let mut first = true;
    let mut unknown = 0u64;
    let walk = input.walk("check", |reader, record| {
        let offset = reader.record_offset();
        if first && record != Record::Magic {
            problems.push(Problem {
                offset,
                reason: Reason::NoMagic,
                message: "the trace does not start with a magic number record".into(),
            });
        }
        first = false;
        problems.extend(record_problems(offset, &record, reader.record_bytes()));
        match &record {
            Record::Unknown(_) => unknown += 1,
            Record::Event(e) => match e.kind {
                EventKind::DurationBegin => durations.begin(reader.provider_id(), offset, e),
                EventKind::DurationEnd => match durations.end(reader.provider_id(), offset, e) {
                    Closed::Nothing => problems.push(end_without_begin(offset, e)),
                    Closed::Begin(_, pair) => problems.extend(pair),
                },
                _ => {}
            },
            _ => {}
        }
        Ok(())
    })?;
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

/// A thread as `process/thread`.
fn thread(t: &Thread) -> String {
    match t {
        Thread::Known { process, thread } => format!("{process}/{thread}"),
        Thread::Undefined(i) => format!("<undefined thread #{i}>"),
    }
}

/// Reports references to undefined string and thread indices.
fn undefined_refs(record: &Record, report: &mut impl FnMut(String)) {
    let mut text = |what: &str, t: &Text| {
        if let Some(i) = t.undefined_index() {
            report(format!("the {what} refers to undefined string #{i}"));
        }
    };
    let mut threads: Vec<(&str, Thread)> = Vec::new();
    let mut args: &[Arg] = &[];
    match record {
        Record::Event(e) => {
            text("category", &e.category);
            text("name", &e.name);
            threads.push(("thread", e.thread));
            args = &e.args;
        }
        Record::Blob(b) => text("name", &b.name),
        Record::UserspaceObject(o) => {
            text("name", &o.name);
            if let Process::Undefined(i) = o.process {
                threads.push(("process", Thread::Undefined(i)));
            }
            args = &o.args;
        }
        Record::KernelObject(o) => {
            text("name", &o.name);
            args = &o.args;
        }
        Record::ContextSwitch(c) => args = &c.args,
        Record::ThreadWakeup(w) => args = &w.args,
        Record::LegacyContextSwitch(c) => {
            threads.push(("outgoing thread", c.outgoing_thread));
            threads.push(("incoming thread", c.incoming_thread));
        }
        Record::Log(l) => threads.push(("thread", l.thread)),
        Record::LargeBlobWithMetadata(b) => {
            text("category", &b.category);
            text("name", &b.name);
            threads.push(("thread", b.thread));
            args = &b.args;
        }
        Record::LargeBlobNoMetadata(b) => {
            text("category", &b.category);
            text("name", &b.name);
        }
        _ => {}
    }
    for a in args {
        text("argument name", &a.name);
        if let ArgValue::Str(v) = &a.value {
            text("string argument value", v);
        }
    }
    for (what, t) in threads {
        if let Thread::Undefined(i) = t {
            report(format!("the {what} refers to undefined thread #{i}"));
        }
    }
}
