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
//!
//! **Real-time writers.** A helper below real time that is queued on the
//! CPU of a real-time thread does not run until the kernel's load balancer
//! moves it, which can take longer than a whole burst of recording: a
//! prefaulter starved that way leaves the writer to fault in every chunk
//! itself, a streamer never hands chunks back. And the kernel puts a new
//! real-time thread precisely on a CPU that runs no real-time thread (the
//! helpers' one, when the program's other real-time thread is on the
//! other). So a writer that finds a helper behind it calls
//! [`keep_off_current_cpu`]: when the writer is real time, every helper
//! below real time is moved off its CPU (`sched_setaffinity`, within the
//! CPUs the helper may use; never its last one), and helpers started later
//! keep off the CPUs real-time writers were seen on.
//!
//! **The prefaulter beside real-time writers.** At `SCHED_IDLE` the
//! prefaulter runs only on a core nothing else wants; beside a real-time
//! writer the one spare core also runs the streamer and the rest of the
//! machine, and an idle-policy thread there went tens of milliseconds
//! without a slice while the writer overtook it and faulted in its own
//! chunks (those faults, not the events, were the writer's events over
//! 50 µs). So a prefaulter started by a real-time thread takes the normal
//! policy instead, and one started at `SCHED_IDLE` is raised to normal
//! when a real-time writer first finds it behind (which needs the
//! privilege to leave `SCHED_IDLE`: `CAP_SYS_NICE` or `RLIMIT_NICE`;
//! without it the prefaulter stays idle).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use crate::config::HelperScheduling;

#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
mod affinity;
pub(crate) mod wake;

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

