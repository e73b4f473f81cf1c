//! Sampled allocations (issue 45) with `fxt_runtime::alloc::Sampled` as
//! this test binary's global allocator, over an inner allocator that
//! counts its calls: records read back with the format's decoder, and the
//! cases where allocators are hard — the hook allocating nothing, blocks
//! from before the session freed in it, `realloc`, zero-size and
//! over-aligned layouts, `fork`, thread exit and thread-local destructors,
//! a signal handler that allocates. Counts and decoded records only, no
//! timings. The sessions run one at a time (one global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use fxt_format::decode::{decode_all, join_split_blobs, Record};
use fxt_format::samples::{AllocKind, AllocRecord, ModulesRecord, ALLOC_NAME, MODULES_NAME};
use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};
use fxt_runtime::alloc::Sampled;
use fxt_runtime::{Config, Mode, Stats};

/// The system allocator, counting the calls that reach it.
struct Counting;

thread_local! {
    /// Calls on this thread (other threads allocate meanwhile).
    static INNER_ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        INNER_ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Sampled<Counting> = Sampled::new(Counting);

static KEYS: [KeyCache; 1] = [KeyCache::NEW];
static SITE: Callsite = Callsite::new("alloc-test", "mark", &["n"], &KEYS);

/// One session at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers the calling thread in the live session (its first event).
fn mark(n: u64) {
    if let Some(site) = SITE.site_with_keys(&KEYS) {
        instant(site, &[ArgValue::U64(n)]);
    }
}

/// Runs `body` in a session sampling at `mean` bytes; the alloc records
/// of the trace and the stats.
fn traced(mean: u64, body: impl FnOnce()) -> (Vec<AllocRecord>, Stats) {
    let path = std::env::temp_dir().join(format!("fxt-alloc-{}.fxt", std::process::id()));
    let session = fxt_runtime::start(Config::new().alloc_sample_bytes(mean).output(&path)).unwrap();
    mark(0);
    body();
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let records = decode_all(&bytes).unwrap();
    let allocs = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => AllocRecord::from_blob(b),
            _ => None,
        })
        .map(|r| r.expect("an fxt.alloc record decodes"))
        .collect();
    (allocs, stats)
}

fn allocs_at(records: &[AllocRecord], address: u64) -> Vec<AllocKind> {
    records
        .iter()
        .filter(|r| r.address == address)
        .map(|r| r.kind)
        .collect()
}

/// At mean 1 byte every allocation is sampled: each is recorded with its
/// address, size and a stack, each free of one as a free; the hook
/// allocates nothing (each allocation reaches the inner allocator once).
#[test]
fn every_allocation_is_recorded_at_mean_one_and_the_hook_allocates_nothing() {
    let _s = serial();
    let mut addresses = Vec::with_capacity(100);
    let mut inner = 0;
    let (records, stats) = traced(1, || {
        let before = INNER_ALLOCS.with(std::cell::Cell::get);
        for i in 0..100usize {
            let v: Vec<u8> = Vec::with_capacity(100 + i);
            addresses.push((v.as_ptr() as u64, 100 + i as u64));
            drop(std::hint::black_box(v));
        }
        inner = INNER_ALLOCS.with(std::cell::Cell::get) - before;
    });
    assert_eq!(inner, 100, "the hook allocated ({stats:?})");
    assert_eq!(stats.alloc_untracked, 0, "{stats:?}");
    let by_address: HashMap<u64, Vec<&AllocRecord>> =
        records.iter().fold(HashMap::new(), |mut m, r| {
            m.entry(r.address).or_default().push(r);
            m
        });
    for (address, size) in &addresses {
        let at = &by_address[address];
        // The allocator may reuse the address: alloc, free, alloc, free…
        let ours = at
            .iter()
            .filter(|r| r.kind == AllocKind::Alloc && r.size == *size)
            .count();
        assert!(ours >= 1, "{address:#x} {size}: {at:?}");
        let first = at.iter().find(|r| r.size == *size).unwrap();
        let raw = first.raw_stack.as_ref().expect("a raw stack");
        assert!(!raw.stack.is_empty() && first.mean == 1);
        assert_eq!(first.tid, at[0].tid);
    }
    let allocs = records
        .iter()
        .filter(|r| r.kind == AllocKind::Alloc)
        .count();
    let frees = records.iter().filter(|r| r.kind == AllocKind::Free).count();
    assert!(allocs >= 100 && frees >= 100, "{allocs} {frees}");
    // fxt's own allocations while the thread registers find its gate shut:
    // dropped, and counted.
    let missing = stats.alloc_samples - records.len() as u64;
    assert!(missing <= stats.records_dropped, "{stats:?}");
}

