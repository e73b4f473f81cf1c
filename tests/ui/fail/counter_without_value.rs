fn main() {
    fxt::trace_counter!("mem", "heap");
    fxt::trace_counter!("mem", "heap", id = 3);
}
