//! [`DirectFile`]: the file a drained session (streaming, or oneshot
//! written while it runs) writes with `O_DIRECT`, chunks straight from the
//! ring.
//!
//! Why: a drained ring reuses a few chunks instead of faulting fresh
//! memory in for every one (`crate::ring`), so the trace's bytes must leave
//! memory as fast as writers fill it, on a machine whose cores may all be
//! busy writing. Buffered `write` copies every byte into the page cache
//! and allocates its pages, which costs more CPU per byte than first touch
//! of fresh memory does; `O_DIRECT` hands the ring's pages to the device
//! (DMA), a small fraction of either in writes of a megabyte or more, and
//! the chunk is free again when the call returns (`bench-table --sections
//! sinks` measures all three).
//!
//! `O_DIRECT` needs the memory, the file offset and the length aligned to
//! the device's block (4 KiB covers every common one). So every write is
//! whole 4 KiB blocks: a chunk's unused tail gets a **filler** (a string
//! record for index 0, `crate::memory::filler`: the specification says
//! readers ignore it) up to the next block, stored into the released chunk
//! itself (the streamer owns it until it frees it), and staged bytes
//! (preamble, durable and large records) are padded the same way and
//! written from a page-aligned bounce buffer. Only the very last write,
//! when the session finishes, is buffered and unpadded, so the file ends
//! with its last record. Where `O_DIRECT` is refused (a file system
//! without it, another system), the same writes go through the page cache.

use std::fs::File;
use std::io;
use std::path::Path;

use crate::memory::atomic::{AtomicU64, Ordering};
use crate::memory::filler;

/// The block every `O_DIRECT` write is aligned to, in bytes.
pub(crate) const BLOCK: usize = 4096;

/// Words per block.
pub(crate) const BLOCK_WORDS: usize = BLOCK / 8;

/// Bytes per `pwritev` at most: large enough that the call's cost is
/// small per byte, small enough that a chunk is freed soon after it is
/// written.
const WRITE_BYTES: usize = 4 << 20;

/// A file written at increasing offsets, in whole blocks with `O_DIRECT`
/// where the system allows it.
pub(crate) struct DirectFile {
    file: File,
    /// `O_DIRECT` is on.
    direct: bool,
    /// Bytes written so far (the next write's offset).
    pos: u64,
    /// Page-aligned copy of staged bytes.
    bounce: Option<memmap2::MmapMut>,
}

impl DirectFile {
    /// Opens `path` for writing (created if needed), with `O_DIRECT` if
    /// the file system takes it. An existing file is not truncated here
    /// but by [`DirectFile::truncate`], on the streamer's thread: freeing
    /// the blocks of a large earlier trace takes milliseconds, which
    /// `start` must not wait for.
    pub(crate) fn create(path: &Path) -> io::Result<DirectFile> {
        let mut direct = false;
        #[cfg(target_os = "linux")]
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create(true).truncate(false);
            match o.clone().custom_flags(libc::O_DIRECT).open(path) {
                Ok(f) => {
                    direct = true;
                    f
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => o.open(path)?,
                Err(e) => return Err(e),
            }
        };
        #[cfg(not(target_os = "linux"))]
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(DirectFile {
            file,
            direct,
            pos: 0,
            bounce: None,
        })
    }

    /// Empties the file (what an earlier trace left), before the first
    /// write.
    pub(crate) fn truncate(&mut self) -> io::Result<()> {
        self.file.set_len(0)
    }

    /// Writes `staged` bytes (padded to a block with a filler unless
    /// `last`), then `chunks` (each a whole number of blocks of a chunk, see
    /// [`pad_chunk`]), in that order. Returns the bytes written (fillers
    /// included) and whether a filler was added.
    pub(crate) fn write(
        &mut self,
        staged: &mut Vec<u8>,
        chunks: &[&[AtomicU64]],
        last: bool,
    ) -> io::Result<(u64, bool)> {
        let mut padded = false;
        if last {
            self.buffered();
        } else if !staged.len().is_multiple_of(BLOCK) {
            let pad_words = (BLOCK - staged.len() % BLOCK) / 8;
            staged.extend_from_slice(&filler::filler(pad_words).to_le_bytes());
            staged.resize(staged.len() + (pad_words - 1) * 8, 0);
            padded = true;
        }
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(chunks.len() + 1);
        if !staged.is_empty() {
            let src: &[u8] = if self.direct {
                let need = staged.len().next_multiple_of(BLOCK);
                if self.bounce.as_ref().is_none_or(|b| b.len() < need) {
                    self.bounce = Some(memmap2::MmapMut::map_anon(need)?);
                }
                let bounce = self.bounce.as_mut().expect("just mapped");
                bounce[..staged.len()].copy_from_slice(staged);
                &bounce[..staged.len()]
            } else {
                staged
            };
            iov.push(libc::iovec {
                iov_base: src.as_ptr() as *mut libc::c_void,
                iov_len: src.len(),
            });
        }
        for c in chunks {
            debug_assert_eq!(std::mem::size_of_val(*c) % BLOCK, 0);
            iov.push(libc::iovec {
                iov_base: c.as_ptr() as *mut libc::c_void,
                iov_len: std::mem::size_of_val(*c),
            });
        }
        let total: usize = iov.iter().map(|v| v.iov_len).sum();
        self.write_all_iov(&mut iov)?;
        staged.clear();
        Ok((total as u64, padded))
    }

