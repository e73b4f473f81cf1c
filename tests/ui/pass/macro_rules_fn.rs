//! `#[trace_duration]` on functions a `macro_rules!` macro writes: the
//! body from `$body:block`, the visibility from `$vis`, `$expr` and `$ty`
//! fragments in the options and in `args(...)`, and the attribute itself
//! inside or outside the macro. (A macro names the attribute by its full
//! path, `::fxt::trace_duration`, so it works wherever it is invoked.)
#![deny(warnings)]

macro_rules! traced {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($arg:ident: $ty:ty) -> $ret:ty $body:block) => {
        $(#[$meta])*
        #[::fxt::trace_duration(args($arg, bytes = ::std::mem::size_of::<$ty>()))]
        $vis fn $name($arg: $ty) -> $ret $body
    };
}

macro_rules! named {
    ($category:expr, $name:expr, $value:expr, $body:block) => {
        #[::fxt::trace_duration(category = $category, name = $name, args(value = $value))]
        fn named_fn() -> u32 $body
    };
}

macro_rules! async_traced {
    ($vis:vis async fn $name:ident() -> $ret:ty $body:block) => {
        #[::fxt::trace_duration]
        $vis async fn $name() -> $ret $body
    };
}

macro_rules! outer_attr {
    ($item:item) => {
        #[::fxt::trace_duration]
        $item
    };
}

mod inner {
    traced! {
        /// Documented.
        pub fn doubled(n: u64) -> u64 { n * 2 }
    }
    traced!(pub(crate) fn early(n: u8) -> Option<u8> {
        let checked = n.checked_sub(1)?;
        if checked > 10 {
            return None;
        }
        Some(checked)
    });
}

const CATEGORY: &str = "ui";
named!(CATEGORY, concat!("named", " ", "fn"), 1u32 + 2, { 3 });
async_traced!(pub async fn later() -> u8 { 4 });
traced!(fn unit(x: ()) -> () {
    x
});

fn main() {
    assert_eq!(inner::doubled(2), 4);
    assert_eq!(inner::early(3), Some(2));
    assert_eq!(named_fn(), 3);
    drop(later());
    unit(());
    outer_attr! {
        fn in_block(x: u8) -> u8 { x }
    }
    assert_eq!(in_block(1), 1);
}
