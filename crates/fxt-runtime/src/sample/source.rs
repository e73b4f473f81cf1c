//! What interrupts a thread every 1/N seconds of its CPU time: a
//! per-thread `perf_event_open` software event (task clock, user space
//! only) where the kernel allows it, else a POSIX CPU-time timer. Both
//! deliver the sampling signal to the thread they measure.
//!
//! Why both: `perf_event_open` is precise at any rate (an hrtimer on the
//! thread's CPU time) and is allowed to an ordinary user for their own
//! threads at `perf_event_paranoid` up to 2 (the kernel's default;
//! `exclude_kernel` is set), but Debian's own kernels set 3, which forbids
//! it. The timer (`timer_create(CLOCK_THREAD_CPUTIME_ID)` with
//! `SIGEV_THREAD_ID`, as Go and pprof-rs do per thread) works everywhere,
//! but the kernel checks CPU-time timers on its scheduler tick
//! (`CONFIG_HZ`, often 250): above that rate it delivers one signal per
//! tick and counts the rest as overruns.

use std::io;

/// The value a timer's signal carries (`sigev_value`), so the handler tells
/// fxt's timer signals from anyone else's.
pub(crate) const TIMER_MAGIC: usize = 0x6678_742e_7361_6d70;

/// `si_code` of a timer's signal.
pub(crate) const SI_TIMER: i32 = -2;
/// `si_code`s of a file descriptor's I/O signal (`F_SETSIG`): the perf
/// event's overflow.
pub(crate) const POLL_IN: i32 = 1;
pub(crate) const POLL_HUP: i32 = 6;

// Linux constants the `libc` crate does not define for glibc targets.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
/// `perf_event_attr` flag bits: disabled, exclude_kernel, exclude_hv.
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;

/// `struct f_owner_ex`.
#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// `struct perf_event_attr` as of its first version (`PERF_ATTR_SIZE_VER0`,
/// 64 bytes), which every kernel accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Which kind of source interrupts a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A `perf_event_open` task-clock event.
    PerfEvent,
    /// A POSIX CPU-time timer.
    CpuTimer,
}

/// One thread's armed source; dropping it stops it.
#[derive(Debug)]
pub(crate) enum Source {
    Perf(libc::c_int),
    Timer(libc::timer_t),
}

// SAFETY: a `timer_t` is a kernel timer id (glibc: a pointer-sized handle
// that is only passed back to `timer_delete`), usable from any thread.
unsafe impl Send for Source {}

impl Source {
    /// Starts interrupting the calling thread (`tid`) with `signal` every
    /// `period_ns` of its CPU time. `perf`: try the perf event first.
    /// Also returns whether the kernel refused the perf event (not worth
    /// trying for other threads).
    ///
    /// A perf event takes a file descriptor, which counts against the
    /// program's `RLIMIT_NOFILE`: past half of it, or when descriptors run
    /// out, the thread gets a timer instead (none needed), so sampling
    /// never leaves the program without descriptors nor a thread unsampled.
    pub(crate) fn open(
        tid: i32,
        signal: i32,
        period_ns: u64,
        perf: bool,
    ) -> io::Result<(Source, bool)> {
        let mut refused = false;
        if perf {
            match open_perf(tid, signal, period_ns) {
                Ok(fd) if leaves_room(fd) => return Ok((Source::Perf(fd), false)),
                // Dropped: closed, the timer below instead.
                Ok(fd) => drop(Source::Perf(fd)),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {}
                Err(_) => refused = true,
            }
        }
        let timer = open_timer(tid, signal, period_ns)?;
        Ok((Source::Timer(timer), refused))
    }

    pub(crate) fn kind(&self) -> SourceKind {
        match self {
            Source::Perf(_) => SourceKind::PerfEvent,
            Source::Timer(_) => SourceKind::CpuTimer,
        }
    }

    /// The perf event's file descriptor (the handler's `si_fd`).
    pub(crate) fn fd(&self) -> i32 {
        match self {
            Source::Perf(fd) => *fd,
            Source::Timer(_) => -1,
        }
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        // SAFETY: the fd / timer was created by `open` and is owned by this
        // value alone; neither is used after this.
        unsafe {
            match *self {
                Source::Perf(fd) => {
                    // Disabled and made silent before the close: a forked
                    // child may hold the same open file, which `close`
                    // alone leaves counting and signalling our thread.
                    libc::ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
                    libc::fcntl(fd, libc::F_SETFL, 0);
                    libc::close(fd);
                }
                Source::Timer(t) => {
                    libc::timer_delete(t);
                }
            }
        }
    }
}

/// Whether descriptor `fd` (the lowest free one when it was opened, so
/// about as many are open) leaves half of `RLIMIT_NOFILE` to the program.
fn leaves_room(fd: libc::c_int) -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return true;
    }
    limit.rlim_cur == libc::RLIM_INFINITY || (fd as u64) < limit.rlim_cur / 2
}

fn open_perf(tid: i32, signal: i32, period_ns: u64) -> io::Result<libc::c_int> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: core::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        sample_period: period_ns,
        flags: ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
        wakeup_events: 1,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid `perf_event_attr` of the size it states;
    // pid 0 / cpu -1 measure the calling thread on any CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0,
            -1,
            -1,
            PERF_FLAG_FD_CLOEXEC,
        )
    } as libc::c_int;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: `fd` is the event just opened; each call passes the argument
    // type its command takes (`F_SETOWN_EX`: a pointer to `f_owner_ex`).
    let ok = unsafe {
        libc::fcntl(fd, libc::F_SETFL, libc::O_ASYNC) == 0
            && libc::fcntl(fd, F_SETSIG, signal) == 0
            && libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) == 0
            && libc::ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) == 0
    };
    if !ok {
        let e = io::Error::last_os_error();
        // SAFETY: `fd` is ours and not used again.
        unsafe { libc::close(fd) };
        return Err(e);
    }
    Ok(fd)
}

fn open_timer(tid: i32, signal: i32, period_ns: u64) -> io::Result<libc::timer_t> {
    // SAFETY: a zeroed `sigevent` is valid; the fields set are the ones
    // `SIGEV_THREAD_ID` reads.
    let mut ev: libc::sigevent = unsafe { core::mem::zeroed() };
    ev.sigev_notify = libc::SIGEV_THREAD_ID;
    ev.sigev_signo = signal;
    ev.sigev_value = libc::sigval {
        sival_ptr: TIMER_MAGIC as *mut libc::c_void,
    };
    ev.sigev_notify_thread_id = tid;
    let mut timer: libc::timer_t = core::ptr::null_mut();
    // SAFETY: `ev` and `timer` are valid for the call.
    if unsafe { libc::timer_create(libc::CLOCK_THREAD_CPUTIME_ID, &mut ev, &mut timer) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let period = libc::timespec {
        tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
    };
    let spec = libc::itimerspec {
        it_interval: period,
        it_value: period,
    };
    // SAFETY: `timer` was just created; `spec` is valid.
    if unsafe { libc::timer_settime(timer, 0, &spec, core::ptr::null_mut()) } != 0 {
        let e = io::Error::last_os_error();
        // SAFETY: ours, not used again.
        unsafe { libc::timer_delete(timer) };
        return Err(e);
    }
    Ok(timer)
}
