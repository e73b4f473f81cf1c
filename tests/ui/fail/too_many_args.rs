fn main() {
    let v = 1u32;
    fxt::trace_instant!(
        "cat", "name",
        "a1" => v, "a2" => v, "a3" => v, "a4" => v, "a5" => v,
        "a6" => v, "a7" => v, "a8" => v, "a9" => v, "a10" => v,
        "a11" => v, "a12" => v, "a13" => v, "a14" => v, "a15" => v,
        "a16" => v + 1,
    );
}
