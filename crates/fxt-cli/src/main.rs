//! `fxt`: read, check, convert and export Fuchsia Trace Format (FXT)
//! traces, record process trees and trace running processes.
//!
//! | command | what it does |
//! |---|---|
//! | `fxt dump FILE` | one readable line per record |
//! | `fxt stats FILE` | time span, counts, duration statistics, threads |
//! | `fxt json FILE` | Chrome Trace Event JSON (chrome://tracing, Perfetto, speedscope) |
//! | `fxt merge A B ... -o OUT` | one archive of several providers' traces |
//! | `fxt check FILE` | strict validation; exits 1 on any problem |
//! | `fxt check --perfetto FILE` | what Perfetto and Tracy would misread or drop; exits 1 if any |
//! | `fxt recover FILE -o OUT` | a trace `fxt check` passes, from every well-formed record up to the damage |
//! | `fxt convert --perfetto FILE -o OUT` | a copy that `fxt check --perfetto` passes |
//! | `fxt record -o OUT -- CMD ARGS...` | runs CMD, traces it and its descendants into one archive |
//! | `fxt open FILE` | serves the trace to Perfetto UI on 127.0.0.1:9001 and opens it |
//! | `fxt flame FILE [-o OUT.svg] [--folded]` | a flame graph of durations per thread, by self time (`--samples [--inside NAME]`: of CPU samples) |
//! | `fxt diff --base B... --new N... [--fail-above PCT] [-o OUT.svg]` | per name, the change of the median and whether it is significant; a CI gate; a differential flame graph |
//! | `fxt trace list\|start\|stop\|snapshot\|record` | traces running provider processes for a window into one archive |
//! | `fxt export parquet FILE... -o DIR` | Apache Parquet tables (slices, instants, counters, ...) for DuckDB, Spark, ClickHouse |
//! | `fxt symbolize FILE [-o OUT]` | names the CPU samples of a trace that has no symbols, with this machine's binaries |
//!
//! `FILE` may be `-` for stdin. A damaged input is read up to the damage
//! with a warning naming the file and byte offset; a file that does not
//! begin with the FXT magic number record is not a trace (exit status 2).
//!
//! # Where things are
//!
//! This file only parses the command line and dispatches. Modules import
//! only downward, from the commands to the floor (`tests/layers.rs` checks
//! it; nothing imports from this file):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | commands | [`commands`]`::{dump, stats, json, merge, check, recover, convert, record, trace, open, flame, export, diff, symbolize}` | one subcommand each: `Args` and `run`; a command never imports another |
//! | recording | [`recording`]`::{spool, timebase, sched, capture, collect}` | tracing process trees into one archive on one clock (`fxt record`, and any command that collects running processes' traces) |
//! | shared | [`archive`], [`keep`], [`samples`], [`problems`], [`durations`], [`folded`] | the archive writer (merge, record); which records `fxt recover` keeps (recover, export); CPU samples with their names and enclosing slices (dump, flame, stats, export); the strict check's rules and begin/end matching (check, recover, diff); durations as folded stacks by self time (flame, diff) |
//! | reading | [`input`], [`names`] | opening and walking a trace; the names of record types and event kinds |
//! | floor | [`error`], [`progress`], [`serve`] | the error that ends a command; the progress bar; serving one file over HTTP until it is fetched (open) |
//!
//! A new command is a module in `commands/` (a folder if it has parts of
//! its own), a variant of `Command` below and its line in `main`; what it
//! shares with another command goes down into a shared module.

#![warn(clippy::undocumented_unsafe_blocks)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use commands::{
    check, convert, diff, dump, export, flame, json, merge, open, recover, stats, symbolize,
};

mod archive;
mod clock;
mod commands;
mod durations;
mod epoch;
mod error;
mod folded;
mod formatted;
mod heads;
mod input;
mod interned;
mod keep;
mod names;
mod piece;
mod problems;
mod progress;
mod recent;
#[cfg(unix)]
mod recording;
mod samples;
mod serve;
mod shapes;
mod usual;
mod walk;

#[cfg(unix)]
use commands::{record, trace};

/// Fuchsia Trace Format (FXT) traces: read them (dump, stats, json, flame),
/// check and repair them (check, recover, convert), combine and export them
/// (merge, export parquet), open them in Perfetto UI (open), record process
/// trees (record) and running processes (trace).
#[derive(Parser)]
#[command(name = "fxt", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print one line per record: type, timestamp, thread, category, name, arguments.
    Dump(dump::Args),
    /// Summarize a trace: time span, record and event counts, durations, threads.
    Stats(stats::Args),
    /// Convert to Chrome Trace Event JSON (chrome://tracing, Perfetto, speedscope).
    Json(json::Args),
    /// Merge traces of several providers into one archive.
    Merge(merge::Args),
    /// Validate a trace strictly; exit with status 1 if anything is wrong.
    Check(check::Args),
    /// Write every well-formed record of a damaged trace to a clean trace.
    Recover(recover::Args),
    /// Rewrite a trace so that a viewer reads it whole (--perfetto: Perfetto, Tracy).
    Convert(convert::Args),
    /// Export traces as tables: `fxt export parquet FILE... -o DIR [--host NAME]`.
    Export(export::Args),
    /// Run a command, trace it and every descendant that links fxt, and
    /// merge their traces into one archive: `fxt record -o trace.fxt -- CMD ARGS...`.
    #[cfg(unix)]
    Record(record::Args),
    /// Open a trace in Perfetto UI: serve it on 127.0.0.1:9001 until the UI
    /// has fetched it, and open the link in the browser.
    Open(open::Args),
    /// Draw a flame graph of the durations per thread, by self time (SVG,
    /// or --folded stacks).
    Flame(flame::Args),
    /// Compare base runs with new runs: per name, the change of the median
    /// and whether it is significant; `--fail-above PCT` gates CI.
    Diff(diff::Args),
    /// Trace running provider processes (`fxt::register_provider`) for a
    /// window: list, start, stop, snapshot, record --duration.
    #[cfg(unix)]
    Trace(trace::Args),
    /// Name the CPU samples of a trace that has no symbols (a killed
    /// process's crash-safe file), with the binaries on this machine.
    Symbolize(symbolize::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Dump(args) => dump::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Json(args) => json::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Check(args) => check::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Export(args) => export::run(args),
        #[cfg(unix)]
        Command::Record(args) => record::run(args),
        Command::Open(args) => open::run(args),
        Command::Flame(args) => flame::run(args),
        Command::Diff(args) => diff::run(args),
        #[cfg(unix)]
        Command::Trace(args) => trace::run(args),
        Command::Symbolize(args) => symbolize::run(args),
    };
    match result {
        Ok(code) => code,
        // `fxt dump big.fxt | head`: the reader went away, which is fine.
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fxt: error: {e}");
            ExitCode::from(2)
        }
    }
}
