//! SIGINT and SIGTERM as a request to finish: `fxt trace record` ends its
//! window early (Ctrl-C), the scheduling recorder writes what it captured.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by the handler; read by the waiting loop.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    // Relaxed: a flag polled by the one waiting loop, nothing else is
    // published with it.
    SIGNALLED.store(true, Ordering::Relaxed);
}

/// Makes SIGINT and SIGTERM set the flag instead of ending the process.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask"
        // value; the handler is an `extern "C" fn(c_int)` that only stores
        // to an atomic (async-signal-safe).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Holds SIGINT and SIGTERM pending (`true`) or lets them in (`false`),
/// for this thread and the threads it starts from now on: a signal that
/// lands in a request's socket call makes it fail (EINTR, not restarted on
/// a socket with a timeout), so requests run with the signals held, and
/// the window's wait lets them in (a held signal arrives then).
pub fn hold(on: bool) {
    // SAFETY: a zeroed sigset_t is valid storage that sigemptyset
    // initializes; pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let how = if on {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Whether SIGINT or SIGTERM arrived since [`install`].
pub fn signalled() -> bool {
    SIGNALLED.load(Ordering::Relaxed)
}

/// Waits until `deadline` (`None`: forever) or a signal, whichever comes
/// first; returns whether a signal came.
pub fn wait_until(deadline: Option<Instant>) -> bool {
    loop {
        if signalled() {
            return true;
        }
        let step = Duration::from_millis(20);
        match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => std::thread::sleep(left.min(step)),
                _ => return false,
            },
            None => std::thread::sleep(step),
        }
    }
}
