//! Waking a helper thread that backs off while it has nothing to do.
//!
//! A helper that found no work waits longer each time (the streamer: up
//! to `collect::stream::IDLE_WAIT`), so that an idle session costs little
//! CPU. Before a long wait it raises [`IdleWake`]'s flag; a writer whose
//! slow path sees the helper needed (it took a chunk of a streaming ring:
//! a burst has begun) and the flag raised clears it and unparks the
//! helper.
//! The writer's check is one load while the flag is down, and of the
//! writers that find it raised only the one that clears it unparks, so a
//! burst of refills wakes the helper once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::Duration;

/// A helper thread's "waiting long" flag and its handle (see the module
/// docs).
#[derive(Debug, Default)]
pub(crate) struct IdleWake {
    /// Raised by the helper before a long wait, lowered by whoever wakes
    /// it (or by the helper once its wait is over).
    waiting: AtomicBool,
    /// The helper, set by itself before its first long wait.
    thread: OnceLock<Thread>,
}

impl IdleWake {
    /// A flag down, no helper yet.
    pub(crate) fn new() -> IdleWake {
        IdleWake::default()
    }

    /// Parks the calling helper for at most `timeout`, wakeable by
    /// [`IdleWake::wake_if`] meanwhile. Only the one helper that owns
    /// this flag calls it.
    pub(crate) fn park_long(&self, timeout: Duration) {
        self.thread.get_or_init(std::thread::current);
        // Release pairs with the Acquire load in `wake_if`: a writer that
        // sees the flag raised sees what the helper did before it (its
        // handle set above, its last pass), whatever `needed` then reads.
        self.waiting.store(true, Ordering::Release);
        // A wake between the store and the park leaves the thread's token:
        // the park then returns at once.
        std::thread::park_timeout(timeout);
        // Relaxed: only a hint that saves writers an unpark; a writer that
        // cleared it first unparked us (a token left for the next park,
        // which then returns early: one more pass, harmless).
        self.waiting.store(false, Ordering::Relaxed);
    }

    /// Whether the helper is in a long wait.
    #[cfg(test)]
    pub(crate) fn is_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Wakes the helper if it is in a long wait and `needed()` (evaluated
    /// only then) says so; returns whether this call woke it. One load
    /// when the helper is not waiting long.
    #[inline]
    pub(crate) fn wake_if(&self, needed: impl FnOnce() -> bool) -> bool {
        // Acquire: see `park_long`.
        if !self.waiting.load(Ordering::Acquire) || !needed() {
            return false;
        }
        // Whoever lowers the flag unparks; the others see it down.
        if !self.waiting.swap(false, Ordering::Relaxed) {
            return false;
        }
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
        true
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::IdleWake;
    use std::sync::Arc;
    use std::time::Duration;

    /// A helper parked for an hour, once its flag is raised.
    fn parked_helper() -> (Arc<IdleWake>, std::thread::JoinHandle<()>) {
        let wake = Arc::new(IdleWake::new());
        let w = wake.clone();
        let helper = std::thread::spawn(move || w.park_long(Duration::from_secs(3600)));
        while !wake.is_waiting() {
            std::thread::yield_now();
        }
        (wake, helper)
    }

    #[test]
    fn a_needed_wake_lowers_the_flag_and_unparks_the_helper_once() {
        let (wake, helper) = parked_helper();
        assert!(wake.wake_if(|| true));
        assert!(!wake.is_waiting());
        // A second writer of the same burst finds the flag down.
        assert!(!wake.wake_if(|| panic!("not evaluated while not waiting")));
        // The helper returns from its hour-long park (a lost unpark hangs
        // here).
        helper.join().unwrap();
        assert!(!wake.is_waiting());
    }

    #[test]
    fn a_wake_not_needed_leaves_the_helper_waiting() {
        let (wake, helper) = parked_helper();
        assert!(!wake.wake_if(|| false));
        assert!(wake.is_waiting());
        assert!(wake.wake_if(|| true));
        helper.join().unwrap();
    }

    #[test]
    fn nothing_to_wake_while_the_flag_is_down() {
        let wake = IdleWake::new();
        assert!(!wake.wake_if(|| panic!("not evaluated while not waiting")));
    }
}
