//! Handlers that run in the child of a `fork` (`pthread_atfork`), one
//! registration per handler for the whole process: the session's (fxt is
//! inert in a child forked while tracing) and the provider's (the child
//! closes the listener's descriptors).

use std::sync::Once;

/// Registers `handler` to run in every child forked from now on, once per
/// `once`; `lost` says on stderr what a failed registration costs.
///
/// `handler` runs in a child of a multithreaded process, which has only
/// the forking thread: it may do only async-signal-safe work (atomics,
/// `close`), never take a lock or allocate.
pub(crate) fn on_fork_child(once: &'static Once, handler: extern "C" fn(), lost: &str) {
    once.call_once(|| {
        // SAFETY: `handler` is an `extern "C" fn()` that lives for the
        // whole program; the caller keeps to what a forked child of a
        // multithreaded process may do (see above).
        let rc = unsafe { libc::pthread_atfork(None, None, Some(handler)) };
        if rc != 0 {
            eprintln!("fxt: pthread_atfork failed ({rc}); {lost}");
        }
    });
}
