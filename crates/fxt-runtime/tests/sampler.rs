//! The CPU sampler's safety (`Config::sample_hz`): the signal handler's
//! stack, sources opened while a session stops, sessions after sessions,
//! descriptors and signals after `stop`, `fork` without `exec`, libraries
//! unloaded while sampling, crash-safe files that would have to grow.
//!
//! A test whose failure would kill its process (a fault in the handler, a
//! signal nobody handles) runs its body in a child: the test binary
//! re-executed for that one test, with `CHILD` set. No timing is asserted:
//! each case runs for some CPU time, enough for samples to land whatever
//! the source (a perf event, or the CPU-time timer where perf is refused).

mod common;

use std::process::Command;

use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};

/// Set in a child process to the name of the test it runs.
const CHILD: &str = "FXT_SAMPLER_TEST_CHILD";

static KEYS: [KeyCache; 1] = [KeyCache::NEW];
static EV: Callsite = Callsite::new("sampler", "ev", &["n"], &KEYS);

fn emit(n: u64) {
    if let Some(site) = EV.site_with_keys(&KEYS) {
        instant(site, &[ArgValue::U64(n)]);
    }
}

/// The calling thread's CPU time, in nanoseconds.
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Burns `ms` of the calling thread's CPU time without calling much.
fn spin_cpu(ms: u64) {
    let start = cpu_ns();
    let mut x = 1u64;
    while cpu_ns() - start < ms * 1_000_000 {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    std::hint::black_box(x);
}

/// Whether this process is the child running `name`.
fn in_child(name: &str) -> bool {
    std::env::var(CHILD).is_ok_and(|v| v == name)
}

/// Runs test `name` in a child process (this binary, that test alone)
/// and returns its exit status and output.
fn run_child(name: &str, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status, text)
}

/// Runs `name`'s body in a child and fails unless it exited with success
/// (a fault or an unhandled signal in the child fails the test).
fn child_must_pass(name: &str) {
    let (status, text) = run_child(name, &[]);
    assert!(status.success(), "child {name}: {status:?}\n{text}");
    assert!(
        text.contains("1 passed"),
        "child {name} ran no test:\n{text}"
    );
}

/// A sampling session (its tests finish it to memory: no file is left).
fn session(hz: u32, tag: &str) -> fxt_runtime::Session {
    let out = std::env::temp_dir().join(format!("fxt-sampler-{tag}-{}.fxt", std::process::id()));
    fxt_runtime::start(
        fxt_runtime::Config::new()
            .buffer_size(16 << 20)
            .sample_hz(hz)
            .output(out),
    )
    .unwrap()
}

/// The calling thread's stack: `[low, high)`.
fn stack_bounds() -> (usize, usize) {
    // SAFETY: `attr` is initialized by `pthread_getattr_np` before it is
    // read and destroyed after; the out-pointers are valid.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
        let mut addr: *mut libc::c_void = core::ptr::null_mut();
        let mut size: libc::size_t = 0;
        assert_eq!(libc::pthread_attr_getstack(&attr, &mut addr, &mut size), 0);
        libc::pthread_attr_destroy(&mut attr);
        (addr as usize, addr as usize + size)
    }
}

/// Recurses until less than `free` bytes of the stack are left, then
/// spins for `ms` of CPU time there.
#[inline(never)]
fn spin_near_the_stack_end(low: usize, free: usize, ms: u64) {
    let pad = std::hint::black_box([0u8; 256]);
    let here = &pad as *const _ as usize;
    if here - low > free {
        spin_near_the_stack_end(low, free, ms);
    } else {
        spin_cpu(ms);
    }
    std::hint::black_box(&pad);
}

/// Disables the calling thread's alternate signal stack (whoever made it).
fn no_alt_stack() {
    let off = libc::stack_t {
        ss_sp: core::ptr::null_mut(),
        ss_flags: libc::SS_DISABLE,
        ss_size: 0,
    };
    // SAFETY: disabling the signal stack of a thread not on it.
    assert_eq!(unsafe { libc::sigaltstack(&off, core::ptr::null_mut()) }, 0);
}

