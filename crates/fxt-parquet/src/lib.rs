//! Parquet pages written by fxt: the row group being built as leaf
//! columns (`leaf`), strings numbered by a per-column [`Dictionary`],
//! levels and ids in the RLE / bit-packing hybrid (`hybrid`), integers as
//! differences (`delta`), each leaf made a column chunk (`chunk`) and
//! appended to the file by the Apache writer, which keeps the file's
//! layout, schema and footer ([`write_row_group`]).
//!
//! A general writer (Arrow's) hashes every string it is given to find its
//! dictionary id and walks every level one at a time; a trace's columns
//! are long runs of a few names, which this writer finds by address and
//! by block.
//!
//! It knows nothing of traces: `fxt export parquet` (the `fxt-cli` crate)
//! fills the leaves from a trace's rows.

#[macro_use]
mod twice;

mod chunk;
mod decimal;
mod delta;
mod dictionary;
mod hybrid;
mod leaf;
#[cfg(test)]
mod test_rng;

use std::fs::File;

use parquet::errors::ParquetError;
use parquet::file::writer::SerializedFileWriter;

pub use chunk::Snappy;
pub use delta::Coded;
pub use dictionary::{Dictionary, Last, Recent};
pub use leaf::{KeyLeaf, Leaf, Levels, NumLeaf, StrLeaf, TextLeaf, Values};

/// Writes a row group of `rows` rows from its leaves, in schema order;
/// columns named in `no_range` (dotted paths) get no statistics.
pub fn write_row_group(
    writer: &mut SerializedFileWriter<File>,
    leaves: Vec<Leaf>,
    rows: usize,
    no_range: &[&str],
    snappy: &mut Snappy,
) -> Result<(), ParquetError> {
    let columns = writer.schema_descr().columns().to_vec();
    if leaves.len() != columns.len() {
        return Err(ParquetError::General(format!(
            "internal error: {} leaves for {} columns",
            leaves.len(),
            columns.len()
        )));
    }
    let mut group = writer.next_row_group()?;
    for (leaf, descr) in leaves.into_iter().zip(&columns) {
        let statistics = !no_range.contains(&descr.path().string().as_str());
        let (bytes, close) = chunk::column_chunk(leaf, descr, rows, statistics, snappy)?;
        group.append_column(&bytes, close)?;
    }
    group.close()?;
    Ok(())
}

/// Takes the values of `v`, leaving it empty with room for as many and
/// an eighth more (the next row group's are likely about as many: a
/// vector that grows value by value copies itself at every doubling,
/// and one a few values short of room copies all of them once).
fn take_like<T>(v: &mut Vec<T>) -> Vec<T> {
    let room = v.len();
    std::mem::replace(v, Vec::with_capacity(room + room / 8 + 64))
}
