//! What a walk saw, how its damage is reported, and how many threads and
//! how large a range every walk of one input uses.

use fxt_format::decode::DecodeError;

/// What a walk saw.
#[derive(Default)]
pub struct Walk {
    /// Records decoded.
    pub records: u64,
    /// Decode errors (skipped records and the fatal one).
    pub errors: u64,
    /// Malformed records that were skipped.
    pub skipped: Vec<DecodeError>,
    /// The fatal error that ended the walk, if any.
    pub damage: Option<DecodeError>,
    /// Bytes of well-framed records read.
    pub bytes: u64,
}

/// Notes a decode error of input `name` in `walk` and, unless `quiet`,
/// warns about it.
pub fn damaged(name: &str, quiet: bool, walk: &mut Walk, error: DecodeError, warn: impl Fn(&str)) {
    walk.errors += 1;
    let fatal = error.is_fatal();
    if quiet {
        // The caller reports them.
    } else if fatal {
        warn(&format!(
            "{name}: {error}; read {} records up to the damage",
            walk.records
        ));
    } else {
        warn(&format!("{name}: {error}; record skipped"));
    }
    if fatal {
        walk.damage = Some(error);
    } else {
        walk.skipped.push(error);
    }
}

/// Input bytes per range when a command reads one file on several
/// threads: `FXT_RANGE_BYTES` (for tests, to cut small traces at many
/// places), else `default`.
pub fn range_bytes(default: usize) -> usize {
    std::env::var("FXT_RANGE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(default)
}

/// How many threads read one input: `FXT_THREADS` if set to a number,
/// else the cores this process may run on.
pub fn reading_threads() -> usize {
    match std::env::var("FXT_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}
