//! One Parquet table being written: Arrow column builders for the rows of
//! the row group in progress, flushed to an [`ArrowWriter`] every
//! [`ROW_GROUP`] rows, so memory follows the row group, not the trace.
//!
//! A table's columns and the values of a row are one declaration: a row
//! type ([`Columns`], written by [`super::schema`]'s `row!` macro) says
//! both which columns it has (their names and [`Col`] types, in order) and
//! how its fields fill them, so the schema and the writer cannot disagree;
//! a [`TypedTable`] takes only its own row type. Only types every engine
//! reads are used: signed 64- and 32-bit integers, doubles, UTF-8 strings,
//! lists of strings and maps with string keys (no unsigned integers, no
//! timestamp types).

use std::fs::File;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, Float64Builder, Int32Builder, Int64Builder, ListBuilder, MapBuilder,
    MapFieldNames, StringBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::summary::Summary;
use crate::error::Error;

/// Rows per row group: what a table holds in memory before it is encoded.
pub const ROW_GROUP: usize = 64 * 1024;

/// Columns whose values are (nearly) all distinct: a dictionary would
/// cost a hash per value and hold every value once more.
const DISTINCT: [&str; 4] = ["ts", "dur", "id", "parent"];

/// How every table file is written.
pub fn writer_properties() -> WriterProperties {
    let mut builder = WriterProperties::builder();
    for column in DISTINCT {
        builder = builder.set_column_dictionary_enabled(ColumnPath::from(column), false);
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
fn map_names() -> MapFieldNames {
    MapFieldNames {
        entry: "key_value".into(),
        key: "key".into(),
        value: "value".into(),
    }
}

/// A column's builder.
enum Builder {
    Str(StringBuilder),
    I64(Int64Builder),
    I32(Int32Builder),
    F64(Float64Builder),
    MapStr(MapBuilder<StringBuilder, StringBuilder>),
    MapI64(MapBuilder<StringBuilder, Int64Builder>),
    MapF64(MapBuilder<StringBuilder, Float64Builder>),
    ListStr(ListBuilder<StringBuilder>),
}

impl Builder {
    fn new(col: Col) -> Builder {
        let names = || Some(map_names());
        match col {
            Col::Str => Builder::Str(StringBuilder::new()),
            Col::I64 => Builder::I64(Int64Builder::new()),
            Col::I32 => Builder::I32(Int32Builder::new()),
            Col::F64 => Builder::F64(Float64Builder::new()),
            Col::MapStr => Builder::MapStr(MapBuilder::new(
                names(),
                StringBuilder::new(),
                StringBuilder::new(),
            )),
            Col::MapI64 => Builder::MapI64(MapBuilder::new(
                names(),
                StringBuilder::new(),
                Int64Builder::new(),
            )),
            Col::MapF64 => Builder::MapF64(MapBuilder::new(
                names(),
                StringBuilder::new(),
                Float64Builder::new(),
            )),
            Col::ListStr => Builder::ListStr(ListBuilder::new(StringBuilder::new())),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::I32(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::MapStr(b) => Arc::new(b.finish()),
            Builder::MapI64(b) => Arc::new(b.finish()),
            Builder::MapF64(b) => Arc::new(b.finish()),
            Builder::ListStr(b) => Arc::new(b.finish()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Builder::Str(b) => b.len(),
            Builder::I64(b) => b.len(),
            Builder::I32(b) => b.len(),
            Builder::F64(b) => b.len(),
            Builder::MapStr(b) => b.len(),
            Builder::MapI64(b) => b.len(),
            Builder::MapF64(b) => b.len(),
            Builder::ListStr(b) => b.len(),
        }
    }
}

/// The builders of one map-valued argument column, for [`super::args`].
pub enum MapCol<'a> {
    /// Values as text.
    Str(&'a mut MapBuilder<StringBuilder, StringBuilder>),
    /// Integer values.
    I64(&'a mut MapBuilder<StringBuilder, Int64Builder>),
    /// Floating-point values.
    F64(&'a mut MapBuilder<StringBuilder, Float64Builder>),
}

/// Where a table's file is written, and where it goes when complete.
pub struct Paths {
    /// The file being written (hidden: `.part-…parquet.partial`).
    pub partial: PathBuf,
    /// The file's name once complete (`part-…parquet`).
    pub done: PathBuf,
}

/// A table: its file, its schema and the row group in progress. Written
/// under a hidden name and renamed when complete, so that a query never
/// reads a file still being written; one dropped before
/// [`Table::close`] (the export failed) removes its file.
pub struct Table {
    name: &'static str,
    path: String,
    paths: Paths,
    schema: SchemaRef,
    builders: Vec<Builder>,
    /// The column the next value goes to.
    next: usize,
    rows: usize,
    written: u64,
    writer: Option<ArrowWriter<File>>,
}

impl Table {
    /// A table `name` of `columns`, written to `file` (at `paths.partial`).
    fn new(
        name: &'static str,
        columns: &[(&'static str, Col)],
        file: File,
        paths: Paths,
    ) -> Result<Table, Error> {
        let path = paths.done.display().to_string();
        let mut builders: Vec<Builder> = columns.iter().map(|(_, c)| Builder::new(*c)).collect();
        // The schema is what the builders build, so that the two can never
        // disagree (map entry nullability included).
        let fields: Vec<Field> = columns
            .iter()
            .zip(builders.iter_mut())
            .map(|((n, _), b)| Field::new(*n, b.finish().data_type().clone(), true))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(writer_properties()))
            .map_err(|e| Error::msg(format!("{path}: {e}")))?;
        Ok(Table {
            name,
            path,
            paths,
            schema,
            builders,
            next: 0,
            rows: 0,
            written: 0,
            writer: Some(writer),
        })
    }

    /// Rows written so far (the row group in progress included).
    pub fn rows(&self) -> u64 {
        self.written + self.rows as u64
    }

    fn column(&mut self) -> Result<&mut Builder, Error> {
        let i = self.next;
        self.next += 1;
        let name = self.name;
        self.builders
            .get_mut(i)
            .ok_or_else(|| Error::msg(format!("internal error: table {name} has no column {i}")))
    }

    fn mismatch(&self, what: &str) -> Error {
        Error::msg(format!(
            "internal error: column {} of table {} is not {what}",
            self.next - 1,
            self.name
        ))
    }

    /// Appends a string (or null) to the next column.
    fn str(&mut self, value: Option<&str>) -> Result<(), Error> {
        match self.column()? {
            Builder::Str(b) => {
                b.append_option(value);
                Ok(())
            }
            _ => Err(self.mismatch("a string")),
        }
    }

    /// Appends a 64-bit integer (or null) to the next column.
    fn i64(&mut self, value: Option<i64>) -> Result<(), Error> {
        match self.column()? {
            Builder::I64(b) => {
                b.append_option(value);
                Ok(())
            }
            _ => Err(self.mismatch("a 64-bit integer")),
        }
    }

    /// Appends a 32-bit integer (or null) to the next column.
    fn i32(&mut self, value: Option<i32>) -> Result<(), Error> {
        match self.column()? {
            Builder::I32(b) => {
                b.append_option(value);
                Ok(())
            }
            _ => Err(self.mismatch("a 32-bit integer")),
        }
    }

    /// Appends a double (or null) to the next column.
    fn f64(&mut self, value: Option<f64>) -> Result<(), Error> {
        match self.column()? {
            Builder::F64(b) => {
                b.append_option(value);
                Ok(())
            }
            _ => Err(self.mismatch("a double")),
        }
    }

    /// Appends a list of strings (or null) to the next column.
    fn list_str(&mut self, values: Option<&[String]>) -> Result<(), Error> {
        match self.column()? {
            Builder::ListStr(b) => {
                for v in values.unwrap_or_default() {
                    b.values().append_value(v);
                }
                b.append(values.is_some());
                Ok(())
            }
            _ => Err(self.mismatch("a list of strings")),
        }
    }

    /// The next three columns, which must be the argument maps (text,
    /// integer, float), for the caller to fill one entry of each.
    pub fn arg_maps(&mut self) -> Result<[MapCol<'_>; 3], Error> {
        let i = self.next;
        self.next += 3;
        let name = self.name;
        match self.builders.get_mut(i..i + 3) {
            Some([Builder::MapStr(s), Builder::MapI64(n), Builder::MapF64(f)]) => {
                Ok([MapCol::Str(s), MapCol::I64(n), MapCol::F64(f)])
            }
            _ => Err(Error::msg(format!(
                "internal error: columns {i}.. of table {name} are not the argument maps"
            ))),
        }
    }

    /// Ends the row: every column must have had its value.
    fn end_row(&mut self) -> Result<(), Error> {
        if self.next != self.builders.len() {
            return Err(Error::msg(format!(
                "internal error: a row of table {} has {} values for {} columns",
                self.name,
                self.next,
                self.builders.len()
            )));
        }
        self.next = 0;
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
        let columns: Vec<ArrayRef> = self.builders.iter_mut().map(Builder::finish).collect();
        debug_assert!(self.builders.iter().all(|b| b.len() == 0));
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        if let Some(w) = &mut self.writer {
            w.write(&batch)
                .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        }
        self.written += self.rows as u64;
        self.rows = 0;
        Ok(())
    }

    /// Writes what is left and the file's footer (with `metadata`), and
    /// gives the file its name.
    pub fn close(&mut self, metadata: &[KeyValue]) -> Result<(), Error> {
        self.flush()?;
        if let Some(w) = &mut self.writer {
            for kv in metadata {
                w.append_key_value_metadata(kv.clone());
            }
            w.finish()
                .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        }
        std::fs::rename(&self.paths.partial, &self.paths.done)
            .map_err(|e| Error::msg(format!("{}: {e}", self.path)))?;
        self.writer = None;
        Ok(())
    }
}

/// Values of one or more columns of a row: a scalar fills one column,
/// a group ([`super::schema`]'s event columns, the argument maps) several.
pub trait Columns {
    /// Adds the columns, in order, to `out` (a scalar's named `name`).
    fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>);
    /// Fills them in `table`'s row in progress, in the same order.
    fn fill(&self, table: &mut Table, summary: &mut Summary) -> Result<(), Error>;
}

/// A scalar column type: its [`Col`] and how a value is appended.
macro_rules! scalar {
    ($ty:ty, $col:ident, $append:ident) => {
        impl Columns for Option<$ty> {
            fn declare(name: &'static str, out: &mut Vec<(&'static str, Col)>) {
                out.push((name, Col::$col));
            }
            fn fill(&self, table: &mut Table, _: &mut Summary) -> Result<(), Error> {
                table.$append(*self)
            }
        }
    };
}
scalar!(&str, Str, str);
scalar!(&[String], ListStr, list_str);
scalar!(i64, I64, i64);
scalar!(i32, I32, i32);
scalar!(f64, F64, f64);

/// A table: its name and its row type (`Row<'a>` for any borrow).
pub trait TableSchema {
    /// The table's name (its folder).
    const NAME: &'static str;
    /// A row.
    type Row<'a>: Columns;
    /// The table's columns.
    fn columns() -> Vec<(&'static str, Col)> {
        let mut out = Vec::new();
        Self::Row::declare("", &mut out);
        out
    }
}

/// A table that takes rows of `S` only.
pub struct TypedTable<S: TableSchema> {
    table: Table,
    schema: PhantomData<S>,
}

impl<S: TableSchema> TypedTable<S> {
    /// A table of `S`'s columns, written to `file` (at `paths.partial`).
    pub fn new(file: File, paths: Paths) -> Result<TypedTable<S>, Error> {
        Ok(TypedTable {
            table: Table::new(S::NAME, &S::columns(), file, paths)?,
            schema: PhantomData,
        })
    }

    /// Appends a row.
    pub fn push(&mut self, row: &S::Row<'_>, summary: &mut Summary) -> Result<(), Error> {
        row.fill(&mut self.table, summary)?;
        self.table.end_row()
    }

    /// The table, whatever its rows.
    pub fn table(&mut self) -> &mut Table {
        &mut self.table
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if self.writer.is_some() {
            // Not closed: the export failed; what it wrote is no table.
            let _ = std::fs::remove_file(&self.paths.partial);
        }
    }
}
