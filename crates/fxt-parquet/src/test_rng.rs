//! The unit tests' source of varied inputs: xorshift64, the same
//! sequence for a seed on every run, so a failure names its round.

/// A generator of the xorshift64 sequence after `seed` (not 0).
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
