use fxt::trace_duration;

#[trace_duration]
const fn answer() -> u32 {
    42
}

const ANSWER: u32 = answer();

fn main() {
    assert_eq!(ANSWER, 42);
}
