//! When what a command resolved from string indices goes stale: one rule
//! for every command, the decoder's strings epoch
//! ([`Context::strings_epoch`]), which changes whenever an index may read
//! otherwise (a string defined, a provider switched or restarted). A
//! command that keeps bytes or ids per string index asks
//! [`Epoch::changed`] before it uses them, instead of listing the records
//! that change what an index means.

use fxt_format::decode::Context;

/// The strings epoch that what was resolved belongs to.
#[derive(Default, Clone, Copy)]
pub struct Epoch(Option<u64>);

impl Epoch {
    /// Whether the record `ctx` is at reads its string indices otherwise
    /// than the record of the last call (or this is the first call): then
    /// what was resolved from them must be forgotten.
    #[inline(always)]
    pub fn changed(&mut self, ctx: &Context<'_>) -> bool {
        let now = Some(ctx.strings_epoch());
        if self.0 == now {
            return false;
        }
        self.0 = now;
        true
    }
}