/// Blocks allocated before the session and freed during it record
/// nothing; a sampled block moved by `realloc` is recorded freed at its
/// old address and allocated at its new one.
#[test]
fn earlier_blocks_and_realloc() {
    let _s = serial();
    let early: Vec<Vec<u8>> = (0..50).map(|_| vec![7u8; 64]).collect();
    let early_addresses: Vec<u64> = early.iter().map(|v| v.as_ptr() as u64).collect();
    let mut moves = Vec::new();
    let (records, _) = traced(1, || {
        drop(early);
        for _ in 0..20 {
            let mut v: Vec<u8> = Vec::with_capacity(16);
            let old = v.as_ptr() as u64;
            v.reserve_exact(1 << 20);
            moves.push((old, v.as_ptr() as u64));
            drop(v);
        }
    });
    for a in &early_addresses {
        // The address may be reused in the session: its first record is
        // then that block's allocation, never a free.
        let kinds = allocs_at(&records, *a);
        assert_ne!(
            kinds.first(),
            Some(&AllocKind::Free),
            "a free recorded for a block from before the session"
        );
    }
    for (old, new) in moves {
        let at_new = allocs_at(&records, new);
        assert!(at_new.contains(&AllocKind::Alloc), "{new:#x}");
        assert!(allocs_at(&records, old).contains(&AllocKind::Free));
        let grown = records
            .iter()
            .any(|r| r.address == new && r.kind == AllocKind::Alloc && r.size == 1 << 20);
        assert!(grown, "the moved block's record has its new size");
    }
}

/// Zero-size and over-aligned layouts pass through as they are. (At mean
/// 1 byte a block of `size` bytes is sampled with probability
/// `1 - exp(-size)`: sizes of 100 and more, surely.)
#[test]
fn zero_size_and_over_aligned_layouts() {
    let _s = serial();
    let mut seen = Vec::new();
    let (records, _) = traced(1, || {
        for (size, align) in [(0usize, 1usize), (0, 4096), (100, 4096), (300, 1 << 16)] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: the layout is valid; a zero-size layout is passed to
            // the wrapper directly (as a caller outside `Global` may) and
            // the system allocator answers it; the block is freed with
            // the same layout.
            unsafe {
                let p = GLOBAL.alloc(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "alignment {align}");
                seen.push((p as u64, size as u64));
                GLOBAL.dealloc(p, layout);
            }
        }
    });
    for (address, size) in seen.iter().filter(|(_, s)| *s > 0) {
        assert!(
            records
                .iter()
                .any(|r| r.address == *address && r.size == *size && r.kind == AllocKind::Alloc),
            "{address:#x} {size}"
        );
    }
}

