//! `fxt::sync`: contended acquisitions become wait slices, one record each
//! naming the thread whose release ended it; in the trace delivered to a
//! viewer (with the records `fxt_symbols::derived` draws from them) those
//! releases are `held` slices with a flow to the waiter; uncontended
//! ones, waits that began outside a session and forked children record
//! nothing.
//!
//! ```text
//! cargo test --test sync
//! ```

mod macros_support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use fxt::__macro_support::now;
use fxt::format::decode::{ArgValue, Event, EventKind, Record, Thread};
use fxt::sync::{Condvar, Mutex, RwLock};
use macros_support::{events, lock};

/// Runs `f` in a session recording every category; the records of the
/// trace as delivered to a viewer.
fn trace(f: impl FnOnce()) -> Vec<Record> {
    delivered(&raw_trace(f))
}

/// Runs `f` in a session recording every category; the trace as written.
fn raw_trace(f: impl FnOnce()) -> Vec<u8> {
    let _turn = lock();
    let session = fxt::start(fxt::Config::new().buffer_size(4 << 20)).expect("session starts");
    f();
    let (bytes, stats) = session.finish_to_vec().expect("session collects");
    assert_eq!(stats.records_dropped, 0, "nothing dropped");
    bytes
}

/// The records of `bytes` with those a viewer is delivered drawn from them
/// (`fxt_symbols::derived`), which drawing again does not repeat.
fn delivered(bytes: &[u8]) -> Vec<Record> {
    let mut all = bytes.to_vec();
    all.extend(fxt::format::encode::words_to_bytes(
        &fxt_symbols::derived::records(bytes),
    ));
    assert!(
        fxt_symbols::derived::records(&all).is_empty(),
        "derived twice"
    );
    fxt::format::decode::decode_all(&all).expect("the trace decodes")
}

/// The `lock` events of the lock named `name`.
fn lock_events<'r>(records: &'r [Record], name: &str) -> Vec<&'r Event> {
    events(records)
        .into_iter()
        .filter(|e| e.category == "lock" && e.name == name)
        .collect()
}

fn str_arg<'e>(e: &'e Event, key: &str) -> Option<&'e str> {
    e.args
        .iter()
        .find(|a| a.name == key)
        .and_then(|a| match &a.value {
            ArgValue::Str(t) => t.as_str(),
            _ => None,
        })
}

/// `(start, end)` of a duration complete event.
fn span(e: &Event) -> (u64, u64) {
    match e.kind {
        EventKind::DurationComplete { end } => (e.timestamp, end),
        _ => panic!("not a slice: {e:?}"),
    }
}

fn tid(t: &Thread) -> u64 {
    match t {
        Thread::Known { thread, .. } => *thread,
        Thread::Undefined(i) => panic!("undefined thread ref {i}"),
    }
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

/// The wait slices (state `wait`) and the held slices of a lock.
fn slices<'r>(evs: &[&'r Event], state: &str) -> Vec<&'r Event> {
    evs.iter()
        .copied()
        .filter(|e| {
            matches!(e.kind, EventKind::DurationComplete { .. })
                && str_arg(e, "state") == Some(state)
        })
        .collect()
}

