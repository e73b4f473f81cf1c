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

use fxt_format::decode::{Arg, ArgValue, ArgValueView, ArgView, Context, EventView, Text};

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, MapBuilder, StringBuilder};
use arrow_array::{Array, ArrayRef, StringArray};

use super::summary::Summary;
use super::table::{map_names, Col, Columns};
use crate::error::Error;

/// The argument maps of a row: the arguments of one record, or of a
/// begin and its end (a name in both keeps the begin's value).
pub struct ArgMaps<'a>(pub &'a [Args<'a>]);

/// The arguments of one record: decoded, or read from its view (strings
/// borrowed from the record or the provider's table).
#[derive(Clone, Copy)]
pub enum Args<'a> {
    /// Decoded arguments.
    Decoded(&'a [Arg]),
    /// The arguments of an event view, resolved in its context.
    View(&'a EventView<'a>, &'a Context<'a>),
}

/// One argument, from either kind of [`Args`].
#[derive(Clone, Copy)]
pub enum Item<'a> {
    /// A decoded argument.
    Decoded(&'a Arg),
    /// An argument of a view, resolved in its context.
    View(ArgView<'a>, &'a Context<'a>),
}

/// An argument's value, as the tables see it.
pub enum Value<'a> {
    /// No value.
    Null,
    /// An integer of one of FXT's signed types.
    Signed(i64),
    /// An integer of one of FXT's unsigned types (and koids).
    Unsigned(u64),
    /// A double.
    F64(f64),
    /// A string (`Err`: an undefined string, shown as its [`Text`] is).
    Str(Result<&'a str, Text>),
    /// A pointer.
    Pointer(u64),
    /// A boolean.
    Bool(bool),
    /// Bytes.
    Blob(&'a [u8]),
    /// A type this decoder does not know.
    Unknown,
}

impl<'a> Args<'a> {
    /// The arguments, in order.
    pub fn items(self) -> impl Iterator<Item = Item<'a>> {
        let (decoded, view) = match self {
            Args::Decoded(args) => (Some(args.iter().map(Item::Decoded)), None),
            Args::View(e, ctx) => (None, Some(e.args().map(move |a| Item::View(a, ctx)))),
        };
        decoded
            .into_iter()
            .flatten()
            .chain(view.into_iter().flatten())
    }
}

impl<'a> Item<'a> {
    /// The argument's name (`None`: undefined).
    #[inline]
    pub fn name(self) -> Option<&'a str> {
        match self {
            Item::Decoded(a) => a.name.as_str(),
            Item::View(a, ctx) => ctx.str(a.name),
        }
    }

    /// The argument's value.
    #[inline]
    pub fn value(self) -> Value<'a> {
        match self {
            Item::Decoded(a) => match &a.value {
                ArgValue::Null => Value::Null,
                ArgValue::I32(v) => Value::Signed(i64::from(*v)),
                ArgValue::U32(v) => Value::Unsigned(u64::from(*v)),
                ArgValue::I64(v) => Value::Signed(*v),
                ArgValue::U64(v) | ArgValue::Koid(v) => Value::Unsigned(*v),
                ArgValue::F64(v) => Value::F64(*v),
                ArgValue::Str(s) => Value::Str(s.as_str().ok_or_else(|| s.clone())),
                ArgValue::Pointer(p) => Value::Pointer(*p),
                ArgValue::Bool(b) => Value::Bool(*b),
                ArgValue::Blob(b) => Value::Blob(b),
                ArgValue::Unknown { .. } => Value::Unknown,
            },
            Item::View(a, ctx) => match a.value {
                ArgValueView::Null => Value::Null,
                ArgValueView::I32(v) => Value::Signed(i64::from(v)),
                ArgValueView::U32(v) => Value::Unsigned(u64::from(v)),
                ArgValueView::I64(v) => Value::Signed(v),
                ArgValueView::U64(v) | ArgValueView::Koid(v) => Value::Unsigned(v),
                ArgValueView::F64(v) => Value::F64(v),
                ArgValueView::Str(s) => Value::Str(ctx.str(s).ok_or_else(|| ctx.text(s))),
                ArgValueView::Pointer(p) => Value::Pointer(p),
                ArgValueView::Bool(b) => Value::Bool(b),
                ArgValueView::Blob(b) => Value::Blob(b),
                ArgValueView::Unknown { .. } => Value::Unknown,
            },
        }
    }
}

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
        let text = b.text.finish();
        let ints = b.ints.finish();
        let floats = b.floats.finish();
        // The next row group's builders, with room for as many entries as
        // this one's (see `Columns::finish`).
        let names = || Some(map_names());
        let rows = text.len();
        b.text = MapBuilder::with_capacity(
            names(),
            strings_like(text.keys()),
            strings_like(text.values()),
            rows,
        );
        b.ints = MapBuilder::with_capacity(
            names(),
            strings_like(ints.keys()),
            Int64Builder::with_capacity(ints.values().len()),
            rows,
        );
        b.floats = MapBuilder::with_capacity(
            names(),
            strings_like(floats.keys()),
            Float64Builder::with_capacity(floats.values().len()),
            rows,
        );
        out.push(Arc::new(text));
        out.push(Arc::new(ints));
        out.push(Arc::new(floats));
    }
}

