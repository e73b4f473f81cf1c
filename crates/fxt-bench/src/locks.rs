//! The lock workloads `benches/locks.rs`, `bench-locks` and
//! `lock-instructions` share: each kind of mutex behind one interface, and
//! work of a known number of cycles to put inside and between critical
//! sections.

use std::hint::black_box;

/// A mutex of each kind, behind one interface.
pub trait Lock: Send + Sync + 'static {
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl Lock for parking_lot::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

impl Lock for std::sync::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap())
    }
}

impl Lock for fxt::sync::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock())
    }
}

/// `n` dependent multiply-adds: work that takes a known number of cycles.
#[inline(always)]
pub fn work(mut x: u64, n: u32) -> u64 {
    for _ in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}
