//! The tables, their columns, and where their files go:
//! `DIR/<table>/part-<host>-<n>.parquet`, one file per table per export,
//! `n` the smallest number no earlier export into `DIR` from that host
//! used (claimed through the `slices` table's file, see [`create`], so two
//! exports running at once never write the same file). Files are written
//! under hidden names (`.part-<host>-<n>.parquet.partial`, which no
//! `*.parquet` pattern matches) and renamed when complete.
//!
//! Every event table starts with the same columns ([`EVENT`]): `trace`
//! (the input file as named on the command line), `host`, `pid`,
//! `process`, `tid`, `thread`, `category`, `name`, `ts` (nanoseconds, on
//! the trace's clock). README's "Querying many traces" documents each
//! table.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

use super::table::{Col, Paths, Table};
use crate::error::Error;

/// The columns every event table starts with.
pub const EVENT: &[(&str, Col)] = &[
    ("trace", Col::Str),
    ("host", Col::Str),
    ("pid", Col::I64),
    ("process", Col::Str),
    ("tid", Col::I64),
    ("thread", Col::Str),
    ("category", Col::Str),
    ("name", Col::Str),
    ("ts", Col::I64),
];

/// The argument maps (see [`super::args`]).
pub const ARGS: &[(&str, Col)] = &[
    ("args", Col::MapStr),
    ("args_int", Col::MapI64),
    ("args_float", Col::MapF64),
];

/// Columns of `slices` after [`EVENT`]; the argument maps follow.
pub const SLICES: &[(&str, Col)] = &[
    ("dur", Col::I64),
    ("id", Col::I64),
    ("depth", Col::I32),
    ("parent", Col::I64),
    ("kind", Col::Str),
    ("async_id", Col::I64),
];

/// Columns of `instants` after [`EVENT`]; the argument maps follow.
pub const INSTANTS: &[(&str, Col)] = &[("kind", Col::Str), ("async_id", Col::I64)];

/// Columns of `counters` after [`EVENT`].
pub const COUNTERS: &[(&str, Col)] = &[
    ("counter_id", Col::I64),
    ("series", Col::Str),
    ("value", Col::F64),
    ("int_value", Col::I64),
];

/// Columns of `flows` after [`EVENT`]; the argument maps follow.
pub const FLOWS: &[(&str, Col)] = &[("flow_id", Col::I64), ("phase", Col::Str)];

/// Columns of `threads`.
pub const THREADS: &[(&str, Col)] = &[
    ("trace", Col::Str),
    ("host", Col::Str),
    ("pid", Col::I64),
    ("process", Col::Str),
    ("tid", Col::I64),
    ("thread", Col::Str),
];

/// Columns of `processes`.
pub const PROCESSES: &[(&str, Col)] = &[
    ("trace", Col::Str),
    ("host", Col::Str),
    ("pid", Col::I64),
    ("process", Col::Str),
];

/// Columns of `sched` (context switches).
pub const SCHED: &[(&str, Col)] = &[
    ("trace", Col::Str),
    ("host", Col::Str),
    ("ts", Col::I64),
    ("cpu", Col::I32),
    ("out_pid", Col::I64),
    ("out_tid", Col::I64),
    ("out_thread", Col::Str),
    ("out_state", Col::Str),
    ("in_pid", Col::I64),
    ("in_tid", Col::I64),
    ("in_thread", Col::Str),
];

/// Columns of `wakeups`.
pub const WAKEUPS: &[(&str, Col)] = &[
    ("trace", Col::Str),
    ("host", Col::Str),
    ("ts", Col::I64),
    ("cpu", Col::I32),
    ("pid", Col::I64),
    ("tid", Col::I64),
    ("thread", Col::Str),
];

/// Columns of `samples` (CPU samples, issue 31).
pub const SAMPLES: &[(&str, Col)] = &[
    ("trace", Col::Str),
    ("host", Col::Str),
    ("pid", Col::I64),
    ("tid", Col::I64),
    ("thread", Col::Str),
    ("ts", Col::I64),
    ("frames", Col::ListStr),
    ("slice_id", Col::I64),
];

