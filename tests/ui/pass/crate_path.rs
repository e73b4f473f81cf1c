//! `crate = path` makes `#[trace_duration]` work through a renamed `fxt`;
//! the function-like macros find their crate through `$crate` by themselves.
#![deny(warnings)]

pub extern crate fxt as renamed;

#[renamed::trace_duration(crate = renamed, args(x))]
fn traced(x: u32) -> u32 {
    renamed::trace_instant!("ui", "inside", "x" => x);
    x
}

mod nested {
    pub use renamed as tracing_lib;
}

#[renamed::trace_duration(crate = crate::nested::tracing_lib)]
async fn traced_async() -> u8 {
    1
}

fn main() {
    assert_eq!(traced(3), 3);
    drop(traced_async());
}
