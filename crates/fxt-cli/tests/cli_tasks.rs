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

use cli_support::duckdb::query as duckdb;
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

/// A session on the monotonic clock: a tick is a nanosecond, so delays
/// compare with the sleeps exactly (the TSC's rate is calibrated, and its
/// error, a fraction of a percent, can put a delay under its sleep).
fn monotonic() -> fxt::Config {
    fxt::Config::new().clock(fxt::ClockSource::Monotonic)
}

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
    let mut blocker_line = 0;
    let bytes = engine_trace(monotonic(), || {
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
        blocker_line = line!() - 2;
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
    assert_eq!(
        &words[..3],
        &["2", "2", "8"],
        "tasks, spawned, polls: {line}"
    );

    assert_eq!(stepper["spawned"], 2);
    assert_eq!(blocker["spawned"], 1);
    assert!(stepper["longest_long_poll"].is_null());
    let longest = &blocker["longest_long_poll"];
    assert!(longest["ns"].as_u64().unwrap() >= 30_000_000, "{longest}");
    let at = format!("{}:{blocker_line}", file!());
    assert_eq!(longest["location"], at.as_str());
    let long = text
        .lines()
        .find(|l| l.trim_start().starts_with("blocker: 1 long;"))
        .unwrap_or_else(|| panic!("a long-poll line for the blocker: {text}"));
    assert!(long.contains(&format!(" at {at} on thread ")), "{long}");
}

/// With CPU samples on, the samples taken inside a task's long poll are
/// what `fxt stats` says of them first: their count and the functions
/// sampled most, before the longest poll's location.
#[test]
fn stats_shows_the_samples_inside_long_polls_first() {
    let bytes = sampled_engine_trace(fxt::Config::new().sample_hz(1000), || {
        drive(
            async {
                std::hint::black_box(burn_in_sampled_program(200));
            }
            .traced("burner"),
        );
    });
    let path = tmp("tasks-long-samples.fxt");
    std::fs::write(&path, bytes).unwrap();
    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let burner = stats["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "burner")
        .expect("the task is listed")
        .clone();
    assert_eq!(burner["long_polls"], 1);
    let inside = &burner["long_poll_samples"];
    assert!(inside["samples"].as_u64().unwrap() >= 1, "{burner}");
    // The innermost frames (in a debug build, the loop's helpers).
    assert!(!inside["top"].as_array().unwrap().is_empty(), "{inside}");
    let all = stats["samples"]["total"].as_u64().unwrap();
    assert!(inside["samples"].as_u64().unwrap() <= all);
    let text = stdout(&fxt(&["stats", p(&path)]));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("burner: 1 long;"))
        .unwrap_or_else(|| panic!("a long-poll line: {text}"));
    let samples = line.find("samples inside: ").expect("the samples");
    let longest = line.find("longest ").expect("the longest");
    assert!(samples < longest, "samples first: {line}");
}

/// Pending at its first poll, leaving its waker in `slot`; ready at the
/// next.
struct Sleeper {
    slot: std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
    slept: bool,
}

impl Future for Sleeper {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.slept {
            return Poll::Ready(());
        }
        self.slept = true;
        *self.slot.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// A task woken from another task's poll, driven by hand: the `tasks`
/// table has both, with where they were made; the `polls` table has each
/// poll, the woken one with its delay (at least the sleep between the wake
/// and the poll) and its waker's id, read by DuckDB.
#[test]
fn export_writes_the_tasks_and_their_polls_with_delay_and_waker() {
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None::<Waker>));
    // Where `.traced` is called.
    let line = line!() + 6;
    let bytes = engine_trace(monotonic(), || {
        let sleeper = Sleeper {
            slot: slot.clone(),
            slept: false,
        }
        .traced("sleeper");
        let mut sleeper = std::pin::pin!(sleeper);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(sleeper.as_mut().poll(&mut cx).is_pending());
        let waker = slot.lock().unwrap().take().unwrap();
        let alarm = std::pin::pin!(async move { waker.wake() }.traced("alarm"));
        assert!(alarm.poll(&mut cx).is_ready());
        std::thread::sleep(GAP);
        assert!(sleeper.as_mut().poll(&mut cx).is_ready());
    });
    let path = tmp("tasks-export.fxt");
    std::fs::write(&path, bytes).unwrap();
    let dir = tmp("tasks-export");
    let _ = std::fs::remove_dir_all(&dir);
    let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir), "--host", "h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = duckdb(
        &dir,
        &[
            "select name, location, typeof(task) from {tasks} order by name",
            "select t.name, count(*), count(p.delay), min(p.delay), min(w.name), typeof(min(p.ts)), typeof(min(p.dur)) \
             from {polls} p join {tasks} t on p.task = t.task \
             left join {tasks} w on p.woken_by_task = w.task group by t.name order by t.name",
            "select count(*) from {polls} where dur < 0 or tid is null",
        ],
    );
    let file = file!();
    assert_eq!(
        r[0],
        serde_json::json!([
            ["alarm", format!("{file}:{}", line + 5), "BIGINT"],
            ["sleeper", format!("{file}:{line}"), "BIGINT"],
        ])
    );
    let rows: Vec<&Vec<Value>> = r[1]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap())
        .collect();
    assert_eq!(rows[0][..3], [Value::from("alarm"), 1.into(), 0.into()]);
    assert_eq!(rows[0][4], Value::Null, "nobody woke the alarm");
    assert_eq!(rows[1][..3], [Value::from("sleeper"), 2.into(), 1.into()]);
    assert!(
        rows[1][3].as_i64().unwrap() >= GAP.as_nanos() as i64,
        "{rows:?}"
    );
    assert_eq!(rows[1][4], "alarm", "woken by the alarm's poll");
    assert_eq!(rows[1][5..], [Value::from("BIGINT"), "BIGINT".into()]);
    assert_eq!(r[2], serde_json::json!([[0]]));
}

