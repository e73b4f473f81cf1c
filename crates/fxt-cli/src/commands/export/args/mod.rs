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

mod held;
mod kept;
mod shape;

use std::fmt::Write;

use fxt_format::decode::{
    Arg, ArgValue, ArgValueView, ArgView, ArgViews, ArgWordIter, Context, EventHead, EventView,
    IntArg, StrRef, Text,
};

use crate::interned::Interned;

use super::encode::{Dictionary, KeyLeaf, Last, Leaf, NumLeaf, TextLeaf};
use super::summary::Summary;
use super::table::{Col, Columns};
use crate::error::Error;
use held::Held;
use shape::{Shape, Values};

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
    /// The arguments of an event head, resolved in its context (what
    /// its view's give).
    Head(&'a EventHead<'a>, &'a Context<'a>),
    /// A begin's arguments read from its view, texts by their ids in
    /// these interned texts.
    Kept(&'a [Kept], &'a Interned),
}

/// A begin's argument read from its view ([`kept_from_args`]): its name
/// and value, texts by their ids in the rows' [`Interned`] texts (no text
/// copied per argument).
#[derive(Clone, Copy)]
pub struct Kept {
    name: u32,
    value: KeptValue,
}

/// A [`Kept`] argument's value: FXT's types but blobs and unknown ones.
#[derive(Clone, Copy)]
enum KeptValue {
    Null,
    Signed(i64),
    Unsigned(u64),
    F64(f64),
    Str(u32),
    Pointer(u64),
    Bool(bool),
}

/// One argument, from either kind of [`Args`].
#[derive(Clone, Copy)]
pub enum Item<'a> {
    /// A decoded argument.
    Decoded(&'a Arg),
    /// An argument of a view, resolved in its context.
    View(ArgView<'a>, &'a Context<'a>),
    /// A begin's argument kept from its view, and the texts it names.
    Kept(&'a Kept, &'a Interned),
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

impl From<IntArg> for Value<'_> {
    /// An integer argument read from its words.
    #[inline(always)]
    fn from(value: IntArg) -> Self {
        match value {
            IntArg::I32(v) => Value::Signed(i64::from(v)),
            IntArg::U32(v) => Value::Unsigned(u64::from(v)),
            IntArg::I64(v) => Value::Signed(v),
            IntArg::U64(v) => Value::Unsigned(v),
        }
    }
}

impl<'a> Args<'a> {
    /// Whether there are none.
    #[inline]
    fn is_empty(&self) -> bool {
        match self {
            Args::Decoded(args) => args.is_empty(),
            Args::View(e, _) => e.arg_count == 0,
            Args::Head(h, _) => h.arg_count() == 0,
            Args::Kept(args, _) => args.is_empty(),
        }
    }

    /// The arguments, in order.
    pub fn items(self) -> impl Iterator<Item = Item<'a>> {
        let (decoded, view, kept) = match self {
            Args::Decoded(args) => (Some(args.iter().map(Item::Decoded)), None, None),
            Args::View(e, ctx) => (None, Some((e.args(), ctx)), None),
            Args::Head(h, ctx) => (None, Some((h.args(), ctx)), None),
            Args::Kept(args, texts) => (
                None,
                None,
                Some(args.iter().map(move |a| Item::Kept(a, texts))),
            ),
        };
        decoded
            .into_iter()
            .flatten()
            .chain(
                view.into_iter()
                    .flat_map(|(args, ctx)| args.map(move |a| Item::View(a, ctx))),
            )
            .chain(kept.into_iter().flatten())
    }
}

impl<'a> Item<'a> {
    /// The argument's name (`None`: undefined).
    #[inline(always)]
    pub fn name(self) -> Option<&'a str> {
        match self {
            Item::Decoded(a) => a.name.as_str(),
            Item::View(a, ctx) => ctx.str(a.name),
            Item::Kept(a, texts) => texts.text(a.name).as_str(),
        }
    }

    /// The argument's value.
    #[inline(always)]
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
            Item::Kept(a, texts) => match a.value {
                KeptValue::Null => Value::Null,
                KeptValue::Signed(v) => Value::Signed(v),
                KeptValue::Unsigned(v) => Value::Unsigned(v),
                KeptValue::F64(v) => Value::F64(v),
                KeptValue::Str(id) => {
                    let s = texts.text(id);
                    Value::Str(s.as_str().ok_or_else(|| s.clone()))
                }
                KeptValue::Pointer(p) => Value::Pointer(p),
                KeptValue::Bool(b) => Value::Bool(b),
            },
        }
    }
}

