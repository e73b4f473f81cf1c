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

use std::cell::Cell;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::filler::{filler, FILLER, STRIDE};

/// A shared, writable mapping of a trace file that grows.
///
/// The mapping covers the file's final size from the start, but the file
/// itself only grows as far as it has been written: [`FileMap::grow_to`]
/// appends 1-word fillers with `pwrite` (in page-sized steps, so even a
/// write cut short by the death of the process leaves whole pages of
/// fillers), and only then may the new part of the mapping be used. Memory
/// past the file's end is never referenced (a store there would raise
/// `SIGBUS`): [`FileMap::slice`] hands out only grown words. So a file
/// killed at any moment holds whole records and fillers up to its end.
pub(crate) struct FileMap {
    map: memmap2::MmapMut,
    file: File,
    /// Bytes of the file written (its length); only grows. Stored with
    /// Release after the `pwrite` that grew it; loaded with Acquire before
    /// the mapping's new part is referenced.
    grown: AtomicUsize,
    /// Serializes growth (the prefaulter and writers that overtake it).
    grow_lock: Mutex<()>,
}

impl std::fmt::Debug for FileMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FileMap({} of {} bytes)",
            self.grown.load(Ordering::Relaxed),
            self.map.len()
        )
    }
}

thread_local! {
    /// The calling thread is in a signal handler that writes to the
    /// buffer (the CPU sampler's), where growing the file is forbidden.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as in (or out of) a signal handler that may
/// not grow a file: [`FileMap::grow_to`] asserts it is not called there.
pub(crate) fn set_in_handler(on: bool) {
    IN_HANDLER.with(|h| h.set(on));
}

/// Bytes appended per `pwrite` when growing.
const GROW_STEP: usize = 256 << 10;

/// `GROW_STEP` bytes of 1-word fillers.
fn filler_block() -> &'static [u8] {
    static BLOCK: OnceLock<Vec<u8>> = OnceLock::new();
    BLOCK.get_or_init(|| FILLER.to_le_bytes().repeat(GROW_STEP / 8))
}