/// Pending `left` times, leaving its waker in `slot` each time.
struct Waits {
    slot: std::sync::Arc<std::sync::Mutex<Option<Waker>>>,
    left: u32,
}

impl Future for Waits {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.left == 0 {
            return Poll::Ready(());
        }
        self.left -= 1;
        *self.slot.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// How a plain thread wakes the task in
/// [`perfetto_draws_an_arrow_from_every_recorded_wake`].
#[derive(Clone, Copy)]
enum Wake {
    /// With no slice open on the thread, and none before.
    Bare,
    /// Right after a slice of its own has ended.
    AfterASlice,
    /// Inside a slice.
    Inside,
}

/// A task woken three times by a plain thread (no slice open there; just
/// after a slice of its own ended; inside a slice), as delivered by `fxt
/// symbolize`: Perfetto draws an arrow from each wake to the poll it
/// caused, each from a `wake` slice at the wake (inside the open slice,
/// if any), and reports no import error. Without the `wake` slice the
/// first wake's arrow was dropped (`flow_no_enclosing_slice`) and the
/// second bound to the slice that had ended.
#[test]
fn perfetto_draws_an_arrow_from_every_recorded_wake() {
    let Some(shell) = cli_support::perfetto::trace_processor() else {
        eprintln!("skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let slot = std::sync::Arc::new(std::sync::Mutex::new(None::<Waker>));
    let wakes = [Wake::Bare, Wake::AfterASlice, Wake::Inside];
    let bytes = engine_trace(monotonic(), || {
        let (ask, asked) = std::sync::mpsc::channel::<(Wake, Waker)>();
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let waker = std::thread::spawn(move || {
            for (how, waker) in asked {
                match how {
                    Wake::Bare => waker.wake(),
                    Wake::AfterASlice => {
                        drop(fxt::trace_duration_scope!("app", "before"));
                        waker.wake();
                    }
                    Wake::Inside => {
                        let _inside = fxt::trace_duration_scope!("app", "inside");
                        waker.wake();
                    }
                }
                done.send(()).unwrap();
            }
        });
        let task = Waits {
            slot: slot.clone(),
            left: wakes.len() as u32,
        }
        .traced("woken");
        let mut task = std::pin::pin!(task);
        let mut cx = Context::from_waker(Waker::noop());
        for how in wakes {
            assert!(task.as_mut().poll(&mut cx).is_pending());
            let w = slot.lock().unwrap().take().unwrap();
            ask.send((how, w)).unwrap();
            finished.recv().unwrap();
            std::thread::sleep(GAP);
        }
        assert!(task.as_mut().poll(&mut cx).is_ready());
        drop(ask);
        waker.join().unwrap();
    });
    let raw = tmp("tasks-wakes.fxt");
    std::fs::write(&raw, bytes).unwrap();
    let delivered = tmp("tasks-wakes-delivered.fxt");
    let out = fxt(&["symbolize", p(&raw), "-o", p(&delivered)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let row = cli_support::perfetto::perfetto_row(
        &shell,
        &delivered,
        "select \
           (select count(*) from flow f \
              join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id \
            where i.name = 'woken'), \
           (select count(*) from flow f \
              join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id \
            where o.name = 'wake' and i.name = 'woken'), \
           (select count(*) from slice w join slice parent on w.parent_id = parent.id \
            where w.name = 'wake' and parent.name = 'inside'), \
           (select count(*) from slice where name = 'wake' and parent_id is null), \
           (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);",
    );
    assert_eq!(
        row,
        [3, 3, 1, 2, 0],
        "arrows to the polls, from wake slices, one inside `inside`, two alone, import errors"
    );
}
