//! The tables, their columns, and where their files go:
//! `DIR/<table>/part-<host>-<n>.parquet`, one file per table per export
//! (per thread of an export of several inputs, see [`super::parallel`]),
//! `n` the smallest number no earlier export into `DIR` from that host
//! used (claimed through the `slices` table's file, see [`create`], so two
//! exports running at once never write the same file). Files are written
//! under hidden names (`.part-<host>-<n>.parquet.partial`, which no
//! `*.parquet` pattern matches) and renamed when complete.
//!
//! Each table is declared once, as its row type: the columns in order,
//! each a typed field (`Option<&str>` a string, `Option<i64>` a 64-bit
//! integer, ...) or a group of columns. [`Source`] (`trace`, the input
//! file as named on the command line; `host`; `provider`, the name of the
//! provider that recorded the row) begins every table; [`Event`] (the
//! source, `pid`, `process`, `tid`, `thread`, `category`, `name`, `ts` in
//! nanoseconds on the trace's clock) begins every event table; the
//! argument maps ([`ArgMaps`]) end some. The writer builds rows with
//! named fields, so a missing, extra or mistyped column does not compile.
//! README's "Querying many traces" documents each table.

use fxt_format::decode::ThreadState;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

use super::encode::Leaf;
use super::summary::Summary;

pub use super::args::ArgMaps;
pub use super::events::Event;
use super::table::{Col, Columns, Paths, Table, TableSchema, TypedTable};
use crate::error::Error;

/// Declares a row type `$row<$lt>`: its fields are the table's columns (a
/// scalar named after its field) or groups of them, in order.
macro_rules! row {
    ($(#[$doc:meta])* $row:ident<$lt:lifetime> {
        $($(#[$fdoc:meta])* $field:ident: $ty:ty,)*
    }) => {
        $(#[$doc])*
        pub struct $row<$lt> {
            $($(#[$fdoc])* pub $field: $ty,)*
        }

        impl<$lt> Columns for $row<$lt> {
            type Builders = ($(<$ty as Columns>::Builders,)*);

            fn declare(_: &'static str, out: &mut Vec<(&'static str, Col)>) {
                $(<$ty as Columns>::declare(stringify!($field), out);)*
            }

            fn builders() -> Self::Builders {
                ($(<$ty as Columns>::builders(),)*)
            }

            #[inline]
            fn append(&self, b: &mut Self::Builders, summary: &mut Summary) -> Result<(), Error> {
                let ($($field,)*) = b;
                $(self.$field.append($field, summary)?;)*
                Ok(())
            }

            fn finish(b: &mut Self::Builders, out: &mut Vec<Leaf>) {
                let ($($field,)*) = b;
                $(<$ty as Columns>::finish($field, out);)*
            }
        }
    };
}

/// Declares table `$table` (folder `$name`) of rows `$row`.
macro_rules! table {
    ($(#[$doc:meta])* $table:ident = $name:literal of $row:ident) => {
        $(#[$doc])*
        pub struct $table;

        impl TableSchema for $table {
            const NAME: &'static str = $name;
            type Builders = <$row<'static> as Columns>::Builders;
            type Row<'a> = $row<'a>;
        }
    };
}

row! {
    /// The columns every table begins with.
    Source<'a> {
        /// The input file, as named on the command line.
        trace: Option<&'a str>,
        /// `--host`.
        host: Option<&'a str>,
        /// The name of the provider that recorded the row.
        provider: Option<&'a str>,
    }
}

row! {
    /// A duration, complete event or async span.
    Slice<'a> {
        event: Event<'a>,
        dur: Option<i64>,
        id: Option<i64>,
        depth: Option<i32>,
        parent: Option<i64>,
        kind: Option<&'a str>,
        async_id: Option<i64>,
        args: ArgMaps<'a>,
    }
}

row! {
    /// An instant or async instant.
    Instant<'a> {
        event: Event<'a>,
        kind: Option<&'a str>,
        async_id: Option<i64>,
        args: ArgMaps<'a>,
    }
}

row! {
    /// One series' value of a counter event.
    Counter<'a> {
        event: Event<'a>,
        counter_id: Option<i64>,
        series: Option<&'a str>,
        value: Option<f64>,
        int_value: Option<i64>,
    }
}

row! {
    /// A flow begin, step or end.
    Flow<'a> {
        event: Event<'a>,
        flow_id: Option<i64>,
        phase: Option<&'a str>,
        args: ArgMaps<'a>,
    }
}

row! {
    /// A thread.
    Thread<'a> {
        source: Source<'a>,
        pid: Option<i64>,
        process: Option<&'a str>,
        tid: Option<i64>,
        thread: Option<&'a str>,
    }
}

row! {
    /// A process.
    Process<'a> {
        source: Source<'a>,
        pid: Option<i64>,
        process: Option<&'a str>,
    }
}

