//! The records readers derive from the trace's compact ones
//! ([`fxt_format::derived`]: a lock's `held` slices and arrows, and every
//! other feature `fxt_symbols::derived::records` serves), appended by the
//! program itself with feature `symbolize` to every trace it can read
//! back, so that the file opens in a viewer as `fxt open` serves it.
//!
//! They need the whole trace (a release is matched with the waits it
//! ended), so they are appended once the trace is complete: to a file
//! (read back through a read-only mapping), or to a trace in memory. A
//! trace written to a caller's writer cannot be read back: `fxt symbolize`
//! (or any delivery of the `fxt` command) adds them. The marker
//! `fxt_symbols::derived` writes before them makes this idempotent: a
//! trace that carries them gains nothing from a reader.
//!
//! Without the feature these are no-ops the compiler removes: nothing is
//! read back, and the recording paths are never involved.

#[cfg(feature = "symbolize")]
use std::io;
use std::path::Path;

use crate::stats::Stats;

/// What was appended to a trace.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    /// Bytes appended.
    pub bytes: u64,
    /// Records appended.
    pub records: u64,
}

impl Appended {
    /// `stats` of the trace before the append, made to count the
    /// appended records (the file's length and its records).
    pub(crate) fn count_in(self, mut stats: Stats) -> Stats {
        stats.bytes_written += self.bytes;
        stats.records_written += self.records;
        stats
    }
}

/// Appends the derived records of the trace in the file `path` to it.
/// Nothing when the path is not a regular file (a pipe, a terminal: it
/// cannot be read back) or there is nothing to derive. A failure leaves
/// the trace as it was (a partial append is cut off) and says so on
/// stderr: the trace is whole without them, and `fxt symbolize` adds them.
#[cfg(feature = "symbolize")]
pub(crate) fn append_to_file(path: &Path) -> Appended {
    match try_append(path) {
        Ok(appended) => appended,
        Err(e) => {
            eprintln!(
                "fxt: cannot append the records derived from {} (fxt symbolize adds them): {e}",
                path.display()
            );
            Appended::default()
        }
    }
}

#[cfg(feature = "symbolize")]
fn try_append(path: &Path) -> io::Result<Appended> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(Appended::default());
    }
    let words = {
        // SAFETY: a read-only mapping of the trace this session has just
        // written, read within the length it had when mapped. No fxt code
        // writes the file while the mapping lives (the session is stopped,
        // or this is a snapshot's temporary file; a session's configured
        // output is also claimed against other fxt processes until the
        // trace is complete): only another program truncating the file
        // under us could fault, as with any mapped read.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        fxt_symbols::derived::records(&map)
    };
    if words.is_empty() {
        return Ok(Appended::default());
    }
    let bytes = fxt_format::encode::words_to_bytes(&words);
    if let Err(e) = file.write_all(&bytes) {
        // No partial record at the end of the trace.
        let _ = file.set_len(meta.len());
        return Err(e);
    }
    Ok(appended(&words))
}

/// Without feature `symbolize`: nothing.
#[cfg(not(feature = "symbolize"))]
#[inline(always)]
pub(crate) fn append_to_file(_path: &Path) -> Appended {
    Appended::default()
}

/// Appends the derived records of the trace `trace` (whole records) to it.
#[cfg(feature = "symbolize")]
pub(crate) fn append_to_vec(trace: &mut Vec<u8>) -> Appended {
    let words = fxt_symbols::derived::records(trace);
    trace.extend_from_slice(&fxt_format::encode::words_to_bytes(&words));
    appended(&words)
}

/// Without feature `symbolize`: nothing.
#[cfg(not(feature = "symbolize"))]
#[inline(always)]
pub(crate) fn append_to_vec(_trace: &mut [u8]) -> Appended {
    Appended::default()
}

#[cfg(feature = "symbolize")]
fn appended(words: &[u64]) -> Appended {
    Appended {
        bytes: words.len() as u64 * 8,
        records: super::samples::records(words).len() as u64,
    }
}
