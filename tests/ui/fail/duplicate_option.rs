use fxt::trace_duration;

#[trace_duration(name = "a", category = "c", name = "b")]
fn f() {}

fn main() {
    f();
}