thread_local! {
    /// Set on fxt's own threads ([`spawn`]): their allocations are fxt's,
    /// never sampled (`crate::alloc`).
    static OWN: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Whether the calling thread is one of fxt's own ([`spawn`]).
pub(crate) fn is_own_thread() -> bool {
    OWN.try_with(core::cell::Cell::get).unwrap_or(false)
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
    builder(name).spawn(move || {
            OWN.with(|o| o.set(true));
            name_self(&own);
            // Registered first, while the thread still has its creator's
            // priority: a helper about to drop below a real-time creator
            // could otherwise wait on a real-time writer's CPU before it
            // ever registers to be moved.
            let _registered = registry::register_self(sched);
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

/// The builder of helper `name`. On Linux the thread starts unnamed and
/// names itself once it is marked as fxt's own ([`name_self`]): std copies
/// a named thread's name on the new thread before the closure runs (for
/// its stack-overflow handler), an allocation the program's sampling
/// allocator would otherwise count as the program's. A panic message of a
/// helper then says `<unnamed>`; `ps`, `top`, debuggers and `/proc` show
/// the name.
fn builder(name: &str) -> std::thread::Builder {
    let builder = std::thread::Builder::new();
    if cfg!(target_os = "linux") {
        builder
    } else {
        builder.name(name.to_string())
    }
}

/// Gives the calling thread the kernel name `name` (Linux; elsewhere the
/// builder named it).
fn name_self(name: &str) {
    #[cfg(target_os = "linux")]
    if let Ok(name) = std::ffi::CString::new(name) {
        // SAFETY: `name` is a NUL-terminated string that outlives the
        // call; the kernel copies at most 16 bytes of it (helper names
        // are shorter).
        unsafe {
            libc::prctl(libc::PR_SET_NAME, name.as_ptr());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = name;
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
        // Created by a real-time thread: the program's real-time threads
        // hold their cores, and a prefaulter at SCHED_IDLE on the spare one
        // gets no time beside the streamer or any other normal thread, so
        // a real-time writer would fault in its own pages (see the module
        // docs): normal, as the other helpers.
        Sched::Idle if is_real_time() => return set_normal(),
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

/// Called by a writer on its slow path when a helper is behind it (it
/// overtook the prefaulter, or found no chunk written out to reuse): if
/// the calling thread is real time, moves fxt's helper threads below real
/// time off its CPU (see the module docs). Costs one relaxed load when
/// that is done already for this CPU; else a system call or two, never a
/// wait (the registry's lock is only tried).
pub(crate) fn keep_off_current_cpu() {
    #[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
    registry::keep_off_current_cpu();
}

/// Whether the calling thread runs at a real-time policy.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
fn is_real_time() -> bool {
    // SAFETY: no arguments but the calling thread (0).
    let policy = unsafe { libc::sched_getscheduler(0) };
    // SCHED_DEADLINE (6) is real time too; libc names it on few targets.
    policy >= 0
        && matches!(
            policy & !libc::SCHED_RESET_ON_FORK,
            libc::SCHED_FIFO | libc::SCHED_RR | 6
        )
}

#[cfg(not(all(not(loom), any(target_os = "linux", target_os = "android"))))]
mod registry {
    /// Nothing to register where affinity is not set.
    pub(super) fn register_self(_sched: super::Sched) {}
}

/// The helper threads below real time and the CPUs they keep off.
#[cfg(all(not(loom), any(target_os = "linux", target_os = "android")))]
mod registry {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, MutexGuard, TryLockError};
    use std::time::Duration;

    use super::affinity::{affinity_of_self, current_cpu, gettid, set_affinity, CpuSet};

    /// A thread id.
    type Pid = libc::pid_t;

    use super::Sched;
    use crate::config::HelperScheduling;

    /// The helpers of this process below real time and the CPUs real-time
    /// writers were seen on. Writers only ever try its lock.
    struct Registry {
        /// The process whose threads these are: a forked child starts
        /// afresh (its parent's threads are not its own to move).
        pid: u32,
        helpers: Vec<Registered>,
        /// CPUs a real-time writer found a helper behind it on.
        avoided: CpuSet,
    }

    /// One helper thread.
    struct Registered {
        tid: Pid,
        /// At `SCHED_IDLE` (the prefaulter), until a real-time writer
        /// raises it to normal ([`raise_to_normal`]).
        idle: bool,
        /// Its affinity when it registered: the CPUs it may use at all
        /// (the program's own affinity and cpuset, which it inherited).
        allowed: CpuSet,
        /// Its affinity now.
        mask: CpuSet,
    }

    static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

    /// Bit `c` (CPUs below 64): writers on CPU `c` have nothing to do,
    /// every helper keeps off it already or cannot, and none is idle. Relaxed: a hint that
    /// saves a writer the lock; a stale bit delays a move by one chunk.
    static SETTLED: AtomicU64 = AtomicU64::new(0);

    /// Deregisters its helper when dropped (the helper thread's end).
    pub(super) struct Registration(Pid);

    impl Drop for Registration {
        fn drop(&mut self) {
            // Registered in this process, whose registry is taken only
            // for moments: the lock is never held by a thread that is gone.
            let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
            let reg = current(&mut guard);
            reg.helpers.retain(|h| h.tid != self.0);
            reg.settle(None);
        }
    }

    /// The registry of this process (a forked child's starts empty).
    fn current<'a>(guard: &'a mut MutexGuard<'_, Option<Registry>>) -> &'a mut Registry {
        let pid = std::process::id();
        if guard.as_ref().is_none_or(|r| r.pid != pid) {
            **guard = Some(Registry {
                pid,
                helpers: Vec::new(),
                avoided: CpuSet::new(),
            });
        }
        guard.as_mut().expect("just set")
    }

    /// Registers the calling helper thread, about to set its scheduling to
    /// `sched`, if that is below real time: it keeps off the CPUs avoided
    /// so far and is moved off those of later real-time writers. Never
    /// blocks for long: a lock held since a `fork` (in this child, by a
    /// thread of the parent) is given up on, and the helper is simply not
    /// moved.
    pub(super) fn register_self(sched: Sched) -> Option<Registration> {
        let below = match sched {
            Sched::Idle | Sched::Helper(HelperScheduling::Normal) => true,
            // Still the creator's scheduling, which it keeps.
            Sched::Helper(HelperScheduling::Inherit) => !super::is_real_time(),
            Sched::Helper(HelperScheduling::Fifo(_) | HelperScheduling::RoundRobin(_)) => false,
        };
        if !below {
            return None;
        }
        let tid = gettid();
        let allowed = affinity_of_self()?;
        let mut guard = try_lock_for(Duration::from_millis(100))?;
        let reg = current(&mut guard);
        reg.helpers.push(Registered {
            tid,
            idle: sched == Sched::Idle && !super::is_real_time(),
            allowed,
            mask: allowed,
        });
        reg.settle(None);
        Some(Registration(tid))
    }

    /// The registry's lock, tried until `bound` has passed.
    fn try_lock_for(bound: Duration) -> Option<MutexGuard<'static, Option<Registry>>> {
        let t0 = std::time::Instant::now();
        loop {
            match REGISTRY.try_lock() {
                Ok(g) => return Some(g),
                Err(TryLockError::Poisoned(e)) => return Some(e.into_inner()),
                Err(TryLockError::WouldBlock) if t0.elapsed() < bound => {
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(TryLockError::WouldBlock) => return None,
            }
        }
    }

    /// [`super::keep_off_current_cpu`].
    pub(super) fn keep_off_current_cpu() {
        let cpu = current_cpu();
        if cpu < 64 && SETTLED.load(Ordering::Relaxed) & (1 << cpu) != 0 {
            return;
        }
        if !super::is_real_time() {
            return;
        }
        let mut guard = match REGISTRY.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            // Another writer or a helper holds it: try again at the next chunk.
            Err(TryLockError::WouldBlock) => return,
        };
        let reg = current(&mut guard);
        reg.avoided.set(cpu);
        for h in reg.helpers.iter_mut().filter(|h| h.idle) {
            // Tried once: without the privilege it stays idle.
            h.idle = false;
            raise_to_normal(h.tid);
        }
        reg.settle(Some(cpu));
    }

    /// Gives helper `tid` the normal policy (from `SCHED_IDLE`, which an
    /// unprivileged thread may not leave: then it keeps it).
    fn raise_to_normal(tid: Pid) {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `tid` is a thread of this process (registered, and
        // deregistered under the registry's lock before it ends); `param`
        // is a valid sched_param. A failure changes nothing.
        let _ = unsafe { libc::sched_setscheduler(tid, libc::SCHED_OTHER, &param) };
    }

    impl Registry {
        /// Gives every helper the affinity it should have now (`writer`:
        /// the CPU of the real-time writer asking) and publishes which
        /// CPUs writers need not ask about again.
        fn settle(&mut self, writer: Option<usize>) {
            for h in &mut self.helpers {
                let Some(want) = target(&h.allowed, &self.avoided, writer) else {
                    continue;
                };
                // A failure (a cpuset changed under us) keeps the old mask.
                if want != h.mask && set_affinity(h.tid, &want) {
                    h.mask = want;
                }
            }
            let mut settled = 0u64;
            // An idle helper is there to be raised by the next real-time
            // writer that finds it behind: no CPU is settled until then.
            let idle = self.helpers.iter().any(|h| h.idle);
            for c in (0..64).filter(|_| !idle) {
                let kept_off = self.helpers.iter().all(|h| !h.mask.is_set(c));
                if (self.avoided.is_set(c) && kept_off) || writer == Some(c) {
                    settled |= 1 << c;
                }
            }
            SETTLED.store(settled, Ordering::Relaxed);
        }
    }

    /// The affinity of a helper that may use `allowed`: without the
    /// `avoided` CPUs, or if that leaves none, without the `writer`'s CPU;
    /// `None` when that leaves none either, or no writer is asking (the
    /// helper keeps the mask it has: it is never left without a CPU, nor
    /// put back on a writer's by a helper registering).
    pub(super) fn target(
        allowed: &CpuSet,
        avoided: &CpuSet,
        writer: Option<usize>,
    ) -> Option<CpuSet> {
        let mut away = *allowed;
        for c in (0..CpuSet::MAX_CPU).filter(|&c| avoided.is_set(c)) {
            away.unset(c);
        }
        if away.count() > 0 {
            return Some(away);
        }
        let mut away = *allowed;
        away.unset(writer?);
        (away.count() > 0).then_some(away)
    }
}

#[cfg(all(test, not(loom), any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::affinity::CpuSet;
    use super::registry::target;

    fn set(cpus: &[usize]) -> CpuSet {
        let mut s = CpuSet::new();
        for &c in cpus {
            s.set(c);
        }
        s
    }

    #[test]
    fn a_helper_keeps_off_avoided_cpus_but_never_loses_its_last() {
        // Off every avoided CPU when some allowed one is left.
        assert_eq!(
            target(&set(&[0, 1, 2, 3]), &set(&[1, 3]), Some(3)),
            Some(set(&[0, 2]))
        );
        assert_eq!(
            target(&set(&[0, 1, 2]), &set(&[1]), None),
            Some(set(&[0, 2]))
        );
        // Avoided CPUs it may not use anyway change nothing.
        assert_eq!(
            target(&set(&[2, 3]), &set(&[0, 1]), Some(0)),
            Some(set(&[2, 3]))
        );
        assert_eq!(
            target(&set(&[0, 1]), &CpuSet::new(), None),
            Some(set(&[0, 1]))
        );
        // Every allowed CPU avoided: off the asking writer's only...
        assert_eq!(
            target(&set(&[0, 1]), &set(&[0, 1]), Some(1)),
            Some(set(&[0]))
        );
        // ... and with no writer asking (a helper registering), unchanged.
        assert_eq!(target(&set(&[0, 1]), &set(&[0, 1]), None), None);
        // One allowed CPU, the writer's: unchanged.
        assert_eq!(target(&set(&[5]), &set(&[5]), Some(5)), None);
    }
}