/// The arguments of an event (`count` of them, as its header says, read
/// from its view or head) as decoding the whole event gives them, into
/// `out` (emptied first), their texts by their ids in `texts` (looked up
/// in its context, as decoding looks them up): no record decoded again,
/// no text copied. False, `out` then of no use, if one has an inline
/// text, a blob or a type this decoder does not know: only decoding
/// reads those as it should.
#[inline(always)]
pub fn kept_from_args(
    (args, count): (ArgViews<'_>, u8),
    ctx: &Context<'_>,
    texts: &mut Interned,
    out: &mut Vec<Kept>,
) -> bool {
    out.clear();
    let by_index = |s: StrRef<'_>| matches!(s, StrRef::Indexed(_) | StrRef::Empty);
    for a in args {
        let value = match a.value {
            ArgValueView::Null => KeptValue::Null,
            ArgValueView::I32(v) => KeptValue::Signed(i64::from(v)),
            ArgValueView::U32(v) => KeptValue::Unsigned(u64::from(v)),
            ArgValueView::I64(v) => KeptValue::Signed(v),
            ArgValueView::U64(v) | ArgValueView::Koid(v) => KeptValue::Unsigned(v),
            ArgValueView::F64(v) => KeptValue::F64(v),
            ArgValueView::Str(s) if by_index(s) => KeptValue::Str(texts.id(ctx, s)),
            ArgValueView::Pointer(v) => KeptValue::Pointer(v),
            ArgValueView::Bool(v) => KeptValue::Bool(v),
            _ => return false,
        };
        if !by_index(a.name) {
            return false;
        }
        out.push(Kept {
            name: texts.id(ctx, a.name),
            value,
        });
    }
    // An argument the view could not read ends its arguments early.
    out.len() == usize::from(count)
}

/// The leaves of the three maps: each map's keys and values, the keys of
/// all three numbered by one dictionary (a name is looked up once). A map
/// is never null; an empty map is definition level 1 in both its leaves,
/// a key 2, a value 3 (2 if null); every entry but a row's first repeats.
/// Only the values' levels are pushed: the keys' follow from them
/// ([`KeyLeaf`]).
pub struct MapBuilders {
    keys: Dictionary,
    /// The name each of a row's first arguments had in the last row
    /// (rows of one kind name their arguments alike, in one order).
    names: [Option<Last>; POSITIONS],
    /// The shape of the last row of integer arguments, and its number
    /// in [`MapBuilders::held`].
    shape: Shape,
    number: u32,
    /// Rows held by their shape's number.
    held: Held,
    /// The shape of the last begin's row held.
    last_kept: Option<kept::LastKept>,
    text: (KeyLeaf, TextLeaf),
    ints: (KeyLeaf, NumLeaf<i64>),
    floats: (KeyLeaf, NumLeaf<f64>),
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
        MapBuilders {
            keys: Dictionary::default(),
            names: [None; POSITIONS],
            shape: Shape::default(),
            number: held::NO_ARGS,
            held: Held::default(),
            last_kept: None,
            text: (KeyLeaf::default(), TextLeaf::new(3, true)),
            ints: (KeyLeaf::default(), NumLeaf::new(3, true)),
            floats: (KeyLeaf::default(), NumLeaf::new(3, true)),
        }
    }

    fn append(&self, b: &mut MapBuilders, summary: &mut Summary) -> Result<(), Error> {
        push(b, self.0, summary);
        Ok(())
    }

    fn finish(b: &mut MapBuilders, out: &mut Vec<Leaf>) {
        b.expand_held();
        b.held.clear();
        b.last_kept = None;
        let keys = b.keys.finish();
        b.names = [None; POSITIONS];
        b.shape = Shape::default();
        b.number = held::NO_ARGS;
        out.extend([
            b.text.0.finish(keys.clone(), &b.text.1.levels),
            b.text.1.finish(),
            b.ints.0.finish(keys.clone(), &b.ints.1.levels),
            b.ints.1.finish(),
            b.floats.0.finish(keys, &b.floats.1.levels),
            b.floats.1.finish(),
        ]);
    }
}

/// Most arguments a row has: 15 per record (a 4-bit count), a begin's
/// and its end's.
const MOST: usize = 30;

/// Argument positions whose last name is remembered.
const POSITIONS: usize = 8;

/// The row being appended: the ids of the names written so far (records
/// hold a few arguments: no set needed; ids, which a row group's
/// dictionary gives each name once, compare as the names do), and the
/// entries of each map.
struct Row {
    seen: [u32; MOST],
    names: usize,
    /// Arguments looked at (a position in the row).
    at: usize,
    text: u8,
    ints: u8,
    floats: u8,
}

/// The repetition level of a map's next entry (0 for a row's first), and
/// one more entry counted.
#[inline(always)]
fn next_rep(entries: &mut u8) -> u8 {
    let rep = u8::from(*entries > 0);
    *entries = entries.saturating_add(1);
    rep
}

