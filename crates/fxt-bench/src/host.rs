//! The machine a benchmark runs on: how busy it is, and the CPU clocks
//! the benches compare (time a thread or process ran, which another
//! process's load does not add to).

/// The 1, 5 and 15 minute load averages (`unknown` where `/proc/loadavg`
/// cannot be read): every table says how busy the machine was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// CPU time of the calling thread, in ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of this process (every thread's, fxt's helpers' included),
/// in ns.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call, and both clocks
    // exist on every Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both clocks advance while this thread works (each at its own
    /// granularity: the process clock may lag the thread's, so they are
    /// not compared with each other).
    #[test]
    fn the_cpu_clocks_move_with_work() {
        let (thread, process) = (thread_cpu_ns(), process_cpu_ns());
        let mut x = 1u64;
        let mut spins = 0u64;
        while thread_cpu_ns() == thread || process_cpu_ns() == process {
            x = std::hint::black_box(x.wrapping_mul(31));
            spins += 1;
            assert!(spins < 1 << 32, "the CPU clocks never moved");
        }
        assert!(
            thread_cpu_ns() > thread && process_cpu_ns() > process,
            "{x}"
        );
    }
}
