//! Every problem of one `#[trace_duration]` is reported at once.
use fxt::trace_duration;

#[trace_duration(name = "", category = 3, name = "again", async = "sometimes", args(a, a))]
const fn f(a: u32) -> u32 {
    a
}

fn main() {
    f(1);
}
