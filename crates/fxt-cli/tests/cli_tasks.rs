//! `fxt::task`'s polls read by `fxt stats`: futures driven by hand (a
//! loop polls them, sleeping between a wake and the next poll), so the
//! number of tasks, polls, woken polls and long polls is known and each
//! scheduling delay is at least the sleep; the tasks section lists each
//! name with those counts.

mod cli_support;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use cli_support::*;
use fxt::task::TracedExt;
use serde_json::Value;

/// Pending `steps` times, waking itself each time; sleeps `block` in its
/// last poll.
struct Steps {
    left: u32,
    block: Duration,
}

impl Future for Steps {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.left == 0 {
            std::thread::sleep(self.block);
            return Poll::Ready(());
        }
        self.left -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

const GAP: Duration = Duration::from_millis(2);

/// Polls `future` to completion, sleeping [`GAP`] before each poll after
/// the first (its waker is woken by the future itself).
fn drive(future: impl Future<Output = ()>) {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    while future.as_mut().poll(&mut cx).is_pending() {
        std::thread::sleep(GAP);
    }
}

#[test]
fn stats_lists_each_task_name_with_its_polls_delays_and_long_polls() {
    let bytes = engine_trace(fxt::Config::new(), || {
        for _ in 0..2 {
            drive(
                Steps {
                    left: 3,
                    block: Duration::ZERO,
                }
                .traced("stepper"),
            );
        }
        drive(
            Steps {
                left: 1,
                block: Duration::from_millis(30),
            }
            .traced("blocker"),
        );
    });
    let path = tmp("tasks-stats.fxt");
    std::fs::write(&path, bytes).unwrap();

    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tasks = stats["tasks"].as_array().unwrap();
    let named = |name: &str| {
        tasks
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed: {tasks:?}"))
    };
    let stepper = named("stepper");
    assert_eq!(stepper["tasks"], 2);
    assert_eq!(stepper["polls"], 8, "four polls per task");
    assert_eq!(stepper["woken_polls"], 6, "all but the first of each");
    assert_eq!(stepper["long_polls"], 0);
    let gap = GAP.as_nanos() as u64;
    assert!(
        stepper["p50_delay_ns"].as_u64().unwrap() >= gap,
        "{stepper}"
    );
    let (p99, max) = (&stepper["p99_delay_ns"], &stepper["max_delay_ns"]);
    assert!(p99.as_u64().unwrap() <= max.as_u64().unwrap());
    let blocker = named("blocker");
    assert_eq!(
        (&blocker["tasks"], &blocker["polls"]),
        (&1.into(), &2.into())
    );
    assert_eq!(blocker["long_polls"], 1);
    assert!(blocker["longest_poll_ns"].as_u64().unwrap() >= 30_000_000);
    assert!(blocker["busy_ns"].as_u64().unwrap() >= 30_000_000);

    let text = stdout(&fxt(&["stats", p(&path)]));
    let line = text
        .lines()
        .skip_while(|l| !l.contains("p50 delay"))
        .find(|l| l.ends_with("  stepper"))
        .expect("a line for the task in the tasks section");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], &["2", "8"], "{line}");
}
