//! A CPU- and memory-heavy neighbour for the loaded latency runs: a child
//! process that maps, fills and unmaps a few GiB in a loop (page faults,
//! zeroing, memory bandwidth, and pressure on the kernel's page allocator
//! and huge-page compaction), for a bounded time.
//!
//! The parent starts it with [`Neighbour::start`] and kills it when the
//! guard drops; the child also stops by itself at its deadline, so an
//! interrupted benchmark leaves nothing running for long.

use std::hint::black_box;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Bytes the neighbour fills per round.
pub const NEIGHBOUR_BYTES: usize = 2 << 30;

/// A running neighbour process (killed on drop).
#[derive(Debug)]
pub struct Neighbour {
    child: Child,
}

impl Neighbour {
    /// Starts `exe --hog BYTES SECONDS` (the `bench-table` binary's child
    /// mode that runs [`hog`]) and gives it a moment to start touching
    /// memory.
    pub fn start(exe: &std::path::Path, bytes: usize, limit: Duration) -> std::io::Result<Self> {
        let child = Command::new(exe)
            .args(["--hog", &bytes.to_string(), &limit.as_secs().to_string()])
            .spawn()?;
        std::thread::sleep(Duration::from_millis(200));
        Ok(Neighbour { child })
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Child `--hog BYTES SECONDS`: until the deadline, allocates `BYTES`,
/// writes every byte, and frees it again. Prints the rounds done.
pub fn hog(args: &[String]) {
    let bytes: usize = args[0].parse().expect("bytes");
    let seconds: u64 = args[1].parse().expect("seconds");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut rounds = 0u64;
    while Instant::now() < deadline {
        // A fresh mapping each round (allocations this large are mmap'd
        // and unmapped on drop), so every round faults every page again.
        let block = vec![rounds as u8 | 1; bytes];
        black_box(&block);
        rounds += 1;
    }
    println!("HOG {rounds}");
}
