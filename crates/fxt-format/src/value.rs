//! An argument's value: the one shape of the format's argument types (0
//! to 10, and the types this crate does not know), which the encoder, the
//! view decoder and the owned decoder each hold their own way.
//!
//! | holder | string `S` | bytes `B` | unknown type `U` |
//! |---|---|---|---|
//! | [`encode::ArgValue`](crate::encode::ArgValue) | [`StringRef`](crate::encode::StringRef) | `&[u8]` | [`Infallible`](core::convert::Infallible): never written |
//! | `decode::ArgValueView` | `decode::StrRef`, unresolved | `&[u8]`, borrowed | `()` |
//! | `decode::ArgValue` | `decode::Text`, resolved | `Vec<u8>` | `decode::SkippedArg` |
//!
//! Which bits of an argument's header and which words carry each type
//! are [`encode::header::arg_type`](crate::encode::header::arg_type)'s
//! and [`encode::ArgValue::parts`](crate::encode::ArgValue::parts)'.

/// The value of an argument, its string held as `S`, its bytes as `B`,
/// and what is kept of an argument of an unknown type as `U`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<S, B, U> {
    /// Type 0: no value (the argument appears in name only).
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
    /// Type 6: string (indexed or inline).
    Str(S),
    /// Type 7: pointer.
    Pointer(u64),
    /// Type 8: kernel object id.
    Koid(u64),
    /// Type 9: boolean.
    Bool(bool),
    /// Type 10: opaque bytes (padding removed; a little under 32 KiB at
    /// most).
    Blob(B),
    /// An argument type the decoder does not know (11..=15), skipped by
    /// its size; its name was still decoded.
    Unknown {
        /// The argument type field.
        arg_type: u8,
        /// What the holder keeps of it.
        skipped: U,
    },
}
