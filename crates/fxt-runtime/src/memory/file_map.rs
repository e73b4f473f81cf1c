//! The shared, writable mapping of a crash-safe output file (the layout of
//! the file and why it is valid at every moment are in
//! [`super::filler`]).
//!
//! Out of scope: another process writing the file while the session runs
//! (the mapping is shared, so its writes would show through: they could
//! not break memory safety, since the memory is only accessed through
//! atomics, but they could corrupt the trace), and a power loss (the page
//! cache never reaching the disk): only the death of the process is
//! covered.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use super::filler::FILLER;

/// A shared, writable mapping of a whole trace file.
pub(crate) struct FileMap {
    map: memmap2::MmapMut,
}

impl std::fmt::Debug for FileMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileMap({} bytes)", self.map.len())
    }
}

impl FileMap {
    /// Creates (or truncates) `path`, writes `preamble` followed by 1-word
    /// fillers up to `total_words` words, and maps the file shared and
    /// writable.
    pub(crate) fn create(
        path: &Path,
        preamble: &[u64],
        total_words: usize,
    ) -> io::Result<Arc<FileMap>> {
        assert!(preamble.len() <= total_words && total_words > 0);
        let mut file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        // One sequential write of the whole image (faster than faulting
        // the pages in through the mapping): the preamble and fillers, then
        // blocks of fillers.
        const BLOCK_WORDS: usize = 1 << 17;
        let block_words = BLOCK_WORDS.min(total_words);
        let fillers = vec![FILLER; block_words];
        let mut first: Vec<u64> = preamble.to_vec();
        first.resize(block_words.max(preamble.len()), FILLER);
        let block =
            |words: &[u64]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
        file.write_all(&block(&first))?;
        let mut written = first.len();
        let full = block(&fillers);
        while written < total_words {
            let n = (total_words - written).min(BLOCK_WORDS);
            file.write_all(&full[..n * 8])?;
            written += n;
        }
        file.flush()?;
        // SAFETY: `map_mut` is unsafe because the file may be changed
        // behind the mapping's back (by this or another process), which
        // would change memory that Rust code reads. We only ever access the
        // mapping through `AtomicU64`s (see `words`), for which concurrent
        // changes are defined behavior; another process writing the file is
        // out of scope (module docs). The file is not truncated while
        // mapped: only `finish` replaces it, by renaming a new file over
        // its name, which leaves this inode and mapping intact.
        let map = unsafe { memmap2::MmapMut::map_mut(&file)? };
        Ok(Arc::new(FileMap { map }))
    }

    /// The whole mapping as atomic words.
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn words(&self) -> &[std::sync::atomic::AtomicU64] {
        let len = self.map.len() / 8;
        let ptr = self.map.as_ptr() as *const std::sync::atomic::AtomicU64;
        // SAFETY:
        // * alignment: a mapping starts on a page boundary (>= 8 bytes);
        // * size and validity: the mapping is `len * 8` bytes of the file
        //   (the file was written to `total_words * 8` bytes before
        //   mapping), and every bit pattern is a valid `AtomicU64`, which
        //   has the size, alignment and bit validity of `u64`;
        // * lifetime: the slice borrows `self`, which owns the mapping
        //   (callers keep an `Arc<FileMap>` for as long as they use it);
        // * aliasing: no other Rust reference to this memory exists (the
        //   `MmapMut` is never dereferenced as `&[u8]` or `&mut [u8]`), and
        //   all access goes through atomics, so concurrent use from many
        //   threads is sound.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}
