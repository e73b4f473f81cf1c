use fxt::trace_duration;

#[trace_duration(args(x))]
fn still_typing(x: u32) -> u32 {
    let y = x +;
    y
}

fn main() {
    still_typing(1);
}
