use fxt::trace_duration;

#[trace_duration]
struct Point {
    x: i32,
}

fn main() {
    let _ = Point { x: 1 }.x;
}
