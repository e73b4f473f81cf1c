use fxt::trace_duration;

#[derive(Debug)]
struct Request {
    id: u64,
}

#[trace_duration(args(request))]
fn handle(request: Request) -> u64 {
    request.id
}

fn main() {
    handle(Request { id: 1 });
}
