use fxt::trace_duration;

#[trace_duration(async = "polls")]
fn not_async() {}

#[trace_duration(async = "every")]
async fn bad_mode() {}

fn main() {
    not_async();
    drop(bad_mode());
}
