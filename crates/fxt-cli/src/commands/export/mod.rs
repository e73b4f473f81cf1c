//! `fxt export parquet FILE... -o DIR [--host NAME]`: traces as Apache
//! Parquet tables that DuckDB, Spark, ClickHouse, Trino, pandas and polars
//! read as they are, one folder per table so that the exports of a fleet
//! land side by side and one query reads them all ([`schema`] gives the
//! layout, README's "Querying many traces" the tables).
//!
//! Each input is read twice, memory bounded by the row groups and the open
//! spans, never by the trace:
//!
//! 1. [`scan`]: which records `fxt recover` would keep (a damaged trace
//!    exports what it would write), the names of processes and threads,
//!    and every slice's depth and parent ([`nesting`]);
//! 2. [`rows`]: the rows, written a row group at a time ([`table`]).
//!
//! What is kept out of the tables is counted in the summary printed at the
//! end ([`summary`]). Many inputs are exported on as many threads
//! ([`parallel`]), each writing a part of its own.

mod args;
mod begins;
mod counters;
mod events;
mod existing;
mod keys;
mod labels;
mod memory;
mod nesting;
mod parallel;
mod rows;
mod samples;
mod scan;
mod schema;
mod summary;
mod table;
mod tasks;
mod threads;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::Error;
use crate::input::Input;
use crate::keep::Fix;
use crate::problems::Reason;
// The Parquet page writer, a crate of its own below the command line
// (it knows nothing of fxt), named as the tables name their encoder.
use fxt_parquet as encode;
use labels::{Labels, Seen};
use schema::Tables;
use summary::Summary;

/// Arguments of `fxt export`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    format: Format,
}

/// The formats `fxt export` writes.
#[derive(clap::Subcommand)]
enum Format {
    /// Apache Parquet tables, one folder per table:
    /// DIR/TABLE/part-HOST-N.parquet.
    Parquet(ParquetArgs),
}

/// Arguments of `fxt export parquet`.
#[derive(clap::Args)]
struct ParquetArgs {
    /// Traces or archives (`-` for stdin, read into memory).
    #[arg(required = true)]
    files: Vec<String>,
    /// The folder of the tables (created if missing; other exports' files
    /// in it are kept).
    #[arg(short, long)]
    output: PathBuf,
    /// The `host` column and file name part (default: this machine's name).
    #[arg(long)]
    host: Option<String>,
    /// Replace the rows of a trace the folder already holds from this
    /// host (by default such a trace is refused: its rows would be there
    /// twice).
    #[arg(long)]
    replace: bool,
}

/// Runs `fxt export`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let Format::Parquet(args) = args.format;
    let host = match args.host {
        Some(h) => h,
        None => hostname(),
    };
    let traces: BTreeSet<String> = args.files.iter().cloned().collect();
    if traces.len() < args.files.len() {
        return Err(Error::msg(
            "a trace is named twice: its rows would be exported twice",
        ));
    }
    let earlier = existing::parts(&args.output, &host)?;
    let clashing: Vec<&existing::Part> = earlier
        .iter()
        .filter(|p| p.traces.iter().any(|t| traces.contains(t)))
        .collect();
    if let (Some(part), false) = (clashing.first(), args.replace) {
        let trace = part.traces.iter().find(|t| traces.contains(*t));
        return Err(Error::msg(format!(
            "{} already holds {} from host {host} ({}): exported again, its rows would be there twice; --replace replaces them",
            args.output.display(),
            trace.map_or("", String::as_str),
            part.file_name
        )));
    }
    memory::keep_freed_memory();
    let made = Folders::before(&args.output);
    std::fs::create_dir_all(&args.output)
        .map_err(|e| Error::msg(format!("cannot create {}: {e}", args.output.display())))?;
    let (parts, summary) = parallel::export_all(&args.files, &host, &args.output, export_one)
        .inspect_err(|_| made.remove_empty())?;
    let mut rows: Vec<(&'static str, u64)> = schema::TABLES.iter().map(|t| (*t, 0)).collect();
    for mut part in parts {
        let metadata = existing::key_values(&host, &part.traces);
        for (t, count) in part.tables.all()?.into_iter().zip(rows.iter_mut()) {
            t.close(&metadata)?;
            count.1 += t.rows();
        }
    }
    // Only once the new rows are in place: a failure leaves the old ones.
    for part in clashing {
        existing::remove(&args.output, part, &traces)?;
        eprintln!(
            "fxt: replaced the earlier rows of {} in {}",
            part.traces
                .iter()
                .filter(|t| traces.contains(*t))
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            part.file_name
        );
    }
    summary.print(&rows, &args.output.display().to_string());
    Ok(ExitCode::SUCCESS)
}

/// The folders an export would create (the output folder and its tables'),
/// noted before it starts, so that an export that fails (an input that is
/// not a trace) leaves no empty folders behind.
struct Folders(Vec<PathBuf>);