#[test]
fn four_threads_in_turn_waits_add_up_and_have_arrows() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 8;
    let turns = Arc::new(Mutex::named("turns", 0u64));
    let barrier = Arc::new(Barrier::new(THREADS));
    let mut measured: HashMap<u64, u64> = HashMap::new();
    let records = trace(|| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (turns, barrier) = (turns.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    let mut waited = 0;
                    for _ in 0..ROUNDS {
                        let before = now();
                        let mut g = turns.lock();
                        waited += now() - before;
                        *g += 1;
                        // The known hold time, during which the others wait.
                        thread::sleep(Duration::from_millis(2));
                        drop(g);
                        thread::sleep(Duration::from_micros(200));
                    }
                    (gettid(), waited)
                })
            })
            .collect();
        for w in workers {
            let (tid, waited) = w.join().unwrap();
            measured.insert(tid, waited);
        }
    });
    assert_eq!(*turns.lock(), (THREADS * ROUNDS) as u64);
    let evs = lock_events(&records, "turns");
    let waits = slices(&evs, "wait");
    assert!(
        waits.len() >= ROUNDS,
        "four threads holding for 2 ms in turn wait: {} waits",
        waits.len()
    );
    // Each thread's wait slices add up to what it measured around `lock()`.
    let mut recorded: HashMap<u64, u64> = HashMap::new();
    for w in &waits {
        let (s, e) = span(w);
        assert_eq!(str_arg(w, "mode"), Some("exclusive"));
        *recorded.entry(tid(&w.thread)).or_default() += e - s;
    }
    for (tid, &m) in &measured {
        let r = recorded.get(tid).copied().unwrap_or(0);
        assert!(
            r as f64 >= 0.9 * m as f64 && r as f64 <= 1.1 * m as f64,
            "thread {tid}: recorded waits {r} ticks, measured {m}"
        );
    }
    // Flows: every begin is on a `held` slice's thread, inside it.
    let mut begins: HashMap<u64, u64> = HashMap::new();
    let mut ends: Vec<(u64, u64, u64)> = Vec::new();
    for e in &evs {
        match e.kind {
            EventKind::FlowBegin { id } => {
                begins.insert(id, tid(&e.thread));
            }
            EventKind::FlowEnd { id } => ends.push((id, tid(&e.thread), e.timestamp)),
            _ => {}
        }
    }
    let held = slices(&evs, "held");
    assert!(!held.is_empty(), "releases to waiters are recorded");
    let with_arrow = waits
        .iter()
        .filter(|w| {
            let (s, e) = span(w);
            ends.iter().any(|&(id, t, ts)| {
                t == tid(&w.thread)
                    && (s..=e).contains(&ts)
                    && begins.get(&id).is_some_and(|&from| from != t)
            })
        })
        .count();
    assert!(
        with_arrow * 10 >= waits.len() * 9,
        "{with_arrow} of {} waits have an arrow from another thread",
        waits.len()
    );
}

fn u64_arg(e: &Event, key: &str) -> Option<u64> {
    e.args
        .iter()
        .find(|a| a.name == key)
        .and_then(|a| match a.value {
            ArgValue::U64(v) => Some(v),
            _ => None,
        })
}

#[test]
fn a_wait_is_one_record_that_names_the_holder() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 6;
    let turns = Arc::new(Mutex::named("compact", 0u64));
    let barrier = Arc::new(Barrier::new(THREADS));
    let mut workers_tids = HashSet::new();
    let bytes = raw_trace(|| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (turns, barrier) = (turns.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..ROUNDS {
                        let g = turns.lock();
                        thread::sleep(Duration::from_millis(2));
                        drop(g);
                        thread::sleep(Duration::from_micros(200));
                    }
                    gettid()
                })
            })
            .collect();
        workers_tids.extend(workers.into_iter().map(|w| w.join().unwrap()));
    });
    let records = fxt::format::decode::decode_all(&bytes).unwrap();
    let tps = records
        .iter()
        .find_map(|r| match r {
            Record::Initialization { ticks_per_second } => Some(*ticks_per_second),
            _ => None,
        })
        .unwrap();
    let evs = lock_events(&records, "compact");
    let waits = slices(&evs, "wait");
    // Nothing but the waits: no held slice, no flow.
    assert_eq!(evs.len(), waits.len(), "{evs:#?}");
    assert!(waits.len() >= ROUNDS, "{} waits", waits.len());
    let mut named = 0;
    for w in &waits {
        let Some(holder) = u64_arg(w, "holder") else {
            continue;
        };
        named += 1;
        assert!(workers_tids.contains(&holder), "holder {holder}");
        assert_ne!(holder, tid(&w.thread), "a wait is not ended by itself");
        // The release lies in the wait (the runtime converts ticks with
        // its quick estimate of the clock's rate: a percent of slack).
        let (s, e) = span(w);
        let wait_ns = fxt::format::time::ticks_to_ns(e - s, tps);
        let handoff = u64_arg(w, "handoff_ns").expect("handoff_ns");
        assert!(
            handoff <= wait_ns + wait_ns / 100 + 1_000,
            "{handoff} of {wait_ns}"
        );
    }
    assert!(
        named * 10 >= waits.len() * 9,
        "{named} of {} waits name their holder",
        waits.len()
    );
}

