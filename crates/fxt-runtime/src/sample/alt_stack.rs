//! The alternate signal stack the handler runs on (`SA_ONSTACK`), so that
//! neither its frames nor the kernel's signal frame land on a sampled
//! thread's own stack, which may be small or nearly used up.
//!
//! The handler needs more stack than the usual alternate stacks give
//! (`SIGSTKSZ`; Rust's runtime gives each thread one that size for its
//! stack overflow report): it keeps the stack copy and the record it
//! encodes on its stack (16 KiB) so that it never allocates. So a thread without an alternate
//! stack, or with one smaller than [`SIZE`], gets fxt's while it is armed;
//! disarming puts back the one it had (if the thread's current stack is
//! still fxt's: code that replaced it since keeps its own) and unmaps
//! fxt's. A thread whose own stack is large enough keeps it.

/// Bytes of the stack fxt maps (plus a guard page below, so an overflow
/// faults instead of writing over other memory). Pages are touched only
/// as deep as the handler goes.
const SIZE: usize = 256 << 10;
const GUARD: usize = 4096;

/// Stack the handler needs to take a sample, with a margin (debug builds
/// need the most): when it finds itself on the thread's own stack with
/// less left (the alternate stack was taken off: Rust's runtime disables
/// it as a thread ends, before the thread disarms), it drops the sample.
pub(super) const HANDLER_ROOM: u64 = (SIZE / 2) as u64;

/// An alternate signal stack fxt installed on the calling thread.
#[derive(Clone, Copy)]
pub(super) struct AltStack {
    /// The mapping: the guard page, then the stack.
    map: *mut libc::c_void,
    /// The thread's alternate stack before (`None`: it had none).
    previous: Option<libc::stack_t>,
}

impl AltStack {
    /// Gives the calling thread fxt's alternate signal stack unless its
    /// own is large enough. `None`: it kept its own (or none could be
    /// made: the handler then runs on the thread's stack, as without
    /// `SA_ONSTACK`).
    pub(super) fn install() -> Option<AltStack> {
        let previous = current();
        if previous.is_some_and(|p| p.ss_size >= SIZE) {
            return None;
        }
        // SAFETY: a fresh private anonymous mapping at an address of the
        // kernel's choosing; nothing else refers to it.
        let map = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                SIZE + GUARD,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let alt = AltStack { map, previous };
        // SAFETY: the guard page is the first page of the mapping just
        // made; the stack handed to the kernel is the rest of it, which
        // stays mapped until `remove` has taken it off the thread.
        let ok = unsafe {
            libc::mprotect(map, GUARD, libc::PROT_NONE) == 0
                && libc::sigaltstack(&alt.stack(), core::ptr::null_mut()) == 0
        };
        if !ok {
            // SAFETY: ours, not installed, not used again.
            unsafe { libc::munmap(map, SIZE + GUARD) };
            return None;
        }
        Some(alt)
    }

    /// The stack as the kernel takes it.
    fn stack(&self) -> libc::stack_t {
        libc::stack_t {
            // SAFETY: `GUARD` bytes into the mapping, which is longer.
            ss_sp: unsafe { self.map.cast::<u8>().add(GUARD) }.cast(),
            ss_flags: 0,
            ss_size: SIZE,
        }
    }

    /// Puts back the calling thread's previous alternate stack if fxt's
    /// is still its current one, then unmaps fxt's. Called on the thread
    /// that installed it, never from a signal handler (so the thread is
    /// not running on it).
    pub(super) fn remove(self) {
        let ours = self.stack().ss_sp;
        if current().is_some_and(|c| c.ss_sp == ours) {
            let back = self.previous.unwrap_or(libc::stack_t {
                ss_sp: core::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            });
            // SAFETY: `back` is the thread's stack from before `install`
            // (its owner keeps it mapped while it may be installed), or
            // the request to disable the alternate stack.
            if unsafe { libc::sigaltstack(&back, core::ptr::null_mut()) } != 0 {
                // Still in use (cannot happen off the handler): leak the
                // mapping rather than unmap a live signal stack.
                return;
            }
        }
        // SAFETY: the mapping made by `install`, no longer any thread's
        // signal stack (taken off above, or replaced since), used by
        // nothing else.
        unsafe { libc::munmap(self.map, SIZE + GUARD) };
    }
}

/// The calling thread's alternate signal stack, if it has one enabled.
fn current() -> Option<libc::stack_t> {
    // SAFETY: a zeroed `stack_t` is a valid value to be overwritten.
    let mut cur: libc::stack_t = unsafe { core::mem::zeroed() };
    // SAFETY: a null new stack only reads the current one into `cur`.
    let r = unsafe { libc::sigaltstack(core::ptr::null(), &mut cur) };
    (r == 0 && cur.ss_flags & libc::SS_DISABLE == 0).then_some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(stack: Option<&mut [u8]>) {
        let st = match stack {
            Some(m) => libc::stack_t {
                ss_sp: m.as_mut_ptr().cast(),
                ss_flags: 0,
                ss_size: m.len(),
            },
            None => libc::stack_t {
                ss_sp: core::ptr::null_mut(),
                ss_flags: libc::SS_DISABLE,
                ss_size: 0,
            },
        };
        // SAFETY: the memory outlives its use as the signal stack (each
        // case takes it off before the buffer goes).
        assert_eq!(unsafe { libc::sigaltstack(&st, core::ptr::null_mut()) }, 0);
    }

    /// No stack or a small one: fxt's while armed, the thread's own back
    /// after; a large one: kept, untouched.
    #[test]
    fn alt_stack_is_ours_only_while_needed() {
        std::thread::spawn(|| {
            set(None);
            let alt = AltStack::install().expect("installed on a thread without one");
            assert_eq!(current().map(|c| c.ss_size), Some(SIZE));
            alt.remove();
            assert!(current().is_none(), "disabled again");

            let mut small = vec![0u8; 8 << 10];
            let small_sp = small.as_mut_ptr();
            set(Some(&mut small));
            let alt = AltStack::install().expect("installed over a small one");
            assert_eq!(current().map(|c| c.ss_size), Some(SIZE));
            alt.remove();
            assert_eq!(current().map(|c| c.ss_sp.cast()), Some(small_sp));

            let mut large = vec![0u8; SIZE];
            let large_sp = large.as_mut_ptr();
            set(Some(&mut large));
            assert!(AltStack::install().is_none(), "a large one is kept");
            assert_eq!(current().map(|c| c.ss_sp.cast()), Some(large_sp));
            set(None);
        })
        .join()
        .unwrap();
    }
}
