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

/// The value of an [`ArgView`]: [`super::ArgValue`] borrowing the record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArgValueView<'a> {
    /// Type 0: no value.
    Null,
    /// Type 1: 32-bit signed integer.
    I32(i32),
    /// Type 2: 32-bit unsigned integer.
    U32(u32),
    /// Type 3: 64-bit signed integer.
    I64(i64),
    /// Type 4: 64-bit unsigned integer.
    U64(u64),
    /// Type 5: double-precision float.
    F64(f64),
    /// Type 6: string, unresolved.
    Str(StrRef<'a>),
    /// Type 7: pointer.
    Pointer(u64),
    /// Type 8: kernel object id.
    Koid(u64),
    /// Type 9: boolean.
    Bool(bool),
    /// Type 10: opaque bytes (padding removed).
    Blob(&'a [u8]),
    /// An argument type this decoder does not know (11..=15).
    Unknown {
        /// The argument type field.
        arg_type: u8,
    },
}

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
