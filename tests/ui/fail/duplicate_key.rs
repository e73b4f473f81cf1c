fn main() {
    fxt::trace_instant!("cat", "name", "key" => 1, "other" => 2, "key" => 3);
}
