//! One Parquet table being written: the leaf columns of the row group in
//! progress ([`super::encode`]), written as a row group every
//! [`ROW_GROUP`] rows, so memory follows the row group, not the trace.
//!
//! A table's columns and the values of a row are one declaration: a row
//! type ([`Columns`], written by [`super::schema`]'s `row!` macro) says
//! which columns it has (their names and [`Col`] types, in order), which
//! leaves hold them, and how its fields fill them, so the schema and the
//! writer cannot disagree; a [`TypedTable`] takes only its own row type,
//! and a value goes straight to its column's leaf (no look-up or type
//! check per value). The schema is the one Arrow's writer gives those
//! types (and is kept in the footer as Arrow's writer keeps it). Only
//! types every engine reads are used: signed 64- and 32-bit integers,
//! doubles, UTF-8 strings, lists of strings and maps with string keys (no
//! unsigned integers, no timestamp types).

use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use arrow_array::builder::{
    Float64Builder, Int64Builder, ListBuilder, MapBuilder, MapFieldNames, StringBuilder,
};
use arrow_array::Array;
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use super::encode::{write_row_group, Leaf, NumLeaf, Snappy, StrLeaf};
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
    written: u64,
    /// The writer, while it is not the encoder's.
    writer: Option<Writer>,
    encoder: Option<Encoder>,
    on_a_thread: bool,
    closed: bool,
}

/// The file's writer and the compressor of its pages.
struct Writer {
    file: SerializedFileWriter<File>,
    snappy: Snappy,
}

impl Writer {
    /// Writes a row group of `rows` rows.
    fn write(&mut self, leaves: Vec<Leaf>, rows: usize) -> Result<(), ParquetError> {
        write_row_group(&mut self.file, leaves, rows, &NO_RANGE, &mut self.snappy)
    }
}

/// A row group: its leaves and rows.
type RowGroup = (Vec<Leaf>, usize);

/// The thread that encodes a table's row groups, and its channel.
struct Encoder {
    groups: SyncSender<RowGroup>,
    thread: JoinHandle<Result<Writer, String>>,
}

impl Encoder {
    /// Starts encoding with `writer`.
    fn start(mut writer: Writer) -> Encoder {
        let (groups, rx) = sync_channel::<RowGroup>(0);
        let thread = std::thread::spawn(move || {
            for (leaves, rows) in rx {
                writer.write(leaves, rows).map_err(|e| e.to_string())?;
            }
            Ok(writer)
        });
        Encoder { groups, thread }
    }