impl Folders {
    /// The folders of `output` that do not exist yet, innermost first.
    fn before(output: &Path) -> Self {
        let tables = schema::TABLES.iter().map(|t| output.join(t));
        let all = tables.chain(std::iter::once(output.to_path_buf()));
        Folders(all.filter(|f| !f.exists()).collect())
    }

    /// Removes those of them that are empty (`remove_dir` refuses any
    /// other, so nothing written is ever removed).
    fn remove_empty(&self) {
        for folder in &self.0 {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// Exports one input into the tables: a regular file is mapped and walked
/// twice, its pages let go of behind each walk (memory stays bounded
/// however large it is), anything else (stdin, a pipe) is read into
/// memory once.
fn export_one(
    file: &str,
    host: &str,
    dir: &Path,
    tables: &mut Tables,
    summary: &mut Summary,
) -> Result<(), Error> {
    let mut input = match Input::open_trace_bounded(file)? {
        Some(input) => input,
        None => Input::open_trace_bytes(file)?,
    };
    let len = input.bytes().map_or(0, |b| b.len() as u64);
    let mut scan = scan::scan(&mut input, dir)?;
    // The first pass has warned about the damage already.
    input.quiet = true;
    let walk = &scan.walk;
    summary.inputs += 1;
    summary.records += walk.records;
    summary.nesting_out_of_order += scan.out_of_order;
    if let Some(d) = &walk.damage {
        summary.damaged_inputs += 1;
        summary.unread_bytes += len.saturating_sub(d.offset());
    }
    count_left_out(
        &scan.fixes,
        walk.skipped.len() as u64,
        &mut summary.left_out,
    );
    let names = std::mem::take(&mut scan.names);
    let mut rows = rows::Rows::new(file, host, &scan.labels, scan.nesting, tables, summary);
    rows.names = names;
    rows.write(&mut input, &scan.fixes)?;
    let seen = std::mem::take(&mut rows.seen);
    drop(rows);
    threads_and_processes(file, host, &scan.labels, &seen, tables, summary)
}

/// Adds the records left out, per reason, to `counts`.
fn count_left_out(
    fixes: &std::collections::HashMap<u64, Fix>,
    malformed: u64,
    counts: &mut BTreeMap<Reason, u64>,
) {
    for fix in fixes.values() {
        if let Fix::Drop(reason) = fix {
            *counts.entry(*reason).or_default() += 1;
        }
    }
    if malformed > 0 {
        *counts.entry(Reason::Malformed).or_default() += malformed;
    }
}

/// The `threads` and `processes` rows of one input: every thread and
/// process its rows mention or its kernel objects name.
fn threads_and_processes(
    trace: &str,
    host: &str,
    labels: &Labels,
    seen: &Seen,
    tables: &mut Tables,
    summary: &mut Summary,
) -> Result<(), Error> {
    let (named_threads, named_processes) = labels.named();
    let mut threads: BTreeMap<(Option<u64>, u64), Option<u32>> = seen
        .threads
        .iter()
        .map(|(&(pid, tid), &p)| ((Some(pid), tid), p))
        .collect();
    let known_tids: std::collections::BTreeSet<u64> = threads.keys().map(|k| k.1).collect();
    for (tid, pid) in named_threads {
        if !known_tids.contains(&tid) {
            threads.entry((Some(pid), tid)).or_insert(None);
        }
    }
    for &tid in &seen.bare_tids {
        if !threads.keys().any(|k| k.1 == tid) {
            threads.insert((labels.pid_of(tid), tid), None);
        }
    }
    let mut processes: BTreeMap<u64, Option<u32>> = seen.processes.clone();
    for pid in named_processes
        .into_iter()
        .chain(threads.keys().filter_map(|k| k.0))
    {
        processes.entry(pid).or_insert(None);
    }
    let source = |provider| schema::Source {
        trace: Some(trace),
        host: Some(host),
        provider: labels.provider(provider),
    };
    for (&(pid, tid), &provider) in &threads {
        let thread = schema::Thread {
            source: source(provider),
            pid: pid.map(|p| p as i64),
            process: pid.and_then(|p| labels.process(p, provider)),
            tid: Some(tid as i64),
            thread: labels.thread(tid),
        };
        tables.threads.push(&thread, summary)?;
    }
    for (&pid, &provider) in &processes {
        let process = schema::Process {
            source: source(provider),
            pid: Some(pid as i64),
            process: labels.process(pid, provider),
        };
        tables.processes.push(&process, summary)?;
    }
    Ok(())
}

/// This machine's name (`gethostname`), or `localhost`.
fn hostname() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is writable for its whole length, which is
        // passed; the result is NUL-terminated when it fits (checked below).
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc == 0 {
            let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            if let Ok(name) = std::str::from_utf8(&buf[..len]) {
                if !name.is_empty() {
                    return name.to_owned();
                }
            }
        }
    }
    "localhost".into()
}