/// A thread with a 16 KiB stack, sampled at 10 kHz while it runs with
/// less than 2 KiB of its stack left (too little for the kernel's signal
/// frame, let alone the handler's): the handler runs on an alternate
/// stack, so the thread survives, with Rust's stack or with fxt's (a
/// thread without one, as C threads are).
#[test]
fn a_thread_with_a_small_stack_survives_sampling() {
    const NAME: &str = "a_thread_with_a_small_stack_survives_sampling";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    let s = session(10_000, "small-stack");
    for own_alt_stack in [true, false] {
        std::thread::Builder::new()
            .stack_size(16 << 10)
            .spawn(move || {
                if !own_alt_stack {
                    no_alt_stack();
                }
                emit(0);
                let (low, _) = stack_bounds();
                spin_near_the_stack_end(low, 2 << 10, 300);
                emit(1);
            })
            .unwrap()
            .join()
            .unwrap();
    }
    let (_, stats) = s.finish_to_vec().unwrap();
    assert!(stats.samples > 0, "{stats:?}");
}

/// The sources open in this process: perf event descriptors and POSIX
/// timers (fxt's sources; the tests make no others).
fn live_sources() -> usize {
    let perf = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|l| l.to_string_lossy().contains("perf_event"))
        .count();
    let timers = std::fs::read_to_string("/proc/self/timers")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("ID:"))
        .count();
    perf + timers
}

static SIGNALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn count_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Runs `f` with SIGPROF counted by a handler of the test's (fxt's put
/// back after), and returns how many arrived.
fn count_sigprof(f: impl FnOnce()) -> u64 {
    // SAFETY: `count_signal` only increments an atomic; `old` receives
    // the disposition it replaces and is put back as it was.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = count_signal as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        let mut old: libc::sigaction = core::mem::zeroed();
        assert_eq!(libc::sigaction(libc::SIGPROF, &action, &mut old), 0);
        SIGNALS.store(0, std::sync::atomic::Ordering::Relaxed);
        f();
        let n = SIGNALS.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            libc::sigaction(libc::SIGPROF, &old, core::ptr::null_mut()),
            0
        );
        n
    }
}

/// Burns `us` microseconds of the calling thread's CPU time.
fn spin_cpu_us(us: u64) {
    let start = cpu_ns();
    while cpu_ns() - start < us * 1000 {
        std::hint::spin_loop();
    }
}

/// Threads register (and arm their sources) while the session stops: once
/// it has stopped, no source is left open. (Sampled at 1 Hz: the sources
/// are opened as at any rate, and no sample lands, so each round's finish
/// has no samples to name and many rounds run quickly.)
#[test]
fn no_source_outlives_a_stop_racing_thread_starts() {
    const NAME: &str = "no_source_outlives_a_stop_racing_thread_starts";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    const THREADS: u64 = 4;
    let before = live_sources();
    for round in 0..300u64 {
        let out = std::env::temp_dir().join(format!("fxt-sampler-race-{}.fxt", std::process::id()));
        let s = fxt_runtime::start(
            fxt_runtime::Config::new()
                .buffer_size(1 << 20)
                .sample_hz(1)
                .output(out),
        )
        .unwrap();
        let go = AtomicBool::new(false);
        let stopped = AtomicBool::new(false);
        let left = std::thread::scope(|scope| {
            for t in 0..THREADS {
                let (go, stopped) = (&go, &stopped);
                scope.spawn(move || {
                    while !go.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                    // Staggered, so that some threads arm as the session
                    // stops.
                    spin_cpu_us(t * 40 + round % 7 * 10);
                    emit(t);
                    // Alive (a thread's exit disarms it) until counted.
                    while !stopped.load(Ordering::Acquire) {
                        std::thread::yield_now();
                    }
                });
            }
            go.store(true, Ordering::Release);
            spin_cpu_us(60 + round % 5 * 20);
            s.finish_to_vec().unwrap();
            let left = live_sources() - before;
            stopped.store(true, Ordering::Release);
            left
        });
        assert_eq!(left, 0, "round {round}: sources left open after stop");
    }
}

/// Waits for `child` to exit (bounded, so that a child that blocked
/// fails the test instead of hanging it) and returns its wait status.
fn wait_child(child: libc::pid_t) -> Option<i32> {
    let mut status = 0;
    for _ in 0..6000 {
        // SAFETY: `status` is a valid out-pointer; `child` is ours.
        if unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) } == child {
            return Some(status);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: our child, reaped right after.
    unsafe {
        libc::kill(child, libc::SIGKILL);
        libc::waitpid(child, &mut status, 0);
    }
    None
}

