//! Issue 44's "done when" program: a Tokio program (current-thread, and
//! multi-thread with one worker) whose tasks, wake chain and one
//! executor-blocking task are known, read back by `fxt stats`, `fxt export
//! parquet` (DuckDB) and Perfetto's trace processor:
//!
//! * each task is listed by name with its polls;
//! * the blocking task's poll is flagged long, with where it was made;
//! * the task it woke before blocking the only worker waited at least the
//!   block;
//! * a channel consumer's woken polls were woken by its producer's task
//!   (`woken_by_task`), and Perfetto draws those wakes as arrows from the
//!   producer's polls (a `wake` slice in each) to the consumer's;
//! * the producer's wakes after its sleeps are the timer driver's
//!   (`woken_by_driver`), never a task's;
//! * Perfetto has one track per task, holding its life and its polls, in
//!   the trace `fxt symbolize` delivers; the raw trace has the lives
//!   alone there, and no arrows.
//!
//! Perfetto's part runs when `$FXT_TRACE_PROCESSOR` (or
//! `/tmp/perfetto-src/out/tp/trace_processor_shell`) exists, and says it
//! was skipped otherwise. Only properties are asserted, never timings
//! beyond the block the program itself sleeps.

mod cli_support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cli_support::duckdb::query as duckdb;
use cli_support::*;
use fxt::task::TracedExt;
use serde_json::Value;
use tokio::runtime::{Builder, Runtime};

const MESSAGES: u32 = 8;
const BLOCK: Duration = Duration::from_millis(40);

/// The program: a producer and a consumer over a channel, then a blocker
/// that wakes a waiter and holds the only worker for [`BLOCK`]. Returns
/// the line where the blocker is wrapped.
fn program(rt: &Runtime) -> u32 {
    let blocker_line = line!() + 41;
    rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let producer = tokio::spawn(
            async move {
                for i in 0..MESSAGES {
                    tx.send(i).unwrap();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                done_rx.await.unwrap();
            }
            .traced("producer"),
        );
        let consumer = tokio::spawn(
            async move {
                for _ in 0..MESSAGES {
                    rx.recv().await.unwrap();
                }
                done_tx.send(()).unwrap();
            }
            .traced("consumer"),
        );
        consumer.await.unwrap();
        producer.await.unwrap();

        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let waiter = tokio::spawn(
            async move {
                ready_tx.send(()).unwrap();
                go_rx.await.unwrap();
            }
            .traced("waiter"),
        );
        let blocker = tokio::spawn(
            async move {
                ready_rx.await.unwrap();
                go_tx.send(()).unwrap();
                std::thread::sleep(BLOCK);
            }
            .traced("blocker"),
        );
        waiter.await.unwrap();
        blocker.await.unwrap();
    });
    blocker_line
}

fn runtimes() -> Vec<(&'static str, Runtime)> {
    let mut current = Builder::new_current_thread();
    current.enable_time();
    fxt::tokio::instrument(&mut current);
    let mut multi = Builder::new_multi_thread();
    multi.worker_threads(1).enable_time();
    fxt::tokio::instrument(&mut multi);
    vec![
        ("current-thread", current.build().unwrap()),
        ("multi-thread", multi.build().unwrap()),
    ]
}

fn trace_processor_shell() -> Option<PathBuf> {
    let shell = std::env::var_os("FXT_TRACE_PROCESSOR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/perfetto-src/out/tp/trace_processor_shell"));
    shell.exists().then_some(shell)
}

