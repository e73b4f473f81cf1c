//! `#[trace_duration]` on the shapes of code users write: functions that a
//! `macro_rules!` macro generates (`$vis`, `$body:block`, `$expr` and `$ty`
//! fragments), `category`/`name` given as constants, and the methods of an
//! `#[async_trait]` impl, which must be traced like an `async fn` (async
//! begin/end and one duration per poll), not as the call that boxes the
//! future.
#![deny(warnings, clippy::all)]

mod macros_support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use async_trait::async_trait;
use fxt::trace_duration;
use macros_support::{args, end, named, one, trace, ArgValue, Event, EventKind};

mod names {
    pub const CATEGORY: &str = "shapes";
    pub const NAME: &str = "named by a const";
}

#[trace_duration(category = names::CATEGORY, name = names::NAME)]
fn const_names() {}

/// A macro writing traced functions from fragments of every kind the
/// attribute sees: the visibility, the name, the body as a block, and
/// expressions and types inside `args(...)`.
macro_rules! traced_fns {
    ($($vis:vis fn $name:ident($x:ident: $ty:ty) -> $ret:ty [$category:expr, $extra:expr] $body:block)*) => {$(
        #[trace_duration(category = $category, args($x, extra = $extra, size = ::std::mem::size_of::<$ty>()))]
        $vis fn $name($x: $ty) -> $ret $body
    )*};
}

traced_fns! {
    pub fn doubled(n: u32) -> u32 ["generated", n as u64 * 2] { n * 2 }
    fn early(n: u8) -> u8 [names::CATEGORY, "from a macro"] {
        if n > 1 {
            return n;
        }
        0
    }
}

#[test]
fn constants_name_the_duration() {
    let records = trace(const_names);
    let e = one(&records, "named by a const");
    assert_eq!(e.category, "shapes");
    assert!(matches!(e.kind, EventKind::DurationComplete { .. }));
}

#[test]
fn functions_written_by_macro_rules() {
    let records = trace(|| {
        assert_eq!(doubled(21), 42);
        assert_eq!(early(3), 3);
    });
    let d = one(&records, "doubled");
    assert_eq!(d.category, "generated");
    assert_eq!(
        args(d),
        [
            ("n".to_string(), ArgValue::U32(21)),
            ("extra".to_string(), ArgValue::U64(42)),
            ("size".to_string(), ArgValue::U64(4)),
        ]
    );
    let e = one(&records, "early");
    assert_eq!(e.category, "shapes");
    assert_eq!(
        args(e),
        [
            ("n".to_string(), ArgValue::U32(3)),
            ("extra".to_string(), macros_support::s("from a macro")),
            ("size".to_string(), ArgValue::U64(1)),
        ]
    );
    assert!(d.timestamp <= end(d));
}

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

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls to completion; returns the value and how many polls it took.
fn block_on<F: Future>(future: F) -> (F::Output, usize) {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = Box::pin(future);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return (v, polls);
        }
    }
}

#[async_trait]
trait Store {
    async fn get(&self, key: u32) -> Result<u32, String>;
    async fn put(&mut self, key: u32);

    /// A default method: the trait's own body is traced.
    #[trace_duration(category = "store", args(key))]
    async fn touch(&self, key: u32) -> bool {
        YieldOnce(false).await;
        key > 0
    }
}

struct Memory {
    base: u32,
    puts: u32,
}

#[async_trait]
impl Store for Memory {
    #[trace_duration(category = "store", args(key, base = self.base))]
    async fn get(&self, key: u32) -> Result<u32, String> {
        YieldOnce(false).await;
        YieldOnce(false).await;
        if key == 0 {
            return Err("no key 0".into());
        }
        Ok(self.base + key)
    }

    #[trace_duration(name = "store put", async = "span")]
    async fn put(&mut self, key: u32) {
        YieldOnce(false).await;
        self.puts += key;
    }
}

fn kinds(events: &[&Event]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| match e.kind {
            EventKind::AsyncBegin { .. } => "begin",
            EventKind::AsyncEnd { .. } => "end",
            EventKind::DurationComplete { .. } => "poll",
            _ => "other",
        })
        .collect()
}

fn async_id(e: &Event) -> u64 {
    match e.kind {
        EventKind::AsyncBegin { id } | EventKind::AsyncEnd { id } => id,
        other => panic!("not an async event: {other:?}"),
    }
}

#[test]
fn async_trait_methods_trace_the_future() {
    let mut store = Memory { base: 100, puts: 0 };
    let records = trace(|| {
        // Making the future (what the method itself does) records nothing:
        // only polling it does.
        let unpolled = store.get(1);
        drop(unpolled);
        assert_eq!(block_on(store.get(5)), (Ok(105), 3));
        assert_eq!(block_on(store.get(0)).0, Err("no key 0".into()));
        assert_eq!(block_on(store.touch(2)), (true, 2));
        block_on(store.put(7));
    });
    assert_eq!(store.puts, 7);

    let get = named(&records, "get");
    // Two calls, each: begin, one duration per poll, end.
    assert_eq!(
        kinds(&get),
        ["begin", "poll", "poll", "poll", "end", "begin", "poll", "poll", "poll", "end"],
        "{get:#?}"
    );
    for call in get.chunks(5) {
        let (begin, polls, finish) = (call[0], &call[1..4], call[4]);
        assert_eq!(begin.category, "store");
        assert_eq!(async_id(begin), async_id(finish));
        assert_ne!(async_id(begin), 0);
        assert!(begin.timestamp <= polls[0].timestamp);
        for pair in polls.windows(2) {
            assert!(end(pair[0]) <= pair[1].timestamp);
        }
        assert!(end(polls[2]) <= finish.timestamp);
        for poll in polls {
            assert_eq!(args(poll), args(begin));
        }
    }
    assert_ne!(async_id(get[0]), async_id(get[5]));
    assert_eq!(
        args(get[0]),
        [
            ("key".to_string(), ArgValue::U32(5)),
            ("base".to_string(), ArgValue::U32(100)),
        ]
    );
    assert_eq!(args(get[5])[0], ("key".to_string(), ArgValue::U32(0)));

    let touch = named(&records, "touch");
    assert_eq!(kinds(&touch), ["begin", "poll", "poll", "end"]);
    assert_eq!(args(touch[0]), [("key".to_string(), ArgValue::U32(2))]);

    let put = named(&records, "store put");
    assert_eq!(kinds(&put), ["begin", "end"]);
}

/// The same trait without `#[async_trait]` (an `async fn` in a trait, as
/// `#[trace_duration]` sees it when it runs before any rewriting): the
/// same records.
trait NativeStore {
    async fn fetch(&self, key: u32) -> u32;
}

impl NativeStore for Memory {
    #[trace_duration(category = "store", args(key))]
    async fn fetch(&self, key: u32) -> u32 {
        YieldOnce(false).await;
        self.base + key
    }
}

#[test]
fn native_async_trait_methods_match() {
    let store = Memory { base: 1, puts: 0 };
    let records = trace(|| {
        assert_eq!(block_on(store.fetch(2)), (3, 2));
    });
    let fetch = named(&records, "fetch");
    assert_eq!(kinds(&fetch), ["begin", "poll", "poll", "end"]);
    assert_eq!(args(fetch[0]), [("key".to_string(), ArgValue::U32(2))]);
}