/// Most arguments a row has: 15 per record (a 4-bit count), a begin's
/// and its end's.
const MOST: usize = 30;

/// A string builder with room for as many strings and bytes as `array`
/// holds.
fn strings_like(array: &ArrayRef) -> StringBuilder {
    let bytes = array
        .as_any()
        .downcast_ref::<StringArray>()
        .map_or(0, |a| a.value_data().len());
    StringBuilder::with_capacity(array.len(), bytes)
}

/// Appends the argument maps of one row. Text values are written straight
/// into the column's buffer: no allocation per row.
fn push<'x>(b: &mut MapBuilders, args: &[Args<'x>], summary: &mut Summary) -> Result<(), Error> {
    // The names written so far (records hold a few arguments: no set
    // needed).
    let mut seen: [&'x str; MOST] = [""; MOST];
    let mut n = 0;
    let mut one = |arg: Item<'x>| {
        let value = arg.value();
        let (int, float) = match value {
            Value::Signed(v) => (Some(v), None),
            Value::Unsigned(v) => (i64::try_from(v).ok(), None),
            Value::F64(v) => (None, Some(v)),
            Value::Unknown => {
                summary.unknown_arg_types += 1;
                return;
            }
            _ => (None, None),
        };
        let key = arg.name().unwrap_or("");
        // A name an earlier argument took: the first value is kept.
        if seen[..n].contains(&key) {
            summary.repeated_arg_names += 1;
            return;
        }
        if n < MOST {
            seen[n] = key;
            n += 1;
        }
        let MapBuilders { text, ints, floats } = &mut *b;
        text.keys().append_value(key);
        if matches!(value, Value::Null) {
            text.values().append_null();
        } else {
            text_of(&value, text.values());
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
    };
    for source in args {
        match *source {
            Args::Decoded(args) => args.iter().for_each(|a| one(Item::Decoded(a))),
            Args::View(e, ctx) => e.args().for_each(|a| one(Item::View(a, ctx))),
        }
    }
    let MapBuilders { text, ints, floats } = b;
    for result in [text.append(true), ints.append(true), floats.append(true)] {
        result.map_err(|e| Error::msg(format!("internal error: argument map: {e}")))?;
    }
    Ok(())
}

/// The text form of a value (see the module documentation), appended
/// to `out`.
pub fn text_of(value: &Value<'_>, out: &mut impl Write) {
    let mut int = itoa::Buffer::new();
    // Writing to a String or a string builder cannot fail.
    let _ = match value {
        Value::Null | Value::Unknown => Ok(()),
        Value::Signed(v) => out.write_str(int.format(*v)),
        Value::Unsigned(v) => out.write_str(int.format(*v)),
        Value::F64(v) => write!(out, "{v}"),
        Value::Str(Ok(s)) => out.write_str(s),
        Value::Str(Err(s)) => write!(out, "{s}"),
        Value::Pointer(p) => write!(out, "{p:#x}"),
        Value::Bool(b) => out.write_str(if *b { "true" } else { "false" }),
        Value::Blob(bytes) => bytes.iter().try_for_each(|b| write!(out, "{b:02x}")),
    };
}
