//! `category` and `name` of `#[trace_duration]` as constants: paths,
//! associated constants, `concat!`, as the function-like macros take them.
//! (Not `Self::NAME`: the call site is a `static`, which cannot name `Self`.)
#![deny(warnings)]

use fxt::trace_duration;

mod config {
    pub const CATEGORY: &str = "net";
}

struct Codec;

impl Codec {
    const NAME: &'static str = "decode frame";

    #[trace_duration(category = config::CATEGORY, name = Codec::NAME)]
    fn decode(&self) -> u8 {
        1
    }
}

#[trace_duration(name = concat!("load", " ", "all"), category = config::CATEGORY)]
async fn load() {}

fn main() {
    assert_eq!(Codec.decode(), 1);
    drop(load());
    fxt::trace_instant!(config::CATEGORY, Codec::NAME);
}
