//! fxt's own threads (the prefaulter, the streamer, the snapshot trigger):
//! every one is spawned by [`spawn`], so what they share (their `fxt-`
//! name, their scheduling) is set in one place.
//!
//! **Scheduling.** A Linux thread inherits its creator's policy and
//! priority: a session started from a real-time thread would otherwise
//! get its helpers at that real-time priority, competing with the
//! program's own real-time threads. So each helper sets its own policy
//! ([`Sched`]) first thing, from inside (`sched_setscheduler(0, ..)` and
//! the nice value apply to the calling thread), before it does any work.
//! Failing to is never fatal: it is reported once per process on stderr
//! and counted ([`take_sched_failures`], in `Stats`).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crate::config::HelperScheduling;

/// How a helper thread schedules itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sched {
    /// As the session's config says ([`HelperScheduling`]).
    Helper(HelperScheduling),
    /// The lowest priority (`SCHED_IDLE`: it runs only on a core nothing
    /// else wants), whatever the config: the prefaulter, whose work only
    /// helps when it takes no core from the program.
    Idle,
}

/// Helper threads whose policy could not be set, since the last
/// [`take_sched_failures`].
static SCHED_FAILURES: AtomicU64 = AtomicU64::new(0);

/// The stderr warning about a failure was printed (once per process).
static WARNED: AtomicBool = AtomicBool::new(false);

/// Helper threads whose scheduling could not be set since the last call
/// (a finished session's `Stats::helper_sched_failures`).
pub(crate) fn take_sched_failures() -> u64 {
    // Relaxed: a counter read once the helpers of the session are joined
    // or running on; nothing else is ordered by it.
    SCHED_FAILURES.swap(0, Ordering::Relaxed)
}

/// Spawns the helper thread `name` (shown by `ps`, `top` and debuggers;
/// by convention `fxt-…`) running `body`, after the thread has set its
/// scheduling to `sched`.
pub(crate) fn spawn<T, F>(name: &str, sched: Sched, body: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let own = name.to_string();
    std::thread::Builder::new()
        .name(own.clone())
        .spawn(move || {
            if let Err(e) = set_own(sched) {
                SCHED_FAILURES.fetch_add(1, Ordering::Relaxed);
                if !WARNED.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "fxt: cannot set the scheduling of thread {own} ({}): {e}; it keeps its creator's (reported once)",
                        describe(sched)
                    );
                }
            }
            body()
        })
}

fn describe(sched: Sched) -> String {
    match sched {
        Sched::Helper(h) => h.to_string(),
        Sched::Idle => "idle".to_string(),
    }
}

/// Sets the calling thread's scheduling.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
fn set_own(sched: Sched) -> io::Result<()> {
    let policy = match sched {
        Sched::Helper(HelperScheduling::Inherit) => return Ok(()),
        Sched::Helper(HelperScheduling::Normal) => return set_normal(),
        Sched::Helper(HelperScheduling::Fifo(p)) => (libc::SCHED_FIFO, p),
        Sched::Helper(HelperScheduling::RoundRobin(p)) => (libc::SCHED_RR, p),
        Sched::Idle => (libc::SCHED_IDLE, 0),
    };
    set_policy(policy.0, policy.1.into())
}

#[cfg(not(all(not(loom), any(target_os = "linux", target_os = "android"))))]
fn set_own(_sched: Sched) -> io::Result<()> {
    Ok(())
}

/// `sched_setscheduler(0, policy, priority)`: the calling thread.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
fn set_policy(policy: libc::c_int, priority: libc::c_int) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid `sched_param` for the call; pid 0 is the
    // calling thread (Linux schedules threads, not processes).
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// [`HelperScheduling::Normal`]: a real-time policy becomes `SCHED_OTHER`
/// and a negative nice value 0 (both lower the priority, which needs no
/// privilege); a lower priority than normal is kept.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
fn set_normal() -> io::Result<()> {
    // SAFETY: no arguments but the calling thread (0).
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    // Without SCHED_RESET_ON_FORK, which the kernel reports beside the policy.
    let policy = policy & !libc::SCHED_RESET_ON_FORK;
    // SCHED_DEADLINE (6) is real time too; libc names it on few targets.
    if matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR | 6) {
        set_policy(libc::SCHED_OTHER, 0)?;
    }
    // SAFETY: `__errno_location` is this thread's errno; `getpriority`
    // returns -1 both as a value and as an error, told apart by errno.
    // On Linux the nice value is per thread: `who` 0 is the calling one.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    };
    if nice == -1 && io::Error::last_os_error().raw_os_error() != Some(0) {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; raising the nice value needs no privilege.
    if nice < 0 && unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
