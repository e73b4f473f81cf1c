//! `fxt diff`: did a change make a program slower? The durations of base
//! runs against new runs, per category and name: each side's count, total
//! and percentiles, the change of the median, and whether it is
//! significant ([`compare`]); a table or `--json`; `--fail-above PCT` as
//! a CI gate (exit 1 on a significant growth above PCT percent, 2 on bad
//! input); with CPU samples on both sides, the samples per function with
//! the same test ([`sampled`]); `-o OUT.svg` a differential flame graph
//! ([`svg`]), of the samples when both sides have them.
//!
//! Each file is one run: a trace of `fxt::start`, or an archive of `fxt
//! record` / `fxt trace` (all its providers together).

mod allocated;
mod compare;
mod per_run;
mod ranktest;
mod reading;
mod report;
mod runs;
mod sample_walk;
mod sampled;
mod select;
mod svg;
mod table;

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use crate::error::Error;

use compare::{Row, Status};
use report::Context;
use runs::Run;
use select::Select;

/// Arguments of `fxt diff`.
#[derive(clap::Args)]
pub struct Args {
    /// `BASE NEW`: one run per side (or use --base and --new).
    #[arg(value_name = "FILE", conflicts_with_all = ["base", "new"])]
    files: Vec<String>,
    /// The base runs, one trace or archive per run.
    #[arg(long, num_args = 1.., value_name = "FILE", requires = "new")]
    base: Vec<String>,
    /// The new runs, one trace or archive per run.
    #[arg(long, num_args = 1.., value_name = "FILE", requires = "base")]
    new: Vec<String>,
    /// Exit with status 1 if any name's median grew significantly by more
    /// than PCT percent.
    #[arg(long, value_name = "PCT")]
    fail_above: Option<f64>,
    /// Confidence level of the significance test (two-sided).
    #[arg(long, default_value_t = 0.95, value_name = "LEVEL")]
    confidence: f64,
    /// Write a JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Write a differential flame graph (SVG) of the durations per thread:
    /// new runs' self time, red where it grew, blue where it shrank.
    #[arg(short, long, value_name = "OUT.svg")]
    output: Option<String>,
    /// Only this thread (its name, koid, or `name [koid]`).
    #[arg(long)]
    thread: Option<String>,
    /// Only durations of this category.
    #[arg(long)]
    category: Option<String>,
    /// Only durations of this name.
    #[arg(long)]
    name: Option<String>,
}

/// Runs `fxt diff`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let (base_files, new_files) = sides(&args)?;
    if !(args.confidence > 0.0 && args.confidence < 1.0) {
        return Err(Error::msg(
            "diff: --confidence must be between 0 and 1 (say 0.95)",
        ));
    }
    if args.fail_above.is_some_and(|p| !p.is_finite() || p < 0.0) {
        return Err(Error::msg(
            "diff: --fail-above takes a percentage of 0 or more",
        ));
    }
    let select = Select {
        thread: args.thread.clone(),
        category: args.category.clone(),
        name: args.name.clone(),
    };
    let stacks = args.output.is_some();
    let read = |files: &[String]| -> Result<Vec<Run>, Error> {
        files
            .iter()
            .map(|f| runs::read(f, &select, stacks))
            .collect()
    };
    let base = read(&base_files)?;
    let new = read(&new_files)?;
    for (what, side) in [("base", &base), ("new", &new)] {
        if side
            .iter()
            .all(|r| r.durations.is_empty() && r.samples.is_empty())
        {
            return Err(Error::msg(format!(
                "diff: the {what} side ({}) has no durations{}",
                side.iter()
                    .map(|r| r.file.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                selection(&select)
            )));
        }
    }
    let rows = compare::compare(&base, &new, 1.0 - args.confidence);
    let functions = sampled::compare(&base, &new, 1.0 - args.confidence);
    let allocated = allocated::compare(&base, &new, 1.0 - args.confidence);
    if !rows.iter().any(|r| r.status == Status::Both) && functions.rows.is_empty() {
        return Err(nothing_in_common(&rows, &select));
    }
    let cx = Context {
        base_files: &base_files,
        new_files: &new_files,
        confidence: args.confidence,
        fail_above: args.fail_above,
    };
    write_report(&cx, &rows, (&functions, &allocated), args.json)?;
    if let Some(path) = &args.output {
        svg::write(path, &base, &new)?;
        eprintln!("fxt: wrote {path}");
    }
    verdict(&cx, &rows, &base, &new)
}