/// `fork` without `exec` while a thread is sampled: the child holds the
/// parent's perf descriptors (sleeping), the parent stops the session,
/// and its thread, running on, receives no SIGPROF; the child then exits
/// normally (its thread disarms without the parent's locks).
#[test]
fn a_forked_child_holding_the_sources_does_not_keep_sampling_the_parent() {
    const NAME: &str = "a_forked_child_holding_the_sources_does_not_keep_sampling_the_parent";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    use std::sync::atomic::{AtomicU32, Ordering};
    let s = session(10_000, "fork");
    let phase = AtomicU32::new(0);
    std::thread::scope(|scope| {
        let phase = &phase;
        scope.spawn(move || {
            emit(0);
            phase.store(1, Ordering::Release);
            // Sampled until the parent has stopped the session and
            // counts; then 20 ms more of CPU time under the count.
            while phase.load(Ordering::Acquire) < 2 {
                spin_cpu(1);
            }
            spin_cpu(20);
            phase.store(3, Ordering::Release);
        });
        while phase.load(Ordering::Acquire) < 1 {
            std::thread::yield_now();
        }
        let mut pipe = [0; 2];
        // SAFETY: `pipe` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
        // SAFETY: the child only reads the pipe and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let mut b = 0u8;
            // SAFETY: reads one byte into `b`; then `exit` runs the
            // child's thread-local destructors (its writer disarms).
            unsafe {
                libc::close(pipe[1]);
                libc::read(pipe[0], (&mut b as *mut u8).cast(), 1);
                libc::exit(0);
            }
        }
        assert!(child > 0, "fork failed");
        // SAFETY: the child's end, not used here.
        unsafe { libc::close(pipe[0]) };
        let (_, stats) = s.finish_to_vec().unwrap();
        let signals = count_sigprof(|| {
            phase.store(2, Ordering::Release);
            while phase.load(Ordering::Acquire) < 3 {
                std::thread::yield_now();
            }
        });
        // SAFETY: wakes the child (one byte) and closes our end.
        unsafe {
            libc::write(pipe[1], b"x".as_ptr().cast(), 1);
            libc::close(pipe[1]);
        }
        let status = wait_child(child);
        assert_eq!(signals, 0, "SIGPROF after stop ({stats:?})");
        let status = status.expect("the forked child blocked at its exit");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    });
}

/// A crash-safe session without prefaulting (writers grow the file as
/// they go), sampled at 10 kHz, a thread that mostly only spins (its
/// chunks fill with samples, and the handler refills them): the handler
/// never grows the file (a debug build asserts it), and every sample
/// taken is in the trace or counted as dropped.
#[test]
fn a_crash_safe_session_sampled_without_prefault_never_grows_from_the_handler() {
    const NAME: &str = "a_crash_safe_session_sampled_without_prefault_never_grows_from_the_handler";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    let path = std::env::temp_dir().join(format!("fxt-sampler-cs-{}.fxt", std::process::id()));
    let s = fxt_runtime::start(
        fxt_runtime::Config::new()
            .buffer_size(8 << 20)
            .chunk_size(16 << 10)
            .crash_safe(true)
            .prefault(fxt_runtime::Prefault::Off)
            .sample_hz(10_000)
            .output(&path),
    )
    .unwrap();
    let events = std::thread::spawn(|| {
        let start = cpu_ns();
        let mut n = 0;
        while cpu_ns() - start < 300_000_000 {
            emit(n);
            n += 1;
            spin_cpu(2);
        }
        n
    })
    .join()
    .unwrap();
    let (bytes, stats) = s.finish_to_vec().unwrap();
    let _ = std::fs::remove_file(&path);
    let records = common::decode(&bytes);
    let samples = records
        .iter()
        .filter(|r| {
            matches!(r, fxt_format::decode::Record::Blob(b) if b.name.as_str() == Some("fxt.sample"))
        })
        .count() as u64;
    let kept = records
        .iter()
        .filter(|r| matches!(r, fxt_format::decode::Record::Event(e) if e.name == "ev"))
        .count() as u64;
    assert!(stats.samples > 0, "{stats:?}");
    assert_eq!(
        samples + kept + stats.records_dropped,
        stats.samples + events,
        "every sample and event in the trace or counted as dropped ({stats:?})"
    );
}

/// The tids of the `fxt.sample` records of a trace, one per sample.
fn sample_tids(bytes: &[u8]) -> Vec<u64> {
    common::decode(bytes)
        .iter()
        .filter_map(|r| match r {
            fxt_format::decode::Record::Blob(b) if b.name.as_str() == Some("fxt.sample") => {
                Some(u64::from_le_bytes(b.payload[16..24].try_into().unwrap()))
            }
            _ => None,
        })
        .collect()
}

