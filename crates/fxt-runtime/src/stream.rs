//! Streaming mode: a background thread writes released chunks to the output
//! file while the program runs, and frees them for reuse.
//!
//! Each pass (every [`POLL`], or sooner when finishing):
//! 1. snapshot the released chunks (Acquire loads of their state, pairing
//!    with the writers' Release stores in `Ring::release`) and take the
//!    large records kept so far;
//! 2. write the durable records appended since the last pass: every string
//!    or thread a record in those chunks refers to was appended before the
//!    record was published, so it is already there, and lands in the file
//!    before the record;
//! 3. write the large records (large blobs) kept since the last pass
//!    (taken before step 2, so their refs are in the durable records);
//! 4. write the chunks, oldest first, and free each one as soon as it is
//!    copied (Release store, pairing with the next owner's Acquire CAS).
//!
//! Writers never wait for the streamer: a writer that finds no free chunk
//! drops its record and counts it. Chunks still owned by a thread (e.g. an
//! idle thread's partly filled chunk) are written when the session finishes.

use std::fs::File;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::collect::{buffer_filled, preamble, write_chunks, write_large, Stager, Stats};
use crate::session::{CollectError, Shared};

/// How often the streamer looks for released chunks.
pub const POLL: Duration = Duration::from_millis(1);

/// What the streaming thread hands back when it stops.
pub(crate) struct Streamed {
    stage: Stager<File>,
    durable_pos: usize,
    durable_records: u64,
    emitted_written: u64,
    /// Records freed without being written (after an I/O error).
    lost: u64,
    error: Option<io::Error>,
    ticks_per_second: u64,
}

fn pass(shared: &Shared, st: &mut Streamed) {
    let snaps = shared.ring.snapshot_released();
    let large = shared.large.take();
    // Durable records first (see the module docs).
    if st.error.is_none() {
        let from = st.durable_pos;
        let prev = st.durable_records;
        let stage = &mut st.stage;
        let (len, r) = shared.durable.read_from(from, |words, records| {
            stage.words(words, records - prev).map(|_| records)
        });
        match r {
            Ok(records) => {
                st.durable_pos = len;
                st.durable_records = records;
            }
            Err(e) => st.error = Some(e),
        }
    }
    // Taken before the durable records were read: their refs are written.
    if st.error.is_none() {
        match write_large(&mut st.stage, &large) {
            Ok(n) => st.emitted_written += n,
            Err(e) => st.error = Some(e),
        }
    } else {
        st.lost += large.len() as u64;
    }
    for snap in &snaps {
        if st.error.is_none() {
            match write_chunks(shared, &mut st.stage, std::slice::from_ref(snap)) {
                Ok((w, _)) => st.emitted_written += w,
                Err(e) => {
                    st.lost += snap.records;
                    st.error = Some(e);
                }
            }
        } else {
            st.lost += snap.records;
        }
        shared.ring.free(snap);
    }
    if st.error.is_none() {
        if let Err(e) = st.stage.flush() {
            st.error = Some(e);
        }
    }
}

/// Starts the streaming thread for `shared`, writing to `file`.
pub(crate) fn spawn(shared: Arc<Shared>, file: File) -> JoinHandle<Streamed> {
    std::thread::Builder::new()
        .name("fxt-stream".into())
        .spawn(move || {
            let tps = shared.clock.ticks_per_second();
            let mut st = Streamed {
                stage: Stager::new(file),
                durable_pos: 0,
                durable_records: 0,
                emitted_written: 0,
                lost: 0,
                error: None,
                ticks_per_second: tps,
            };
            let pre = preamble(&shared.provider_name, tps);
            if let Err(e) = st.stage.words(&pre, 3) {
                st.error = Some(e);
            }
            // Acquire pairs with the Release store in `finish`.
            while !shared.stream_stop.load(Ordering::Acquire) {
                pass(&shared, &mut st);
                std::thread::park_timeout(POLL);
            }
            st
        })
        .expect("cannot spawn the fxt streaming thread")
}

/// Writes what is left after the streamer stopped (the session is stopped):
/// new durable records, every chunk still holding data, and the "buffer
/// filled up" event if anything was dropped.
pub(crate) fn finish(shared: &Shared, mut st: Streamed) -> Result<Stats, CollectError> {
    if let Some(e) = st.error.take() {
        return Err(CollectError::Io(e));
    }
    let snaps = shared.ring.snapshot_all();
    let large = shared.large.take();
    let prev = st.durable_records;
    let stage = &mut st.stage;
    let (_, durable) = shared.durable.read_from(st.durable_pos, |words, records| {
        stage.words(words, records - prev).map(|_| records)
    });
    let durable_records = durable?;
    let large = write_large(&mut st.stage, &large)?;
    let (written, discarded) = write_chunks(shared, &mut st.stage, &snaps)?;
    let written = written + large;
    let dropped = shared.dropped() + discarded + st.lost;
    if dropped > 0 {
        st.stage.words(&buffer_filled(), 1)?;
    }
    let (_, bytes, records) = st.stage.finish()?;
    Ok(Stats {
        records_written: records,
        emitted_records_written: st.emitted_written + written,
        records_dropped: dropped,
        bytes_written: bytes,
        durable_records,
        threads: shared.threads.lock().map(|t| t.len()).unwrap_or(0) as u64,
        ticks_per_second: st.ticks_per_second,
    })
}