/// The base and new files, from `BASE NEW` or `--base ... --new ...`.
fn sides(args: &Args) -> Result<(Vec<String>, Vec<String>), Error> {
    match args.files.as_slice() {
        [] if !args.base.is_empty() => Ok((args.base.clone(), args.new.clone())),
        [base, new] => Ok((vec![base.clone()], vec![new.clone()])),
        _ => Err(Error::msg(
            "diff: give BASE NEW, or --base FILE... --new FILE... (one trace per run)",
        )),
    }
}

fn selection(select: &Select) -> &'static str {
    if select.thread.is_some() || select.category.is_some() || select.name.is_some() {
        " (with --thread/--category/--name as given)"
    } else {
        ""
    }
}

/// The error for sides with no name in common, naming a few of each.
fn nothing_in_common(rows: &[Row], select: &Select) -> Error {
    let some = |status: Status| {
        let names: Vec<String> = rows
            .iter()
            .filter(|r| r.status == status)
            .take(5)
            .map(|r| format!("{}/{}", r.key.0, r.key.1))
            .collect();
        names.join(", ")
    };
    Error::msg(format!(
        "diff: the sides have no duration name in common{}: base has {}; new has {}",
        selection(select),
        some(Status::Vanished),
        some(Status::Appeared)
    ))
}

fn write_report(
    cx: &Context<'_>,
    rows: &[Row],
    (functions, allocated): (&sampled::Sampled, &[per_run::Keyed]),
    json: bool,
) -> Result<(), Error> {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if json {
        let mut doc = report::json(cx, rows);
        doc["samples"] = sampled::json(functions);
        doc["allocations"] = allocated::json(allocated);
        serde_json::to_writer_pretty(&mut out, &doc).map_err(|e| Error::io("stdout", e.into()))?;
        writeln!(out).map_err(|e| Error::io("stdout", e))?;
    } else {
        report::table(&mut out, cx, rows).map_err(|e| Error::io("stdout", e))?;
        sampled::table(&mut out, functions).map_err(|e| Error::io("stdout", e))?;
        allocated::table(&mut out, allocated).map_err(|e| Error::io("stdout", e))?;
    }
    out.flush().map_err(|e| Error::io("stdout", e))
}

/// Exit status 2 for damaged inputs or nothing testable, else 1 for a
/// regression beyond `--fail-above`, else 0.
fn verdict(cx: &Context<'_>, rows: &[Row], base: &[Run], new: &[Run]) -> Result<ExitCode, Error> {
    let damaged: Vec<&str> = base
        .iter()
        .chain(new)
        .filter_map(|r| r.damage.as_deref())
        .collect();
    if !damaged.is_empty() {
        return Err(Error::msg(format!(
            "diff: {} damaged trace(s), compared up to the damage only: {}",
            damaged.len(),
            damaged.join("; ")
        )));
    }
    if !rows.iter().any(|r| r.p_value.is_some()) && rows.iter().any(|r| r.status == Status::Both) {
        return Err(Error::msg(
            "diff: no name in common has enough slices on both sides to test (two or more, \
             in two or more runs when a side has several)",
        ));
    }
    let regressions: Vec<String> = rows
        .iter()
        .filter(|r| cx.regression(r))
        .map(|r| {
            format!(
                "{}/{} {:+.1}%",
                r.key.0,
                r.key.1,
                r.change.unwrap_or(0.0) * 100.0
            )
        })
        .collect();
    if regressions.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "fxt: diff: {} name(s) significantly slower by more than {}%: {}",
        regressions.len(),
        cx.fail_above.unwrap_or(0.0),
        regressions.join(", ")
    );
    Ok(ExitCode::from(1))
}