row! {
    /// A context switch.
    Switch<'a> {
        source: Source<'a>,
        ts: Option<i64>,
        cpu: Option<i32>,
        out_pid: Option<i64>,
        out_tid: Option<i64>,
        out_thread: Option<&'a str>,
        out_state: Option<&'a str>,
        in_pid: Option<i64>,
        in_tid: Option<i64>,
        in_thread: Option<&'a str>,
    }
}

row! {
    /// A thread wakeup.
    Wakeup<'a> {
        source: Source<'a>,
        ts: Option<i64>,
        cpu: Option<i32>,
        pid: Option<i64>,
        tid: Option<i64>,
        thread: Option<&'a str>,
    }
}

row! {
    /// A CPU sample (issue 31).
    SampleRow<'a> {
        source: Source<'a>,
        pid: Option<i64>,
        tid: Option<i64>,
        thread: Option<&'a str>,
        ts: Option<i64>,
        /// Function names, innermost first, inlined frames included.
        frames: Option<&'a [String]>,
        /// The `id` of the innermost slice open on its thread.
        slice_id: Option<i64>,
    }
}

row! {
    /// A task of `fxt::task` or Tokio's hooks (issue 44): the begin of
    /// its life on its track.
    TaskRow<'a> {
        source: Source<'a>,
        pid: Option<i64>,
        /// The task's id (its async id, the polls' `task`).
        task: Option<i64>,
        name: Option<&'a str>,
        /// Where it was wrapped or spawned (`file:line`).
        location: Option<&'a str>,
        /// When its life began in the trace (ns).
        ts: Option<i64>,
    }
}

row! {
    /// A poll of a task, on the thread that ran it.
    PollRow<'a> {
        source: Source<'a>,
        pid: Option<i64>,
        tid: Option<i64>,
        thread: Option<&'a str>,
        task: Option<i64>,
        name: Option<&'a str>,
        ts: Option<i64>,
        dur: Option<i64>,
        /// ns from the wake that caused the poll to its start.
        delay: Option<i64>,
        /// The task whose poll made that wake.
        woken_by_task: Option<i64>,
        /// 1: a Tokio runtime's I/O or timer driver made that wake (null
        /// otherwise).
        woken_by_driver: Option<i32>,
    }
}

row! {
    /// A sampled allocation or the free of a sampled block (issue 45).
    AllocRow<'a> {
        source: Source<'a>,
        pid: Option<i64>,
        tid: Option<i64>,
        thread: Option<&'a str>,
        ts: Option<i64>,
        /// `alloc` or `free`.
        kind: Option<&'a str>,
        /// The block's address (as a signed 64-bit value).
        address: Option<i64>,
        /// The block's size in bytes.
        size: Option<i64>,
        /// The bytes the sample stands for (allocations; 0 for frees).
        bytes: Option<i64>,
        /// The sampling mean in bytes.
        mean: Option<i64>,
        /// 1: the free of this block is not recorded (the live table was
        /// full).
        untracked: Option<i32>,
        /// Function names, innermost first (allocations; empty for frees).
        frames: Option<&'a [String]>,
    }
}

table!(Slices = "slices" of Slice);
table!(Instants = "instants" of Instant);
table!(Counters = "counters" of Counter);
table!(Flows = "flows" of Flow);
table!(Threads = "threads" of Thread);
table!(Processes = "processes" of Process);
table!(Sched = "sched" of Switch);
table!(Wakeups = "wakeups" of Wakeup);
table!(Samples = "samples" of SampleRow);
table!(TaskTable = "tasks" of TaskRow);
table!(Polls = "polls" of PollRow);
table!(Allocations = "allocations" of AllocRow);

/// The tables' names (their folders), in documentation order.
pub const TABLES: [&str; 12] = [
    Slices::NAME,
    Instants::NAME,
    Counters::NAME,
    Flows::NAME,
    Threads::NAME,
    Processes::NAME,
    Sched::NAME,
    Wakeups::NAME,
    Samples::NAME,
    TaskTable::NAME,
    Polls::NAME,
    Allocations::NAME,
];

