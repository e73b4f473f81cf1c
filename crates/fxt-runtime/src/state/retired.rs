//! Sessions a thread let go of where it may not free them: an allocation
//! hook that moves its thread's writer from a session that is over to
//! the live one (`crate::thread::join_from_hook`) must not drop the last
//! reference to the old session (its buffers would be unmapped and its
//! memory freed inside the allocator, perhaps in a signal handler that
//! interrupted it). The hook *abandons* its reference instead: it keeps
//! the session alive and counts it in [`Shared::abandoned`]; every
//! session stopped is listed here, and the next start or finish (a normal
//! context) gives the abandoned references back ([`release_abandoned`]),
//! freeing the sessions no thread holds any more.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use super::shared::lock;
use super::Shared;

/// The sessions stopped whose memory may still be held (by threads that
/// have not left them yet, or abandoned by a hook).
static STOPPED: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Lists `shared`, just stopped (a normal context: it allocates).
pub(crate) fn stopped(shared: &Arc<Shared>) {
    lock(&STOPPED).push(Arc::downgrade(shared));
}

/// Gives up the reference `shared` without dropping it (no free, no
/// lock, no allocation: callable from an allocation hook). The session
/// must have been [`stopped`], so that [`release_abandoned`] finds it.
pub(crate) fn abandon(shared: Arc<Shared>) {
    let session = Arc::into_raw(shared);
    // SAFETY: `session` is the pointer of the reference just given up,
    // which keeps the session alive until `release_abandoned` gives it
    // back.
    let session = unsafe { &*session };
    // Release: pairs with the Acquire swap in `release_abandoned`; this
    // thread's last uses of the session (its lease given back) happen
    // before the session may be freed there.
    session.abandoned.fetch_add(1, Ordering::Release);
}

/// Gives back the references abandoned so far (a normal context: the
/// last one frees its session), and forgets the sessions already freed.
pub(crate) fn release_abandoned() {
    let mut held = Vec::new();
    lock(&STOPPED).retain(|weak| {
        // A session freed: no reference is abandoned in it (each one
        // abandoned keeps it alive).
        let Some(session) = weak.upgrade() else {
            return false;
        };
        // Acquire: pairs with `abandon`'s Release.
        let n = session.abandoned.swap(0, Ordering::Acquire);
        for _ in 0..n {
            // SAFETY: each of the `n` counted was a strong reference given
            // up with `Arc::into_raw` on this very allocation (`abandon`),
            // and `session` holds one more: the count stays above zero.
            unsafe { Arc::decrement_strong_count(Arc::as_ptr(&session)) };
        }
        held.push(session);
        true
    });
    // Outside the lock: dropping the last reference frees the session.
    drop(held);
}
