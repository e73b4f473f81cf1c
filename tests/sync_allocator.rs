//! An `fxt::sync` lock inside a `#[global_allocator]` (issue 43): the
//! allocator's lock records its contended waits, and writing a record
//! allocates (a thread's first record registers it, a lock's first record
//! builds its call site). Written inside the critical section (the
//! waiter's record after its acquisition), that allocation takes the allocator's lock again on the
//! thread that holds it: the program deadlocks on itself. Written outside,
//! it runs to the end, with the waits recorded.
//!
//! Its own test binary (`harness = false`) for its own global allocator.
//!
//! ```text
//! cargo test --features sync --test sync_allocator
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use fxt::format::decode::{ArgValue, EventKind, Record, Thread};
use fxt::sync::Mutex;

/// The allocator's lock, taken by every allocation and deallocation.
static LOCK: Mutex<()> = Mutex::named("alloc", ());
/// Set while the workers run: the allocator then holds its lock a little
/// longer, so that the workers contend for it.
static SLOW: AtomicBool = AtomicBool::new(false);
/// Whether the allocator takes its lock (not while `parking_lot` warms up).
static LOCKING: AtomicBool = AtomicBool::new(false);

struct LockedAlloc;

impl LockedAlloc {
    fn locked<R>(f: impl FnOnce() -> R) -> R {
        if !LOCKING.load(Ordering::Relaxed) {
            return f();
        }
        let _g = LOCK.lock();
        let r = f();
        if SLOW.load(Ordering::Relaxed) {
            for _ in 0..64 {
                core::hint::spin_loop();
            }
        }
        r
    }
}

// SAFETY: every method forwards to `System`'s of the same contract, under
// a lock that changes nothing about the memory.
unsafe impl GlobalAlloc for LockedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System.alloc`'s.
        Self::locked(|| unsafe { System.alloc(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System.dealloc`'s.
        Self::locked(|| unsafe { System.dealloc(ptr, layout) })
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System.realloc`'s.
        Self::locked(|| unsafe { System.realloc(ptr, layout, new_size) })
    }
}

#[global_allocator]
static ALLOC: LockedAlloc = LockedAlloc;

const THREADS: usize = 4;
const ROUNDS: usize = 20_000;
/// Long enough for a loaded machine; a deadlock never ends.
const DEADLINE: Duration = Duration::from_secs(60);

/// Ends the process with `message`, allocating nothing (the allocator's
/// lock may be held forever by a deadlocked thread).
fn die(message: &str) -> ! {
    // SAFETY: writes a valid buffer to stderr, then ends the process
    // without running anything else.
    unsafe {
        libc::write(2, message.as_ptr().cast(), message.len());
        libc::_exit(1)
    }
}

/// `parking_lot` allocates its table of parked threads on a thread's first
/// park, when the table is too small for the threads that have parked: in
/// an allocator whose lock is `parking_lot`'s, that first park would
/// allocate under it, whatever `fxt` does. So threads park once before the
/// allocator takes its lock, more at a time than the test will run.
fn warm_up_parking_lot() {
    const WARM: usize = 32;
    /// Parks once while all the others are alive.
    fn park(all: &Barrier) {
        let (m, cv) = (Mutex::new(()), fxt::sync::Condvar::new());
        all.wait();
        cv.wait_for(&mut m.lock(), Duration::from_micros(1));
        all.wait();
    }
    let all = Arc::new(Barrier::new(WARM + 1));
    let threads: Vec<_> = (0..WARM)
        .map(|_| {
            let all = all.clone();
            std::thread::spawn(move || park(&all))
        })
        .collect();
    park(&all);
    threads.into_iter().for_each(|t| t.join().unwrap());
}

/// Workers done.
static DONE: AtomicUsize = AtomicUsize::new(0);

fn main() {
    // Gives up, allocating nothing, when the workers (or this thread, which
    // also allocates) never get done.
    std::thread::spawn(|| {
        let start = Instant::now();
        while DONE.load(Ordering::SeqCst) < THREADS {
            if start.elapsed() > DEADLINE {
                die("sync_allocator: deadlocked: a lock record was written while the allocator's lock was held\n");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    warm_up_parking_lot();
    LOCKING.store(true, Ordering::SeqCst);
    let session = fxt::start(fxt::Config::new().buffer_size(32 << 20)).unwrap();
    let barrier = Arc::new(Barrier::new(THREADS));
    SLOW.store(true, Ordering::Relaxed);
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for r in 0..ROUNDS {
                    let v: Vec<u64> = black_box(vec![(i + r) as u64; 1 + r % 16]);
                    drop(v);
                }
                DONE.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    SLOW.store(false, Ordering::Relaxed);
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0, "nothing dropped");
    let records = fxt::format::decode::decode_all(&bytes).unwrap();

    let state = |args: &[fxt::format::decode::Arg]| {
        args.iter()
            .find(|a| a.name == "state")
            .and_then(|a| match &a.value {
                ArgValue::Str(s) => s.as_str().map(str::to_string),
                _ => None,
            })
    };
    let holder = |args: &[fxt::format::decode::Arg]| {
        args.iter()
            .find(|a| a.name == "holder")
            .and_then(|a| match a.value {
                ArgValue::U64(k) => Some(k),
                _ => None,
            })
    };
    // One record per contended acquisition: the wait, naming the thread
    // whose release ended it (the `held` slices and arrows are drawn from
    // it by readers).
    let (mut waits, mut held) = (0, 0);
    for r in &records {
        let Record::Event(e) = r else { continue };
        if e.category != "lock" || e.name != "alloc" {
            continue;
        }
        let Thread::Known { thread, .. } = e.thread else {
            panic!("a lock event without its thread: {e:?}");
        };
        assert!(
            matches!(e.kind, EventKind::DurationComplete { .. }),
            "{e:?}"
        );
        assert_eq!(state(&e.args).as_deref(), Some("wait"), "{e:?}");
        waits += 1;
        if let Some(h) = holder(&e.args) {
            assert_ne!(h, thread, "a wait ended by its own thread's release");
            held += 1;
        }
    }
    assert!(waits > 0, "the workers contended for the allocator's lock");
    assert!(held > 0, "releases to waiters are recorded");
    println!("sync_allocator: ok ({waits} waits, {held} naming their holder)");
}
