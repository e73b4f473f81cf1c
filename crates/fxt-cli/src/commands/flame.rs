//! `fxt flame`: a flame graph of a trace's durations, per thread, weighted
//! by self time in nanoseconds ([`crate::folded`]).
//!
//! `--folded` prints the folded stacks (`thread;outer;inner NS`) for
//! inferno, `flamegraph.pl` or speedscope; `-o OUT.svg` (default: the
//! trace's name with `.svg`) draws them with inferno's renderer, an SVG
//! with search, zoom and a title per frame giving its time.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use inferno::flamegraph::{self, Options};

use crate::error::Error;
use crate::folded::{Collector, Filter, Folded};
use crate::input::Input;

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
    /// Only this thread (its name, koid, or `name (koid)` as in the graph).
    #[arg(long)]
    thread: Option<String>,
    /// Only spans of this category.
    #[arg(long)]
    category: Option<String>,
}

/// Runs `fxt flame`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_trace(&args.file)?;
    let filter = Filter {
        thread: args.thread.clone(),
        category: args.category.clone(),
    };
    let new = || Collector::new(filter.clone());
    let (_, ranges) = input.walk_ranges("flame", new, |collector, reader, record| {
        collector.record(reader.provider_id(), reader.ticks_per_second(), &record);
        Ok(())
    })?;
    let mut collector = new();
    for range in ranges {
        collector.merge(range);
    }
    let folded = collector.finish();
    warn(&input.name, &folded);
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
            "flame: {} has no durations to draw{}",
            input.name,
            if args.thread.is_some() || args.category.is_some() {
                " (with --thread/--category as given)"
            } else {
                ""
            }
        )));
    }
    write_svg(&output, &input.name, &folded)?;
    eprintln!("fxt: wrote {output}");
    Ok(ExitCode::SUCCESS)
}

/// Draws `folded` with inferno into the file `output`.
fn write_svg(output: &str, trace: &str, folded: &Folded) -> Result<(), Error> {
    let mut options = Options::default();
    options.title = format!("fxt flame {trace}");
    options.subtitle = Some("durations per thread, by self time".into());
    options.count_name = "ns".into();
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
