//! `fxt flame`: a flame graph of a trace's durations, per thread, weighted
//! by self time in nanoseconds ([`crate::folded`]).
//!
//! `--folded` prints the folded stacks (`thread;outer;inner NS`) for
//! inferno, `flamegraph.pl` or speedscope; `-o OUT.svg` (default: the
//! trace's name with `.svg`) draws them with inferno's renderer, an SVG
//! with search, zoom and a title per frame giving its time.
//!
//! `--samples` draws the CPU samples instead (issue 31): each sample's
//! stack, outermost function first, counted once; `--inside NAME` keeps the
//! samples taken on a thread while a slice named NAME was open on it
//! ([`crate::samples`]).
//!
//! `--alloc` draws the sampled allocations instead (issue 45): each
//! allocation's stack weighted by the bytes it stands for; `--live` keeps
//! those still live at the end of the trace (no free recorded: leaks and
//! growth); `--inside NAME` as for samples
//! ([`crate::samples::allocs`]).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use inferno::flamegraph::{self, Options};

use crate::error::Error;
use crate::folded::{Collector, Filter, Folded};
use crate::input::Input;
use crate::samples::{self, allocs, Gather, Timeline};
use crate::walk::Views;
use fxt_format::decode::{Context, Record, View};
use fxt_format::time::ticks_per_second_or_default;

/// Arguments of `fxt flame`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// The SVG to write (default: the trace's name with `.svg`; none with
    /// `--folded` alone).
    #[arg(short, long)]
    output: Option<String>,
    /// Print the folded stacks (`thread;outer;inner NANOSECONDS`) on stdout.
    #[arg(long)]
    folded: bool,
    /// Only this thread (its name, koid, or `name [koid]` as in the graph).
    #[arg(long)]
    thread: Option<String>,
    /// Only spans of this category.
    #[arg(long)]
    category: Option<String>,
    /// Draw the CPU samples (their stacks, by count) instead of durations.
    #[arg(long, conflicts_with = "alloc")]
    samples: bool,
    /// Draw the sampled allocations (their stacks, by estimated bytes)
    /// instead of durations.
    #[arg(long)]
    alloc: bool,
    /// With --alloc: only the allocations still live at the end of the
    /// trace.
    #[arg(long, requires = "alloc")]
    live: bool,
    /// With --samples or --alloc: only those taken while a slice of this
    /// name was open on their thread.
    #[arg(long)]
    inside: Option<String>,
}

/// Runs `fxt flame`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    if args.inside.is_some() && !args.samples && !args.alloc {
        return Err(Error::msg("flame: --inside goes with --samples or --alloc"));
    }
    if args.samples {
        return run_samples(args);
    }
    if args.alloc {
        return run_allocs(args);
    }
    // A file's pages are let go of behind a walk on one thread, so that
    // memory holds the stacks and not the trace.
    let mut input = match Input::open_trace_bounded(&args.file)? {
        Some(input) => input,
        None => Input::open_trace(&args.file)?,
    };
    let filter = Filter {
        thread: args.thread.clone(),
        category: args.category.clone(),
        names_only: false,
    };
    // A file can be walked again if its spans do not fold exactly as they
    // go (a stream keeps them all from the start).
    let again = input.bytes().is_some();
    let folded = match fold(&mut input, &filter, again)? {
        Some(folded) => folded,
        None => {
            // The first walk reported the damage already.
            input.quiet = true;
            fold(&mut input, &filter, false)?
                .ok_or_else(|| Error::msg("internal error: spans kept did not fold"))?
        }
    };
    warn(&input.name, &folded);
    output(&args, &input.name, &folded, DURATIONS)
}

/// The durations of `input` folded: as they go if `folding` (`None` if
/// they could not be, exactly), else every span kept until the end.
fn fold(input: &mut Input, filter: &Filter, folding: bool) -> Result<Option<Folded>, Error> {
    let new = || {
        if folding {
            Collector::folding(filter.clone())
        } else {
            Collector::new(filter.clone())
        }
    };
    let (_, ranges) = input.walk_view_ranges("flame", new, collect_range)?;
    // The first range is the start of the whole (merged into an empty
    // collector it would only be copied).
    let mut ranges = ranges.into_iter();
    let mut collector = ranges.next().unwrap_or_else(new);
    for range in ranges {
        collector.merge(range);
    }
    Ok(collector.finish_exact())
}

