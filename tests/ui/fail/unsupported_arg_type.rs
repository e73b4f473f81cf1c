struct Config {
    retries: u32,
}

fn main() {
    let config = Config { retries: 3 };
    fxt::trace_instant!("cat", "name", "retries" => config.retries, "config" => config);
}