#[test]
fn concurrent_waits_are_each_recorded_once_with_their_flow() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 400;
    let m = Arc::new(Mutex::named("many", (0u64, 0u64)));
    let barrier = Arc::new(Barrier::new(THREADS));
    let records = trace(|| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (m, barrier) = (m.clone(), barrier.clone());
                thread::spawn(move || {
                    barrier.wait();
                    for i in 0..ROUNDS {
                        let mut g = m.lock();
                        // Some work inside, less outside: the others wait.
                        g.0 += 1;
                        for _ in 0..200 {
                            g.1 = std::hint::black_box(g.1.wrapping_mul(31).wrapping_add(i as u64));
                        }
                        // Others run while it is held, even on one core.
                        if i % 4 == 0 {
                            thread::yield_now();
                        }
                        drop(g);
                        for _ in 0..20 {
                            std::hint::spin_loop();
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().for_each(|w| w.join().unwrap());
    });
    assert_eq!(m.lock().0, (THREADS * ROUNDS) as u64);
    let evs = lock_events(&records, "many");
    let waits = slices(&evs, "wait");
    let held = slices(&evs, "held");
    assert!(
        !waits.is_empty() && !held.is_empty(),
        "{} waits",
        waits.len()
    );
    // Flow begins and ends: each id begun once and ended at most once.
    let mut begins: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut ends: HashMap<u64, (u64, u64)> = HashMap::new();
    for e in &evs {
        match e.kind {
            EventKind::FlowBegin { id } => {
                let prev = begins.insert(id, (tid(&e.thread), e.timestamp));
                assert!(prev.is_none(), "flow {id} begun twice");
            }
            EventKind::FlowEnd { id } => {
                let prev = ends.insert(id, (tid(&e.thread), e.timestamp));
                assert!(prev.is_none(), "flow {id} ended twice");
            }
            _ => {}
        }
    }
    // Each thread's waits are recorded once: they never overlap, and there
    // are no more than its acquisitions.
    let mut per_thread: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for w in &waits {
        per_thread.entry(tid(&w.thread)).or_default().push(span(w));
    }
    for (t, spans) in &mut per_thread {
        assert!(spans.len() <= ROUNDS, "thread {t}: {} waits", spans.len());
        spans.sort();
        for p in spans.windows(2) {
            assert!(p[0].1 <= p[1].0, "thread {t}: waits {p:?} overlap");
        }
    }
    // Every flow end lies in a wait slice of its thread (at most one per
    // wait), after its begin on another thread; every begin lies in a held
    // slice of its thread (exactly one per held slice).
    let mut ends_in_waits = 0;
    for w in &waits {
        let (s, e) = span(w);
        let t = tid(&w.thread);
        let inside: Vec<_> = ends
            .iter()
            .filter(|(_, &(et, ts))| et == t && (s..=e).contains(&ts))
            .collect();
        assert!(inside.len() <= 1, "a wait with {} arrows", inside.len());
        if let Some((id, &(_, ts))) = inside.first() {
            let &(from, begun) = begins.get(id).expect("the flow's begin is recorded");
            assert!(from != t && begun <= ts, "flow {id} from {from} at {begun}");
            ends_in_waits += 1;
        }
    }
    assert_eq!(ends_in_waits, ends.len(), "every flow end is inside a wait");
    for h in &held {
        let (s, e) = span(h);
        let t = tid(&h.thread);
        let inside = begins
            .values()
            .filter(|&&(bt, ts)| bt == t && (s..=e).contains(&ts))
            .count();
        assert_eq!(inside, 1, "a held slice with {inside} flow begins");
    }
    assert_eq!(held.len(), begins.len(), "a held slice per flow begin");
    // The parts of holds that others waited through never overlap.
    let mut holds: Vec<(u64, u64)> = held.iter().map(|h| span(h)).collect();
    holds.sort();
    for p in holds.windows(2) {
        assert!(p[0].1 <= p[1].0, "held slices {p:?} overlap");
    }
    assert!(
        ends_in_waits * 10 >= waits.len() * 9,
        "{ends_in_waits} of {} waits have an arrow",
        waits.len()
    );
}

#[test]
fn a_thread_holding_more_contended_locks_than_it_keeps_records_each_wait() {
    // Six locks, each held by a helper until the main thread sleeps in
    // its wait for it (as /proc says: on any load); the main thread holds
    // them all at once (more than the four waits a thread keeps for its
    // unlocks), then releases them.
    const LOCKS: usize = 6;
    let me = gettid();
    let asleep = move || {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{me}/stat")).unwrap();
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('S'))
    };
    let locks: Vec<Arc<Mutex<()>>> = (0..LOCKS)
        .map(|_| Arc::new(Mutex::named("nested", ())))
        .collect();
    let records = trace(|| {
        let mut guards = Vec::new();
        for m in &locks {
            let waiting = Arc::new(AtomicBool::new(false));
            let holder = {
                let (m, waiting) = (m.clone(), waiting.clone());
                let (taken_tx, taken_rx) = std::sync::mpsc::channel();
                let t = thread::spawn(move || {
                    let g = m.lock();
                    taken_tx.send(()).unwrap();
                    while !(waiting.load(Ordering::SeqCst) && asleep()) {
                        thread::yield_now();
                    }
                    drop(g);
                });
                taken_rx.recv().unwrap();
                t
            };
            waiting.store(true, Ordering::SeqCst);
            guards.push(m.lock());
            holder.join().unwrap();
        }
        drop(guards);
    });
    let waits: Vec<_> = slices(&lock_events(&records, "nested"), "wait")
        .into_iter()
        .filter(|w| tid(&w.thread) == me)
        .collect();
    assert_eq!(waits.len(), LOCKS, "{waits:#?}");
    for w in &waits {
        let holder = u64_arg(w, "holder").expect("each names its holder");
        assert_ne!(holder, me);
    }
}

#[test]
fn uncontended_locks_record_nothing() {
    let m = Mutex::named("quiet", 0);
    let rw = RwLock::named("quiet rw", 0);
    let records = trace(|| {
        for _ in 0..1000 {
            *m.lock() += 1;
            *rw.write() += 1;
            let _ = *rw.read();
        }
    });
    assert!(events(&records).iter().all(|e| e.category != "lock"));
}

#[test]
fn category_off_records_nothing() {
    let m = Arc::new(Mutex::named("off", ()));
    let records = macros_support::trace_with(
        fxt::Config::new()
            .buffer_size(4 << 20)
            .categories(&["other"]),
        || contend(&m, 3),
    );
    assert!(events(&records).iter().all(|e| e.category != "lock"));
}

/// `rounds` times: a thread waits while this one holds `m` for 5 ms.
fn contend(m: &Arc<Mutex<()>>, rounds: usize) {
    for _ in 0..rounds {
        let g = m.lock();
        let waiting = Arc::new(AtomicBool::new(false));
        let t = {
            let (m, waiting) = (m.clone(), waiting.clone());
            thread::spawn(move || {
                waiting.store(true, Ordering::SeqCst);
                drop(m.lock());
            })
        };
        while !waiting.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        thread::sleep(Duration::from_millis(5));
        drop(g);
        t.join().unwrap();
    }
}

#[test]
fn guard_taken_before_the_session_and_dropped_during_it() {
    let m = Arc::new(Mutex::named("straddle", ()));
    let _turn = lock();
    // Taken before the session; a thread starts waiting during it.
    let g = m.lock();
    let session = fxt::start(fxt::Config::new().buffer_size(4 << 20)).unwrap();
    let started = now();
    let waiting = Arc::new(AtomicBool::new(false));
    let t = {
        let (m, waiting) = (m.clone(), waiting.clone());
        thread::spawn(move || {
            waiting.store(true, Ordering::SeqCst);
            drop(m.lock());
        })
    };
    while !waiting.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    thread::sleep(Duration::from_millis(20));
    drop(g);
    t.join().unwrap();
    let (bytes, _) = session.finish_to_vec().unwrap();
    let records = delivered(&bytes);
    let evs = lock_events(&records, "straddle");
    let waits = slices(&evs, "wait");
    let held = slices(&evs, "held");
    assert_eq!((waits.len(), held.len()), (1, 1), "{evs:#?}");
    // The hold is recorded from when the wait began, not from before the
    // session (when the guard was taken).
    let (ws, we) = span(waits[0]);
    let (hs, he) = span(held[0]);
    assert!(started <= ws && ws <= hs && hs < he && he <= we, "{evs:#?}");
}

#[test]
fn waits_that_began_outside_the_session_record_nothing_in_it() {
    let m = Arc::new(Mutex::named("outside", ()));
    let _turn = lock();
    // A wait that begins with no session, and ends inside one.
    let g = m.lock();
    let waiting = Arc::new(AtomicBool::new(false));
    let t = {
        let (m, waiting) = (m.clone(), waiting.clone());
        thread::spawn(move || {
            waiting.store(true, Ordering::SeqCst);
            drop(m.lock());
        })
    };
    while !waiting.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    thread::sleep(Duration::from_millis(20));
    let session = fxt::start(fxt::Config::new().buffer_size(4 << 20)).unwrap();
    drop(g);
    t.join().unwrap();
    let (bytes, _) = session.finish_to_vec().unwrap();
    let records = fxt::format::decode::decode_all(&bytes).unwrap();
    assert!(lock_events(&records, "outside").is_empty());

    // A wait that begins in one session and ends in the next.
    let g = m.lock();
    let first = fxt::start(fxt::Config::new().buffer_size(4 << 20)).unwrap();
    waiting.store(false, Ordering::SeqCst);
    let t = {
        let (m, waiting) = (m.clone(), waiting.clone());
        thread::spawn(move || {
            waiting.store(true, Ordering::SeqCst);
            drop(m.lock());
        })
    };
    while !waiting.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    thread::sleep(Duration::from_millis(20));
    first.finish_to_vec().unwrap();
    let second = fxt::start(fxt::Config::new().buffer_size(4 << 20)).unwrap();
    drop(g);
    t.join().unwrap();
    let (bytes, _) = second.finish_to_vec().unwrap();
    let records = fxt::format::decode::decode_all(&bytes).unwrap();
    assert!(lock_events(&records, "outside").is_empty());
}

#[test]
fn rwlock_waits_say_shared_or_exclusive() {
    let rw = Arc::new(RwLock::named("table", 0u32));
    let records = trace(|| {
        // Readers wait for a writer.
        let w = rw.write();
        let ready = Arc::new(Barrier::new(3));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (rw, ready) = (rw.clone(), ready.clone());
                thread::spawn(move || {
                    ready.wait();
                    let _ = *rw.read();
                })
            })
            .collect();
        ready.wait();
        thread::sleep(Duration::from_millis(20));
        drop(w);
        readers.into_iter().for_each(|r| r.join().unwrap());
        // A writer waits for a reader.
        let r = rw.read();
        let writer = {
            let rw = rw.clone();
            thread::spawn(move || *rw.write() += 1)
        };
        thread::sleep(Duration::from_millis(20));
        drop(r);
        writer.join().unwrap();
    });
    let evs = lock_events(&records, "table");
    let modes: Vec<_> = slices(&evs, "wait")
        .iter()
        .map(|e| str_arg(e, "mode").unwrap())
        .collect();
    assert_eq!(
        modes.iter().filter(|m| **m == "shared").count(),
        2,
        "{modes:?}"
    );
    assert_eq!(
        modes.iter().filter(|m| **m == "exclusive").count(),
        1,
        "{modes:?}"
    );
    assert!(!slices(&evs, "held").is_empty());
    assert_eq!(*rw.read(), 1);
}

