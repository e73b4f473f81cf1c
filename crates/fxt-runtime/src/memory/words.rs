//! The memory of a buffer: `Words`, atomic words in an anonymous mapping
//! (zeroed, page aligned, faulted in lazily) or in a shared mapping of a
//! file that grows.

use std::ops::Range;

use super::atomic::AtomicU64;

/// Words per 4 KiB page.
pub(crate) const PAGE_WORDS: usize = 4096 / 8;

/// The memory of a buffer: `len` atomic words, owned through `backing`
/// (a zeroed anonymous mapping, or a part of a shared file mapping). Reached by
/// ranges ([`Words::slice`]) rather than as one slice, because the mapped
/// kind may only be referenced where its file has grown
/// ([`Words::ready`]).
#[cfg(not(loom))]
pub(crate) struct Words {
    len: usize,
    backing: Backing,
}

#[cfg(not(loom))]
enum Backing {
    /// `len` zeroed words of an anonymous mapping (`None` when empty):
    /// page aligned, so chunks can be written to a file with `O_DIRECT`
    /// straight from the ring (`crate::collect`), and mapped lazily, so a
    /// 4 GiB buffer costs nothing until it is written. (The allocator's
    /// `alloc_zeroed` would write every page of a page-aligned block.)
    Anon(Option<memmap2::MmapMut>),
    /// Words `start..start + len` of a file mapping.
    Mapped(std::sync::Arc<super::file_map::FileMap>, usize),
}

#[cfg(not(loom))]
impl core::fmt::Debug for Words {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let kind = match self.backing {
            Backing::Anon(..) => "anonymous",
            Backing::Mapped(..) => "mapped",
        };
        write!(f, "Words({kind}, {} words)", self.len)
    }
}

#[cfg(not(loom))]
impl Words {
    /// `n` atomic words, all zero, in a fresh anonymous mapping: page
    /// aligned, and handed out by the operating system lazily (a 256 MiB
    /// buffer costs nothing until it is written).
    pub(crate) fn zeroed(n: usize) -> Words {
        let bytes = n
            .checked_mul(8)
            .expect("buffer size overflows the address space");
        let map = (n > 0).then(|| match memmap2::MmapMut::map_anon(bytes) {
            Ok(m) => m,
            Err(e) => panic!("cannot map {bytes} bytes of memory for the trace buffer: {e}"),
        });
        Words {
            len: n,
            backing: Backing::Anon(map),
        }
    }

    /// Words `[start, start + len)` of a file mapping.
    pub(crate) fn mapped(
        map: std::sync::Arc<super::file_map::FileMap>,
        start: usize,
        len: usize,
    ) -> Words {
        assert!(
            start <= map.len_words() && len <= map.len_words() - start,
            "range outside the mapping"
        );
        Words {
            len,
            backing: Backing::Mapped(map, start),
        }
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The words of `range` (inside `0..len`; for mapped words, inside
    /// what [`Words::ready`] made ready — else this panics).
    #[inline]
    pub(crate) fn slice(&self, range: Range<usize>) -> &[AtomicU64] {
        assert!(range.start <= range.end && range.end <= self.len);
        match &self.backing {
            Backing::Anon(None) => &[],
            Backing::Anon(Some(map)) => {
                let ptr = map.as_ptr() as *const AtomicU64;
                // SAFETY: the mapping is page aligned (so aligned for
                // `AtomicU64`), `len * 8` bytes long and zero-filled (zero
                // is a valid `AtomicU64`), and lives as long as `self`;
                // `range` lies inside it (asserted). It is only ever
                // accessed through these atomics (the `MmapMut` is never
                // used as `&mut [u8]`), so shared references are sound.
                unsafe { core::slice::from_raw_parts(ptr.add(range.start), range.len()) }
            }
            Backing::Mapped(map, start) => map.slice(start + range.start, range.len()),
        }
    }

    /// Makes `range` usable: for words of a growing file, grows the file
    /// over it (appending fillers); heap words always are.
    pub(crate) fn ready(&self, range: Range<usize>) -> std::io::Result<()> {
        match &self.backing {
            Backing::Anon(..) => Ok(()),
            Backing::Mapped(map, start) => map.grow_to((start + range.end) * 8),
        }
    }

    /// Whether `range` is usable without [`Words::ready`] growing anything
    /// (a signal handler may not grow the file).
    pub(crate) fn is_ready(&self, range: Range<usize>) -> bool {
        match &self.backing {
            Backing::Anon(..) => true,
            Backing::Mapped(map, start) => map.covers((start + range.end) * 8),
        }
    }
}

/// The memory of a buffer under loom: a boxed slice (loom's atomics are
/// not plain memory, so they are constructed one by one).
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct Words(Box<[AtomicU64]>);

#[cfg(loom)]
impl Words {
    /// `n` atomic words, all zero.
    pub(crate) fn zeroed(n: usize) -> Words {
        Words((0..n).map(|_| AtomicU64::new(0)).collect())
    }

    /// File mappings are not modelled: crash-safe sessions are not started
    /// under loom.
    pub(crate) fn mapped(_: std::sync::Arc<super::file_map::FileMap>, _: usize, _: usize) -> Words {
        unimplemented!("crash-safe mode under loom")
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn slice(&self, range: Range<usize>) -> &[AtomicU64] {
        &self.0[range]
    }

    pub(crate) fn ready(&self, _: Range<usize>) -> std::io::Result<()> {
        Ok(())
    }

    pub(crate) fn is_ready(&self, _: Range<usize>) -> bool {
        true
    }
}
