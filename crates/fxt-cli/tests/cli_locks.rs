//! `fxt::sync`'s lock events read by the tools: four threads take a named
//! lock in turn, holding it a known time, each wait one record naming
//! its holder; `fxt stats` lists the lock with the waits the decoder reads
//! and the holders that ended them; `fxt export parquet` has the waits as
//! slices with their holders, and in the trace `fxt symbolize` delivers
//! the holders' `held` slices and the arrows as flows between threads
//! (read with DuckDB); `fxt symbolize` and `fxt merge` add those once,
//! and nothing to a trace that carries them (as a program built with
//! feature `symbolize` writes it);
//! Perfetto's trace processor shows the slices and the arrows of the
//! delivered trace without an error (where `trace_processor_shell` is:
//! `$FXT_TRACE_PROCESSOR`, or where Perfetto's build script puts it).

mod cli_support;

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use cli_support::duckdb::query as duckdb;
use cli_support::*;
use fxt::sync::Mutex;
use fxt_format::decode::{ArgValue, EventKind, Record, SliceReader};
use serde_json::Value;

const THREADS: usize = 4;
const ROUNDS: usize = 6;

/// Writes the trace of four threads taking the lock "turns" in turn.
fn contended_trace(name: &str) -> PathBuf {
    let turns = Arc::new(Mutex::named("turns", 0u32));
    let barrier = Arc::new(Barrier::new(THREADS));
    let bytes = engine_trace(fxt::Config::new().buffer_size(4 << 20), || {
        let workers: Vec<_> = (0..THREADS)
            .map(|i| {
                let (turns, barrier) = (turns.clone(), barrier.clone());
                std::thread::spawn(move || {
                    fxt::set_thread_name(&format!("worker-{i}"));
                    barrier.wait();
                    for _ in 0..ROUNDS {
                        let mut g = turns.lock();
                        *g += 1;
                        std::thread::sleep(Duration::from_millis(2));
                        drop(g);
                        std::thread::sleep(Duration::from_micros(200));
                    }
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
    });
    let path = tmp(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The wait slices of "turns" as the decoder reads them: (count, total ns).
fn decoded_waits(bytes: &[u8]) -> (u64, u64) {
    let mut tps = 0;
    let (mut n, mut total) = (0, 0);
    for record in SliceReader::new(bytes).flatten() {
        match record {
            Record::Initialization { ticks_per_second } => tps = ticks_per_second,
            Record::Event(e) if e.category == "lock" && e.name == "turns" => {
                let wait = e.args.iter().any(|a| {
                    a.name == "state" && matches!(&a.value, ArgValue::Str(s) if *s == "wait")
                });
                if let (true, EventKind::DurationComplete { end }) = (wait, e.kind) {
                    let ns = |t| fxt_format::time::ticks_to_ns(t, tps);
                    n += 1;
                    total += ns(end) - ns(e.timestamp);
                }
            }
            _ => {}
        }
    }
    (n, total)
}

#[test]
fn stats_lists_the_lock_its_waits_and_its_holders() {
    let path = contended_trace("locks-stats.fxt");
    let (waits, total) = decoded_waits(&std::fs::read(&path).unwrap());
    assert!(waits >= ROUNDS as u64, "{waits} waits");

    let out = fxt(&["stats", "--json", p(&path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stats: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let locks = stats["locks"].as_array().unwrap();
    let turns = locks
        .iter()
        .find(|l| l["name"] == "turns")
        .expect("the lock is listed");
    assert_eq!(turns["contended"], waits);
    assert_eq!(turns["total_wait_ns"], total);
    assert!(turns["p99_wait_ns"].as_u64().unwrap() <= turns["max_wait_ns"].as_u64().unwrap());
    let holders = turns["holders"].as_array().unwrap();
    assert!(!holders.is_empty() && holders.len() <= 3);
    for h in holders {
        assert!(h["name"].as_str().unwrap().starts_with("worker-"), "{h}");
        assert!(h["wait_ns"].as_u64().unwrap() > 0);
    }
    let by_holder: Vec<u64> = holders
        .iter()
        .map(|h| h["wait_ns"].as_u64().unwrap())
        .collect();
    assert!(
        by_holder.windows(2).all(|w| w[0] >= w[1]),
        "longest first: {by_holder:?}"
    );

    let text = stdout(&fxt(&["stats", p(&path)]));
    let line = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("contended"))
        .find(|l| l.ends_with("  turns"))
        .expect("a line for the lock in the locks section");
    assert!(line.trim_start().starts_with(&waits.to_string()), "{line}");
    assert!(
        text.contains("thread ") && text.contains("\"worker-"),
        "{text}"
    );
}

/// `fxt symbolize PATH -o OUT`: the trace delivered to a viewer.
fn delivered(path: &std::path::Path, name: &str) -> PathBuf {
    let out_path = tmp(name);
    let out = fxt(&["symbolize", p(path), "-o", p(&out_path)]);
    assert!(out.status.success(), "{}", stderr(&out));
    out_path
}

/// The lock flow begins and ends of a trace.
fn lock_flows(bytes: &[u8]) -> (u64, u64) {
    let (mut begins, mut ends) = (0, 0);
    for record in SliceReader::new(bytes).flatten() {
        if let Record::Event(e) = record {
            match e.kind {
                EventKind::FlowBegin { .. } if e.category == "lock" => begins += 1,
                EventKind::FlowEnd { .. } if e.category == "lock" => ends += 1,
                _ => {}
            }
        }
    }
    (begins, ends)
}

#[test]
fn export_has_the_waits_with_their_holders() {
    let path = contended_trace("locks-export-raw.fxt");
    let (waits, total) = decoded_waits(&std::fs::read(&path).unwrap());
    let dir = tmp("locks-export-raw");
    let _ = std::fs::remove_dir_all(&dir);
    let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir), "--host", "h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = duckdb(
        &dir,
        &[
            "select count(*), sum(dur) from {slices} \
             where category = 'lock' and name = 'turns' and args['state'] = 'wait'",
            // Waits naming another thread of the trace that waited too.
            "select count(*) from {slices} s \
             where s.category = 'lock' and s.args['state'] = 'wait' \
               and cast(s.args['holder'] as bigint) <> s.tid \
               and exists (select 1 from {slices} o where o.category = 'lock' \
                 and o.tid = cast(s.args['holder'] as bigint))",
            "select count(*) from {flows}",
        ],
    );
    assert_eq!(r[0], serde_json::json!([[waits, total]]));
    let named = r[1][0][0].as_u64().unwrap();
    assert!(
        named * 10 >= waits * 9,
        "{named} of {waits} waits name a holder"
    );
    assert_eq!(
        r[2],
        serde_json::json!([[0]]),
        "the raw trace has no arrows"
    );
}

#[test]
fn export_of_the_delivered_trace_has_the_arrows_as_flows() {
    let raw = contended_trace("locks-export.fxt");
    let (waits, total) = decoded_waits(&std::fs::read(&raw).unwrap());
    let path = delivered(&raw, "locks-export-delivered.fxt");
    let dir = tmp("locks-export");
    let _ = std::fs::remove_dir_all(&dir);
    let out = fxt(&["export", "parquet", p(&path), "-o", p(&dir), "--host", "h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = duckdb(
        &dir,
        &[
            "select count(*), sum(dur) from {slices} \
             where category = 'lock' and name = 'turns' and args['state'] = 'wait'",
            // Flow ends inside a wait slice of their thread, whose begin is
            // inside a `held` slice of another thread.
            "select count(*) from {flows} e join {flows} b \
               on b.flow_id = e.flow_id and b.pid = e.pid and b.phase = 'begin' \
             where e.phase = 'end' and e.category = 'lock' and b.tid <> e.tid \
               and exists (select 1 from {slices} s where s.tid = e.tid \
                 and s.category = 'lock' and args['state'] = 'wait' \
                 and s.ts <= e.ts and e.ts <= s.ts + s.dur) \
               and exists (select 1 from {slices} s where s.tid = b.tid \
                 and s.category = 'lock' and args['state'] = 'held' \
                 and s.ts <= b.ts and b.ts <= s.ts + s.dur)",
        ],
    );
    assert_eq!(r[0], serde_json::json!([[waits, total]]));
    let arrows = r[1][0][0].as_u64().unwrap();
    assert!(
        arrows * 10 >= waits * 9,
        "{arrows} arrows for {waits} waits"
    );
}

#[test]
fn perfetto_shows_the_slices_and_the_arrows_between_threads() {
    let Some(shell) = cli_support::perfetto::trace_processor() else {
        eprintln!("skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let raw = contended_trace("locks-perfetto.fxt");
    let (waits, _) = decoded_waits(&std::fs::read(&raw).unwrap());
    let path = delivered(&raw, "locks-perfetto-delivered.fxt");
    let row = cli_support::perfetto::perfetto_row(
        &shell,
        &path,
        "select (select count(*) from slice where category = 'lock' and name = 'turns'), \
         (select count(*) from flow f \
           join slice o on f.slice_out = o.id join thread_track ot on o.track_id = ot.id \
           join slice i on f.slice_in = i.id join thread_track it on i.track_id = it.id \
          where o.category = 'lock' and i.category = 'lock' and ot.utid <> it.utid), \
         (select count(*) from flow f \
           join slice o on f.slice_out = o.id join slice i on f.slice_in = i.id \
          where extract_arg(o.arg_set_id, 'state') = 'held' \
            and extract_arg(i.arg_set_id, 'state') = 'handoff'), \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);",
    );
    let (slices, arrows, holder_to_waiter, errors) =
        (row[0] as u64, row[1] as u64, row[2] as u64, row[3]);
    assert!(slices >= waits, "{slices} slices for {waits} waits");
    assert!(
        arrows * 10 >= waits * 9,
        "{arrows} arrows for {waits} waits"
    );
    // Every arrow from the holder's `held` slice to the waiter's: Perfetto
    // points a flow from the slice that starts first, which a wait begun
    // before its holder took the lock is.
    assert_eq!(holder_to_waiter, arrows, "arrows the right way");
    assert_eq!(errors, 0, "import problems");
}

#[test]
fn symbolize_and_merge_add_the_arrows_once() {
    let raw = contended_trace("locks-once.fxt");
    let bytes = std::fs::read(&raw).unwrap();
    let (waits, _) = decoded_waits(&bytes);
    assert_eq!(lock_flows(&bytes), (0, 0), "the program writes no arrow");
    let path = delivered(&raw, "locks-once-delivered.fxt");
    let flows = lock_flows(&std::fs::read(&path).unwrap());
    assert_eq!(flows.0, flows.1);
    assert!(flows.0 * 10 >= waits * 9, "{flows:?} for {waits} waits");
    // An archive of the raw trace has them; one of the delivered trace
    // has them once.
    for (input, name) in [(&raw, "locks-once-a.fxt"), (&path, "locks-once-b.fxt")] {
        let archive = tmp(name);
        let out = fxt(&["merge", p(input), "-o", p(&archive)]);
        assert!(out.status.success(), "{}", stderr(&out));
        let merged = std::fs::read(&archive).unwrap();
        assert_eq!(lock_flows(&merged), flows, "{name}");
        assert_eq!(decoded_waits(&merged).0, waits, "{name}");
    }
}

#[test]
fn symbolize_leaves_a_trace_that_carries_them_as_it_is() {
    // What a program built with feature `symbolize` writes: its trace,
    // then the records derived from it (fxt-runtime's test
    // derived_appendix checks it appends exactly these).
    let raw = contended_trace("locks-self.fxt");
    let mut bytes = std::fs::read(&raw).unwrap();
    let derived = fxt_symbols::derived::records(&bytes);
    assert!(!derived.is_empty());
    bytes.extend_from_slice(&fxt_format::encode::words_to_bytes(&derived));
    std::fs::write(&raw, &bytes).unwrap();
    let out = fxt(&["symbolize", p(&raw)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("already"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&raw).unwrap(), bytes, "symbolize changed it");
    // Delivered or merged, its arrows are there once.
    let flows = lock_flows(&bytes);
    assert!(flows.0 > 0 && flows.0 == flows.1, "{flows:?}");
    let archive = tmp("locks-self-merged.fxt");
    let out = fxt(&["merge", p(&raw), "-o", p(&archive)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lock_flows(&std::fs::read(&archive).unwrap()), flows);
}