/// Appends the argument maps of one row. Text values are written straight
/// into the column's page: no allocation per row.
fn push(b: &mut MapBuilders, args: &[Args<'_>], summary: &mut Summary) {
    let mut values = [0; shape::MOST];
    let by_shape = match args {
        [Args::View(e, ctx)] => {
            b.values_by_shape((e.arg_count, || e.arg_words()), ctx, &mut values)
        }
        [Args::Head(h, ctx)] => {
            b.values_by_shape((h.arg_count(), || h.arg_words()), ctx, &mut values)
        }
        _ => false,
    };
    if by_shape {
        b.append_by_shape(&values, summary);
        return;
    }
    // No arguments (a begin and its end without any, most often): three
    // empty maps, what the loops below would write.
    if args.iter().all(Args::is_empty) {
        b.held.push_empty();
        return;
    }
    if let [Args::Kept(kept, texts), rest @ ..] = args {
        if rest.iter().all(Args::is_empty) && b.hold_kept(kept, texts, summary) {
            return;
        }
    }
    b.expand_held();
    let mut row = Row {
        seen: [0; MOST],
        names: 0,
        at: 0,
        text: 0,
        ints: 0,
        floats: 0,
    };
    for source in args {
        match *source {
            Args::Decoded(args) => args.iter().for_each(|a| {
                let item = Item::Decoded(a);
                b.entry(&mut row, item.name(), item.value(), summary)
            }),
            Args::View(e, ctx) => e.args().for_each(|a| {
                let item = Item::View(a, ctx);
                b.entry(&mut row, item.name(), item.value(), summary)
            }),
            Args::Head(h, ctx) => h.args().for_each(|a| {
                let item = Item::View(a, ctx);
                b.entry(&mut row, item.name(), item.value(), summary)
            }),
            Args::Kept(args, texts) => args.iter().for_each(|a| {
                let item = Item::Kept(a, texts);
                b.entry(&mut row, item.name(), item.value(), summary)
            }),
        }
    }
    // A map without entries: empty, not null.
    if row.text == 0 {
        b.text.1.levels.push(1, 0);
    }
    if row.ints == 0 {
        b.ints.1.levels.push(1, 0);
    }
    if row.floats == 0 {
        b.floats.1.levels.push(1, 0);
    }
}

impl MapBuilders {
    /// Reads the values of a row of an event's arguments (`count` of them,
    /// their words from `words`) into `values` if they are integers named
    /// by index (by the last row's shape, or by the shape found anew);
    /// false if not.
    #[inline]
    fn values_by_shape<'w>(
        &mut self,
        (count, words): (u8, impl Fn() -> ArgWordIter<'w>),
        ctx: &Context<'_>,
        values: &mut Values,
    ) -> bool {
        if self.shape.read((count, words()), ctx, values) {
            return true;
        }
        match Shape::of((count, words()), ctx, &mut self.keys) {
            Some(shape) => {
                self.shape = shape;
                let keys = self.shape.keys();
                self.number = self.held.number(keys, keys);
                self.shape.read((count, words()), ctx, values)
            }
            None => false,
        }
    }

    /// Holds a row of the shape kept, of `values` (appended to the text
    /// and integer maps' values).
    #[inline]
    fn append_by_shape(&mut self, values: &Values, summary: &mut Summary) {
        let shape = &self.shape;
        summary.repeated_arg_names += shape.repeated();
        for v in shape.kept(values) {
            self.text.1.i64(v);
            self.ints.1.value(v);
        }
        self.held.push(self.number);
    }

    /// Appends the rows held to the leaves.
    fn expand_held(&mut self) {
        self.held
            .expand(&mut self.text, &mut self.ints, &mut self.floats.1);
    }

    /// Appends one argument, `name` and `value`, to the maps of `row`.
    #[inline(always)]
    fn entry(
        &mut self,
        row: &mut Row,
        name: Option<&str>,
        value: Value<'_>,
        summary: &mut Summary,
    ) {
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
        let name = name.unwrap_or("").as_bytes();
        let key = self
            .keys
            .id_after(&mut self.names[row.at % POSITIONS], name);
        row.at += 1;
        // A name an earlier argument took: the first value is kept.
        if row.seen[..row.names].contains(&key) {
            summary.repeated_arg_names += 1;
            return;
        }
        if row.names < MOST {
            row.seen[row.names] = key;
            row.names += 1;
        }
        let (keys, values) = &mut self.text;
        let rep = next_rep(&mut row.text);
        keys.id(key);
        match value {
            Value::Null => values.levels.push(2, rep),
            Value::Signed(v) => {
                values.levels.push(3, rep);
                values.i64(v);
            }
            Value::Unsigned(v) => {
                values.levels.push(3, rep);
                match int {
                    Some(v) => values.i64(v),
                    None => values.int(v),
                }
            }
            _ => {
                values.levels.push(3, rep);
                values.value_with(|out| text_of(&value, out));
            }
        }
        if let Some(v) = int {
            let (keys, values) = &mut self.ints;
            let rep = next_rep(&mut row.ints);
            keys.id(key);
            values.levels.push(3, rep);
            values.value(v);
        }
        if let Some(v) = float {
            let (keys, values) = &mut self.floats;
            let rep = next_rep(&mut row.floats);
            keys.id(key);
            values.levels.push(3, rep);
            values.value(v);
        }
    }
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
