//! One Parquet table being written: Arrow column builders for the rows of
//! the row group in progress, flushed to an [`ArrowWriter`] every
//! [`ROW_GROUP`] rows, so memory follows the row group, not the trace.
//!
//! A table's columns and the values of a row are one declaration: a row
//! type ([`Columns`], written by [`super::schema`]'s `row!` macro) says
//! which columns it has (their names and [`Col`] types, in order), which
//! typed builders hold them, and how its fields fill them, so the schema
//! and the writer cannot disagree; a [`TypedTable`] takes only its own row
//! type, and a value goes straight to its column's builder (no look-up or
//! type check per value). Only types every engine
//! reads are used: signed 64- and 32-bit integers, doubles, UTF-8 strings,
//! lists of strings and maps with string keys (no unsigned integers, no
//! timestamp types).

use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::builder::{
    Float64Builder, Int32Builder, Int64Builder, ListBuilder, MapFieldNames, StringBuilder,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use super::summary::Summary;
use crate::error::Error;

/// Rows per row group: what a table holds in memory before it is encoded.
pub const ROW_GROUP: usize = 64 * 1024;

/// Columns whose values are (nearly) all distinct: a dictionary would
/// cost a hash per value and hold every value once more. Argument values
/// are mostly numbers, ids and sizes (their names stay dictionary-coded).
const DISTINCT: [&str; 7] = [
    "ts",
    "dur",
    "id",
    "parent",
    "args.key_value.value",
    "args_int.key_value.value",
    "args_float.key_value.value",
];

/// Text columns without minimum and maximum in the footer: names that
/// interleave all through a trace, so a row group's range spans nearly
/// every value and prunes nothing, while computing it compares every value
/// (a tenth of the export's instructions). `trace`, `host`, `provider` and
/// every number keep theirs: those do prune (one trace's rows, a time
/// range).
const NO_RANGE: [&str; 14] = [
    "process",
    "thread",
    "category",
    "name",
    "kind",
    "phase",
    "series",
    "out_thread",
    "in_thread",
    "out_state",
    "args.key_value.key",
    "args.key_value.value",
    "args_int.key_value.key",
    "args_float.key_value.key",
];

/// A column's path from its dotted name.
fn column_path(dotted: &str) -> ColumnPath {
    ColumnPath::new(dotted.split('.').map(str::to_owned).collect())
}

/// How every table file is written.
pub fn writer_properties() -> WriterProperties {
    let mut builder = WriterProperties::builder();
    for column in DISTINCT {
        builder = builder.set_column_dictionary_enabled(column_path(column), false);
    }
    for column in NO_RANGE {
        builder =
            builder.set_column_statistics_enabled(column_path(column), EnabledStatistics::None);
    }
    builder
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .set_created_by(format!("fxt export parquet {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// A column's type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Col {
    /// UTF-8 string, nullable.
    Str,
    /// Signed 64-bit integer, nullable.
    I64,
    /// Signed 32-bit integer, nullable.
    I32,
    /// Double, nullable.
    F64,
    /// `MAP<STRING, STRING>` (values nullable).
    MapStr,
    /// `MAP<STRING, INT64>`.
    MapI64,
    /// `MAP<STRING, DOUBLE>`.
    MapF64,
    /// `LIST<STRING>` (nullable).
    ListStr,
}

/// The entry, key and value names the Parquet format documents for maps.
pub fn map_names() -> MapFieldNames {
    MapFieldNames {
        entry: "key_value".into(),
        key: "key".into(),
        value: "value".into(),
    }
}

/// Where a table's file is written, and where it goes when complete.
pub struct Paths {
    /// The file being written (hidden: `.part-…parquet.partial`).
    pub partial: PathBuf,
    /// The file's name once complete (`part-…parquet`).
    pub done: PathBuf,
}

/// A table's file: its schema and the row groups written so far. Written
/// under a hidden name and renamed when complete, so that a query never
/// reads a file still being written; one dropped before
/// [`Table::close`] (the export failed) removes its file.
///
/// On a spare core ([`Table::encode_on_a_thread`]) the row groups are
/// encoded by a thread of the table's own, handed over one at a time (a
/// rendezvous channel), so the rows of the next are built meanwhile and
/// at most two row groups per table are in memory.
pub struct Table {
    path: String,
    paths: Paths,
    schema: SchemaRef,
    written: u64,
    /// The writer, while it is not the encoder's.
    writer: Option<ArrowWriter<File>>,
    encoder: Option<Encoder>,
    on_a_thread: bool,
    closed: bool,
}

/// The thread that encodes a table's row groups, and its channel.
struct Encoder {
    batches: SyncSender<RecordBatch>,
    thread: JoinHandle<Result<ArrowWriter<File>, String>>,
}

impl Encoder {
    /// Starts encoding with `writer`.
    fn start(mut writer: ArrowWriter<File>) -> Encoder {
        let (batches, rx) = sync_channel::<RecordBatch>(0);
        let thread = std::thread::spawn(move || {
            for batch in rx {
                writer.write(&batch).map_err(|e| e.to_string())?;
            }
            Ok(writer)
        });
        Encoder { batches, thread }
    }

    /// Waits until every row group sent is written; the writer back.
    fn stop(self) -> Result<ArrowWriter<File>, String> {
        drop(self.batches);
        self.thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

impl Table {
    /// A table of the columns `columns` (named by `names`, the schema
    /// being what the builders build, so that the two can never disagree,
    /// map entry nullability included), written to `file`.
    fn new(
        names: &[(&'static str, Col)],
        columns: Vec<ArrayRef>,
        file: File,
        paths: Paths,
    ) -> Result<Table, Error> {
        let path = paths.done.display().to_string();
        let fields: Vec<Field> = names
            .iter()
            .zip(&columns)
            .map(|((n, _), c)| Field::new(*n, c.data_type().clone(), true))
            .collect();
        if fields.len() != names.len() || fields.len() != columns.len() {
            return Err(Error::msg(format!(
                "internal error: {path}: {} names for {} columns",
                names.len(),
                columns.len()
            )));
        }
        let schema = Arc::new(Schema::new(fields));
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(writer_properties()))
            .map_err(|e| Error::msg(format!("{path}: {e}")))?;
        Ok(Table {
            path,
            paths,
            schema,
            written: 0,
            writer: Some(writer),
            encoder: None,
            on_a_thread: false,
            closed: false,
        })
    }

    /// Rows written.
    pub fn rows(&self) -> u64 {
        self.written
    }

    /// Encodes the row groups on a thread of their own (from the first).
    pub fn encode_on_a_thread(&mut self) {
        self.on_a_thread = true;
    }

    /// Writes `rows` rows of `columns` as a row group.
    fn write(&mut self, columns: Vec<ArrayRef>, rows: usize) -> Result<(), Error> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        self.written += rows as u64;
        if self.on_a_thread && self.encoder.is_none() {
            self.encoder = self.writer.take().map(Encoder::start);
        }
        if let Some(encoder) = &self.encoder {
            if encoder.batches.send(batch).is_err() {
                // The encoder stopped: its error says why.
                self.stop_encoder()?;
                return Err(Error::msg(format!("{}: encoder stopped", self.path)));
            }
            return Ok(());
        }
        if let Some(w) = &mut self.writer {
            w.write(&batch)
                .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        }
        Ok(())
    }

    /// Waits for the encoder, if any, to write what it was sent, and takes
    /// the writer back.
    fn stop_encoder(&mut self) -> Result<(), Error> {
        if let Some(encoder) = self.encoder.take() {
            let writer = encoder
                .stop()
                .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
            self.writer = Some(writer);
        }
        Ok(())
    }

    /// Writes the file's footer (with `metadata`), and gives the file its
    /// name.
    pub fn close(&mut self, metadata: &[KeyValue]) -> Result<(), Error> {
        self.stop_encoder()?;
        if let Some(w) = &mut self.writer {
            for kv in metadata {
                w.append_key_value_metadata(kv.clone());
            }
            w.finish()
                .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        }
        std::fs::rename(&self.paths.partial, &self.paths.done)
            .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        self.closed = true;
        Ok(())
    }
}

/// Values of one or more columns of a row: a scalar fills one column,
/// a group ([`super::schema`]'s event columns, the argument maps) several.
pub trait Columns {
    /// The builders of the columns.
    type Builders;
    /// Adds the columns, in order, to `out` (a scalar's named `name`).
    fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>);
    /// Empty builders (they grow as rows come: room for a whole row group
    /// at once would hold more memory than the rows of a small table need;
    /// [`Columns::finish`] gives the next row group room for as many as
    /// the last).
    fn builders() -> Self::Builders;
    /// Appends the values to the builders.
    fn append(&self, b: &mut Self::Builders, summary: &mut Summary) -> Result<(), Error>;
    /// Takes the columns built so far, in order, leaving the builders
    /// empty.
    fn finish(b: &mut Self::Builders, out: &mut Vec<ArrayRef>);
}

/// A scalar column type: its [`Col`], its builder, how a value is
/// appended, and the builder of the next row group once one is finished
/// (room for as many values as the last one held: a builder that grows
/// value by value copies its buffer at every doubling, a twentieth of the
/// export's instructions).
macro_rules! scalar {
    ($ty:ty, $col:ident, $builder:ty = $new:expr, |$b:ident, $v:ident| $append:expr, |$a:ident| $next:expr) => {
        impl Columns for Option<$ty> {
            type Builders = $builder;
            fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>) {
                out.push((name, Col::$col));
            }
            fn builders() -> $builder {
                $new
            }
            #[inline]
            fn append(&self, $b: &mut $builder, _: &mut Summary) -> Result<(), Error> {
                let $v = self;
                $append;
                Ok(())
            }
            fn finish(b: &mut $builder, out: &mut Vec<ArrayRef>) {
                let array = b.finish();
                let $a = &array;
                *b = $next;
                out.push(Arc::new(array));
            }
        }
    };
}
scalar!(
    &str,
    Str,
    StringBuilder = StringBuilder::new(),
    |b, v| b.append_option(*v),
    |a| StringBuilder::with_capacity(a.len(), a.value_data().len())
);
scalar!(
    i64,
    I64,
    Int64Builder = Int64Builder::new(),
    |b, v| b.append_option(*v),
    |a| Int64Builder::with_capacity(a.len())
);
scalar!(
    i32,
    I32,
    Int32Builder = Int32Builder::new(),
    |b, v| b.append_option(*v),
    |a| Int32Builder::with_capacity(a.len())
);
scalar!(
    f64,
    F64,
    Float64Builder = Float64Builder::new(),
    |b, v| b.append_option(*v),
    |a| Float64Builder::with_capacity(a.len())
);
scalar!(&[String], ListStr, ListBuilder<StringBuilder> = ListBuilder::new(StringBuilder::new()), |b, v| {
    for s in v.unwrap_or_default() {
        b.values().append_value(s);
    }
    b.append(v.is_some())
}, |_a| ListBuilder::new(StringBuilder::new()));

/// A table: its name, its row type (`Row<'a>` for any borrow) and the
/// builders of its columns.
pub trait TableSchema {
    /// The table's name (its folder).
    const NAME: &'static str;
    /// The builders of a row's columns.
    type Builders;
    /// A row.
    type Row<'a>: Columns<Builders = Self::Builders>;
    /// The table's columns.
    fn columns() -> Vec<(&'static str, Col)> {
        let mut out = Vec::new();
        Self::Row::declare("", &mut out);
        out
    }
}

/// A table that takes rows of `S` only: the row group in progress in its
/// columns' builders.
pub struct TypedTable<S: TableSchema> {
    table: Table,
    builders: S::Builders,
    /// Rows in the builders.
    rows: usize,
}

impl<S: TableSchema> TypedTable<S> {
    /// A table of `S`'s columns, written to `file` (at `paths.partial`).
    pub fn new(file: File, paths: Paths) -> Result<TypedTable<S>, Error> {
        let mut builders = <S::Row<'static> as Columns>::builders();
        let mut empty = Vec::new();
        <S::Row<'static> as Columns>::finish(&mut builders, &mut empty);
        Ok(TypedTable {
            table: Table::new(&S::columns(), empty, file, paths)?,
            builders,
            rows: 0,
        })
    }

    /// Appends a row.
    pub fn push(&mut self, row: &S::Row<'_>, summary: &mut Summary) -> Result<(), Error> {
        row.append(&mut self.builders, summary)?;
        self.rows += 1;
        if self.rows >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the rows in progress as a row group.
    fn flush(&mut self) -> Result<(), Error> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut columns = Vec::new();
        <S::Row<'static> as Columns>::finish(&mut self.builders, &mut columns);
        let rows = std::mem::take(&mut self.rows);
        self.table.write(columns, rows)
    }

    /// The table's file, as it is.
    pub fn table_mut(&mut self) -> &mut Table {
        &mut self.table
    }

    /// The table's file, every row written (for its footer).
    pub fn table(&mut self) -> Result<&mut Table, Error> {
        self.flush()?;
        Ok(&mut self.table)
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if !self.closed {
            // Not closed: the export failed; what it wrote is no table.
            let _ = self.stop_encoder();
            let _ = std::fs::remove_file(&self.paths.partial);
        }
    }
}