    /// Writes every byte `iov` names at `self.pos` on, in calls of at most
    /// [`WRITE_BYTES`], resuming after short writes.
    fn write_all_iov(&mut self, iov: &mut [libc::iovec]) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let mut i = 0;
        while i < iov.len() {
            // As many whole entries as fit in WRITE_BYTES (at least one).
            let (mut j, mut bytes) = (i, 0);
            while j < iov.len() && j - i < 1024 && (j == i || bytes + iov[j].iov_len <= WRITE_BYTES)
            {
                bytes += iov[j].iov_len;
                j += 1;
            }
            // SAFETY: every entry points at `iov_len` readable bytes (the
            // staged or bounce buffer, or a chunk of the ring, all alive
            // and unchanged until this call returns: the streamer owns
            // released chunks until it frees them, after this); `j - i`
            // entries starting at `i` are in bounds.
            let n = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    iov[i..j].as_ptr(),
                    (j - i) as libc::c_int,
                    self.pos as libc::off_t,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // The file system took O_DIRECT at open but refuses
                    // this write: go on through the page cache.
                    Some(libc::EINVAL) if self.direct => {
                        self.buffered();
                        continue;
                    }
                    _ => return Err(e),
                }
            }
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            let mut n = n as usize;
            self.pos += n as u64;
            // Skip what was written; a partly written entry is shortened.
            while n > 0 {
                let v = &mut iov[i];
                let k = n.min(v.iov_len);
                // SAFETY: `k <= iov_len`: the pointer stays inside (or one
                // past the end of) the entry's buffer.
                v.iov_base = unsafe { (v.iov_base as *mut u8).add(k) } as *mut libc::c_void;
                v.iov_len -= k;
                n -= k;
                if v.iov_len == 0 {
                    i += 1;
                }
            }
            while i < iov.len() && iov[i].iov_len == 0 {
                i += 1;
            }
        }
        Ok(())
    }

    /// Turns `O_DIRECT` off: later writes go through the page cache (the
    /// last, unaligned write; or a file system that refuses it).
    fn buffered(&mut self) {
        if !self.direct {
            return;
        }
        self.direct = false;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = self.file.as_raw_fd();
            // SAFETY: F_GETFL/F_SETFL on a descriptor this struct owns.
            unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                if flags >= 0 {
                    libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT);
                }
            }
        }
    }

    /// Overwrites the 8 bytes at `offset` (already written) with `value`,
    /// little-endian (the initialization record's ticks per second, once
    /// the clock is calibrated). Turns `O_DIRECT` off: this is one of the
    /// last writes.
    pub(crate) fn patch_u64(&mut self, offset: u64, value: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.buffered();
        self.file.write_all_at(&value.to_le_bytes(), offset)
    }
}

/// Copies the first `len` bytes of `file` to `out`, with the 8 bytes at
/// `patch.0` replaced by `patch.1` (little-endian).
pub(crate) fn copy_prefix(
    file: &File,
    len: u64,
    patch: (u64, u64),
    out: &mut impl io::Write,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; WRITE_BYTES];
    let mut pos = 0u64;
    while pos < len {
        let n = (len - pos).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], pos)?;
        for (i, b) in patch.1.to_le_bytes().iter().enumerate() {
            let at = patch.0 + i as u64;
            if (pos..pos + n as u64).contains(&at) {
                buf[(at - pos) as usize] = *b;
            }
        }
        out.write_all(&buf[..n])?;
        pos += n as u64;
    }
    Ok(())
}

/// Makes the released chunk `chunk` (whose first `words` words hold its
/// records) a whole number of blocks: a filler over the rest of its last
/// block, stored into the chunk. Returns the blocks' words and whether a
/// filler was stored.
///
/// The caller owns the chunk: it is released and not yet freed, so no
/// writer stores into it, and readers of its records stop at `words`.
pub(crate) fn pad_chunk(chunk: &[AtomicU64], words: usize) -> (&[AtomicU64], bool) {
    let end = words.next_multiple_of(BLOCK_WORDS);
    debug_assert!(end <= chunk.len(), "chunks are whole blocks");
    if end > words {
        chunk[words].store(filler::filler(end - words), Ordering::Relaxed);
    }
    (&chunk[..end], end > words)
}