    /// Waits until every row group sent is written; the writer back.
    fn stop(self) -> Result<Writer, String> {
        drop(self.groups);
        self.thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// The Arrow type of a column of type `col`: the type of what Arrow's
/// builders of it build (map entry nullability included), so that the
/// schema is the one Arrow's writer would give the table.
fn data_type(col: Col) -> DataType {
    let names = || Some(map_names());
    match col {
        Col::Str => DataType::Utf8,
        Col::I64 => DataType::Int64,
        Col::I32 => DataType::Int32,
        Col::F64 => DataType::Float64,
        Col::MapStr => MapBuilder::new(names(), StringBuilder::new(), StringBuilder::new())
            .finish()
            .data_type()
            .clone(),
        Col::MapI64 => MapBuilder::new(names(), StringBuilder::new(), Int64Builder::new())
            .finish()
            .data_type()
            .clone(),
        Col::MapF64 => MapBuilder::new(names(), StringBuilder::new(), Float64Builder::new())
            .finish()
            .data_type()
            .clone(),
        Col::ListStr => ListBuilder::new(StringBuilder::new())
            .finish()
            .data_type()
            .clone(),
    }
}

impl Table {
    /// A table of the columns `columns` (name and type, in order), written
    /// to `file`.
    fn new(columns: &[(&'static str, Col)], file: File, paths: Paths) -> Result<Table, Error> {
        let path = paths.done.display().to_string();
        let fields: Vec<Field> = columns
            .iter()
            .map(|(n, c)| Field::new(*n, data_type(*c), true))
            .collect();
        let schema = Schema::new(fields);
        let failed = |e: ParquetError| Error::msg(format!("{path}: {e}"));
        let parquet_schema = ArrowSchemaConverter::new()
            .convert(&schema)
            .map_err(failed)?;
        let mut properties = writer_properties();
        add_encoded_arrow_schema_to_metadata(&schema, &mut properties);
        let file =
            SerializedFileWriter::new(file, parquet_schema.root_schema_ptr(), Arc::new(properties))
                .map_err(failed)?;
        Ok(Table {
            path,
            paths,
            written: 0,
            writer: Some(Writer {
                file,
                snappy: Snappy::new(),
            }),
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

    /// Writes `rows` rows of `leaves` as a row group.
    fn write(&mut self, leaves: Vec<Leaf>, rows: usize) -> Result<(), Error> {
        self.written += rows as u64;
        if self.on_a_thread && self.encoder.is_none() {
            self.encoder = self.writer.take().map(Encoder::start);
        }
        if let Some(encoder) = &self.encoder {
            if encoder.groups.send((leaves, rows)).is_err() {
                // The encoder stopped: its error says why.
                self.stop_encoder()?;
                return Err(Error::msg(format!("{}: encoder stopped", self.path)));
            }
            return Ok(());
        }
        if let Some(w) = &mut self.writer {
            w.write(leaves, rows)
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
                w.file.append_key_value_metadata(kv.clone());
            }
            w.file
                .finish()
                .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        }
        std::fs::rename(&self.paths.partial, &self.paths.done)
            .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        self.closed = true;
        Ok(())
    }
}

/// Values of one or more columns of a row: a scalar fills one column,
/// a group ([`super::events`]'s event columns, the argument maps) several.
pub trait Columns {
    /// The leaves of the columns, being filled.
    type Builders;
    /// Adds the columns, in order, to `out` (a scalar's named `name`).
    fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>);
    /// Empty leaves (they grow as rows come: room for a whole row group
    /// at once would hold more memory than the rows of a small table need;
    /// [`Columns::finish`] gives the next row group room for as many as
    /// the last).
    fn builders() -> Self::Builders;
    /// Appends the values to the leaves.
    fn append(&self, b: &mut Self::Builders, summary: &mut Summary) -> Result<(), Error>;
    /// Takes the leaves filled so far, in schema order, leaving them
    /// empty.
    fn finish(b: &mut Self::Builders, out: &mut Vec<Leaf>);
}

/// A top-level column of type `$ty`: its [`Col`], its leaf, and how a
/// present value goes in (a top-level column's value is present at
/// definition level 1, a null at 0).
macro_rules! scalar {
    ($ty:ty, $col:ident, $leaf:ty, |$b:ident, $v:ident| $value:expr) => {
        impl Columns for Option<$ty> {
            type Builders = $leaf;
            fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>) {
                out.push((name, Col::$col));
            }
            fn builders() -> $leaf {
                <$leaf>::new(1, false)
            }
            #[inline(always)]
            fn append(&self, $b: &mut $leaf, _: &mut Summary) -> Result<(), Error> {
                match *self {
                    Some($v) => {
                        $b.levels.push_top(true);
                        $value;
                    }
                    None => $b.levels.push_top(false),
                }
                Ok(())
            }
            fn finish(b: &mut $leaf, out: &mut Vec<Leaf>) {
                out.push(b.finish());
            }
        }
    };
}
scalar!(&str, Str, StrLeaf, |b, v| b.value(v));
scalar!(i64, I64, NumLeaf<i64>, |b, v| b.value(v));
scalar!(i32, I32, NumLeaf<i32>, |b, v| b.value(v));
scalar!(f64, F64, NumLeaf<f64>, |b, v| b.value(v));

/// A list of strings: a null list is definition level 0, an empty one 1,
/// an item 3 (the list, its repeated group and the nullable item each add
/// one); every item but a list's first repeats (level 1).
impl Columns for Option<&[String]> {
    type Builders = StrLeaf;
    fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>) {
        out.push((name, Col::ListStr));
    }
    fn builders() -> StrLeaf {
        StrLeaf::new(3, true)
    }
    fn append(&self, b: &mut StrLeaf, _: &mut Summary) -> Result<(), Error> {
        match self {
            None => b.levels.push(0, 0),
            Some([]) => b.levels.push(1, 0),
            Some(items) => {
                for (k, item) in items.iter().enumerate() {
                    b.levels.push(3, u8::from(k > 0));
                    b.value(item);
                }
            }
        }
        Ok(())
    }
    fn finish(b: &mut StrLeaf, out: &mut Vec<Leaf>) {
        out.push(b.finish());
    }
}

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
    /// Row groups written.
    groups: u64,
}

impl<S: TableSchema> TypedTable<S> {
    /// A table of `S`'s columns, written to `file` (at `paths.partial`).
    pub fn new(file: File, paths: Paths) -> Result<TypedTable<S>, Error> {
        Ok(TypedTable {
            table: Table::new(&S::columns(), file, paths)?,
            builders: <S::Row<'static> as Columns>::builders(),
            rows: 0,
            groups: 0,
        })
    }

    /// Appends a row.
    pub fn push(&mut self, row: &S::Row<'_>, summary: &mut Summary) -> Result<(), Error> {
        self.push_with(|builders, _| row.append(builders, summary))
    }

    /// Appends a row that `fill` puts in the builders (told whether they
    /// hold no row: a row group begun anew, its keys numbered anew).
    #[inline(always)]
    pub fn push_with(
        &mut self,
        fill: impl FnOnce(&mut S::Builders, bool) -> Result<(), Error>,
    ) -> Result<(), Error> {
        fill(&mut self.builders, self.rows == 0)?;
        self.rows += 1;
        if self.rows >= ROW_GROUP {
            self.flush()?;
        }
        Ok(())
    }

    /// The row group in progress: how many were written before it, and
    /// how many more rows it takes (what a row's key number in it is
    /// valid for, and whether the next rows begin another).
    #[inline(always)]
    pub fn group(&self) -> (u64, usize) {
        (self.groups, ROW_GROUP - self.rows)
    }

    /// Writes the rows in progress as a row group.
    fn flush(&mut self) -> Result<(), Error> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut leaves = Vec::new();
        <S::Row<'static> as Columns>::finish(&mut self.builders, &mut leaves);
        let rows = std::mem::take(&mut self.rows);
        self.groups += 1;
        self.table.write(leaves, rows)
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