/// Collects a range's durations into `collector`. A function of its own,
/// not inlined into the walk (as `stats`' `tally_range`): the reader's
/// loop is then compiled apart from the walk's setup, pool and merge.
#[inline(never)]
fn collect_range(collector: &mut Collector, views: &mut Views<'_>) -> Result<(), Error> {
    // Compiled into the reader's loop: a call per record shows.
    views.heads(
        #[inline(always)]
        |ctx, head| {
            collector.head(ctx, head);
            Ok(())
        },
    )
}

/// What a graph shows: its subtitle, the unit of its counts, and what it
/// has none of.
struct Kind {
    subtitle: &'static str,
    unit: &'static str,
    none: &'static str,
}

const DURATIONS: Kind = Kind {
    subtitle: "durations per thread, by self time",
    unit: "ns",
    none: "durations",
};

const SAMPLES: Kind = Kind {
    subtitle: "CPU samples, by count",
    unit: "samples",
    none: "samples",
};

/// What the sample and allocation graphs read in one walk: the names
/// (`Gather`), the graph's own records (`records`: the samples' or the
/// allocations' collector) and, with `--inside`, the slices of every
/// thread.
struct Walked<C> {
    trace: String,
    gather: Gather,
    records: C,
    timeline: Option<Timeline>,
}

/// A collector of the records a graph draws (samples or allocations),
/// one per range of the walk, merged in file order.
trait Records: Default + Send {
    /// Takes a record that is not an event (its provider's id and clock).
    fn see(&mut self, provider: Option<u32>, ticks_per_second: u64, record: &Record);
    /// Folds in the next range's records.
    fn merge(&mut self, later: Self);
}

impl Records for samples::Collector {
    fn see(&mut self, provider: Option<u32>, ticks_per_second: u64, record: &Record) {
        samples::Collector::see(self, provider, ticks_per_second, record)
    }
    fn merge(&mut self, later: Self) {
        samples::Collector::merge(self, later)
    }
}

impl Records for allocs::AllocCollector {
    fn see(&mut self, provider: Option<u32>, ticks_per_second: u64, record: &Record) {
        allocs::AllocCollector::see(self, provider, ticks_per_second, record)
    }
    fn merge(&mut self, later: Self) {
        allocs::AllocCollector::merge(self, later)
    }
}

impl<C: Records> Walked<C> {
    /// Walks the trace on every core, each record as the shared walk
    /// lends its view, the ranges merged in file order.
    fn read(args: &Args) -> Result<Walked<C>, Error> {
        let mut input = Input::open_trace(&args.file)?;
        let inside = args.inside.is_some();
        let new = || Walked {
            trace: String::new(),
            gather: Gather::default(),
            records: C::default(),
            timeline: inside.then(Timeline::default),
        };
        let (_, ranges) = input.walk_view_ranges("flame", new, |walked, views| {
            views.each(|ctx, view| walked.see(ctx, view))
        })?;
        let mut ranges = ranges.into_iter();
        let mut walked = ranges.next().unwrap_or_else(new);
        for range in ranges {
            walked.merge(range);
        }
        walked.trace = input.name;
        Ok(walked)
    }

    /// Takes one record of the walk.
    #[inline]
    fn see(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        self.gather.see_view(ctx, view)?;
        if let Some(t) = &mut self.timeline {
            t.see_view(ctx, view);
        }
        if let View::Record(record) = view {
            let tps = ticks_per_second_or_default(ctx.ticks_per_second());
            self.records.see(ctx.provider_id(), tps, record);
        }
        Ok(())
    }

    /// Folds in the next range of the walk.
    fn merge(&mut self, later: Walked<C>) {
        self.gather.merge(later.gather);
        self.records.merge(later.records);
        if let (Some(t), Some(later)) = (&mut self.timeline, later.timeline) {
            t.merge(later);
        }
    }
}

/// `fxt flame --samples [--inside NAME]`.
fn run_samples(args: Args) -> Result<ExitCode, Error> {
    let walked = Walked::<samples::Collector>::read(&args)?;
    let collector = walked.records;
    let names = walked.gather.finish();
    let enclosing = walked.timeline.map(|t| t.enclosing(&collector.samples));
    let filter = args.inside.as_deref().zip(enclosing.as_deref());
    let folded = samples::fold::fold(&collector.samples, &names, filter);
    if collector.malformed > 0 {
        eprintln!(
            "fxt: {}: {} malformed samples left out",
            walked.trace, collector.malformed
        );
    }
    output(&args, &walked.trace, &folded, SAMPLES)
}

