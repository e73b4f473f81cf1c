//! The baseline of the Tokio benches: a runtime with hooks that do
//! nothing, where `fxt::tokio::instrument` installs fxt's.

use tokio::runtime::Builder;

/// The hooks `instrument` installs, each doing nothing.
pub fn empty_hooks(b: &mut Builder) {
    b.on_thread_park(|| {}).on_thread_unpark(|| {});
    #[cfg(tokio_unstable)]
    b.on_task_spawn(|_| {})
        .on_before_task_poll(|_| {})
        .on_after_task_poll(|_| {})
        .on_task_terminate(|_| {});
}
