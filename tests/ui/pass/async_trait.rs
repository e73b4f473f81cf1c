//! `#[trace_duration]` on the methods of `#[async_trait]` traits and impls:
//! `Send` and `?Send` traits, default methods, `self` by reference, by
//! `&mut` and boxed, `?` and `return`, generic methods, `impl Trait`
//! arguments, `#[trace_duration]` before or after other attributes, and
//! every `async` mode. The futures stay `Send` where the trait says so.
#![deny(warnings)]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use async_trait::async_trait;
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

#[async_trait]
trait Service {
    async fn call(&self, request: u32) -> Result<u32, String>;
    async fn reset(&mut self);
    async fn consume(self: Box<Self>) -> u32;
    async fn generic<T: Send + 'static>(&self, value: T) -> T;
    async fn with_impl(&self, values: impl IntoIterator<Item = u32> + Send + 'async_trait) -> u32;

    #[trace_duration(args(times))]
    async fn repeat(&self, times: u32) -> u32 {
        let mut total = 0;
        for _ in 0..times {
            total += self.call(1).await.unwrap_or(0);
        }
        total
    }
}

struct Counter {
    calls: u32,
}

fn parse(text: &str) -> Result<u32, String> {
    text.parse().map_err(|_| format!("not a number: {text}"))
}

#[async_trait]
impl Service for Counter {
    #[trace_duration(category = "svc", args(request, calls = self.calls))]
    #[allow(clippy::needless_return)]
    async fn call(&self, request: u32) -> Result<u32, String> {
        if request == 0 {
            return Err("zero".into());
        }
        let parsed = parse("2")?;
        Ok(request * parsed + self.calls)
    }

    #[allow(unused_mut)]
    #[trace_duration(async = "span")]
    async fn reset(&mut self) {
        self.calls = 0;
    }

    #[trace_duration(async = "polls")]
    async fn consume(self: Box<Self>) -> u32 {
        self.calls
    }

    #[trace_duration(name = "generic call")]
    async fn generic<T: Send + 'static>(&self, value: T) -> T {
        value
    }

    #[trace_duration]
    async fn with_impl(&self, values: impl IntoIterator<Item = u32> + Send + 'async_trait) -> u32 {
        values.into_iter().sum()
    }
}

#[async_trait(?Send)]
trait Local {
    async fn local(&self, text: std::rc::Rc<str>) -> usize;
}

#[async_trait(?Send)]
impl Local for Counter {
    #[trace_duration(args(text))]
    async fn local(&self, text: std::rc::Rc<str>) -> usize {
        text.len()
    }
}

fn main() {
    let session = fxt::start(fxt::Config::new()).unwrap();
    let mut counter = Counter { calls: 1 };
    assert_eq!(block_on(assert_send(counter.call(3))), Ok(7));
    assert_eq!(block_on(counter.call(0)), Err("zero".to_string()));
    assert_eq!(block_on(counter.repeat(2)), 6);
    assert_eq!(block_on(counter.generic("x")), "x");
    assert_eq!(block_on(counter.with_impl([1, 2, 3])), 6);
    assert_eq!(block_on(counter.local("four".into())), 4);
    block_on(assert_send(counter.reset()));
    assert_eq!(block_on(Box::new(counter).consume()), 0);
    session.finish_to_vec().unwrap();
}
