//! The program `fxt diff`'s noise figures are measured on
//! (`scripts/diff-noise.sh`): frames of four traced functions doing fixed
//! work, one of which a knob slows down.
//!
//! ```text
//! FXT_OUTPUT=base.fxt cargo run --release --example diff_demo
//! FXT_OUTPUT=slow.fxt DIFF_DEMO_SLOW=0.35 cargo run --release --example diff_demo
//! fxt diff base.fxt slow.fxt
//! ```
//!
//! `DIFF_DEMO_SLOW=F` gives `compact` a fraction F more work (0.35: 35%
//! more); the other functions do the same work in every run.

use std::hint::black_box;

use fxt::trace_duration;

/// Frames per run.
const FRAMES: u32 = 300;

/// `iterations` rounds of a multiply-xorshift mix: fixed work whose cost
/// the compiler cannot fold away.
fn work(seed: u64, iterations: u64) -> u64 {
    let mut x = black_box(seed) | 1;
    for _ in 0..black_box(iterations) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    x
}

#[trace_duration(category = "work")]
fn parse(frame: u64) -> u64 {
    work(frame, 8_000)
}

#[trace_duration(category = "work")]
fn compact(frame: u64, slow: f64) -> u64 {
    work(frame, (4_000.0 * (1.0 + slow)) as u64)
}

#[trace_duration(category = "work")]
fn hash(frame: u64) -> u64 {
    work(frame, 6_000)
}

#[trace_duration(category = "work")]
fn render(frame: u64) -> u64 {
    work(frame, 12_000)
}

#[trace_duration(category = "app")]
fn frame(n: u64, slow: f64) -> u64 {
    parse(n) ^ compact(n, slow) ^ hash(n) ^ render(n)
}

/// `pub` so that `crates/fxt-cli/tests/doc_commands.rs` can run it.
pub fn main() {
    let slow: f64 = match std::env::var("DIFF_DEMO_SLOW") {
        Ok(v) => v
            .parse()
            .expect("DIFF_DEMO_SLOW is a fraction, such as 0.35"),
        Err(_) => 0.0,
    };
    let session = fxt::start(fxt::Config::from_env()).expect("start the trace session");
    fxt::set_thread_name("main");
    let mut acc = 0;
    for n in 0..FRAMES {
        acc ^= frame(u64::from(n), slow);
    }
    session.finish().expect("write the trace");
    black_box(acc);
}
