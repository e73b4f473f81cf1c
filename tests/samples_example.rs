//! Issue 31's "done when" properties on `examples/samples.rs`, sampled at
//! 1 kHz: enough samples for the CPU time (the perf-event source; the
//! kernel's tick bounds a CPU-time timer's rate), split between the two
//! workers as their CPU time is (within 25%; 3:1 as their work is, but a
//! virtual machine's host can change its speed between the phases: a
//! run in CI took 2.01:1), and phase 1's samples inside
//! its worker — all by the names a reader gives the trace's samples (from
//! its `fxt.modules` with the binary, as the `fxt` command does; the
//! program itself is built without the symbolizer). Counts, not timings: they hold on a loaded machine and on
//! one core (samples follow the thread's CPU time, not the clock).

#[allow(dead_code)]
#[path = "../examples/samples.rs"]
mod samples;

/// Whether this process may open perf events on its own threads
/// (`perf_event_paranoid` <= 2, or root).
fn perf_allowed() -> bool {
    // SAFETY: `geteuid` has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let level = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    root || level.is_some_and(|l| l <= 2)
}

#[test]
fn samples_name_the_worker_that_did_the_work() {
    const HZ: u32 = 1000;
    let session = fxt::start(
        fxt::Config::new()
            .sample_hz(HZ)
            .output(std::env::temp_dir().join("fxt-samples-example-unused.fxt")),
    )
    .unwrap();
    // About half a second of CPU time in a debug build.
    let calls = if cfg!(debug_assertions) { 40 } else { 400 };
    let (cpu_a, cpu_b) = samples::phases(calls);
    let cpu = cpu_a + cpu_b;
    let (bytes, stats) = session.finish_to_vec().unwrap();
    let r = samples::analyse(&bytes);
    let wanted = cpu as f64 / 1e9 * HZ as f64;
    let report = format!("{r:?}, {stats:?}, CPU {cpu_a} + {cpu_b} ns, {wanted:.0} samples wanted");
    assert_eq!(r.samples + stats.records_dropped, stats.samples, "{report}");
    // The perf event samples at the rate asked; a CPU-time timer at most at
    // the kernel's tick (100 Hz or more).
    let floor = if perf_allowed() {
        wanted / 2.0
    } else {
        wanted.min(cpu as f64 / 1e7) / 2.0
    };
    assert!(r.samples as f64 >= floor, "{report}");
    // The samples split as the workers' CPU time does (within 25%).
    let ratio = r.in_a as f64 / r.in_b.max(1) as f64;
    let cpu_ratio = cpu_a as f64 / cpu_b.max(1) as f64;
    assert!(
        (0.75..=1.25).contains(&(ratio / cpu_ratio)),
        "split {ratio:.2}, CPU {cpu_ratio:.2}: {report}"
    );
    assert!(r.named * 10 >= r.samples * 9, "{report}");
    assert!(r.in_a + r.in_b >= r.samples * 9 / 10, "{report}");
    assert!(r.phase1_in_a * 10 >= r.phase1 * 8, "{report}");
}