impl FileMap {
    /// Creates `path` (replacing it) holding `preamble` followed by 1-word
    /// fillers up to `sparse_from` words, then [`STRIDE`]-word fillers up to
    /// `initial_words` (one header word per stride over a hole: the large
    /// region, see `crate::large`), and maps `total_words` words of it
    /// shared and writable (the file grows into the rest with
    /// [`FileMap::grow_to`]). The file is written under a temporary name
    /// beside `path` and renamed over it, so `path` never holds a partial
    /// preamble (a process killed before the rename leaves the temporary
    /// file and `path` as it was).
    pub(crate) fn create(
        path: &Path,
        preamble: &[u64],
        sparse_from: usize,
        initial_words: usize,
        total_words: usize,
    ) -> io::Result<Arc<FileMap>> {
        assert!(preamble.len() <= sparse_from && sparse_from <= initial_words);
        assert!(initial_words <= total_words);
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".fxt-start-{}", std::process::id()));
        let tmp = path.with_file_name(name);
        let mut file: File = crate::output::create_fresh(&tmp)?;
        let mut first: Vec<u8> = preamble.iter().flat_map(|w| w.to_le_bytes()).collect();
        first.resize(sparse_from * 8, 0);
        for w in first[preamble.len() * 8..].chunks_exact_mut(8) {
            w.copy_from_slice(&FILLER.to_le_bytes());
        }
        let sparse = |file: &File| -> io::Result<()> {
            file.set_len(initial_words as u64 * 8)?;
            let mut at = sparse_from;
            while at < initial_words {
                let k = (initial_words - at).min(STRIDE);
                file.write_all_at(&filler(k).to_le_bytes(), at as u64 * 8)?;
                at += k;
            }
            Ok(())
        };
        if let Err(e) = file
            .write_all(&first)
            .and_then(|_| sparse(&file))
            .and_then(|_| std::fs::rename(&tmp, path))
        {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        // SAFETY: `map_mut` is unsafe because the file may be changed
        // behind the mapping's back (by this or another process), which
        // would change memory that Rust code reads. We only ever access the
        // mapping through `AtomicU64`s (see `slice`), for which concurrent
        // changes are defined behavior; another process writing the file is
        // out of scope (module docs). The file is never truncated while
        // mapped (`finish` renames a new file over its name, leaving this
        // inode and mapping intact), and the part of the mapping past the
        // file's end is never referenced (see `slice`).
        let map = unsafe {
            memmap2::MmapOptions::new()
                .len(total_words * 8)
                .map_mut(&file)?
        };
        Ok(Arc::new(FileMap {
            map,
            file,
            grown: AtomicUsize::new(initial_words * 8),
            grow_lock: Mutex::new(()),
        }))
    }

    /// Words of the whole mapping (grown or not).
    pub(crate) fn len_words(&self) -> usize {
        self.map.len() / 8
    }

    /// Whether the file is at least `bytes` long already (no growth
    /// needed to use them). Lock- and allocation-free, for a signal
    /// handler.
    pub(crate) fn covers(&self, bytes: usize) -> bool {
        // Acquire pairs with the Release store in `grow_to`: the file
        // covers the bytes before they are referenced.
        self.grown.load(Ordering::Acquire) >= bytes
    }

    /// Makes the file at least `bytes` long (rounded up to a whole step,
    /// at most the mapping's size), appending 1-word fillers.
    pub(crate) fn grow_to(&self, bytes: usize) -> io::Result<()> {
        // Acquire pairs with the Release store below.
        if self.grown.load(Ordering::Acquire) >= bytes {
            return Ok(());
        }
        // A lock, a `pwrite`, a first allocation: never in the CPU
        // sampler's signal handler (it drops its sample instead).
        debug_assert!(
            !IN_HANDLER.with(Cell::get),
            "a crash-safe file grown from the sampler's signal handler"
        );
        let _g = self.grow_lock.lock().unwrap_or_else(|e| e.into_inner());
        let target = bytes.next_multiple_of(GROW_STEP).min(self.map.len());
        let mut at = self.grown.load(Ordering::Relaxed);
        while at < target {
            let n = (target - at).min(GROW_STEP);
            self.file.write_all_at(&filler_block()[..n], at as u64)?;
            at += n;
            // Release pairs with the Acquire loads in `grow_to` and `slice`:
            // the file covers these bytes before anyone references them.
            self.grown.store(at, Ordering::Release);
        }
        Ok(())
    }

    /// Words `[start, start + len)` of the mapping, which must lie in the
    /// grown part of the file (a caller bug otherwise: panics).
    pub(crate) fn slice(&self, start: usize, len: usize) -> &[std::sync::atomic::AtomicU64] {
        let end = start.checked_add(len).expect("range overflows");
        assert!(
            end * 8 <= self.grown.load(Ordering::Acquire),
            "mapping referenced past the file's end"
        );
        let ptr = self.map.as_ptr() as *const std::sync::atomic::AtomicU64;
        // SAFETY:
        // * alignment: a mapping starts on a page boundary (>= 8 bytes);
        // * size and validity: `[start, end)` lies inside the mapping and
        //   inside the file's written length (checked above; the file only
        //   grows while mapped), so the memory is backed by the file; every
        //   bit pattern is a valid `AtomicU64`, which has the size,
        //   alignment and bit validity of `u64`;
        // * lifetime: the slice borrows `self`, which owns the mapping
        //   (callers keep an `Arc<FileMap>` for as long as they use it);
        // * aliasing: no other Rust reference to this memory exists (the
        //   `MmapMut` is never dereferenced as `&[u8]` or `&mut [u8]`), and
        //   all access goes through atomics, so concurrent use from many
        //   threads is sound.
        unsafe { std::slice::from_raw_parts(ptr.add(start), len) }
    }
}