/// Every table of an export.
pub struct Tables {
    /// Durations, complete events, async spans.
    pub slices: Table,
    /// Instants and async instants.
    pub instants: Table,
    /// One row per counter series value.
    pub counters: Table,
    /// Flow begin, step and end events.
    pub flows: Table,
    /// Threads.
    pub threads: Table,
    /// Processes.
    pub processes: Table,
    /// Context switches.
    pub sched: Table,
    /// Thread wakeups.
    pub wakeups: Table,
    /// CPU samples.
    pub samples: Table,
}

/// A file name's safe form of a host name (letters, digits, `.`, `_`).
pub fn file_safe(host: &str) -> String {
    let safe: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        "host".into()
    } else {
        safe
    }
}

impl Tables {
    /// Creates every table's file under `dir` for `host`, with a fresh part
    /// number.
    pub fn create(dir: &Path, host: &str) -> Result<Tables, Error> {
        let host = file_safe(host);
        let mut n = 0u64;
        let slices = loop {
            match create("slices", dir, &host, n, true)? {
                Some(t) => break t,
                None => n += 1,
            }
        };
        let table = |name| -> Result<Table, Error> {
            create(name, dir, &host, n, false)?
                .ok_or_else(|| Error::msg(format!("{name}: part {n} exists")))
        };
        Ok(Tables {
            slices,
            instants: table("instants")?,
            counters: table("counters")?,
            flows: table("flows")?,
            threads: table("threads")?,
            processes: table("processes")?,
            sched: table("sched")?,
            wakeups: table("wakeups")?,
            samples: table("samples")?,
        })
    }

    /// Every table, in documentation order.
    pub fn all(&mut self) -> [&mut Table; 9] {
        [
            &mut self.slices,
            &mut self.instants,
            &mut self.counters,
            &mut self.flows,
            &mut self.threads,
            &mut self.processes,
            &mut self.sched,
            &mut self.wakeups,
            &mut self.samples,
        ]
    }
}

/// The columns of table `name`.
pub fn columns(name: &str) -> Vec<(&'static str, Col)> {
    let event = |own: &[(&'static str, Col)], args: bool| {
        let mut c = EVENT.to_vec();
        c.extend_from_slice(own);
        if args {
            c.extend_from_slice(ARGS);
        }
        c
    };
    match name {
        "slices" => event(SLICES, true),
        "instants" => event(INSTANTS, true),
        "counters" => event(COUNTERS, false),
        "flows" => event(FLOWS, true),
        "threads" => THREADS.to_vec(),
        "processes" => PROCESSES.to_vec(),
        "sched" => SCHED.to_vec(),
        "samples" => SAMPLES.to_vec(),
        _ => WAKEUPS.to_vec(),
    }
}

/// Creates the file of table `name`, part `n`: `None` if `may_exist` and
/// part `n` is taken (its file is complete, or being written: claimed by
/// creating the hidden partial file exclusively, then checking that no
/// complete file has that name; an export renames its partial files only
/// after claiming, so two exports never share a part).
fn create(
    name: &'static str,
    dir: &Path,
    host: &str,
    n: u64,
    may_exist: bool,
) -> Result<Option<Table>, Error> {
    let folder = dir.join(name);
    fs::create_dir_all(&folder)
        .map_err(|e| Error::msg(format!("cannot create {}: {e}", folder.display())))?;
    let paths = Paths {
        partial: folder.join(format!(".part-{host}-{n}.parquet.partial")),
        done: folder.join(format!("part-{host}-{n}.parquet")),
    };
    let shown = paths.done.display().to_string();
    let taken = |e: io::Error| {
        if may_exist && e.kind() == io::ErrorKind::AlreadyExists {
            Ok(None)
        } else {
            Err(Error::msg(format!("cannot create {shown}: {e}")))
        }
    };
    let file: File = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&paths.partial)
    {
        Ok(f) => f,
        Err(e) => return taken(e),
    };
    if paths.done.exists() {
        let _ = fs::remove_file(&paths.partial);
        return taken(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    Table::new(name, &columns(name), file, paths).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_become_file_name_parts() {
        assert_eq!(file_safe("web-7.example.com"), "web_7.example.com");
        assert_eq!(file_safe("my host!/../x"), "my_host__.._x");
        assert_eq!(file_safe(""), "host");
    }

    #[test]
    fn every_event_table_starts_with_the_event_columns() {
        for table in ["slices", "instants", "counters", "flows"] {
            assert_eq!(&columns(table)[..EVENT.len()], EVENT, "{table}");
        }
        assert_eq!(columns("sched"), SCHED);
    }
}