/// How many samples of a trace unwind (as a reader unwinds them, with the
/// files its modules name) through more than the interrupted frame.
fn table_walks(bytes: &[u8]) -> usize {
    fxt_symbols::scan::TraceSamples::read(bytes)
        .samples
        .iter()
        .filter(|s| s.frames.len() > 1)
        .count()
}

/// With `RLIMIT_NOFILE` a few descriptors above what the process has open,
/// sixteen threads sampled at once: each is sampled (threads past the
/// descriptors perf may take get a timer), and the session still has the
/// descriptors to write its trace.
#[test]
fn threads_past_the_descriptor_limit_are_sampled_with_timers() {
    const NAME: &str = "threads_past_the_descriptor_limit_are_sampled_with_timers";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    use std::sync::Barrier;
    const THREADS: usize = 16;
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = libc::rlimit {
        rlim_cur: open + 10,
        rlim_max: open + 10,
    };
    // SAFETY: `limit` is valid; this child process only lowers its own.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let s = session(1000, "nofile");
    let armed = Barrier::new(THREADS);
    let tids: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let armed = &armed;
                scope.spawn(move || {
                    emit(t as u64);
                    // All armed at once: sixteen sources open together.
                    armed.wait();
                    spin_cpu(40);
                    // SAFETY: `gettid` has no preconditions.
                    unsafe { libc::gettid() as u64 }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (bytes, stats) = s.finish_to_vec().unwrap();
    let sampled = sample_tids(&bytes);
    for tid in tids {
        assert!(
            sampled.contains(&tid),
            "thread {tid} not sampled ({stats:?})"
        );
    }
}

/// With `RLIMIT_NOFILE` at what the process has open and a few more (no
/// descriptor perf may take: a timer samples), a thread burning 400 ms of
/// CPU at 1000 Hz: the kernel checks the timer on its tick (often 250
/// Hz), so a signal may stand for several periods, and the trace's
/// `fxt.sampling` record counts them: its samples times the CPU time it
/// says a sample stands for come within 25% of the thread's CPU time
/// (one period a sample would say a quarter of it at a 250 Hz tick).
#[test]
fn a_timers_samples_stand_for_the_cpu_time_they_took() {
    const NAME: &str = "a_timers_samples_stand_for_the_cpu_time_they_took";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let limit = libc::rlimit {
        rlim_cur: open + 4,
        rlim_max: open + 4,
    };
    // SAFETY: `limit` is valid; this child process only lowers its own.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let s = session(1000, "timer-periods");
    emit(0);
    let before = cpu_ns();
    spin_cpu(400);
    let burnt = cpu_ns() - before;
    // SAFETY: `gettid` has no preconditions.
    let tid = unsafe { libc::gettid() as u64 };
    let (bytes, stats) = s.finish_to_vec().unwrap();
    let n = sample_tids(&bytes).iter().filter(|&&t| t == tid).count() as u64;
    let sampling: Vec<_> = common::decode(&bytes)
        .iter()
        .filter_map(|r| match r {
            fxt_format::decode::Record::Blob(b) => fxt_format::samples::Sampling::from_blob(b),
            _ => None,
        })
        .collect();
    let [Ok(rate)] = sampling.as_slice() else {
        panic!("{sampling:?}")
    };
    assert_eq!((rate.perf_threads, rate.hz), (0, 1000), "{rate:?}");
    assert!(rate.timer_threads >= 1, "{rate:?}");
    assert_eq!(
        rate.samples,
        stats.samples - stats.records_dropped.min(stats.samples),
        "{rate:?} {stats:?}"
    );
    let estimate = n * rate.cpu_ns_per_sample().unwrap();
    println!(
        "{n} samples at {} Hz taken, {:.1} ms estimated, {:.1} ms burnt",
        rate.effective_hz(),
        estimate as f64 / 1e6,
        burnt as f64 / 1e6
    );
    assert!(
        estimate * 4 >= burnt * 3 && estimate * 4 <= burnt * 5,
        "{n} samples: {estimate} ns estimated, {burnt} ns burnt ({rate:?})"
    );
}

/// Whether any thread of this process has SIGPROF pending.
fn any_sigprof_pending() -> bool {
    std::fs::read_dir("/proc/self/task").unwrap().any(|e| {
        let path = e.unwrap().path().join("status");
        let status = std::fs::read_to_string(path).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigPnd:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & (1 << (libc::SIGPROF - 1)) != 0)
    })
}

/// Threads sampled at 10 kHz run on while the session stops: once it has
/// stopped no SIGPROF is pending, and a program that then sets SIGPROF to
/// its default disposition (terminate) is not killed while they run on.
#[test]
fn after_stop_no_sigprof_is_pending_or_armed() {
    const NAME: &str = "after_stop_no_sigprof_is_pending_or_armed";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    use std::sync::atomic::{AtomicU32, Ordering};
    const THREADS: u32 = 3;
    let s = session(10_000, "sigdfl");
    let phase = AtomicU32::new(0);
    let armed = AtomicU32::new(0);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (phase, armed) = (&phase, &armed);
            scope.spawn(move || {
                emit(t as u64);
                armed.fetch_add(1, Ordering::AcqRel);
                while phase.load(Ordering::Acquire) == 0 {
                    spin_cpu(1);
                }
                spin_cpu(30);
            });
        }
        while armed.load(Ordering::Acquire) < THREADS {
            std::thread::yield_now();
        }
        spin_cpu(10);
        s.finish_to_vec().unwrap();
        assert!(!any_sigprof_pending(), "SIGPROF pending after stop");
        // SAFETY: the default disposition; a SIGPROF now kills the child.
        unsafe { libc::signal(libc::SIGPROF, libc::SIG_DFL) };
        phase.store(1, Ordering::Release);
    });
}

