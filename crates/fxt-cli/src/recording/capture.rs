//! Capturing the kernel's scheduling beside a recording, on every
//! platform: [`start_sched`] starts a capture on Linux and says why it
//! cannot elsewhere (the recording goes on without it).

#[cfg(target_os = "linux")]
use super::sched;

/// A scheduling capture while the command runs (Linux).
#[cfg(target_os = "linux")]
pub struct SchedCapture(sched::Capture);

#[cfg(target_os = "linux")]
impl SchedCapture {
    /// Ends the capture, keeping the whole system's scheduling or the
    /// tree of `root`'s.
    pub fn finish(self, system: bool, root: u32) -> Sched {
        let keep = if system {
            sched::Keep::System
        } else {
            sched::Keep::Tree(root)
        };
        Sched(self.0.finish(keep))
    }
}

/// The scheduling records to add to the archive.
#[cfg(target_os = "linux")]
pub struct Sched(pub sched::SchedTrace);

#[cfg(not(target_os = "linux"))]
pub struct SchedCapture;

#[cfg(not(target_os = "linux"))]
impl SchedCapture {
    /// Ends the capture (nothing was captured).
    pub fn finish(self, _: bool, _: u32) -> Sched {
        Sched
    }
}

#[cfg(not(target_os = "linux"))]
pub struct Sched;

/// Starts capturing scheduling, or says in one line why it cannot (the
/// recording goes on without it).
pub fn start_sched() -> Option<SchedCapture> {
    #[cfg(target_os = "linux")]
    match sched::Capture::start() {
        Ok(c) => Some(SchedCapture(c)),
        Err(sched::Unavailable(why)) => {
            eprintln!("fxt record: --sched: {why}; recording without scheduling");
            None
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("fxt record: --sched needs Linux; recording without scheduling");
        None
    }
}
