fn main() {
    let state = "idle";
    fxt::trace_counter!("mem", "heap", "used" => 10u64, "state" => state);
}
