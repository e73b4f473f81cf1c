fn main() {
    fxt::trace_async_begin!("rpc", "request", "method" => "get");
    fxt::trace_flow_end!("rpc", "message");
}
