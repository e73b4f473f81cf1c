//! A record's strings and argument values as the record holds them: what
//! a view ([`super::EventView`]) hands out, and what the argument and
//! string readers make, below the view that walks records.

/// A string field as the record holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StrRef<'a> {
    /// String ref 0: the empty string.
    Empty,
    /// An index into the provider's string table (1..=0x7fff), resolved
    /// with [`Context::text`](super::Context::text); it may be undefined.
    Indexed(u16),
    /// The text, held in the record.
    Inline(&'a str),
}

/// An argument of an event view ([`EventView::args`](super::EventView::args)): its name and
/// value as the record holds them, strings unresolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArgView<'a> {
    /// The argument's name.
    pub name: StrRef<'a>,
    /// The argument's value.
    pub value: ArgValueView<'a>,
}

/// The value of an [`ArgView`] ([`crate::value::Value`]): strings
/// unresolved, bytes borrowed from the record; of an argument of an
/// unknown type, only its type.
pub type ArgValueView<'a> = crate::value::Value<StrRef<'a>, &'a [u8], ()>;

/// The value of an integer argument ([`super::ArgWords::int`]): what
/// [`ArgValueView`] holds for argument types 1 to 4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntArg {
    /// Type 1: 32-bit signed integer.
    I32(i32),
    /// Type 2: 32-bit unsigned integer.
    U32(u32),
    /// Type 3: 64-bit signed integer.
    I64(i64),
    /// Type 4: 64-bit unsigned integer.
    U64(u64),
}

/// An integer argument's value as a printer needs it, read with no
/// dispatch on its type ([`super::ArgWords::int_parts`]): its sign, its
/// magnitude, and whether it is a uint64 (type 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntParts {
    /// Whether the value is below 0 (only a signed type's can be).
    pub negative: bool,
    /// The value's absolute value.
    pub magnitude: u64,
    /// Whether the value is a uint64.
    pub uint64: bool,
}

impl From<IntArg> for IntParts {
    fn from(value: IntArg) -> Self {
        let (negative, magnitude) = match value {
            IntArg::I32(x) => (x < 0, u64::from(x.unsigned_abs())),
            IntArg::U32(x) => (false, u64::from(x)),
            IntArg::I64(x) => (x < 0, x.unsigned_abs()),
            IntArg::U64(x) => (false, x),
        };
        IntParts {
            negative,
            magnitude,
            uint64: matches!(value, IntArg::U64(_)),
        }
    }
}

/// The value of an argument that is a string by index or a double
/// ([`super::ArgWords::str_or_f64`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StrOrF64 {
    /// Type 6, a string by index (not 0, not inline).
    Str(u16),
    /// Type 5: double.
    F64(f64),
}
