//! `#[trace_duration]` on `async fn`: free, methods, trait methods, `?`,
//! `impl Trait` returns, every `async` mode, `Send` futures.
#![deny(warnings)]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use fxt::trace_duration;

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[trace_duration]
async fn unit() {}

#[trace_duration(args(id, label))]
async fn with_args(id: u64, label: &str) -> usize {
    label.len() + id as usize
}

#[derive(Debug)]
struct Error;

impl From<std::num::ParseIntError> for Error {
    fn from(_: std::num::ParseIntError) -> Self {
        Error
    }
}

#[trace_duration(async = "span")]
async fn fallible(input: &str) -> Result<u32, Error> {
    if input.is_empty() {
        return Err(Error);
    }
    let n: u32 = input.parse()?;
    Ok(n)
}

#[trace_duration(async = "polls")]
async fn returns_impl() -> impl std::fmt::Display {
    7
}

#[trace_duration(async = "both", name = "generic")]
async fn generic<T: Send>(value: T) -> T {
    value
}

struct Service {
    calls: u32,
}

impl Service {
    #[trace_duration(args(calls = self.calls))]
    async fn call(&mut self) -> u32 {
        self.calls += 1;
        self.calls
    }

    #[trace_duration]
    async fn into_calls(self) -> u32 {
        self.calls
    }
}

trait Store {
    async fn get(&self, key: u32) -> Option<u32>;

    #[trace_duration]
    async fn get_or_zero(&self, key: u32) -> u32 {
        self.get(key).await.unwrap_or(0)
    }
}

struct Memory;

impl Store for Memory {
    #[trace_duration(args(key))]
    async fn get(&self, key: u32) -> Option<u32> {
        (key < 10).then_some(key * 2)
    }
}

fn main() {
    block_on(unit());
    assert_eq!(block_on(assert_send(with_args(1, "ab"))), 3);
    assert!(block_on(fallible("")).is_err());
    assert_eq!(block_on(fallible("5")).unwrap(), 5);
    assert_eq!(block_on(returns_impl()).to_string(), "7");
    assert_eq!(block_on(assert_send(generic(String::from("x")))), "x");
    let mut service = Service { calls: 0 };
    assert_eq!(block_on(service.call()), 1);
    assert_eq!(block_on(service.into_calls()), 1);
    assert_eq!(block_on(Memory.get_or_zero(3)), 6);
    assert_eq!(block_on(Memory.get_or_zero(30)), 0);
}
