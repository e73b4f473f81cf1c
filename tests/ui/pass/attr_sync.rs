//! `#[trace_duration]` on every kind of synchronous function.
#![deny(warnings)]

use fxt::trace_duration;

#[trace_duration]
fn free() {}

#[trace_duration(name = "renamed", category = "ui", args(a, b, sum = a as i64 + b))]
fn with_options(a: u32, b: i64) -> i64 {
    a as i64 + b
}

#[trace_duration(args(text, len = text.len()))]
fn borrowed(text: &str) -> &str {
    &text[..1]
}

#[trace_duration]
fn generic<T: Clone + std::fmt::Debug>(value: &T) -> T {
    value.clone()
}

#[trace_duration]
fn returns_impl() -> impl Iterator<Item = u8> {
    0..3
}

#[derive(Debug)]
struct ParseError;

#[trace_duration]
fn fallible(input: &str) -> Result<u32, ParseError> {
    if input.is_empty() {
        return Err(ParseError);
    }
    let n: u32 = input.parse().map_err(|_| ParseError)?;
    Ok(n * 2)
}

/// # Safety
/// None needed; this only proves `unsafe fn` is accepted.
#[trace_duration]
unsafe fn unsafe_fn(p: *const u8) -> u8 {
    *p
}

#[trace_duration]
extern "C" fn extern_c(x: i32) -> i32 {
    x + 1
}

#[trace_duration]
fn inner_attributes() -> u8 {
    #![allow(clippy::identity_op)]
    1 + 0
}

#[trace_duration]
fn never_returns() -> ! {
    panic!("diverges")
}

#[trace_duration]
fn r#match() {}

struct Counter {
    n: u64,
}

impl Counter {
    #[trace_duration]
    fn new() -> Self {
        Counter { n: 0 }
    }

    #[trace_duration(args(n = self.n))]
    fn get(&self) -> u64 {
        self.n
    }

    #[trace_duration(args(by))]
    fn bump(&mut self, by: u64) {
        self.n += by;
    }

    #[trace_duration]
    fn into_inner(self) -> u64 {
        self.n
    }
}

trait Shape {
    fn area(&self) -> f64;
    #[trace_duration]
    fn describe(&self) -> String {
        format!("area {}", self.area())
    }
}

struct Square(f64);

impl Shape for Square {
    #[trace_duration(args(side = self.0))]
    fn area(&self) -> f64 {
        self.0 * self.0
    }
}

fn main() {
    free();
    assert_eq!(with_options(1, 2), 3);
    assert_eq!(borrowed("hello"), "h");
    assert_eq!(generic(&5u8), 5);
    assert_eq!(returns_impl().count(), 3);
    assert!(fallible("").is_err());
    assert!(fallible("x").is_err());
    assert_eq!(fallible("21").unwrap(), 42);
    let byte = 7u8;
    // SAFETY: the pointer comes from a live reference.
    assert_eq!(unsafe { unsafe_fn(&byte) }, 7);
    assert_eq!(extern_c(1), 2);
    assert_eq!(inner_attributes(), 1);
    let _diverging: fn() -> ! = never_returns;
    r#match();
    let mut c = Counter::new();
    c.bump(2);
    assert_eq!(c.get(), 2);
    assert_eq!(c.into_inner(), 2);
    assert_eq!(Square(2.0).describe(), "area 4");
}
