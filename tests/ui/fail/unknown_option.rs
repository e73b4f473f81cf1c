use fxt::trace_duration;

#[trace_duration(nmae = "typo")]
fn f() {}

fn main() {
    f();
}
