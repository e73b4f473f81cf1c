//! What earlier exports left in the folder: the traces each part holds, so
//! that a trace exported again from the same host is refused (every query
//! would count its rows twice: a parent/child join four times) or, with
//! `--replace`, its earlier rows are removed once the new ones are written.
//!
//! Every table file says, in its footer's key-value metadata, the host it
//! was exported from ([`HOST`], the exact `--host`, which the file name
//! holds only in its file-safe form) and the traces it holds ([`TRACES`],
//! a JSON array of the names as given on the command line). A part is the
//! set of files of one export, one per table, all of the same file name.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use arrow_array::{Array, BooleanArray, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;

use super::schema::TABLES;
use super::table::writer_properties;
use crate::error::Error;

/// The metadata key of the host a file was exported from.
pub const HOST: &str = "fxt.host";
/// The metadata key of the traces a file holds (a JSON array of names).
pub const TRACES: &str = "fxt.traces";

/// One earlier export from this host.
pub struct Part {
    /// Its files' name (`part-HOST-N.parquet`).
    pub file_name: String,
    /// The traces it holds.
    pub traces: Vec<String>,
}

/// The metadata value of `key` in the Parquet file at `path`, if any.
fn footer_value(path: &Path, key: &str) -> Result<Option<String>, Error> {
    let file = File::open(path).map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
    let kv = builder.metadata().file_metadata().key_value_metadata();
    Ok(kv
        .into_iter()
        .flatten()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.clone()))
}

/// The parts in `dir` exported from `host` (found by their `slices`
/// files: every export writes one). Files an export of an older fxt
/// wrote carry no host and are not recognized.
pub fn parts(dir: &Path, host: &str) -> Result<Vec<Part>, Error> {
    let folder = dir.join("slices");
    let Ok(entries) = fs::read_dir(&folder) else {
        return Ok(Vec::new());
    };
    let mut parts = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::msg(format!("{}: {e}", folder.display())))?;
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if !file_name.starts_with("part-") || !file_name.ends_with(".parquet") {
            continue;
        }
        let path = entry.path();
        if footer_value(&path, HOST)?.as_deref() != Some(host) {
            continue;
        }
        let traces = footer_value(&path, TRACES)?
            .and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok())
            .unwrap_or_default();
        parts.push(Part { file_name, traces });
    }
    parts.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(parts)
}

/// Removes the rows of `traces` from `part`: its files go if it holds
/// nothing else; otherwise each is rewritten without those rows (under a
/// hidden name, then renamed over it).
pub fn remove(dir: &Path, part: &Part, traces: &BTreeSet<String>) -> Result<(), Error> {
    let kept: Vec<String> = part
        .traces
        .iter()
        .filter(|t| !traces.contains(*t))
        .cloned()
        .collect();
    for table in TABLES {
        let path = dir.join(table).join(&part.file_name);
        if !path.exists() {
            continue;
        }
        if kept.is_empty() {
            fs::remove_file(&path).map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
        } else {
            rewrite_without(&path, traces, &kept)
                .map_err(|e| Error::msg(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// Rewrites the table file at `path` without the rows whose `trace` is in
/// `traces`; `kept` are the traces left.
fn rewrite_without(
    path: &Path,
    traces: &BTreeSet<String>,
    kept: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp: PathBuf = path.with_file_name(format!(".{name}.partial"));
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
    let host = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .into_iter()
        .flatten()
        .find(|kv| kv.key == HOST)
        .and_then(|kv| kv.value.clone())
        .unwrap_or_default();
    let schema = builder.schema().clone();
    let reader = builder.build()?;
    let out = File::options().write(true).create_new(true).open(&tmp)?;
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let mut writer = ArrowWriter::try_new(out, schema, Some(writer_properties()))?;
        for batch in reader {
            let batch = batch?;
            let column = batch
                .column_by_name("trace")
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .ok_or("no trace column")?;
            let keep: BooleanArray = (0..column.len())
                .map(|i| Some(column.is_null(i) || !traces.contains(column.value(i))))
                .collect();
            writer.write(&arrow_select::filter::filter_record_batch(&batch, &keep)?)?;
        }
        for kv in key_values(&host, kept) {
            writer.append_key_value_metadata(kv);
        }
        writer.close()?;
        fs::rename(&tmp, path)?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The metadata of a file exported from `host` holding `traces`.
pub fn key_values(host: &str, traces: &[String]) -> [KeyValue; 2] {
    [
        KeyValue::new(HOST.to_owned(), host.to_owned()),
        KeyValue::new(
            TRACES.to_owned(),
            serde_json::Value::from(traces.to_vec()).to_string(),
        ),
    ]
}
