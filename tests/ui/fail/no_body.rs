use fxt::trace_duration;

trait Service {
    #[trace_duration]
    fn call(&self);
}

fn main() {}
