//! Every instrumentation form, built with `fxt/disabled`: the program runs
//! unchanged, nothing is recorded, and no argument is evaluated.
#![deny(warnings, clippy::all)]

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use fxt::{
    trace_async_begin, trace_async_end, trace_async_instant, trace_blob, trace_counter,
    trace_duration, trace_duration_begin, trace_duration_end, trace_duration_scope,
    trace_flow_begin, trace_flow_end, trace_flow_step, trace_instant, trace_log, Koid,
};

thread_local! {
    static EVALUATED: Cell<u32> = const { Cell::new(0) };
}

/// An argument with a side effect, to prove arguments are not evaluated.
fn observed(value: u32) -> u32 {
    EVALUATED.with(|c| c.set(c.get() + 1));
    value
}

#[trace_duration(name = "sum", category = "math", args(a, b, total = observed(a + b)))]
fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[derive(Debug)]
struct Error;

#[trace_duration(args(text))]
fn parse(text: &str) -> Result<u32, Error> {
    let n = text.parse().map_err(|_| Error)?;
    Ok(n)
}

struct Machine {
    steps: u32,
}

impl Machine {
    #[trace_duration(args(steps = observed(self.steps)))]
    fn step(&mut self) -> u32 {
        self.steps += 1;
        self.steps
    }
}

const CATEGORY: &str = "consts";

/// A function written by a macro, named by constants, with arguments of
/// the less common types.
macro_rules! generated {
    ($vis:vis fn $name:ident($c:ident: $ty:ty) $body:block) => {
        #[trace_duration(category = CATEGORY, name = concat!("gen ", stringify!($name)), args($c, bytes = *b"FXT1", wait = std::time::Duration::from_millis(observed(1) as u64)))]
        $vis fn $name($c: $ty) -> u32 $body
    };
}

generated!(
    fn letter(c: char) {
        c as u32
    }
);

#[trace_duration(args(n = observed(n)), async = "both")]
async fn double(n: u32) -> u32 {
    n * 2
}

fn block_on<F: Future>(future: F) -> F::Output {
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Runs every form; returns how many argument expressions were evaluated.
pub fn run_everything() -> u32 {
    EVALUATED.with(|c| c.set(0));
    assert_eq!(add(2, 3), 5);
    assert_eq!(parse("42").unwrap(), 42);
    assert!(parse("x").is_err());
    let mut machine = Machine { steps: 0 };
    assert_eq!(machine.step(), 1);
    assert_eq!(block_on(double(4)), 8);
    assert_eq!(letter('a'), 97);

    let bytes = [1u8, 2, 3];
    let id = fxt::next_async_id();
    trace_instant!("cat", "instant", "n" => observed(1), "s" => "text", "k" => Koid(1));
    trace_instant!(CATEGORY, "types", "c" => 'c', "b" => b"FXT1", "o" => Some(observed(7)));
    trace_counter!("cat", "counter", id = 1, "value" => observed(2));
    {
        let _scope = trace_duration_scope!("cat", "scope", "n" => observed(3));
        trace_duration_begin!("cat", "begin", "n" => observed(4));
        trace_duration_end!("cat", "begin");
    }
    trace_async_begin!("cat", "async", id = id, "n" => observed(5));
    trace_async_instant!("cat", "async", id = id);
    trace_async_end!("cat", "async", id = id);
    trace_flow_begin!("cat", "flow", id = id);
    trace_flow_step!("cat", "flow", id = id);
    trace_flow_end!("cat", "flow", id = id);
    trace_log!("cat", "value {}", observed(6));
    trace_blob!("cat", "blob", bytes);
    EVALUATED.with(Cell::get)
}

fn main() {
    // Checked at compile time: the feature folds every call site away.
    const { assert!(!fxt::__macro_support::ENABLED) };
    let session = fxt::start(fxt::Config::new().buffer_size(1 << 20)).expect("session starts");
    let evaluated = run_everything();
    let (bytes, stats) = session.finish_to_vec().expect("collected");
    assert_eq!(evaluated, 0, "no argument is evaluated when compiled out");
    assert_eq!(stats.records_dropped, 0);
    let events = fxt::format::decode::decode_all(&bytes)
        .expect("decodes")
        .into_iter()
        .filter(|r| {
            matches!(
                r,
                fxt::format::decode::Record::Event(_)
                    | fxt::format::decode::Record::Log(_)
                    | fxt::format::decode::Record::Blob(_)
            )
        })
        .count();
    assert_eq!(events, 0, "nothing is recorded when compiled out");
    println!(
        "statically disabled: ok ({} bytes of trace, no events)",
        bytes.len()
    );
}

#[test]
fn everything_compiles_out() {
    main();
}