/// `dlopen` of a system library by name (`RTLD_NOW`); null if absent.
fn dlopen(name: &str) -> *mut libc::c_void {
    let name = std::ffi::CString::new(name).unwrap();
    // SAFETY: a NUL-terminated name; loading a system library runs only
    // its own initializers.
    unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) }
}

/// Runs `f(buf)` for `ms` of the calling thread's CPU time.
fn run_for(ms: u64, f: impl Fn(&[u8])) {
    let buf = vec![7u8; 4096];
    let start = cpu_ns();
    while cpu_ns() - start < ms * 1_000_000 {
        f(&buf);
    }
}

/// A library unloaded while the thread is sampled, and another loaded
/// (plugin reload: usually where the first was) and run by the same
/// sampled thread: the process survives, samples are written, and a
/// reader unwinds them.
#[test]
fn a_dlclose_dlopen_cycle_while_sampling() {
    const NAME: &str = "a_dlclose_dlopen_cycle_while_sampling";
    if !in_child(NAME) {
        return child_must_pass(NAME);
    }
    type Crc32 = unsafe extern "C" fn(u64, *const u8, u32) -> u64;
    type Crc64 = unsafe extern "C" fn(*const u8, usize, u64) -> u64;
    let sym = |lib: *mut libc::c_void, name: &std::ffi::CStr| {
        // SAFETY: `lib` is a live handle; the name is NUL-terminated.
        let f = unsafe { libc::dlsym(lib, name.as_ptr()) };
        assert!(!f.is_null(), "{name:?} not found");
        f
    };
    let (mut samples, mut walked) = (0, 0);
    for round in 0..6 {
        // The big library first, so that the small one fits in its place.
        let lzma = dlopen("liblzma.so.5");
        if lzma.is_null() || dlopen_absent("libz.so.1") {
            eprintln!("liblzma.so.5 or libz.so.1 missing: nothing to test");
            return;
        }
        let s = session(10_000, "dl");
        // A handle is a pointer: passed as an address.
        let lzma_handle = lzma as usize;
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let lzma = lzma_handle as *mut libc::c_void;
                // Armed now, with liblzma in the module list.
                emit(0);
                let crc64 = sym(lzma, c"lzma_crc64");
                // SAFETY: `lzma_crc64(buf, size, crc)`'s signature.
                let crc64: Crc64 = unsafe { core::mem::transmute(crc64) };
                run_for(20, |buf| {
                    // SAFETY: `buf` is valid for its length.
                    std::hint::black_box(unsafe { crc64(buf.as_ptr(), buf.len(), 0) });
                });
                // SAFETY: our handle; the function is not called again.
                unsafe { libc::dlclose(lzma) };
                let z = dlopen("libz.so.1");
                assert!(!z.is_null());
                let crc32 = sym(z, c"crc32");
                // SAFETY: `crc32(crc, buf, len)`'s signature (an unsigned
                // long, a pointer, an unsigned int).
                let crc32: Crc32 = unsafe { core::mem::transmute(crc32) };
                run_for(30, |buf| {
                    // SAFETY: `buf` is valid for its length.
                    std::hint::black_box(unsafe { crc32(0, buf.as_ptr(), buf.len() as u32) });
                });
                emit(1);
                // SAFETY: our handle; nothing of it is used after.
                unsafe { libc::dlclose(z) };
            });
        });
        let (bytes, stats) = s.finish_to_vec().unwrap();
        samples += sample_tids(&bytes).len();
        walked += table_walks(&bytes);
        eprintln!("round {round}: {stats:?}");
    }
    assert!(samples > 0);
    assert!(walked > 0, "no sample of {samples} unwound past its pc");
}

