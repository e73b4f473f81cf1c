//! Every problem of one function-like macro call is reported at once.
fn main() {
    fxt::trace_instant!("ui", "tick", id = 3, "n" => 1, "n" => 2);
    fxt::trace_counter!("mem", 42);
    fxt::trace_async_begin!(7, "request", "k" => 1, "k" => 2);
}
