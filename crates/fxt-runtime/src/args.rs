//! [`IntoArgValue`]: how Rust values become FXT argument values, and
//! [`CounterValue`]: the numbers a counter series takes.

use std::borrow::Cow;
use std::num::{
    NonZeroI16, NonZeroI32, NonZeroI64, NonZeroI8, NonZeroIsize, NonZeroU16, NonZeroU32,
    NonZeroU64, NonZeroU8, NonZeroUsize,
};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use fxt_format::encode::{ArgValue, StringRef};

/// A kernel object id (written as a koid argument; viewers link it to the
/// kernel object record that names the object, e.g. a thread).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Koid(pub u64);

/// Converts a value into an argument value of an event.
///
/// | Rust type | FXT argument |
/// |---|---|
/// | `i8`, `i16`, `i32` (and their `NonZero`) | int32 |
/// | `u8`, `u16`, `u32` (and their `NonZero`) | uint32 |
/// | `i64`, `isize` (and their `NonZero`) | int64 |
/// | `u64`, `usize` (and their `NonZero`) | uint64 |
/// | `f32`, `f64` | double |
/// | `bool` | bool |
/// | `str`, `String` | string (written inline) |
/// | `char` | string of that one character (1 to 4 bytes of UTF-8, inline) |
/// | `[u8]`, `[u8; N]`, `Vec<u8>` (so `&[u8]` and `b"FXT1"` too) | blob (written inline; an argument holds at most 32 KiB) |
/// | `Duration` | uint64 nanoseconds (saturating at `u64::MAX`, 584 years) |
/// | `()`, `None` | null |
/// | `*const T`, `*mut T` | pointer |
/// | [`Koid`] | koid |
/// | `Option<T>` | `T`'s, or null |
/// | `&T`, `&mut T`, `Box<T>`, `Rc<T>`, `Arc<T>`, `Cow<T>` | `T`'s (so `&&str`, `Arc<str>`, `Rc<str>`, `Arc<String>`, `&Box<str>`, `Cow<[u8]>` ...) |
///
/// Implement it for your own types to pass them to the `trace_*!` macros:
///
/// ```
/// # mod fxt { pub use fxt_format as format; pub use fxt_runtime::*; }
/// use fxt::format::encode::{ArgValue, StringRef};
/// use fxt::{ArgScratch, IntoArgValue};
///
/// struct UserId(u64);
///
/// impl IntoArgValue for UserId {
///     fn into_arg_value<'a>(&'a self, _scratch: &'a mut ArgScratch) -> ArgValue<'a> {
///         ArgValue::U64(self.0)
///     }
/// }
///
/// let mut scratch = ArgScratch::new();
/// assert_eq!(UserId(7).into_arg_value(&mut scratch), ArgValue::U64(7));
/// assert_eq!(
///     'é'.into_arg_value(&mut ArgScratch::new()),
///     ArgValue::Str(StringRef::Inline("é"))
/// );
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a trace argument value",
    label = "not a supported argument type",
    note = "use an integer, float, bool, char, &str/String, &[u8]/[u8; N], Duration, raw pointer, fxt::Koid, () or an Option of one; convert the value (e.g. `format!(\"{{:?}}\", v)` or `v as u64`), or implement `fxt::IntoArgValue` for your type"
)]
pub trait IntoArgValue {
    /// The argument value. It may borrow from `self`, or from `scratch`
    /// for a value that has no bytes of its own to borrow (a `char`, whose
    /// UTF-8 encoding is written there). The macros give every argument
    /// its own scratch, on the stack, for the statement that writes the
    /// record.
    #[allow(clippy::wrong_self_convention)]
    fn into_arg_value<'a>(&'a self, scratch: &'a mut ArgScratch) -> ArgValue<'a>;
}

/// Room for the bytes of an argument value that its Rust value does not
/// hold as such (see [`IntoArgValue::into_arg_value`]): four bytes, the
/// longest UTF-8 encoding of a `char`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ArgScratch {
    bytes: [u8; 4],
}

impl ArgScratch {
    /// Empty room.
    #[inline(always)]
    pub const fn new() -> ArgScratch {
        ArgScratch { bytes: [0; 4] }
    }
}

macro_rules! via {
    ($variant:ident($as:ty): $($t:ty),*) => {$(
        impl IntoArgValue for $t {
            #[inline(always)]
            fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
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

/// Non-zero integers: as the integer they hold.
macro_rules! non_zero {
    ($variant:ident($as:ty): $($t:ty),*) => {$(
        impl IntoArgValue for $t {
            #[inline(always)]
            fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
                ArgValue::$variant(self.get() as $as)
            }
        }
    )*};
}

non_zero!(I32(i32): NonZeroI8, NonZeroI16, NonZeroI32);
non_zero!(U32(u32): NonZeroU8, NonZeroU16, NonZeroU32);
non_zero!(I64(i64): NonZeroI64, NonZeroIsize);
non_zero!(U64(u64): NonZeroU64, NonZeroUsize);

impl IntoArgValue for bool {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Bool(*self)
    }
}

impl IntoArgValue for char {
    /// A one-character string: viewers show `'x'` as `x`, not as its code
    /// point.
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, scratch: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Str(StringRef::Inline(self.encode_utf8(&mut scratch.bytes)))
    }
}

impl IntoArgValue for str {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Str(StringRef::Inline(self))
    }
}

