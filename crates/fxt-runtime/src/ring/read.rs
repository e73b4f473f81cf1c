//! The reading side of the ring: a chunk seen by the collector and the
//! streamer ([`ChunkSnapshot`]), read like a seqlock where a writer may
//! take it back (circular), and a written-out chunk freed for reuse
//! (streaming). See the [module docs](super) for the protocol.

use super::*;

/// A chunk with data, as seen by a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSnapshot {
    /// Index of the chunk.
    pub idx: usize,
    /// Sequence number of its current contents.
    pub seq: u64,
    /// The full state word seen before reading.
    pub state: u64,
    /// Records published in it.
    pub records: u64,
    /// Words published in it.
    pub words: usize,
}

impl Ring {
    /// The chunk `idx` as a reader sees it now, if it holds data: an Acquire
    /// load of its state, then an Acquire load of its committed length
    /// (pairs with the owner's Release store in [`Record::publish`]: every
    /// word below the length is visible).
    pub fn snapshot(&self, idx: usize) -> Option<ChunkSnapshot> {
        let meta = &self.meta[idx];
        // Acquire pairs with `release` (and the claiming CAS's following fence).
        let st = meta.state.load(Ordering::Acquire);
        if st & 3 == FREE {
            return None;
        }
        let committed = meta.committed.load(Ordering::Acquire);
        Some(ChunkSnapshot {
            idx,
            seq: st >> 2,
            state: st,
            records: committed >> 32,
            words: (committed & 0xffff_ffff) as usize,
        })
    }

    /// The chunks that may hold data: those below the index of the next
    /// fresh chunk (a drained ring, whose freed chunks are reused, may
    /// never reach the others), or all. A chunk handed out fresh after this
    /// is read is beyond it.
    fn used_chunks(&self) -> usize {
        let n = self.meta.len();
        match &self.recycler {
            // Relaxed: see `snapshot_released` for why a later read is
            // late enough.
            Some(r) => (r.fresh.load(Ordering::Relaxed) as usize).min(n),
            None => n,
        }
    }

    /// Every chunk holding data (owned or released), oldest first.
    pub fn snapshot_all(&self) -> Vec<ChunkSnapshot> {
        let mut v: Vec<ChunkSnapshot> = (0..self.used_chunks())
            .filter_map(|i| self.snapshot(i))
            .collect();
        v.sort_unstable_by_key(|c| c.seq);
        v
    }

    /// Released chunks that the streamer can write out now without putting
    /// any thread's chunks out of order, oldest first.
    ///
    /// One scan of the chunk states is not enough: between our reads of
    /// two chunks' states, a thread can release its older chunk (already
    /// read: still owned) and fill and release its newer one (read after:
    /// released), and the newer would be written first. So the states are
    /// scanned twice. Every chunk released before a chunk the first scan
    /// saw released is seen released by the second (its release
    /// happened-before our Acquire read of the later release, and only the
    /// streamer changes a released chunk). A chunk claimed after the first
    /// scan has a larger sequence number than every chunk it saw (claims
    /// take numbers with AcqRel `fetch_add`s, so a smaller number would
    /// make its thread's earlier release visible to the second scan).
    /// Keeping the second scan's chunks up to the first scan's largest
    /// sequence number therefore keeps, with each chunk, every earlier
    /// chunk of its thread.
    ///
    /// A drained ring's scans stop at the next fresh chunk's index
    /// ([`Ring::used_chunks`]), read *after* the first scan for the
    /// second: an earlier chunk of a thread whose later chunk the first
    /// scan saw released was handed out (its index taken with the
    /// `fresh` RMW, if fresh) before that later chunk's sequence number
    /// was taken, which happened-before our Acquire read of its release,
    /// so the read of `fresh` that follows sees past its index (coherence).
    pub fn snapshot_released(&self) -> Vec<ChunkSnapshot> {
        // The state first: the committed word of a chunk its owner is
        // writing is on a line the owner stores to once per record.
        let scan = |used: usize| {
            (0..used)
                .filter(|&i| self.meta[i].state.load(Ordering::Relaxed) & 3 == RELEASED)
                .filter_map(|i| self.snapshot(i))
                .filter(|c| c.state & 3 == RELEASED)
        };
        let Some(newest) = scan(self.used_chunks()).map(|c| c.seq).max() else {
            return Vec::new();
        };
        let mut v: Vec<ChunkSnapshot> = scan(self.used_chunks())
            .filter(|c| c.seq <= newest)
            .collect();
        v.sort_unstable_by_key(|c| c.seq);
        v
    }

    /// The published words of a snapshot.
    #[inline]
    pub fn chunk_data(&self, snap: &ChunkSnapshot) -> &[AtomicU64] {
        let base = snap.idx * self.chunk_words;
        self.words
            .slice(base..base + snap.words.min(self.chunk_words))
    }

    /// All the words of the chunk of `snap`, published or not (a drained
    /// session's streamer pads a released chunk in place before writing it
    /// out, `crate::collect::direct`).
    #[inline]
    pub(crate) fn chunk_words_of(&self, snap: &ChunkSnapshot) -> &[AtomicU64] {
        let base = snap.idx * self.chunk_words;
        self.words.slice(base..base + self.chunk_words)
    }

    /// Whether the words read from `snap` since it was taken are its data:
    /// false when a writer re-acquired the chunk meanwhile (seqlock read
    /// side; the Acquire fence pairs with the Release fence in `acquire`).
    ///
    /// Only the sequence number is compared: the owner releasing the chunk
    /// (owned -> released, same sequence) does not touch the words below
    /// the snapshot's committed length, while re-acquiring always takes a
    /// new sequence number.
    pub fn validate(&self, snap: &ChunkSnapshot) -> bool {
        fence(Ordering::Acquire);
        self.meta[snap.idx].state.load(Ordering::Relaxed) >> 2 == snap.state >> 2
    }

    /// Marks a released chunk, now written out, as free (streaming mode;
    /// only the streamer calls this, and only on a chunk it saw released:
    /// no writer changes a released chunk's state in streaming mode).
    pub fn free(&self, snap: &ChunkSnapshot) {
        debug_assert_eq!(snap.state & 3, RELEASED);
        // Release pairs with the Acquire load of the next owner (the CAS in
        // `acquire`, or `Recycler::take`): our reads of the old data
        // happen-before its writes.
        self.meta[snap.idx]
            .state
            .store(state(snap.seq, FREE), Ordering::Release);
        if let Some(recycler) = &self.recycler {
            recycler.push(snap.idx);
        }
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }
}
