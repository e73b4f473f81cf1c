//! The one range pool of every walk that reads one file on several
//! threads: the file (in memory) is cut lazily into ranges at record
//! boundaries ([`RecordRanges`]: each range's reader starts with the
//! string and thread tables in force there). `FXT_THREADS` workers take
//! the ranges in file order, each walks its range with the command's
//! `work` into an output buffer of its own, and the calling thread hands
//! what each range gave to `take` in file order.
//!
//! Buffers are the tokens of a bounded window: a worker takes a free
//! buffer before it takes a range, and a buffer is free again only once
//! taken, so at most [`WINDOW_PER_THREAD`] ranges per thread are in flight
//! or waiting, however far ahead the fast workers get. A range whose work
//! fails stops the workers from taking more (the ranges taken are a
//! prefix of the file, all handed on); `take` failing stops them too.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Mutex, PoisonError};

use fxt_format::decode::{DecodeError, RecordRange, RecordRanges};

use super::out::Out;
use super::views::Views;
use crate::error::Error;
use crate::input::Reader;

/// Ranges in flight or waiting to be taken, per thread: two keeps every
/// worker busy while the writer waits for the slowest range.
const WINDOW_PER_THREAD: usize = 2;

/// What the walk of one range gave.
pub struct Finished<T> {
    /// The range's output: the first `len` bytes of `buf`.
    pub buf: Vec<u8>,
    pub len: usize,
    /// What `work` returned.
    pub state: Result<T, Error>,
    pub records: u64,
    /// Decode errors, in file order.
    pub errors: Vec<DecodeError>,
    /// Where the walk of the range stopped: the end of its last framed
    /// record (before the range's end at damage; after it for records
    /// read past the cut).
    pub end: u64,
}

/// The cut of one file: its bytes, and how many threads walk ranges of
/// about `range_bytes`.
pub struct Cut<'a> {
    pub bytes: &'a [u8],
    pub range_bytes: usize,
    pub threads: usize,
}

/// Walks every range of `cut` with `work` on `cut.threads` workers, and
/// hands each range's [`Finished`] to `take` in file order, which gives
/// its buffer back to the pool.
pub fn on_ranges<T, F>(
    cut: Cut<'_>,
    work: &F,
    mut take: impl FnMut(Finished<T>) -> Result<Vec<u8>, Error>,
) -> Result<(), Error>
where
    T: Send,
    F: Fn(&mut Views<'_>, &mut Out<'_>) -> Result<T, Error> + Sync,
{
    let Cut {
        bytes,
        range_bytes,
        threads,
    } = cut;
    let ranges = Mutex::new(RecordRanges::new(bytes, range_bytes).enumerate());
    let window = threads * WINDOW_PER_THREAD;
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(window);
    for _ in 0..window {
        // Never blocks: the channel holds the whole window.
        let _ = free_tx.send(Vec::new());
    }
    let free_rx = Mutex::new(free_rx);
    // Set by the first range whose work fails: the workers take no more.
    // Relaxed: only a hint to stop; the results pass through the channel.
    let failed = AtomicBool::new(false);
    let (done_tx, done_rx) = channel();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let done_tx = done_tx.clone();
            let shared = Shared {
                ranges: &ranges,
                free: &free_rx,
                failed: &failed,
                bytes,
            };
            scope.spawn(move || worker(shared, done_tx, work));
        }
        drop(done_tx);
        // Returning drops `free_tx` and `done_rx`, which stops the workers
        // (a worker's panic is raised again when the scope ends).
        in_order(done_rx, free_tx, &mut take)
    })
}

/// The next ranges of the cut, numbered in file order.
type Ranges<'a> = Mutex<std::iter::Enumerate<RecordRanges<'a>>>;

/// What the workers share.
#[derive(Clone, Copy)]
struct Shared<'p, 'a> {
    ranges: &'p Ranges<'a>,
    free: &'p Mutex<Receiver<Vec<u8>>>,
    failed: &'p AtomicBool,
    bytes: &'a [u8],
}

/// One worker of [`on_ranges`]: takes a free buffer, then the next range,
/// walks the range into the buffer and hands both on, until the ranges run
/// out, one fails, or the writer stops.
fn worker<T, F>(shared: Shared<'_, '_>, done: Sender<(usize, Finished<T>)>, work: &F)
where
    F: Fn(&mut Views<'_>, &mut Out<'_>) -> Result<T, Error>,
{
    loop {
        let buffer = shared
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv();
        let Ok(buf) = buffer else {
            return; // the writer stopped
        };
        if shared.failed.load(Relaxed) {
            return;
        }
        let next = shared
            .ranges
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next();
        let Some((seq, RecordRange { start, end, reader })) = next else {
            return;
        };
        let mut views = Views::new(Reader::Slice(reader, shared.bytes), start, end, None);
        let mut out = Out::new(buf, None);
        // A panic must reach the writer, which would otherwise wait for
        // this range forever (the default hook has printed it).
        let state = std::panic::catch_unwind(AssertUnwindSafe(|| work(&mut views, &mut out)))
            .unwrap_or_else(|_| Err(Error::msg("a reading thread panicked")));
        if state.is_err() {
            shared.failed.store(true, Relaxed);
        }
        let seen = views.finish();
        let (buf, len) = out.into_held();
        let finished = Finished {
            buf,
            len,
            state,
            records: seen.records,
            errors: seen.errors,
            end: seen.reader.position(),
        };
        if done.send((seq, finished)).is_err() {
            return;
        }
    }
}

/// The writer of [`on_ranges`]: hands finished ranges to `take` in file
/// order and frees their buffers.
fn in_order<T>(
    done: Receiver<(usize, Finished<T>)>,
    free: SyncSender<Vec<u8>>,
    take: &mut impl FnMut(Finished<T>) -> Result<Vec<u8>, Error>,
) -> Result<(), Error> {
    // At most the window: a range is taken only with a free buffer.
    let mut waiting = BTreeMap::new();
    let mut next = 0usize;
    for (seq, finished) in done {
        waiting.insert(seq, finished);
        while let Some(range) = waiting.remove(&next) {
            next += 1;
            let buf = take(range)?;
            // Fails only once the workers are gone.
            let _ = free.send(buf);
        }
    }
    Ok(())
}