impl IntoArgValue for String {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Str(StringRef::Inline(self))
    }
}

impl IntoArgValue for [u8] {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Blob(self)
    }
}

impl<const N: usize> IntoArgValue for [u8; N] {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Blob(self)
    }
}

impl IntoArgValue for Vec<u8> {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Blob(self)
    }
}

impl IntoArgValue for Duration {
    /// Nanoseconds, the unit viewers expect of a duration; saturating, as
    /// `u64` nanoseconds reach 584 years.
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::U64(u64::try_from(self.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl IntoArgValue for () {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Null
    }
}

impl IntoArgValue for Koid {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Koid(self.0)
    }
}

impl<T: ?Sized> IntoArgValue for *const T {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Pointer(self.cast::<()>() as usize as u64)
    }
}

impl<T: ?Sized> IntoArgValue for *mut T {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
        ArgValue::Pointer(self.cast::<()>() as usize as u64)
    }
}

impl<T: IntoArgValue> IntoArgValue for Option<T> {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, scratch: &'a mut ArgScratch) -> ArgValue<'a> {
        match self {
            Some(v) => v.into_arg_value(scratch),
            None => ArgValue::Null,
        }
    }
}

/// Pointers and owners of a supported value: the value's own argument.
macro_rules! deref_to_inner {
    ($($t:ty),*) => {$(
        impl<T: IntoArgValue + ?Sized> IntoArgValue for $t {
            #[inline(always)]
            fn into_arg_value<'a>(&'a self, scratch: &'a mut ArgScratch) -> ArgValue<'a> {
                (**self).into_arg_value(scratch)
            }
        }
    )*};
}

deref_to_inner!(&T, &mut T, Box<T>, Rc<T>, Arc<T>);

impl<B: IntoArgValue + ToOwned + ?Sized> IntoArgValue for Cow<'_, B> {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, scratch: &'a mut ArgScratch) -> ArgValue<'a> {
        (**self).into_arg_value(scratch)
    }
}

impl<'v> IntoArgValue for ArgValue<'v> {
    #[inline(always)]
    fn into_arg_value<'a>(&'a self, _: &'a mut ArgScratch) -> ArgValue<'a> {
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

    fn value<T: IntoArgValue + ?Sized>(v: &T, check: impl FnOnce(ArgValue<'_>)) {
        check(v.into_arg_value(&mut ArgScratch::new()));
    }

    #[test]
    fn bytes_are_blobs() {
        let v = vec![1u8, 2, 3];
        let s: &[u8] = &v;
        let a = [1u8, 2, 3];
        value(&v, |x| assert_eq!(x, ArgValue::Blob(&[1, 2, 3])));
        value(&s, |x| assert_eq!(x, ArgValue::Blob(&[1, 2, 3])));
        value(&&s, |x| assert_eq!(x, ArgValue::Blob(&[1, 2, 3])));
        value(&a, |x| assert_eq!(x, ArgValue::Blob(&[1, 2, 3])));
        value(b"FXT1", |x| assert_eq!(x, ArgValue::Blob(b"FXT1")));
        value(&Cow::Borrowed(s), |x| {
            assert_eq!(x, ArgValue::Blob(&[1, 2, 3]))
        });
    }

    #[test]
    fn chars_are_one_character_strings() {
        for c in ['a', 'é', '€', '🦀'] {
            let text = c.to_string();
            value(&c, |x| {
                assert_eq!(x, ArgValue::Str(StringRef::Inline(&text)))
            });
        }
    }

    #[test]
    fn durations_are_saturating_nanoseconds() {
        value(&Duration::from_micros(1500), |x| {
            assert_eq!(x, ArgValue::U64(1_500_000))
        });
        value(&Duration::MAX, |x| assert_eq!(x, ArgValue::U64(u64::MAX)));
    }

    #[test]
    fn non_zero_integers_are_their_integer() {
        value(&NonZeroU8::new(7).unwrap(), |x| {
            assert_eq!(x, ArgValue::U32(7))
        });
        value(&NonZeroI64::new(-7).unwrap(), |x| {
            assert_eq!(x, ArgValue::I64(-7))
        });
        value(&NonZeroUsize::new(9).unwrap(), |x| {
            assert_eq!(x, ArgValue::U64(9))
        });
    }
}
