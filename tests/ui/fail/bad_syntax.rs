fn main() {
    fxt::trace_instant!("cat");
    fxt::trace_instant!("cat", "name", "key" = 1);
    fxt::trace_instant!("cat", "name", key => 1);
    fxt::trace_blob!("cat", "name");
}
