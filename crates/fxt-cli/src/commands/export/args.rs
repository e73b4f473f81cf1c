//! A record's arguments as three map columns, a representation DuckDB,
//! Spark, ClickHouse, Trino, pandas and polars all read:
//!
//! | column | Parquet type | holds |
//! |---|---|---|
//! | `args` | `MAP<STRING, STRING>` | every argument, its value as text (null for a null argument) |
//! | `args_int` | `MAP<STRING, INT64>` | integer arguments (int32, uint32, int64, uint64 up to 2^63-1, koid) |
//! | `args_float` | `MAP<STRING, DOUBLE>` | double arguments |
//!
//! Text forms: integers and koids in decimal, doubles as Rust prints
//! them (the shortest text that reads back to the same double), `true` /
//! `false`, pointers as `0x` hex, blobs as lowercase hex. A map holds a
//! key once: a name repeated within one record keeps its first value and
//! is counted in the summary, as are arguments of types this decoder does
//! not know.

use std::fmt::Write;

use fxt_format::decode::{Arg, ArgValue};

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, MapBuilder, StringBuilder};
use arrow_array::ArrayRef;

use super::summary::Summary;
use super::table::{map_names, Col, Columns};
use crate::error::Error;

/// The argument maps of a row: the arguments of one record, or of a
/// begin and its end (a name in both keeps the begin's value).
pub struct ArgMaps<'a>(pub &'a [&'a [Arg]]);

/// The builders of the three maps.
pub struct MapBuilders {
    text: MapBuilder<StringBuilder, StringBuilder>,
    ints: MapBuilder<StringBuilder, Int64Builder>,
    floats: MapBuilder<StringBuilder, Float64Builder>,
}

impl Columns for ArgMaps<'_> {
    type Builders = MapBuilders;

    fn declare(_: &'static str, out: &mut Vec<(&'static str, Col)>) {
        out.extend([
            ("args", Col::MapStr),
            ("args_int", Col::MapI64),
            ("args_float", Col::MapF64),
        ]);
    }

    fn builders() -> MapBuilders {
        let names = || Some(map_names());
        MapBuilders {
            text: MapBuilder::new(names(), StringBuilder::new(), StringBuilder::new()),
            ints: MapBuilder::new(names(), StringBuilder::new(), Int64Builder::new()),
            floats: MapBuilder::new(names(), StringBuilder::new(), Float64Builder::new()),
        }
    }

    fn append(&self, b: &mut MapBuilders, summary: &mut Summary) -> Result<(), Error> {
        push(b, self.0, summary)
    }

    fn finish(b: &mut MapBuilders, out: &mut Vec<ArrayRef>) {
        out.push(Arc::new(b.text.finish()));
        out.push(Arc::new(b.ints.finish()));
        out.push(Arc::new(b.floats.finish()));
    }
}

/// Appends the argument maps of one row. Text values are written straight
/// into the column's buffer: no allocation per row.
fn push(b: &mut MapBuilders, args: &[&[Arg]], summary: &mut Summary) -> Result<(), Error> {
    let MapBuilders { text, ints, floats } = b;
    let all = || args.iter().flat_map(|a| a.iter());
    for (i, arg) in all().enumerate() {
        let (int, float) = match &arg.value {
            ArgValue::Null => (None, None),
            ArgValue::I32(v) => (Some(i64::from(*v)), None),
            ArgValue::U32(v) => (Some(i64::from(*v)), None),
            ArgValue::I64(v) => (Some(*v), None),
            ArgValue::U64(v) | ArgValue::Koid(v) => (i64::try_from(*v).ok(), None),
            ArgValue::F64(v) => (None, Some(*v)),
            ArgValue::Str(_) | ArgValue::Pointer(_) | ArgValue::Bool(_) | ArgValue::Blob(_) => {
                (None, None)
            }
            ArgValue::Unknown { .. } => {
                summary.unknown_arg_types += 1;
                continue;
            }
        };
        let key = arg.name.as_str().unwrap_or("");
        // A name an earlier argument of a known type took: the first
        // value is kept (records hold a few arguments: no set needed).
        let repeated = all().take(i).any(|a| {
            !matches!(a.value, ArgValue::Unknown { .. }) && a.name.as_str().unwrap_or("") == key
        });
        if repeated {
            summary.repeated_arg_names += 1;
            continue;
        }
        text.keys().append_value(key);
        if matches!(arg.value, ArgValue::Null) {
            text.values().append_null();
        } else {
            text_of(&arg.value, text.values());
            text.values().append_value("");
        }
        if let Some(v) = int {
            ints.keys().append_value(key);
            ints.values().append_value(v);
        }
        if let Some(v) = float {
            floats.keys().append_value(key);
            floats.values().append_value(v);
        }
    }
    for result in [text.append(true), ints.append(true), floats.append(true)] {
        result.map_err(|e| Error::msg(format!("internal error: argument map: {e}")))?;
    }
    Ok(())
}

/// The text form of a value (see the module documentation), appended
/// to `out`.
pub fn text_of(value: &ArgValue, out: &mut impl Write) {
    let mut int = itoa::Buffer::new();
    // Writing to a String or a string builder cannot fail.
    let _ = match value {
        ArgValue::Null | ArgValue::Unknown { .. } => Ok(()),
        ArgValue::I32(v) => out.write_str(int.format(*v)),
        ArgValue::U32(v) => out.write_str(int.format(*v)),
        ArgValue::I64(v) => out.write_str(int.format(*v)),
        ArgValue::U64(v) | ArgValue::Koid(v) => out.write_str(int.format(*v)),
        ArgValue::F64(v) => write!(out, "{v}"),
        ArgValue::Str(s) => match s.as_str() {
            Some(s) => out.write_str(s),
            None => write!(out, "{s}"),
        },
        ArgValue::Pointer(p) => write!(out, "{p:#x}"),
        ArgValue::Bool(b) => out.write_str(if *b { "true" } else { "false" }),
        ArgValue::Blob(bytes) => bytes.iter().try_for_each(|b| write!(out, "{b:02x}")),
    };
}