#[test]
fn timed_out_waits_are_marked() {
    let m = Arc::new(Mutex::named("impatient", ()));
    let records = trace(|| {
        let g = m.lock();
        let m2 = m.clone();
        let got = thread::spawn(move || m2.try_lock_for(Duration::from_millis(5)).is_some())
            .join()
            .unwrap();
        assert!(!got);
        drop(g);
    });
    let evs = lock_events(&records, "impatient");
    assert_eq!(slices(&evs, "timed out").len(), 1, "{evs:#?}");
    assert!(slices(&evs, "wait").is_empty());
}

#[test]
fn default_names_are_where_the_lock_was_made() {
    let m = Arc::new(Mutex::new(()));
    let line = line!() - 1;
    let records = trace(|| contend(&m, 1));
    // `Mutex::new` is at column 22 of that line.
    let name = format!("{}:{line}:22", file!());
    assert_eq!(slices(&lock_events(&records, &name), "wait").len(), 1);
}

#[test]
fn condvar_works_with_the_mutex() {
    let pair = Arc::new((Mutex::named("queue", Vec::<u32>::new()), Condvar::new()));
    let records = trace(|| {
        let consumer = {
            let pair = pair.clone();
            thread::spawn(move || {
                let (m, cv) = &*pair;
                let mut got = Vec::new();
                let mut q = m.lock();
                while got.len() < 100 {
                    cv.wait_while(&mut q, |q| q.is_empty());
                    got.append(&mut q);
                }
                got
            })
        };
        for i in 0..100 {
            pair.0.lock().push(i);
            pair.1.notify_one();
        }
        assert_eq!(consumer.join().unwrap(), (0..100).collect::<Vec<_>>());
        let (m, cv) = &*pair;
        let mut q = m.lock();
        assert!(cv.wait_for(&mut q, Duration::from_millis(1)).timed_out());
        assert!(cv
            .wait_while_for(&mut q, |q| q.is_empty(), Duration::from_millis(1))
            .timed_out());
    });
    // Whatever was recorded is well formed: every wait is a slice in `lock`.
    for e in lock_events(&records, "queue") {
        assert!(matches!(
            e.kind,
            EventKind::DurationComplete { .. }
                | EventKind::FlowBegin { .. }
                | EventKind::FlowEnd { .. }
        ));
    }
}