/// Whether library `name` cannot be loaded (loading it to see, then
/// unloading it).
fn dlopen_absent(name: &str) -> bool {
    let lib = dlopen(name);
    if !lib.is_null() {
        // SAFETY: the handle just opened, not used after.
        unsafe { libc::dlclose(lib) };
    }
    lib.is_null()
}

/// The foreign stack's range, for `on_foreign_stack`'s caller to check.
static FOREIGN_SPINS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs on a stack of the test's making (see below), then returns to the
/// context `uc_link` names.
extern "C" fn on_foreign_stack() {
    spin_cpu(100);
    FOREIGN_SPINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A thread that runs code on a stack that is not its own (a coroutine's,
/// made with `makecontext`): the samples taken there copy no stack (the
/// interrupted sp is outside the thread's stack, and nothing else is read)
/// and still carry their registers, the pc in loaded code; the samples on
/// the thread's own stack copy theirs.
#[test]
fn a_sample_off_the_thread_stack_keeps_its_pc_and_copies_nothing() {
    use fxt_format::samples::{SampleBlob, Walk};
    let s = session(10_000, "foreign");
    let mut foreign = vec![0u8; 256 << 10];
    let range = foreign.as_ptr() as u64..foreign.as_ptr() as u64 + foreign.len() as u64;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Registered (armed) before anything is sampled.
            emit(0);
            // SAFETY: zeroed contexts are filled by `getcontext`; the new
            // context runs `on_foreign_stack` on `foreign` (alive and not
            // otherwise used until it returns), then resumes `main` through
            // `uc_link`, which outlives the switch.
            unsafe {
                let mut main: Box<libc::ucontext_t> = Box::new(core::mem::zeroed());
                let mut coro: Box<libc::ucontext_t> = Box::new(core::mem::zeroed());
                assert_eq!(libc::getcontext(&mut *coro), 0);
                coro.uc_stack.ss_sp = foreign.as_mut_ptr().cast();
                coro.uc_stack.ss_size = foreign.len();
                coro.uc_link = &mut *main;
                libc::makecontext(&mut *coro, on_foreign_stack, 0);
                assert_eq!(libc::swapcontext(&mut *main, &*coro), 0);
            }
            spin_cpu(30);
            emit(1);
        });
    });
    assert_eq!(FOREIGN_SPINS.load(std::sync::atomic::Ordering::Relaxed), 1);
    let (bytes, _) = s.finish_to_vec().unwrap();
    let (mut off, mut on) = (0, 0);
    for r in common::decode(&bytes) {
        let fxt_format::decode::Record::Blob(b) = r else {
            continue;
        };
        let Some(Ok(SampleBlob::Sample(sample))) = SampleBlob::from_blob(&b) else {
            continue;
        };
        assert_eq!(sample.walk, Walk::RawStack);
        let raw = sample.raw_stack.unwrap();
        let (pc, sp) = (raw.registers[0], raw.registers[1]);
        if range.contains(&sp) {
            off += 1;
            assert!(raw.stack.is_empty(), "{} words copied", raw.stack.len());
            assert_eq!(raw.stack_address, 0);
            assert!(sample.truncated);
            // SAFETY: a zeroed `Dl_info` is valid (pointers null).
            let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
            // SAFETY: `dladdr` reads only the loader's tables for `pc`.
            let found = unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) };
            assert!(found != 0, "pc {pc:#x} in no loaded object");
        } else if !raw.stack.is_empty() {
            on += 1;
            assert!(raw.stack_address <= sp);
        }
    }
    assert!(off > 0, "no sample taken on the foreign stack");
    assert!(on > 0, "no sample copied its stack");
    drop(foreign);
}
