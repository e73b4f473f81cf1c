//! CPU sets and the thread affinity and CPU calls the helper registry
//! makes, over `libc` (which the runtime links anyway): the few calls it
//! needs did not justify compiling a whole system-call crate into every
//! program that traces.

/// A set of CPUs, laid out as the kernel's `cpu_set_t` (a bit per CPU in
/// 64-bit words), which the affinity calls take by pointer.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct CpuSet([u64; WORDS]);

/// Words of a [`CpuSet`].
const WORDS: usize = libc::CPU_SETSIZE as usize / 64;

// The affinity calls below pass a `CpuSet` as a `cpu_set_t`.
const _: () = assert!(
    std::mem::size_of::<CpuSet>() == std::mem::size_of::<libc::cpu_set_t>()
        && std::mem::align_of::<CpuSet>() >= std::mem::align_of::<libc::cpu_set_t>()
);

impl CpuSet {
    /// CPUs a set can hold.
    pub(crate) const MAX_CPU: usize = WORDS * 64;

    /// The empty set.
    pub(crate) fn new() -> Self {
        CpuSet([0; WORDS])
    }

    /// Adds `cpu` (ignored past [`Self::MAX_CPU`]).
    pub(crate) fn set(&mut self, cpu: usize) {
        if let Some(w) = self.0.get_mut(cpu / 64) {
            *w |= 1 << (cpu % 64);
        }
    }

    /// Removes `cpu`.
    pub(crate) fn unset(&mut self, cpu: usize) {
        if let Some(w) = self.0.get_mut(cpu / 64) {
            *w &= !(1 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set.
    pub(crate) fn is_set(&self, cpu: usize) -> bool {
        self.0
            .get(cpu / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    /// How many CPUs the set holds.
    pub(crate) fn count(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
}

impl std::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set()
            .entries((0..Self::MAX_CPU).filter(|&c| self.is_set(c)))
            .finish()
    }
}

/// The calling thread's id.
pub(crate) fn gettid() -> libc::pid_t {
    // SAFETY: `gettid` takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on (0 if the call fails, as it cannot
/// on Linux).
pub(crate) fn current_cpu() -> usize {
    // SAFETY: `sched_getcpu` takes nothing; it returns -1 on failure.
    usize::try_from(unsafe { libc::sched_getcpu() }).unwrap_or(0)
}

/// The calling thread's affinity.
pub(crate) fn affinity_of_self() -> Option<CpuSet> {
    let mut set = CpuSet::new();
    // SAFETY: `set` is laid out as a `cpu_set_t` (asserted above) of the
    // size passed; pid 0 is the calling thread.
    let r = unsafe {
        libc::sched_getaffinity(
            0,
            std::mem::size_of::<CpuSet>(),
            (&mut set as *mut CpuSet).cast(),
        )
    };
    (r == 0).then_some(set)
}

/// Sets thread `tid`'s affinity to `set`.
pub(crate) fn set_affinity(tid: libc::pid_t, set: &CpuSet) -> bool {
    // SAFETY: `set` is laid out as a `cpu_set_t` (asserted above) of the
    // size passed; a `tid` that is not (or no longer) a thread makes the
    // call fail, nothing else.
    unsafe {
        libc::sched_setaffinity(
            tid,
            std::mem::size_of::<CpuSet>(),
            (set as *const CpuSet).cast(),
        ) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_what_was_put_in_it() {
        let mut s = CpuSet::new();
        assert_eq!(s.count(), 0);
        s.set(3);
        s.set(70);
        s.set(CpuSet::MAX_CPU);
        assert!(s.is_set(3) && s.is_set(70) && !s.is_set(4));
        assert_eq!(s.count(), 2);
        s.unset(3);
        assert_eq!(s.count(), 1);
        let mut t = CpuSet::new();
        t.set(70);
        assert_eq!(s, t);
        assert_eq!(format!("{s:?}"), "{70}");
    }

    #[test]
    fn this_thread_runs_on_a_cpu_of_its_affinity() {
        let mine = affinity_of_self().expect("sched_getaffinity");
        assert!(mine.count() >= 1);
        assert!(set_affinity(gettid(), &mine));
        assert!(gettid() > 0);
        // The CPU may change right after the call, but only within the set.
        assert!(mine.is_set(current_cpu()));
    }
}