/// Every table of an export.
pub struct Tables {
    /// Inputs whose rows these tables took (an event row's key holds its
    /// input's number: the same key of two inputs is two keys).
    pub inputs: u64,
    /// Durations, complete events, async spans.
    pub slices: TypedTable<Slices>,
    /// Instants and async instants.
    pub instants: TypedTable<Instants>,
    /// One row per counter series value.
    pub counters: TypedTable<Counters>,
    /// Flow begin, step and end events.
    pub flows: TypedTable<Flows>,
    /// Threads.
    pub threads: TypedTable<Threads>,
    /// Processes.
    pub processes: TypedTable<Processes>,
    /// Context switches.
    pub sched: TypedTable<Sched>,
    /// Thread wakeups.
    pub wakeups: TypedTable<Wakeups>,
    /// CPU samples.
    pub samples: TypedTable<Samples>,
    /// Tasks.
    pub tasks: TypedTable<TaskTable>,
    /// Tasks' polls.
    pub polls: TypedTable<Polls>,
    /// Sampled allocations and frees.
    pub allocations: TypedTable<Allocations>,
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
            match create(dir, &host, n, true)? {
                Some(t) => break t,
                None => n += 1,
            }
        };
        Ok(Tables {
            inputs: 0,
            slices,
            instants: create_taken(dir, &host, n)?,
            counters: create_taken(dir, &host, n)?,
            flows: create_taken(dir, &host, n)?,
            threads: create_taken(dir, &host, n)?,
            processes: create_taken(dir, &host, n)?,
            sched: create_taken(dir, &host, n)?,
            wakeups: create_taken(dir, &host, n)?,
            samples: create_taken(dir, &host, n)?,
            tasks: create_taken(dir, &host, n)?,
            polls: create_taken(dir, &host, n)?,
            allocations: create_taken(dir, &host, n)?,
        })
    }

    /// Encodes every table's row groups on a thread of its own.
    pub fn encode_on_threads(&mut self) {
        self.slices.table_mut().encode_on_a_thread();
        self.instants.table_mut().encode_on_a_thread();
        self.counters.table_mut().encode_on_a_thread();
        self.flows.table_mut().encode_on_a_thread();
        self.threads.table_mut().encode_on_a_thread();
        self.processes.table_mut().encode_on_a_thread();
        self.sched.table_mut().encode_on_a_thread();
        self.wakeups.table_mut().encode_on_a_thread();
        self.samples.table_mut().encode_on_a_thread();
        self.tasks.table_mut().encode_on_a_thread();
        self.polls.table_mut().encode_on_a_thread();
        self.allocations.table_mut().encode_on_a_thread();
    }

    /// Every table's file, in documentation order, every row written.
    pub fn all(&mut self) -> Result<[&mut Table; 12], Error> {
        Ok([
            self.slices.table()?,
            self.instants.table()?,
            self.counters.table()?,
            self.flows.table()?,
            self.threads.table()?,
            self.processes.table()?,
            self.sched.table()?,
            self.wakeups.table()?,
            self.samples.table()?,
            self.tasks.table()?,
            self.polls.table()?,
            self.allocations.table()?,
        ])
    }
}

/// Creates the file of table `S`, part `n`, which the `slices` table
/// claimed.
fn create_taken<S: TableSchema>(dir: &Path, host: &str, n: u64) -> Result<TypedTable<S>, Error> {
    create(dir, host, n, false)?.ok_or_else(|| Error::msg(format!("{}: part {n} exists", S::NAME)))
}

/// Creates the file of table `S`, part `n`: `None` if `may_exist` and
/// part `n` is taken (its file is complete, or being written: claimed by
/// creating the hidden partial file exclusively, then checking that no
/// complete file has that name; an export renames its partial files only
/// after claiming, so two exports never share a part).
fn create<S: TableSchema>(
    dir: &Path,
    host: &str,
    n: u64,
    may_exist: bool,
) -> Result<Option<TypedTable<S>>, Error> {
    let folder = dir.join(S::NAME);
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
    TypedTable::new(file, paths).map(Some)
}

/// The `out_state` column: FXT's thread states, lowercase.
pub fn state_name(state: ThreadState) -> &'static str {
    match state {
        ThreadState::New => "new",
        ThreadState::Running => "running",
        ThreadState::Suspended => "suspended",
        ThreadState::Blocked => "blocked",
        ThreadState::Dying => "dying",
        ThreadState::Dead => "dead",
        ThreadState::Other(_) => "other",
    }
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

    fn names<S: TableSchema>() -> Vec<&'static str> {
        S::columns().into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn tables_begin_with_the_source_and_event_columns() {
        let mut event = Vec::new();
        Event::declare("", &mut event);
        let event: Vec<&str> = event.into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            event,
            [
                "trace", "host", "provider", "pid", "process", "tid", "thread", "category", "name",
                "ts"
            ]
        );
        for columns in [
            names::<Slices>(),
            names::<Instants>(),
            names::<Counters>(),
            names::<Flows>(),
        ] {
            assert_eq!(columns[..event.len()], event[..]);
        }
        for columns in [
            names::<Threads>(),
            names::<Processes>(),
            names::<Sched>(),
            names::<Wakeups>(),
            names::<Samples>(),
            names::<TaskTable>(),
            names::<Polls>(),
            names::<Allocations>(),
        ] {
            assert_eq!(columns[..3], ["trace", "host", "provider"]);
        }
        assert_eq!(
            names::<Slices>()[event.len()..],
            [
                "dur",
                "id",
                "depth",
                "parent",
                "kind",
                "async_id",
                "args",
                "args_int",
                "args_float"
            ]
        );
    }

    #[test]
    fn column_names_are_unique_per_table() {
        for columns in [
            names::<Slices>(),
            names::<Instants>(),
            names::<Counters>(),
            names::<Flows>(),
            names::<Threads>(),
            names::<Processes>(),
            names::<Sched>(),
            names::<Wakeups>(),
            names::<Samples>(),
            names::<TaskTable>(),
            names::<Polls>(),
            names::<Allocations>(),
        ] {
            let mut unique = columns.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), columns.len(), "{columns:?}");
        }
    }
}
