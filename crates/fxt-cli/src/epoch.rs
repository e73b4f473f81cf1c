//! When what a command resolved from string indices goes stale: one rule
//! for every command, the decoder's strings epoch
//! ([`Context::strings_epoch`]), which changes whenever an index may read
//! otherwise (a string defined, a provider switched or restarted). A
//! command that keeps bytes or ids per string index asks
//! [`Epoch::changed`] before it uses them, instead of listing the records
//! that change what an index means. What a command keeps per thread
//! index goes stale by the threads epoch the same way
//! ([`ByThreadIndex`]).

use fxt_format::decode::Context;

/// The strings epoch that what was resolved belongs to: a plain number,
/// [`NO_EPOCH`] before the first, so that a check is one comparison.
#[derive(Clone, Copy)]
pub struct Epoch(u64);

/// [`Epoch`] before the first call: no decoder counts its epochs this far.
const NO_EPOCH: u64 = u64::MAX;

impl Default for Epoch {
    fn default() -> Self {
        Epoch(NO_EPOCH)
    }
}

impl Epoch {
    /// Whether what was resolved belongs to strings epoch `now`.
    #[inline(always)]
    pub fn holds(&self, now: u64) -> bool {
        self.0 == now
    }

    /// Whether the record `ctx` is at reads its string indices otherwise
    /// than the record of the last call (or this is the first call): then
    /// what was resolved from them must be forgotten.
    #[inline(always)]
    pub fn changed(&mut self, ctx: &Context<'_>) -> bool {
        self.changed_to(ctx.strings_epoch())
    }

    /// [`Epoch::changed`] of a record whose strings epoch is `now` (read
    /// once for all the strings of an event, not through the context at
    /// each).
    #[inline(always)]
    pub fn changed_to(&mut self, now: u64) -> bool {
        if self.0 == now {
            return false;
        }
        self.0 = now;
        true
    }
}

/// What a command found per thread index (its own number for the thread
/// an index names), kept while the decoder's threads epoch
/// ([`Context::threads_epoch`]) holds: it changes whenever an index may
/// name another thread (a thread defined, a provider switched or
/// restarted). In place: a thread index is a byte, so no bound is
/// checked.
pub struct ByThreadIndex {
    found: [u32; 256],
    epoch: Epoch,
}

/// An entry of [`ByThreadIndex::found`] not looked up yet.
const NOT_FOUND: u32 = u32::MAX;

impl Default for ByThreadIndex {
    fn default() -> Self {
        ByThreadIndex {
            found: [NOT_FOUND; 256],
            epoch: Epoch::default(),
        }
    }
}

impl ByThreadIndex {
    /// Forgets what was found if the record `ctx` is at reads thread
    /// indices otherwise than the record of the last check. What is
    /// found after it holds for that record and the ones after it until
    /// the next record that is not an event (only such a record changes
    /// the threads epoch).
    #[inline(always)]
    pub fn check(&mut self, ctx: &Context<'_>) {
        self.check_epoch(ctx.threads_epoch());
    }

    /// [`ByThreadIndex::check`] at a record whose threads epoch is `now`
    /// (an event head's, read where the walk read it:
    /// [`fxt_format::decode::HeadAt::threads_epoch`]).
    #[inline(always)]
    pub fn check_epoch(&mut self, now: u64) {
        if self.epoch.changed_to(now) {
            self.found = [NOT_FOUND; 256];
        }
    }

    /// What was found for thread index `index` since the last check
    /// that forgot.
    #[inline(always)]
    pub fn get(&self, index: u8) -> Option<usize> {
        match self.found[usize::from(index)] {
            NOT_FOUND => None,
            found => Some(found as usize),
        }
    }

    /// Keeps `found` for thread index `index`.
    #[inline(always)]
    pub fn set(&mut self, index: u8, found: usize) {
        self.found[usize::from(index)] = found as u32;
    }
}
