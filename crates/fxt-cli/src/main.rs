//! `fxt`: read, convert, merge, check and recover Fuchsia Trace Format
//! (FXT) files.
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
//! | `fxt export parquet FILE... -o DIR` | Apache Parquet tables (slices, instants, counters, ...) for DuckDB, Spark, ClickHouse |
//!
//! `FILE` may be `-` for stdin. A damaged input is read up to the damage
//! with a warning naming the file and byte offset.

use std::fmt;
use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod check;
mod convert;
mod dump;
mod export;
mod input;
mod json;
mod keep;
mod merge;
mod progress;
#[cfg(unix)]
mod record;
mod recover;
mod stats;

/// Read, convert, merge, check and recover Fuchsia Trace Format files.
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
}

/// An error that ends the command (exit status 2).
pub struct Error {
    message: String,
    broken_pipe: bool,
}

impl Error {
    /// An error with a message.
    pub fn msg(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            broken_pipe: false,
        }
    }

    /// An I/O error on `what` (a file name or "stdout").
    pub fn io(what: &str, error: io::Error) -> Error {
        Error {
            broken_pipe: error.kind() == io::ErrorKind::BrokenPipe,
            message: format!("{what}: {error}"),
        }
    }
}

impl From<io::Error> for Error {
    fn from(error: io::Error) -> Error {
        Error::io("output", error)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
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
    };
    match result {
        Ok(code) => code,
        // `fxt dump big.fxt | head`: the reader went away, which is fine.
        Err(e) if e.broken_pipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fxt: error: {e}");
            ExitCode::from(2)
        }
    }
}