/// Trace processor's `query` over `trace`: its rows, each a list of
/// fields (its output is CSV with a header, strings quoted).
fn trace_processor(shell: &Path, trace: &Path, query: &str) -> Vec<Vec<String>> {
    let file = trace.with_extension("sql");
    std::fs::write(&file, query).unwrap();
    let out = Command::new(shell)
        .arg("-q")
        .arg(&file)
        .arg(trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .map(|f| f.trim_matches('"').to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn a_tokio_programs_tasks_wakes_and_blocking_task_are_read_back() {
    let shell = trace_processor_shell();
    if shell.is_none() {
        eprintln!("Perfetto's part skipped: no trace processor ($FXT_TRACE_PROCESSOR)");
    }
    for (kind, rt) in runtimes() {
        let mut blocker_line = 0;
        // The monotonic clock: a nanosecond a tick, so the delay compares
        // with the sleep exactly (the TSC's rate is calibrated).
        let config = fxt::Config::new().clock(fxt::ClockSource::Monotonic);
        let bytes = engine_trace(config, || blocker_line = program(&rt));
        let path = tmp(&format!("tasks-program-{kind}.fxt"));
        std::fs::write(&path, &bytes).unwrap();

        // fxt stats: each task by name with its polls.
        let out = fxt(&["stats", "--json", p(&path)]);
        assert!(out.status.success(), "{}", stderr(&out));
        let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
        let tasks = stats["tasks"].as_array().unwrap();
        let named = |name: &str| -> &Value {
            tasks
                .iter()
                .find(|t| t["name"] == name)
                .unwrap_or_else(|| panic!("{kind}: {name} is listed: {tasks:?}"))
        };
        for name in ["producer", "consumer", "waiter", "blocker"] {
            let t = named(name);
            assert_eq!(
                (&t["tasks"], &t["spawned"]),
                (&1.into(), &1.into()),
                "{kind}: {t}"
            );
        }
        // The consumer is polled once, then at least once per wake (each
        // message, unless some arrived together).
        assert!(named("consumer")["polls"].as_u64().unwrap() >= 2, "{kind}");
        assert_eq!(named("waiter")["polls"], 2, "{kind}");
        let blocker = named("blocker");
        assert_eq!(blocker["long_polls"], 1, "{kind}: {blocker}");
        let at = format!("{}:{blocker_line}", file!());
        assert_eq!(
            blocker["longest_long_poll"]["location"],
            at.as_str(),
            "{kind}"
        );
        // Who woke them: the consumer, its producer's task; the producer,
        // after each sleep, the runtime's timer driver (on a parked worker).
        let consumer = named("consumer");
        assert_eq!(
            consumer["woken_by_task_polls"], consumer["woken_polls"],
            "{kind}: {consumer}"
        );
        assert_eq!(consumer["woken_by_driver_polls"], 0, "{kind}: {consumer}");
        let producer = named("producer");
        assert!(
            producer["woken_by_driver_polls"].as_u64().unwrap() >= 1,
            "{kind}: {producer}"
        );
        let block = BLOCK.as_nanos() as u64;
        let waited = named("waiter")["max_delay_ns"].as_u64().unwrap();
        assert!(waited >= block, "{kind}: the waiter waited {waited} ns");

        // fxt export parquet: the consumer's woken polls name the producer.
        let dir = tmp(&format!("tasks-program-{kind}"));
        let _ = std::fs::remove_dir_all(&dir);
        let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir), "--host", "h"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = duckdb(
            &dir,
            &[
                "select count(*), count(w.name), count(*) filter (where w.name = 'producer') \
               from {polls} p join {tasks} t on p.task = t.task \
               left join {tasks} w on p.woken_by_task = w.task \
               where t.name = 'consumer' and p.delay is not null",
            ],
        );
        let (woken, by_task, by_producer) = (&r[0][0][0], &r[0][0][1], &r[0][0][2]);
        assert!(woken.as_u64().unwrap() >= 1, "{kind}: {r:?}");
        assert_eq!((by_task, by_producer), (woken, woken), "{kind}: {r:?}");
        // The producer's wakes by the timer driver: marked, and never also
        // a task's.
        let r = duckdb(
            &dir,
            &[
                "select count(*) filter (where p.woken_by_driver = 1), \
                        count(*) filter (where p.woken_by_driver = 1 and p.woken_by_task is not null), \
                        count(*) filter (where p.woken_by_driver is not null and p.woken_by_driver <> 1) \
               from {polls} p join {tasks} t on p.task = t.task where t.name = 'producer'",
            ],
        );
        let driver_woken = &r[0][0][0];
        assert_eq!(
            driver_woken, &producer["woken_by_driver_polls"],
            "{kind}: {r:?}"
        );
        assert_eq!(
            (&r[0][0][1], &r[0][0][2]),
            (&0.into(), &0.into()),
            "{kind}: {r:?}"
        );

        let Some(shell) = &shell else { continue };
        // Perfetto, on the trace as delivered to a viewer (`fxt
        // symbolize`): a track per task with its life and its polls. The
        // raw trace has only the lives there, and no arrows: the tracks'
        // polls and the arrows are what the readers derive.
        let delivered = tmp(&format!("tasks-program-{kind}-delivered.fxt"));
        let out = fxt(&["symbolize", p(&path), "-o", p(&delivered)]);
        assert!(out.status.success(), "{}", stderr(&out));
        let task_tracks = "select s.name, count(distinct s.track_id), count(*) from slice s \
               left join thread_track tt on s.track_id = tt.id \
             where s.category = 'task' and tt.id is null and s.name <> 'parked' \
             group by s.name order by s.name;";
        let flows = "select count(*) from flow;";
        let raw_tracks = trace_processor(shell, &path, task_tracks);
        let lives: Vec<[&str; 2]> = raw_tracks.iter().map(|r| [&*r[0], &*r[2]]).collect();
        assert_eq!(
            lives,
            [
                ["blocker", "1"],
                ["consumer", "1"],
                ["producer", "1"],
                ["waiter", "1"]
            ],
            "{kind}: only the lives on the raw trace's task tracks"
        );
        assert_eq!(
            trace_processor(shell, &path, flows),
            vec![vec!["0".to_string()]]
        );
        let path = delivered;
        let tracks = trace_processor(shell, &path, task_tracks);
        for name in ["blocker", "consumer", "producer", "waiter"] {
            let row = tracks
                .iter()
                .find(|r| r[0] == name)
                .unwrap_or_else(|| panic!("{kind}: a track for {name}: {tracks:?}"));
            let polls = named(name)["polls"].as_u64().unwrap();
            assert_eq!(row[1], "1", "{kind}: one track for {name}");
            assert_eq!(
                row[2],
                (polls + 1).to_string(),
                "{kind}: life and polls of {name}"
            );
        }
        // The consumer's wakes: arrows from the producer's polls (from
        // the `wake` slice drawn inside each at the wake).
        let arrows = trace_processor(
            shell,
            &path,
            "select count(*) from flow f \
               join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id \
               join slice op on o.parent_id = op.id \
             where o.name = 'wake' and op.name = 'producer' and i.name = 'consumer';",
        );
        let arrows: u64 = arrows[0][0].parse().unwrap();
        assert_eq!(arrows, woken.as_u64().unwrap(), "{kind}: an arrow per wake");
        let errors = trace_processor(
            shell,
            &path,
            "select name from stats where severity in ('error', 'data_loss') and value > 0;",
        );
        assert!(errors.is_empty(), "{kind}: import problems: {errors:?}");
    }
}
