//! fxt's own threads (the prefaulter, the streamer, the snapshot trigger):
//! every one is spawned by [`spawn`], so what they share (their `fxt-`
//! name, and anything else a helper thread must be given) is set in one
//! place.

use std::io;
use std::thread::JoinHandle;

/// Spawns the helper thread `name` (shown by `ps`, `top` and debuggers;
/// by convention `fxt-…`) running `body`.
pub(crate) fn spawn<T, F>(name: &str, body: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new().name(name.into()).spawn(body)
}