/// A child forked while the session samples allocates freely and exits;
/// nothing of it is in the parent's trace.
#[test]
fn a_forked_child_samples_nothing() {
    let _s = serial();
    let mut child = 0;
    let (records, _) = traced(1, || {
        // SAFETY: the child allocates (the system allocator is fork-safe in
        // glibc) and leaves with `_exit`.
        child = unsafe { libc::fork() };
        if child == 0 {
            let mut kept = Vec::new();
            for i in 0..1000 {
                kept.push(vec![i as u8; 100]);
            }
            drop(kept);
            // SAFETY: ends the child without the parent's exit handlers.
            unsafe { libc::_exit(0) };
        }
        assert!(child > 0);
        let mut status = 0;
        // SAFETY: our child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    });
    assert!(records.iter().all(|r| r.tid != child as u64));
}

struct AllocatesInDrop;

impl Drop for AllocatesInDrop {
    fn drop(&mut self) {
        let v = std::hint::black_box(vec![1u8; 4096]);
        drop(v);
    }
}

thread_local! {
    static LATE: AllocatesInDrop = const { AllocatesInDrop };
}

/// Threads that record and exit, allocating from a thread-local
/// destructor: their allocations are recorded or dropped and counted.
/// (The test's thread first allocates past `countdown::CHECK_BYTES`: a
/// thread that sampled in an earlier session at a larger mean may count
/// that far before it notices this one.)
#[test]
fn threads_that_exit_and_tls_destructors() {
    let _s = serial();
    let (records, stats) = traced(1, || {
        for _ in 0..64 {
            drop(std::hint::black_box(vec![0u8; 32 << 10]));
        }
        let threads: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    LATE.with(|_| ());
                    mark(i);
                    for _ in 0..100 {
                        drop(std::hint::black_box(vec![0u8; 256]));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    });
    let tids: std::collections::HashSet<u64> = records.iter().map(|r| r.tid).collect();
    assert!(tids.len() >= 5, "the threads' allocations: {tids:?}");
    let sized = records.iter().filter(|r| r.size == 256).count();
    assert!(sized >= 400, "{sized}");
    // Every sample not in the file is counted.
    let missing = stats.alloc_samples - records.len() as u64;
    assert!(missing <= stats.records_dropped, "{stats:?}");
}

/// Bytes of the blocks [`first_blocks`] allocates (a size nothing else
/// here allocates).
const FIRST_SIZE: usize = 777;

#[inline(never)]
fn first_block() -> Vec<u8> {
    std::hint::black_box(vec![5u8; std::hint::black_box(FIRST_SIZE)])
}

/// Allocates and keeps `n` blocks of [`FIRST_SIZE`] bytes (the caller
/// whose return address a stack copy holds).
#[inline(never)]
fn first_blocks(n: usize) -> Vec<Vec<u8>> {
    // Through `black_box`: a frame of its own even optimized (not a tail
    // call to `collect`'s).
    std::hint::black_box((0..n).map(|_| first_block()).collect())
}

/// A thread that records no event allocates: its sampled allocations are
/// recorded from its first one, with a copy of its stack (holding the
/// return address into the function that called the allocating one),
/// and the thread's later first event registers it as usual.
#[test]
fn a_thread_records_allocations_before_its_first_event() {
    let _s = serial();
    let mut tid = 0;
    let mut addresses = Vec::new();
    let (records, stats) = traced(1, || {
        (tid, addresses) = std::thread::spawn(|| {
            // SAFETY: no preconditions.
            let tid = unsafe { libc::gettid() } as u64;
            let blocks = first_blocks(10);
            let addresses: Vec<u64> = blocks.iter().map(|b| b.as_ptr() as u64).collect();
            mark(1);
            drop(first_blocks(10));
            (tid, addresses)
        })
        .join()
        .unwrap();
    });
    let ours: Vec<&AllocRecord> = records
        .iter()
        .filter(|r| r.tid == tid && r.size == FIRST_SIZE as u64 && r.kind == AllocKind::Alloc)
        .collect();
    assert_eq!(ours.len(), 20, "{stats:?}");
    let caller = first_blocks as *const () as u64;
    for (r, address) in ours.iter().zip(&addresses) {
        assert_eq!(r.address, *address);
        let raw = r.raw_stack.as_ref().expect("a raw stack");
        assert!(
            raw.stack
                .iter()
                .any(|&w| (caller..caller + 4096).contains(&w)),
            "no return address into first_blocks in the copy: {r:?}"
        );
    }
    // The thread's samples before and after its event are all in the
    // file; anything missing is counted.
    let missing = stats.alloc_samples - records.len() as u64;
    assert!(missing <= stats.records_dropped, "{stats:?}");
}

static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn allocating_handler(_: libc::c_int) {
    let v = std::hint::black_box(vec![3u8; 512]);
    drop(v);
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// A signal handler that allocates, interrupting a thread that allocates:
/// no deadlock, no crash, the records decode.
#[test]
fn a_signal_handler_that_allocates() {
    let _s = serial();
    // SAFETY: installs a handler with the plain signature.
    unsafe {
        libc::signal(
            libc::SIGUSR2,
            allocating_handler as *const () as libc::sighandler_t,
        )
    };
    let (records, _) = traced(64, || {
        for i in 0..2000 {
            drop(std::hint::black_box(vec![i as u8; 100]));
            if i % 10 == 0 {
                // SAFETY: raises a signal whose handler is installed.
                unsafe { libc::raise(libc::SIGUSR2) };
            }
        }
    });
    assert_eq!(HANDLED.load(Ordering::Relaxed), 200);
    assert!(!records.is_empty());
}

/// Bytes of the blocks a thread allocates in later sessions (a size
/// nothing else here allocates).
const LATER_SIZE: usize = 1234;

/// What the long-lived thread of [`a_thread_rejoins_later_sessions`] is
/// told to do.
enum Step {
    /// Record an event (register in the live session), then allocate.
    MarkAndAllocate,
    /// Allocate only (no event).
    Allocate,
    Exit,
}

/// One thread, alive across four sessions: it records an event and
/// allocates in the first, only allocates in the second and third (its
/// writer holds the first session, then a session it joined from its
/// allocation hook, both over), and records again in the fourth. Each
/// session has every one of the thread's allocations of its blocks and
/// their frees (mean 1 byte: all sampled), none dropped.
#[test]
fn a_thread_rejoins_later_sessions() {
    let _s = serial();
    let (to_thread, steps) = std::sync::mpsc::channel::<Step>();
    let (done, from_thread) = std::sync::mpsc::channel::<Vec<u64>>();
    let thread = std::thread::spawn(move || {
        // SAFETY: no preconditions.
        let tid = unsafe { libc::gettid() } as u64;
        while let Ok(step) = steps.recv() {
            let mut blocks = Vec::with_capacity(10);
            match step {
                Step::MarkAndAllocate => mark(2),
                Step::Allocate => {}
                Step::Exit => break,
            }
            for _ in 0..10 {
                blocks.push(std::hint::black_box(vec![9u8; LATER_SIZE]));
            }
            let mut seen: Vec<u64> = blocks.iter().map(|b| b.as_ptr() as u64).collect();
            drop(blocks);
            seen.push(tid);
            done.send(seen).unwrap();
        }
    });
    for (session, step) in [
        Step::MarkAndAllocate,
        Step::Allocate,
        Step::Allocate,
        Step::MarkAndAllocate,
    ]
    .into_iter()
    .enumerate()
    {
        let mut seen = Vec::new();
        let (records, stats) = traced(1, || {
            to_thread.send(step).unwrap();
            seen = from_thread.recv().unwrap();
        });
        let tid = seen.pop().unwrap();
        let ours: Vec<&AllocRecord> = records
            .iter()
            .filter(|r| r.tid == tid && r.size == LATER_SIZE as u64)
            .collect();
        let allocated: Vec<u64> = ours
            .iter()
            .filter(|r| r.kind == AllocKind::Alloc)
            .map(|r| r.address)
            .collect();
        let freed = ours.iter().filter(|r| r.kind == AllocKind::Free).count();
        assert_eq!(allocated, seen, "session {session}: {stats:?}");
        assert_eq!(freed, seen.len(), "session {session}: {stats:?}");
        // Anything missing is counted (not the thread's: a helper thread
        // of the session may allocate its name before it is known as
        // fxt's own, `helpers::spawn`).
        let missing = stats.alloc_samples - records.len() as u64;
        assert!(missing <= stats.records_dropped, "{stats:?}");
    }
    to_thread.send(Step::Exit).unwrap();
    thread.join().unwrap();
}

/// Bytes of the blocks allocated through wrappers that are not statics.
const LOCAL_SIZE: usize = 4321;

/// A wrapper that is not a `static` (on the stack, or leaked on the heap)
/// is never registered for sessions to write its copy of the generation
/// (it may be gone when one starts): it reads the global generation at
/// each call, and samples as the global allocator does.
#[test]
fn wrappers_that_are_not_statics_sample_too() {
    let _s = serial();
    let on_stack = Sampled::new(System);
    let leaked: &'static Sampled<System> = Box::leak(Box::new(Sampled::new(System)));
    let layout = Layout::from_size_align(LOCAL_SIZE, 8).unwrap();
    let mut addresses = Vec::new();
    let (records, stats) = traced(1, || {
        for wrapper in [&on_stack, leaked] {
            for _ in 0..5 {
                // SAFETY: a valid layout; the block is freed by the
                // wrapper that allocated it, with the same layout.
                unsafe {
                    let p = wrapper.alloc(layout);
                    assert!(!p.is_null());
                    addresses.push(p as u64);
                    wrapper.dealloc(p, layout);
                }
            }
        }
    });
    for address in addresses {
        let kinds: Vec<AllocKind> = records
            .iter()
            .filter(|r| r.address == address && r.size == LOCAL_SIZE as u64)
            .map(|r| r.kind)
            .collect();
        assert!(
            kinds.contains(&AllocKind::Alloc) && kinds.contains(&AllocKind::Free),
            "{address:#x}: {kinds:?} ({stats:?})"
        );
    }
}

/// A wrapper that is not a `static` counts down while nothing samples
/// (its thread's count, drawn anew at each crossing): 4 MiB allocated
/// through it before a session leave a count that the session at mean 1
/// carries for at most a part (`countdown::CHECK_BYTES`, 1 MiB), after
/// which every allocation of the thread is recorded at mean 1; those
/// before it may be recorded at the mean the count was drawn with.
#[test]
fn a_wrapper_that_counted_while_idle_samples_in_the_next_session() {
    let _s = serial();
    let on_stack = Sampled::new(System);
    let layout = Layout::from_size_align(LOCAL_SIZE, 8).unwrap();
    let cycle = |n: usize| {
        for _ in 0..n {
            // SAFETY: a valid layout; the block is freed by the wrapper
            // that allocated it, with the same layout.
            unsafe {
                let p = on_stack.alloc(layout);
                assert!(!p.is_null());
                on_stack.dealloc(p, layout);
            }
        }
    };
    cycle((4 << 20) / LOCAL_SIZE);
    let (records, stats) = traced(1, || cycle(400));
    // The wrapper's allocations recorded, in order (blocks freed at once
    // come back at the same addresses: told apart by their order only).
    let means: Vec<u64> = records
        .iter()
        .filter(|r| r.kind == AllocKind::Alloc && r.size == LOCAL_SIZE as u64)
        .map(|r| r.mean)
        .collect();
    assert!(means.len() >= 100, "{} recorded ({stats:?})", means.len());
    assert!(
        means[means.len() - 100..].iter().all(|&m| m == 1),
        "{means:?}"
    );
}

/// The threads of this process named `fxt-…` (fxt's helpers), by tid.
fn helper_tids() -> std::collections::HashSet<u64> {
    let mut tids = std::collections::HashSet::new();
    for entry in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.starts_with("fxt-") {
            tids.insert(entry.file_name().to_string_lossy().parse().unwrap());
        }
    }
    tids
}

/// fxt's own threads allocate as they start (std copies a thread's name
/// for its stack-overflow handler before the thread's closure runs):
/// none of it is sampled as the program's, even at a mean of one byte.
#[test]
fn the_helpers_starting_allocations_are_not_sampled() {
    let _s = serial();
    let mut helpers = std::collections::HashSet::new();
    let (records, stats) = traced(1, || {
        // The streamer and the prefaulter start with the session; wait
        // (bounded) until both carry their names.
        for _ in 0..500 {
            helpers = helper_tids();
            if helpers.len() >= 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    });
    assert!(helpers.len() >= 2, "the session's helpers: {helpers:?}");
    let theirs: Vec<_> = records
        .iter()
        .filter(|r| helpers.contains(&r.tid))
        .collect();
    assert!(theirs.is_empty(), "{theirs:?} {stats:?}");
}

/// A session that samples allocations (and takes no CPU sample) ends
/// with this process's `fxt.modules`, which a reader names the stacks
/// from, after its last `fxt.alloc` record, however it is collected: its
/// chunks written while it runs (drained oneshot, streaming: many
/// chunks, over many of the streamer's passes) or at its end (in memory,
/// circular).
#[test]
fn the_trace_ends_with_the_modules_that_name_the_stacks() {
    let _s = serial();
    let cases = [
        ("drained oneshot", Mode::Oneshot, true),
        ("streaming", Mode::Streaming, true),
        ("in-memory oneshot", Mode::Oneshot, false),
        ("circular", Mode::Circular, false),
    ];
    let pid = u64::from(std::process::id());
    for (how, mode, drain) in cases {
        let path = std::env::temp_dir().join(format!("fxt-alloc-modules-{pid}.fxt"));
        let config = Config::new()
            .alloc_sample_bytes(1024)
            .mode(mode)
            .drain(drain)
            .output(&path);
        let session = fxt_runtime::start(config).unwrap();
        mark(0);
        // Some 2500 sampled blocks of a KiB, each with its stack: a few
        // MB of records.
        for i in 0..4000usize {
            drop(std::hint::black_box(vec![1u8; 1024 + i % 64]));
        }
        let stats = session.finish().unwrap();
        let trace = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let blobs: Vec<_> = join_split_blobs(&trace)
            .filter_map(|j| match j.item {
                Ok(Record::Blob(b)) => Some(b),
                _ => None,
            })
            .collect();
        let allocs = blobs.iter().filter(|b| b.name == ALLOC_NAME).count();
        assert!(
            allocs > 1000,
            "{how}: {allocs} fxt.alloc records ({stats:?})"
        );
        let last_alloc = blobs.iter().rposition(|b| b.name == ALLOC_NAME);
        let modules = blobs.iter().position(|b| b.name == MODULES_NAME);
        assert!(
            modules > last_alloc,
            "{how}: fxt.modules at {modules:?}, the last fxt.alloc at {last_alloc:?}"
        );
        let ours = blobs
            .iter()
            .filter(|b| b.name == MODULES_NAME)
            .map(|b| ModulesRecord::decode(&b.payload).expect("fxt.modules decodes"))
            .any(|m| m.pid == pid && !m.modules.is_empty());
        assert!(ours, "{how}: no fxt.modules of this process");
    }
}

/// Allocates `n` blocks of 1000 bytes, here (the frame the samples'
/// stacks must pass through).
#[inline(never)]
fn allocate_here(n: usize) {
    for _ in 0..n {
        drop(std::hint::black_box(vec![1u8; std::hint::black_box(1000)]));
    }
}

/// A sampled allocation's stack, unwound by a reader with this process's
/// files (the `fxt.modules` the trace ends with), passes through the
/// function that allocated and reaches the thread's entry (the copy
/// starts in the wrapper's frame that called the inner allocator, below
/// the program's frames).
#[test]
fn a_sampled_allocations_stack_unwinds_through_the_allocating_function() {
    let _s = serial();
    let pid = u64::from(std::process::id());
    let path = std::env::temp_dir().join(format!("fxt-alloc-unwind-{pid}.fxt"));
    let session = fxt_runtime::start(Config::new().alloc_sample_bytes(4096).output(&path)).unwrap();
    mark(0);
    // Enough that the cap on samples a second (which raises the mean of a
    // thread that samples faster) still leaves well over 100: of 2 000
    // (some 490 expected), a release build's run let 74 to 84 through.
    allocate_here(20_000);
    session.finish().unwrap();
    let trace = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let scan = fxt_symbols::scan::TraceSamples::read(&trace);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    let ours: Vec<&AllocRecord> = scan
        .allocs
        .iter()
        .filter(|a| a.pid == pid && a.kind == AllocKind::Alloc && a.size == 1000)
        .collect();
    assert!(ours.len() > 100, "{} sampled", ours.len());
    let here = allocate_here as fn(usize) as usize as u64;
    let through = ours
        .iter()
        .filter(|a| !a.truncated && a.frames.iter().any(|&pc| (here..here + 512).contains(&pc)))
        .count();
    assert!(
        through * 10 >= ours.len() * 9,
        "{through} of {} unwind whole through the allocating function",
        ours.len()
    );
}

/// Whether the records at `address` pair each free with an allocation
/// before it and each allocation but the last with a free after it (a
/// block freed once, never one from before the session; the last may
/// be live still).
fn freed_once_each(records: &[AllocRecord], address: u64) -> bool {
    let mut live = false;
    for kind in allocs_at(records, address) {
        match kind {
            AllocKind::Alloc if !live => live = true,
            AllocKind::Free if live => live = false,
            _ => return false,
        }
    }
    true
}

/// Sampled blocks grown and shrunk by `realloc` keep their bytes, and
/// each block is recorded allocated and freed once; sampled blocks of
/// aligned layouts (up to a page: marked; past it: tracked by the table
/// alone), and zeroed ones, round-trip. Sampled
/// blocks that outlive their session, freed in the next or with none,
/// go back to the inner allocator as it gave them (the system allocator
/// aborts on a pointer it did not give) and record nothing in the next.
#[test]
fn sampled_blocks_move_and_outlive_their_session() {
    let _s = serial();
    let (mut addresses, mut kept) = (Vec::new(), Vec::new());
    let (records, _) = traced(1, || {
        for i in 0..20u8 {
            let mut v = vec![i; 100];
            addresses.push(v.as_ptr() as u64);
            v.reserve_exact(4000);
            v.extend(std::iter::repeat_n(i, 3000));
            addresses.push(v.as_ptr() as u64);
            v.truncate(50);
            v.shrink_to_fit();
            addresses.push(v.as_ptr() as u64);
            assert!(v.iter().all(|&x| x == i), "the bytes moved with the block");
        }
        let layouts = [
            (100usize, 32usize),
            (100, 64),
            (5000, 128),
            (24, 8),
            (100, 4096),
            (100, 8192),
        ];
        for (size, align) in layouts {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: a valid layout of non-zero size; the block is read
            // within it and freed with it.
            unsafe {
                let p = GLOBAL.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0, "alignment {align}");
                assert!((0..size).all(|i| *p.add(i) == 0), "zeroed");
                addresses.push(p as u64);
                GLOBAL.dealloc(p, layout);
            }
        }
        kept = (0..20u8).map(|i| vec![i; 200]).collect::<Vec<_>>();
    });
    let kept_addresses: Vec<u64> = kept.iter().map(|v| v.as_ptr() as u64).collect();
    for &a in &addresses {
        let kept = kept_addresses.contains(&a);
        assert!(
            freed_once_each(&records, a) && (kept || allocs_at(&records, a).len() > 1),
            "{a:#x} {:?}",
            allocs_at(&records, a)
        );
    }
    for a in &kept_addresses {
        assert_eq!(
            allocs_at(&records, *a).last(),
            Some(&AllocKind::Alloc),
            "{a:#x}"
        );
    }
    let (later, _) = traced(1, || kept.truncate(10));
    for a in &kept_addresses[10..] {
        assert_ne!(
            allocs_at(&later, *a).first(),
            Some(&AllocKind::Free),
            "a block of the session before recorded freed in this one"
        );
    }
    for (i, v) in kept.iter().enumerate() {
        assert!(v.iter().all(|&x| x == i as u8));
    }
    drop(kept);
}

/// The wrapper takes a cache line of its own: every allocation on every
/// thread reads its word, so a static laid out beside it (a counter that
/// another thread writes all the time) must not share that line
/// (`bench-alloc --neighbour` measures what sharing it costs).
#[test]
fn the_wrapper_shares_its_cache_line_with_no_neighbour() {
    #[repr(C)]
    struct Laid {
        before: u8,
        wrapper: Sampled<System>,
        after: u8,
    }
    let line = 64;
    assert_eq!(std::mem::align_of::<Sampled<System>>() % line, 0);
    assert_eq!(std::mem::offset_of!(Laid, wrapper) % line, 0);
    assert!(std::mem::offset_of!(Laid, wrapper) - std::mem::offset_of!(Laid, before) >= line);
    assert!(std::mem::offset_of!(Laid, after) - std::mem::offset_of!(Laid, wrapper) >= line);
    assert_eq!(std::ptr::addr_of!(GLOBAL) as usize % line, 0);
}
