//! What a walk saw, how its damage is reported, and how many threads and
//! how large a range every walk of one input uses.

use std::sync::Once;

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
    static SAID: Once = Once::new();
    env_count("FXT_RANGE_BYTES", &SAID).unwrap_or(default)
}

/// How many threads read one input: `FXT_THREADS` if set to a number,
/// else the cores this process may run on.
pub fn reading_threads() -> usize {
    static SAID: Once = Once::new();
    env_count("FXT_THREADS", &SAID)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The whole number of at least 1 that variable `name` holds, if set; a
/// value that is not one is said on stderr (once per run, `said`) and
/// ignored, as the runtime does with its own variables.
fn env_count(name: &str, said: &Once) -> Option<usize> {
    let value = std::env::var_os(name)?;
    let n = value.to_str().and_then(|v| v.trim().parse::<usize>().ok());
    match n {
        Some(n) if n > 0 => Some(n),
        _ => {
            said.call_once(|| {
                eprintln!(
                    "fxt: {name}={} is not a whole number of at least 1; ignored",
                    value.to_string_lossy()
                )
            });
            None
        }
    }
}
