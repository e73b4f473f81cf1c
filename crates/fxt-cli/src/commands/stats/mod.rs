//! `fxt stats`: what a trace holds and how long things took.
//!
//! Durations come from duration complete events and from duration
//! begin/end pairs matched per thread (a stack per provider and thread; an
//! end closes the innermost open begin). Times are converted from ticks
//! with each provider's ticks per second, so all figures are nanoseconds.
//! Percentiles are exact (nearest rank), at the cost of up to 8 bytes of
//! memory per duration (a name's short durations are counted per value
//! once it has many: [`summary::Lengths`]).
//!
//! An archive of several providers (`fxt merge`, `fxt record`) also gets a
//! summary per provider (its processes, threads, records, events and time
//! span), and one with scheduling records a summary per thread
//! ([`scheduling`]); one with `fxt::sync`'s lock events, the contention
//! per lock ([`locks`]); one with `fxt::task`'s polls, per task name its
//! polls, busy time, scheduling delays and long polls ([`tasks`]).
//!
//! One walk, its ranges on every core, feeds [`tally::RangeTally`]s merged
//! into a [`tally::Tally`] (events as views, counted by string id:
//! [`crate::interned`]); [`report::Report`] derives the
//! figures, printed as tables ([`table`]) or JSON ([`document`]). CPU
//! samples get a section of their own ([`samples`]): a trace that holds
//! them is walked in one range, since the samples are matched with the
//! slices open on their thread in file order.

mod allocs;
mod counts;
mod document;
mod locks;
mod report;
mod samples;
mod scheduling;
mod span;
mod summary;
mod table;
mod tally;
mod tasks;

use std::io::{self, Write};
use std::process::ExitCode;

use crate::error::Error;
use fxt_format::decode::{Head, View};

use crate::input::Input;
use crate::samples::allocs::alloc_of;
use crate::samples::sample_of;
use crate::walk::{Views, Walk};

use report::Report;
use tally::{RangeTally, Tally};

/// Arguments of `fxt stats`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Runs `fxt stats`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    // A file's pages are let go of behind a walk on one thread (read back
    // from the page cache if the samples walk it again), so that memory
    // holds the tally and not the trace.
    let mut input = match Input::open_trace_bounded(&args.file)? {
        Some(input) => input,
        None => Input::open_trace(&args.file)?,
    };
    let mut tally = Tally::default();
    // A stream cannot be walked twice: it is walked in file order, for the
    // samples it may hold.
    let ranged = match input.bytes() {
        Some(_) => walk_ranges(&mut input, &mut tally),
        None => Err(Error::in_file_order()),
    };
    let mut allocated = allocs::AllocTally::default();
    let (walk, sampled) = match ranged {
        Ok(walk) => (walk, samples::SampleTally::new(false)),
        Err(e) if e.is_in_file_order() => {
            let mut sampled = samples::SampleTally::new(true);
            let mut range = RangeTally::default();
            let walk = input.walk_views_in_order("stats", |ctx, view| {
                sampled.see_view(ctx, view)?;
                allocated.see_view(ctx, view)?;
                range.add_view(ctx, view);
                Ok(())
            })?;
            tally.merge(range);
            (walk, sampled)
        }
        Err(e) => return Err(e),
    };
    let report = Report::new(&input.name, &walk, tally);
    let sampled = samples::report(sampled, report.tally.tasks.long_polls());
    let allocated = allocs::report(allocated);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let mut doc = document::document(&report);
        doc["samples"] = samples::document(&sampled);
        doc["tasks"] = tasks::document(&report.tally.tasks, &sampled);
        doc["allocations"] = allocs::document(&allocated);
        serde_json::to_writer_pretty(&mut out, &doc).map_err(io::Error::from)?;
        writeln!(out)?;
    } else {
        table::write_table(&mut out, &report)?;
        let fmt_ns = crate::durations::readable_ns;
        tasks::write_long_polls(&mut out, &report.tally.tasks, &sampled, fmt_ns)?;
        samples::write_table(&mut out, &sampled)?;
        allocs::write_table(&mut out, &allocated)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Walks the input's ranges on every core into `tally`; a CPU sample ends
/// the walk with [`Error::in_file_order`] (the samples are matched with
/// the slices open on their thread in file order).
fn walk_ranges(input: &mut Input, tally: &mut Tally) -> Result<Walk, Error> {
    let (walk, ranges) = input.walk_view_ranges("stats", RangeTally::default, tally_range)?;
    for range in ranges {
        tally.merge(range);
    }
    Ok(walk)
}

/// Tallies a range's records into `range`. A function of its own, not
/// inlined into the walk (as json's `write_range`): the reader's loop is
/// then compiled apart from the walk's setup, pool and merge.
#[inline(never)]
fn tally_range(range: &mut RangeTally, views: &mut Views<'_>) -> Result<(), Error> {
    // Compiled into the reader's loop: a call per record shows.
    views.heads(
        #[inline(always)]
        |ctx, head| {
            if let Head::Other(View::Record(record)) = head {
                if sample_of(record).is_some() || alloc_of(record).is_some() {
                    return Err(Error::in_file_order());
                }
            }
            range.add_head(ctx, head);
            Ok(())
        },
    )
}