#[test]
fn forked_child_locks_and_records_nothing() {
    let m = Arc::new(Mutex::named("forked", ()));
    let _turn = lock();
    let session = fxt::start(fxt::Config::new().buffer_size(4 << 20)).unwrap();
    contend(&m, 1);
    // SAFETY: the child locks fxt's locks (parking_lot's, none held by
    // another thread at the fork), spawns a thread and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| contend(&m, 2))).is_ok();
        // SAFETY: ends the child at once, running no destructor.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid pointer.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child: {status:#x}"
    );
    contend(&m, 1);
    let (bytes, _) = session.finish_to_vec().unwrap();
    let records = fxt::format::decode::decode_all(&bytes).unwrap();
    let evs = lock_events(&records, "forked");
    let pids: HashSet<u64> = evs
        .iter()
        .map(|e| match e.thread {
            Thread::Known { process, .. } => process,
            _ => 0,
        })
        .collect();
    assert_eq!(pids, HashSet::from([std::process::id() as u64]));
    // The parent's two contended rounds, not the child's.
    assert_eq!(slices(&evs, "wait").len(), 2, "{evs:#?}");
}

#[test]
fn a_lock_is_as_large_as_readme_says() {
    // docs/guide/locks.md: "72 bytes for a `Mutex<()>`" (name, counts,
    // the latest release).
    let sizes = (
        std::mem::size_of::<Mutex<()>>(),
        std::mem::size_of::<RwLock<()>>(),
    );
    assert!(sizes.0 <= 72 && sizes.1 <= 72, "{sizes:?}");
}
