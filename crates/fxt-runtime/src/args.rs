//! [`IntoArgValue`]: how Rust values become FXT argument values, and
//! [`CounterValue`]: the numbers a counter series takes.

use fxt_format::encode::{ArgValue, StringRef};

/// A kernel object id (written as a koid argument; viewers link it to the
/// kernel object record that names the object, e.g. a thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Koid(pub u64);

/// Converts a value into an argument value of an event.
///
/// | Rust type | FXT argument |
/// |---|---|
/// | `i8`, `i16`, `i32` | int32 |
/// | `u8`, `u16`, `u32` | uint32 |
/// | `i64`, `isize` | int64 |
/// | `u64`, `usize` | uint64 |
/// | `f32`, `f64` | double |
/// | `bool` | bool |
/// | `str`, `String`, `Cow<str>` | string (written inline) |
/// | `()`, `None` | null |
/// | `*const T`, `*mut T` | pointer |
/// | [`Koid`] | koid |
/// | `[u8]`, `Vec<u8>` (so `&[u8]` too) | blob (written inline; an argument holds at most 32 KiB) |
/// | `Option<T>` | `T`'s, or null |
/// | `&T` | `T`'s |
///
/// Implement it for your own types to pass them to the `trace_*!` macros.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a trace argument value",
    label = "not a supported argument type",
    note = "use an integer, float, bool, &str/String, raw pointer, fxt::Koid, () or &[u8]; convert the value (e.g. `format!(\"{{:?}}\", v)` or `v as u64`), or implement `fxt::IntoArgValue` for your type"
)]
pub trait IntoArgValue {
    /// The argument value (may borrow from `self`, hence `&self`: the
    /// signature the macros are generated against).
    #[allow(clippy::wrong_self_convention)]
    fn into_arg_value(&self) -> ArgValue<'_>;
}

macro_rules! via {
    ($variant:ident($as:ty): $($t:ty),*) => {$(
        impl IntoArgValue for $t {
            #[inline(always)]
            fn into_arg_value(&self) -> ArgValue<'_> {
                ArgValue::$variant(*self as $as)
            }
        }
    )*};
}

via!(I32(i32): i8, i16, i32);
via!(U32(u32): u8, u16, u32);
via!(I64(i64): i64, isize);
via!(U64(u64): u64, usize);
via!(F64(f64): f32, f64);

impl IntoArgValue for bool {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Bool(*self)
    }
}

impl IntoArgValue for str {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Str(StringRef::Inline(self))
    }
}

impl IntoArgValue for String {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Str(StringRef::Inline(self))
    }
}

impl IntoArgValue for std::borrow::Cow<'_, str> {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Str(StringRef::Inline(self))
    }
}

impl IntoArgValue for [u8] {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Blob(self)
    }
}

impl IntoArgValue for Vec<u8> {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Blob(self)
    }
}

impl IntoArgValue for () {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Null
    }
}

impl IntoArgValue for Koid {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Koid(self.0)
    }
}

impl<T: ?Sized> IntoArgValue for *const T {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Pointer(self.cast::<()>() as usize as u64)
    }
}

impl<T: ?Sized> IntoArgValue for *mut T {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        ArgValue::Pointer(self.cast::<()>() as usize as u64)
    }
}

impl<T: IntoArgValue> IntoArgValue for Option<T> {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        match self {
            Some(v) => v.into_arg_value(),
            None => ArgValue::Null,
        }
    }
}

impl<T: IntoArgValue + ?Sized> IntoArgValue for &T {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        (**self).into_arg_value()
    }
}

impl<T: IntoArgValue + ?Sized> IntoArgValue for &mut T {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        (**self).into_arg_value()
    }
}

impl<T: IntoArgValue + ?Sized> IntoArgValue for Box<T> {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        (**self).into_arg_value()
    }
}

impl<'a> IntoArgValue for ArgValue<'a> {
    #[inline(always)]
    fn into_arg_value(&self) -> ArgValue<'_> {
        *self
    }
}

/// A value a `trace_counter!` series can take: integers and floats.
///
/// Signed integers up to 32 bits are written as int32, unsigned up to 32
/// bits as uint32, `i64`/`isize` as int64, `u64`/`usize` as uint64, floats
/// as double.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a counter value",
    label = "counters record numbers",
    note = "a trace_counter! series needs an integer or a float (i8..=i64, u8..=u64, isize, usize, f32, f64): convert it, e.g. `len as u64`"
)]
pub trait CounterValue {
    /// The FXT argument value.
    fn counter_value(&self) -> ArgValue<'static>;
}

macro_rules! counter_values {
    ($($t:ty => $variant:ident($as:ty)),* $(,)?) => {$(
        impl CounterValue for $t {
            #[inline(always)]
            fn counter_value(&self) -> ArgValue<'static> {
                ArgValue::$variant(*self as $as)
            }
        }
    )*};
}

counter_values! {
    i8 => I32(i32), i16 => I32(i32), i32 => I32(i32),
    u8 => U32(u32), u16 => U32(u32), u32 => U32(u32),
    i64 => I64(i64), isize => I64(i64),
    u64 => U64(u64), usize => U64(u64),
    f32 => F64(f64), f64 => F64(f64),
}

impl<T: CounterValue + ?Sized> CounterValue for &T {
    #[inline(always)]
    fn counter_value(&self) -> ArgValue<'static> {
        (**self).counter_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_blobs() {
        let v = vec![1u8, 2, 3];
        let s: &[u8] = &v;
        assert_eq!(v.into_arg_value(), ArgValue::Blob(&[1, 2, 3]));
        assert_eq!(s.into_arg_value(), ArgValue::Blob(&[1, 2, 3]));
        assert_eq!((&s).into_arg_value(), ArgValue::Blob(&[1, 2, 3]));
    }
}