const ALLOCATED: Kind = Kind {
    subtitle: "sampled allocations, by estimated bytes allocated",
    unit: "bytes",
    none: "sampled allocations",
};

const LIVE: Kind = Kind {
    subtitle: "sampled allocations live at the end, by estimated bytes",
    unit: "bytes",
    none: "live sampled allocations",
};

/// `fxt flame --alloc [--live] [--inside NAME]`.
fn run_allocs(args: Args) -> Result<ExitCode, Error> {
    let mut walked = Walked::<allocs::AllocCollector>::read(&args)?;
    let collector = std::mem::take(&mut walked.records);
    let samples = collector.as_samples();
    for s in &samples {
        walked.gather.add(s.sample.clone());
    }
    let names = walked.gather.finish();
    let keep = if args.live {
        collector.live()
    } else {
        vec![true; samples.len()]
    };
    let bytes: Vec<f64> = collector.allocs.iter().map(|a| a.bytes()).collect();
    let enclosing = walked.timeline.map(|t| t.enclosing(&samples));
    let filter = args.inside.as_deref().zip(enclosing.as_deref());
    let folded = allocs::fold(&samples, &bytes, &keep, &names, filter);
    if collector.malformed > 0 {
        eprintln!(
            "fxt: {}: {} malformed allocation records left out",
            walked.trace, collector.malformed
        );
    }
    let untracked = collector.untracked();
    if args.live && untracked > 0 {
        eprintln!(
            "fxt: {}: {untracked} sampled allocations were untracked (their frees not recorded): \
             counted live",
            walked.trace
        );
    }
    output(
        &args,
        &walked.trace,
        &folded,
        if args.live { LIVE } else { ALLOCATED },
    )
}

/// Prints the folded stacks and/or draws the SVG, as the arguments say.
fn output(args: &Args, trace: &str, folded: &Folded, kind: Kind) -> Result<ExitCode, Error> {
    if args.folded {
        let stdout = io::stdout();
        let mut out = BufWriter::new(stdout.lock());
        for line in folded.lines() {
            writeln!(out, "{line}").map_err(|e| Error::io("stdout", e))?;
        }
        out.flush().map_err(|e| Error::io("stdout", e))?;
    }
    let output = match (&args.output, args.folded) {
        (Some(o), _) => o.clone(),
        (None, true) => return Ok(ExitCode::SUCCESS),
        (None, false) if args.file == "-" => {
            return Err(Error::msg("flame: say where to write the SVG (-o OUT.svg)"))
        }
        (None, false) => Path::new(&args.file)
            .with_extension("svg")
            .to_string_lossy()
            .into_owned(),
    };
    if folded.stacks.is_empty() {
        return Err(Error::msg(format!(
            "flame: {trace} has no {} to draw{}",
            kind.none,
            if args.thread.is_some() || args.category.is_some() || args.inside.is_some() {
                " (with --thread/--category/--inside as given)"
            } else {
                ""
            }
        )));
    }
    write_svg(&output, trace, folded, &kind)?;
    eprintln!("fxt: wrote {output}");
    Ok(ExitCode::SUCCESS)
}

/// Draws `folded` with inferno into the file `output`.
fn write_svg(output: &str, trace: &str, folded: &Folded, kind: &Kind) -> Result<(), Error> {
    let mut options = Options::default();
    options.title = format!("fxt flame {trace}");
    options.subtitle = Some(kind.subtitle.into());
    options.count_name = kind.unit.into();
    options.name_type = "Span:".into();
    // Frames keep their place (stacks are already sorted) and colors follow
    // names, so that two graphs of one program compare.
    options.hash = true;
    let lines: Vec<String> = folded.lines().collect();
    let file = File::create(output).map_err(|e| Error::io(output, e))?;
    let mut out = BufWriter::new(file);
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| Error::io(output, e))?;
    out.flush().map_err(|e| Error::io(output, e))
}

/// Says on stderr what could not be folded as written.
fn warn(name: &str, folded: &Folded) {
    if folded.overlaps > 0 {
        eprintln!(
            "fxt: {name}: {} spans end after their parent (cut at its end)",
            folded.overlaps
        );
    }
    if folded.unmatched_ends > 0 || folded.unclosed_begins > 0 {
        eprintln!(
            "fxt: {name}: left out {} ends without a begin and {} begins never ended",
            folded.unmatched_ends, folded.unclosed_begins
        );
    }
}
