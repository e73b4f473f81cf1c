//! Writing a session's trace: magic number, provider info, initialization
//! record, the durable region, the large records (large blobs, kept outside
//! the ring), the chunks (oldest first), and a "buffer filled up" provider
//! event when anything was dropped.
//!
//! Words are staged into a large byte buffer and written with `write_all`
//! in big blocks, so collection runs at memory speed.

use crate::sync::{AtomicU64, Ordering};
use std::io::{self, Write};

use fxt_format::encode::{encode_to_vec, Initialization, MagicNumber, ProviderEvent, ProviderInfo};

use crate::buffer::RingMode;
use crate::session::{CollectError, Shared, PROVIDER_ID};

/// What a finished session wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Every record in the file (metadata, strings, threads, events...).
    pub records_written: u64,
    /// Records the program emitted (events, logs, blobs) that are in the file.
    pub emitted_records_written: u64,
    /// Records the program emitted that are not in the file, whatever the
    /// reason (buffer full, overwritten in circular mode, streaming writer
    /// behind, too large). `emitted_records_written + records_dropped` is
    /// the number of records emitted.
    pub records_dropped: u64,
    /// Bytes of the file.
    pub bytes_written: u64,
    /// Records of the durable region (strings, threads, names).
    pub durable_records: u64,
    /// Threads that recorded.
    pub threads: u64,
    /// Ticks per second written in the initialization record.
    pub ticks_per_second: u64,
}

const STAGE_BYTES: usize = 4 << 20;

/// Stages words into big writes and counts what went out.
pub(crate) struct Stager<W: Write> {
    out: W,
    buf: Vec<u8>,
    pub(crate) bytes: u64,
    pub(crate) records: u64,
}

impl<W: Write> Stager<W> {
    pub(crate) fn new(out: W) -> Stager<W> {
        Stager {
            out,
            buf: Vec::with_capacity(STAGE_BYTES),
            bytes: 0,
            records: 0,
        }
    }

    /// Stages one record (or several) given as words.
    pub(crate) fn words(&mut self, words: &[u64], records: u64) -> io::Result<()> {
        for part in words.chunks(STAGE_BYTES / 8) {
            if self.buf.len() + part.len() * 8 > STAGE_BYTES {
                self.flush()?;
            }
            for w in part {
                self.buf.extend_from_slice(&w.to_le_bytes());
            }
        }
        self.records += records;
        Ok(())
    }

    /// Stages atomic words (Relaxed loads: the caller established
    /// visibility with an Acquire load of the committed length).
    pub(crate) fn atomic_words(&mut self, words: &[AtomicU64], records: u64) -> io::Result<()> {
        for part in words.chunks(STAGE_BYTES / 8) {
            if self.buf.len() + part.len() * 8 > STAGE_BYTES {
                self.flush()?;
            }
            let start = self.buf.len();
            self.buf.resize(start + part.len() * 8, 0);
            for (dst, w) in self.buf[start..].chunks_exact_mut(8).zip(part) {
                dst.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
        }
        self.records += records;
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.out.write_all(&self.buf)?;
            self.bytes += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    pub(crate) fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.flush()?;
        self.out.flush()?;
        Ok((self.out, self.bytes, self.records))
    }
}

/// The words of magic, provider info and initialization records.
pub(crate) fn preamble(provider_name: &str, ticks_per_second: u64) -> Vec<u64> {
    let mut v = Vec::new();
    v.extend(encode_to_vec(&MagicNumber).unwrap_or_default());
    v.extend(
        encode_to_vec(&ProviderInfo {
            provider_id: PROVIDER_ID,
            name: provider_name,
        })
        .unwrap_or_default(),
    );
    v.extend(encode_to_vec(&Initialization { ticks_per_second }).unwrap_or_default());
    v
}

/// The "buffer filled up" provider event.
pub(crate) fn buffer_filled() -> Vec<u64> {
    encode_to_vec(&ProviderEvent {
        provider_id: PROVIDER_ID,
        event: ProviderEvent::BUFFER_FILLED,
    })
    .unwrap_or_default()
}

/// Copies the kept chunks to `stage`; returns (records written, records
/// discarded because a writer re-took the chunk while it was read).
pub(crate) fn write_chunks<W: Write>(
    shared: &Shared,
    stage: &mut Stager<W>,
    snaps: &[crate::buffer::ChunkSnapshot],
) -> io::Result<(u64, u64)> {
    let ring = &shared.ring;
    let mut written = 0;
    let mut discarded = 0;
    let mut tmp: Vec<u64> = Vec::new();
    for snap in snaps {
        if snap.words == 0 {
            continue;
        }
        let data = ring.chunk_data(snap);
        if ring.mode() == RingMode::Circular {
            // A late writer may re-acquire the chunk while we copy: copy
            // aside, then check (seqlock read side).
            tmp.clear();
            tmp.extend(data.iter().map(|w| w.load(Ordering::Relaxed)));
            if ring.validate(snap) {
                stage.words(&tmp, snap.records)?;
                written += snap.records;
            } else {
                discarded += snap.records;
            }
        } else {
            stage.atomic_words(data, snap.records)?;
            written += snap.records;
        }
    }
    Ok((written, discarded))
}

/// Writes large records taken (with `LargeRecords::take`) *before* the
/// durable records were read, so that every string or thread they refer
/// to precedes them; returns how many.
pub(crate) fn write_large<W: Write>(stage: &mut Stager<W>, large: &[Vec<u64>]) -> io::Result<u64> {
    for r in large {
        stage.words(r, 1)?;
    }
    Ok(large.len() as u64)
}

/// Writes the whole trace of a stopped (oneshot or circular) session.
pub(crate) fn write_trace<W: Write>(shared: &Shared, out: W) -> Result<Stats, CollectError> {
    let tps = shared.clock.ticks_per_second();
    let mut stage = Stager::new(out);
    let pre = preamble(&shared.provider_name, tps);
    stage.words(&pre, 3)?;
    // Chunk states and large records first, then the durable region: every
    // string or thread a published record refers to was appended before it
    // was published.
    let snaps = shared.ring.snapshot_all();
    let large = shared.large.take();
    let (_, durable_records) = shared.durable.read_from(0, |words, records| {
        stage.words(words, records).map(|_| records)
    });
    let durable_records = durable_records?;
    let large = write_large(&mut stage, &large)?;
    let (written, discarded) = write_chunks(shared, &mut stage, &snaps)?;
    let written = written + large;
    let dropped = shared.dropped() + discarded;
    if dropped > 0 {
        stage.words(&buffer_filled(), 1)?;
    }
    let (_, bytes, records) = stage.finish()?;
    Ok(Stats {
        records_written: records,
        emitted_records_written: written,
        records_dropped: dropped,
        bytes_written: bytes,
        durable_records,
        threads: shared.threads.lock().map(|t| t.len()).unwrap_or(0) as u64,
        ticks_per_second: tps,
    })
}
