//! `#[trace_duration]` on `async fn`: one async begin/end pair per call
//! (same id, even across threads) and one duration per poll, where it ran.
#![deny(warnings, clippy::all)]

mod macros_support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use fxt::trace_duration;
use macros_support::{args, end, named, trace, ArgValue, Event, EventKind};

/// Returns `Pending` once (waking itself), then `Ready`.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn yield_now() -> YieldOnce {
    YieldOnce(false)
}

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    future.poll(&mut Context::from_waker(&waker))
}

fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = Box::pin(future);
    loop {
        if let Poll::Ready(v) = poll_once(future.as_mut()) {
            return v;
        }
    }
}

#[trace_duration(args(job))]
async fn job(job: u32) -> u32 {
    yield_now().await;
    yield_now().await;
    job * 10
}

fn async_id(e: &Event) -> u64 {
    match e.kind {
        EventKind::AsyncBegin { id } | EventKind::AsyncEnd { id } => id,
        other => panic!("not an async event: {other:?}"),
    }
}

/// Polls `job(4)` once on each of three named threads.
#[test]
fn one_call_across_threads() {
    let records = trace(|| {
        let mut future: Pin<Box<dyn Future<Output = u32> + Send>> = Box::pin(job(4));
        for (i, thread) in ["poll-a", "poll-b", "poll-c"].into_iter().enumerate() {
            future = std::thread::Builder::new()
                .name(thread.into())
                .spawn(move || {
                    fxt::set_thread_name(thread);
                    let ready = poll_once(future.as_mut());
                    assert_eq!(ready.is_ready(), i == 2);
                    if let Poll::Ready(v) = ready {
                        assert_eq!(v, 40);
                    }
                    future
                })
                .unwrap()
                .join()
                .unwrap();
        }
    });
    let all = named(&records, "job");
    let begin: Vec<_> = all
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AsyncBegin { .. }))
        .collect();
    let finish: Vec<_> = all
        .iter()
        .filter(|e| matches!(e.kind, EventKind::AsyncEnd { .. }))
        .collect();
    let polls: Vec<_> = all
        .iter()
        .filter(|e| matches!(e.kind, EventKind::DurationComplete { .. }))
        .collect();
    assert_eq!(
        (begin.len(), finish.len(), polls.len()),
        (1, 1, 3),
        "{all:#?}"
    );
    let (begin, finish) = (begin[0], finish[0]);

    // How long the whole call took: one pair, one id, from first poll to completion.
    assert_eq!(async_id(begin), async_id(finish));
    assert_ne!(async_id(begin), 0);
    assert_eq!(args(begin), [("job".to_string(), ArgValue::U32(4))]);
    assert!(begin.timestamp <= polls[0].timestamp);
    assert!(end(polls[2]) <= finish.timestamp);

    // Where it ran: one duration per poll, each on its own thread.
    for pair in polls.windows(2) {
        assert!(end(pair[0]) <= pair[1].timestamp);
        assert_ne!(pair[0].thread, pair[1].thread);
    }
    assert_eq!(begin.thread, polls[0].thread);
    assert_eq!(finish.thread, polls[2].thread);
    for poll in &polls {
        assert_eq!(args(poll), [("job".to_string(), ArgValue::U32(4))]);
    }
}

#[trace_duration(async = "span")]
async fn span_only() {
    yield_now().await;
}

#[trace_duration(async = "polls")]
async fn polls_only() {
    yield_now().await;
}

#[test]
fn modes() {
    let records = trace(|| {
        block_on(span_only());
        block_on(polls_only());
    });
    let kinds = |name| -> Vec<_> {
        named(&records, name)
            .iter()
            .map(|e| match e.kind {
                EventKind::AsyncBegin { .. } => "begin",
                EventKind::AsyncEnd { .. } => "end",
                EventKind::DurationComplete { .. } => "poll",
                _ => "other",
            })
            .collect()
    };
    assert_eq!(kinds("span_only"), ["begin", "end"]);
    assert_eq!(kinds("polls_only"), ["poll", "poll"]);
}

#[test]
fn a_dropped_future_ends_its_span() {
    let records = trace(|| {
        let mut future = Box::pin(job(1));
        assert!(poll_once(future.as_mut()).is_pending());
        drop(future);
        // Never polled: nothing recorded.
        drop(job(2));
    });
    let all = named(&records, "job");
    let kinds: Vec<_> = all.iter().map(|e| e.kind).collect();
    assert!(
        matches!(
            kinds[..],
            [
                EventKind::AsyncBegin { .. },
                EventKind::DurationComplete { .. },
                EventKind::AsyncEnd { .. }
            ]
        ),
        "{kinds:?}"
    );
    assert_eq!(async_id(all[0]), async_id(all[2]));
}

#[trace_duration]
async fn fails_after_yield() {
    yield_now().await;
    panic!("async failure");
}

#[test]
fn a_panicking_poll_is_recorded() {
    let records = trace(|| {
        let result = std::panic::catch_unwind(|| block_on(fails_after_yield()));
        assert!(result.is_err());
    });
    let kinds: Vec<_> = named(&records, "fails_after_yield")
        .iter()
        .map(|e| e.kind)
        .collect();
    assert!(
        matches!(
            kinds[..],
            [
                EventKind::AsyncBegin { .. },
                EventKind::DurationComplete { .. },
                EventKind::DurationComplete { .. },
                EventKind::AsyncEnd { .. }
            ]
        ),
        "{kinds:?}"
    );
}

#[derive(Debug, PartialEq)]
struct NotFound;

trait Store {
    async fn get(&self, key: u32) -> Result<u32, NotFound>;
}

struct Memory;

impl Store for Memory {
    #[trace_duration(args(key))]
    async fn get(&self, key: u32) -> Result<u32, NotFound> {
        yield_now().await;
        let value = (key < 10).then_some(key).ok_or(NotFound)?;
        Ok(value * 2)
    }
}

#[test]
fn trait_async_fn_with_question_mark() {
    let records = trace(|| {
        assert_eq!(block_on(Memory.get(2)), Ok(4));
        assert_eq!(block_on(Memory.get(20)), Err(NotFound));
    });
    let begins: Vec<_> = named(&records, "get")
        .into_iter()
        .filter(|e| matches!(e.kind, EventKind::AsyncBegin { .. }))
        .map(args)
        .collect();
    assert_eq!(
        begins,
        [
            [("key".to_string(), ArgValue::U32(2))],
            [("key".to_string(), ArgValue::U32(20))]
        ]
    );
}
