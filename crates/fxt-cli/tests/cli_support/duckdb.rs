//! Reading `fxt export parquet`'s tables with DuckDB (from PyPI: a reader
//! we did not write), through `tests/python/duckdb_query.py`.

use std::path::Path;

use serde_json::Value;

use super::{python_with, stderr};

/// The DuckDB package the tests install.
pub const DUCKDB: (&str, &str) = ("duckdb", "duckdb==2.0.1");

/// Runs `queries` with DuckDB over the tables in `dir` (`{slices}` names
/// the table `slices`); one list of rows per query.
pub fn query(dir: &Path, queries: &[&str]) -> Vec<Value> {
    let python = python_with(&[DUCKDB]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/duckdb_query.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(dir)
        .args(queries)
        .output()
        .expect("python runs");
    assert!(out.status.success(), "duckdb: {}", stderr(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("JSON from the script");
    rows.as_array().expect("one list per query").clone()
}
