//! A poll's record: the duration on the thread that ran the poll, with
//! its arguments (see the parent module's docs), written once the poll
//! returned.
//!
//! Its layout is fixed: the same event type, the same argument names and
//! types in the same order for every poll, only their values and how many
//! of them there are change. So the common records (every poll but a
//! long one) have a writer of their own ([`fast`]): one reservation
//! through the thread's cursor, then straight stores of words computed
//! once per session and thread (the argument headers, in [`KEYS`]) and of
//! the values, with no per-argument matching or key check. Every other
//! case (the gate closed: the thread's first event in a session, a
//! crash-safe session, a full chunk; a long poll; keys not indexed) goes
//! through the general event functions ([`general`]), which write the
//! same words for the same values (the tests below compare them word for
//! word) and handle chunk rollover, crash safety and dropped records.

use core::cell::Cell;
use std::sync::atomic::Ordering;

use fxt_format::encode::header::{arg_type, event_type};
use fxt_format::encode::ArgValue;

use super::{wake, Woke, LONG_POLL_NS};
use crate::callsite::Site;
use crate::macro_support as ms;
use crate::{clock, emit};

/// How many of the task keys (`name::ARG_NAMES`, in order) a poll's
/// record can have.
const POLL_KEYS: usize = 6;

/// The argument keys of a poll's record in one session, as this thread
/// last found them: `ref << 16` of each of `name::ARG_NAMES`' first
/// [`POLL_KEYS`], valid for the sites whose token is `token` (0: none).
///
/// Every task call site has the same keys, and a session interns a
/// string once: a key's indexed ref, once given, stays the same for the
/// whole session (the durable region's table). So the refs read from one
/// task call site's key caches when they matched its token (indexed, in
/// that session) hold for every task call site of that session, whose
/// token is the same (`crate::callsite`); a thread reads them once per
/// session.
struct Keys {
    token: Cell<u32>,
    bits: [Cell<u64>; POLL_KEYS],
}

thread_local! {
    static KEYS: Keys = const {
        Keys {
            token: Cell::new(0),
            bits: [const { Cell::new(0) }; POLL_KEYS],
        }
    };
}

/// Argument header words (type and size; the key's bits are or'ed in).
const U64: u64 = arg_type::U64 | (2 << 4);
const NULL: u64 = arg_type::NULL | (1 << 4);
const TRUE: u64 = arg_type::BOOL | (1 << 4) | (1 << 32);

/// The calling thread's [`Keys`].
#[inline(always)]
fn keys() -> &'static Keys {
    // Not `KEYS.with(|k| ...)` around the writer: out of line (it is not
    // always inlined), it would take the record's stores with it.
    let k: *const Keys = KEYS.with(|k| k as *const Keys);
    // SAFETY: `KEYS` is a `const`-initialized thread local without a
    // destructor, so its storage is valid, and never moved, for the whole
    // life of this thread; `Keys` is neither `Send` nor `Sync` (its
    // `Cell`s), so the reference cannot leave this thread.
    unsafe { &*k }
}

/// Fills `k` from `site`'s key caches (once per session and thread).
#[cold]
#[inline(never)]
fn refill(k: &Keys, site: Site) -> Option<()> {
    let token = site.token();
    for (i, bits) in k.bits.iter().enumerate() {
        bits.set(site.keys.get(i)?.header_bits(token)?);
    }
    k.token.set(token);
    Some(())
}

/// A poll's record, written once it returned (see the parent module's
/// `PollEnd`): the duration on this thread from `start` to now, with what
/// readers derive the task's track and the wake's arrow from
/// (`fxt_format::derived::task`). Inlined: in a traced poll, what it
/// needs is still in registers.
#[inline(always)]
pub(crate) fn poll_records(site: Site, id: u64, start: u64, woke: Option<Woke>) {
    let end = ms::now().max(start);
    // Relaxed: see `long_poll_threshold`.
    let long = clock::ticks_at_least_ns(end - start, LONG_POLL_NS.load(Ordering::Relaxed));
    if long || !fast(site, id, start, end, woke) {
        general(site, id, start, end, woke, long);
    }
}

/// The record of a poll that was not long, through the thread's cursor
/// (see the module docs); `false`: nothing was written.
#[inline(always)]
fn fast(site: Site, id: u64, start: u64, end: u64, woke: Option<Woke>) -> bool {
    let k = keys();
    if k.token.get() != site.token() && refill(k, site).is_none() {
        return false;
    }
    // Each key read where it is used (a poll no wake caused reads one).
    let Some(w) = woke else {
        return write(site, 1, [start, U64 | k.bits[0].get(), id], [], end);
    };
    let [task, delay, thread, by, driver, _] = &k.bits;
    let [task, delay, thread, by, driver] = [task, delay, thread, by, driver].map(Cell::get);
    // `task` and `delay`, then `waker_thread` (null when the wake was not
    // recorded but `woken_by` or `woken_by_driver` follows), then
    // `woken_by` or, for a driver's wake, a null `woken_by` and
    // `woken_by_driver`: the arguments up to the last a poll has.
    let head = [start, U64 | task, id, U64 | delay, w.delay];
    let (null_thread, null_by, driver) = (NULL | thread, NULL | by, TRUE | driver);
    let (thread, by) = (U64 | thread, U64 | by);
    match (w.thread, w.by) {
        (0, 0) => write(site, 2, head, [], end),
        (t, 0) => write(site, 3, head, [thread, t], end),
        (0, wake::DRIVER) => write(site, 5, head, [null_thread, null_by, driver], end),
        (t, wake::DRIVER) => write(site, 5, head, [thread, t, null_by, driver], end),
        (0, b) => write(site, 4, head, [null_thread, by, b], end),
        (t, b) => write(site, 4, head, [thread, t, by, b], end),
    }
}

/// Writes a duration complete event of `args` arguments whose words
/// after the header are `head`, `tail` and `end`, through the thread's
/// cursor: one reservation of a size known here, then straight stores.
/// `false`: nothing was written.
#[inline(always)]
fn write<const H: usize, const T: usize>(
    site: Site,
    args: usize,
    head: [u64; H],
    tail: [u64; T],
    end: u64,
) -> bool {
    let Some(r) = emit::reserve(site, H + T + 2) else {
        return false;
    };
    for (i, w) in head.into_iter().chain(tail).enumerate() {
        r.put(i + 1, w);
    }
    r.put(H + T + 1, end);
    r.publish(event_type::DURATION_COMPLETE, args);
    true
}

/// Any poll's record through the general event functions (the slow path
/// when the cursor cannot take it): the reference [`fast`] is checked
/// against.
#[cold]
#[inline(never)]
fn general(site: Site, id: u64, start: u64, end: u64, woke: Option<Woke>, long: bool) {
    let task = ArgValue::U64(id);
    let delay = woke.map_or(ArgValue::Null, |w| ArgValue::U64(w.delay));
    let thread = match woke {
        Some(w) if w.thread != 0 => ArgValue::U64(w.thread),
        _ => ArgValue::Null,
    };
    let by_driver = woke.is_some_and(|w| w.by == wake::DRIVER);
    let by = match woke {
        Some(w) if w.by != 0 && !by_driver => ArgValue::U64(w.by),
        _ => ArgValue::Null,
    };
    let driver = if by_driver {
        ArgValue::Bool(true)
    } else {
        ArgValue::Null
    };
    // Only the arguments a poll has, up to the last one.
    let at = |args: &[ArgValue<'_>]| emit::duration_complete_at(site, start, end, args);
    if long {
        at(&[task, delay, thread, by, driver, ArgValue::Bool(true)]);
    } else if by_driver {
        at(&[task, delay, thread, by, driver]);
    } else if !matches!(by, ArgValue::Null) {
        at(&[task, delay, thread, by]);
    } else if !matches!(thread, ArgValue::Null) {
        at(&[task, delay, thread]);
    } else if woke.is_some() {
        at(&[task, delay]);
    } else {
        at(&[task]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::name::{self, Name};
    use fxt_format::encode::header::record_type;

    /// The variants of a poll's record [`fast`] writes: not woken; a
    /// delay alone (Tokio's hooks); woken by a plain thread; by a task;
    /// by a task whose thread was not recorded; by a runtime's driver,
    /// with and without its thread. Values at the edges of their words.
    fn variants() -> Vec<Option<Woke>> {
        let woke = |delay, by, thread| Some(Woke { delay, by, thread });
        vec![
            None,
            woke(1_234, 0, 0),
            woke(0, 0, 0),
            woke(u64::MAX, 0, 0),
            woke(5_678, 0, 4_321),
            woke(9, 77, 4_321),
            woke(9, u64::MAX - 1, u64::MAX),
            woke(10, 77, 0),
            woke(11, wake::DRIVER, 4_321),
            woke(12, wake::DRIVER, 0),
        ]
    }

    /// The trace's duration complete events named `name_ref`, by their
    /// start: each record's words.
    fn polls(trace: &[u8], name_ref: u16) -> std::collections::BTreeMap<u64, Vec<Vec<u64>>> {
        let words: Vec<u64> = trace
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut out = std::collections::BTreeMap::<u64, Vec<Vec<u64>>>::new();
        let mut i = 0;
        while i < words.len() {
            let h = words[i];
            let n = ((h >> 4) & 0xfff) as usize;
            assert!(n >= 1 && i + n <= words.len(), "a record at word {i}");
            let event = h & 0xf == record_type::EVENT
                && (h >> 16) & 0xf == event_type::DURATION_COMPLETE
                && (h >> 48) as u16 == name_ref;
            if event {
                out.entry(words[i + 1])
                    .or_default()
                    .push(words[i..i + n].to_vec());
            }
            i += n;
        }
        out
    }

    /// Each variant's record written by [`fast`] has exactly the words the
    /// general event functions write for the same values (header,
    /// argument headers and values, times), and the fast writer is what
    /// wrote it (its gate open) except for a thread's first event in a
    /// session.
    #[test]
    fn the_fast_record_has_the_general_encoders_words() {
        let _g = crate::thread::tests::sessions();
        let session = crate::start(crate::Config::new()).unwrap();
        let name_ref = std::thread::spawn(|| {
            let site = name::callsite(Name::Given("poll-record-test"))
                .site()
                .expect("the category records");
            // The thread's first event takes the slow path (its gate
            // opens there): the fast writer declines it.
            assert!(!fast(site, 1, 1, 2, None), "the gate is closed at first");
            general(site, 1, 1, 2, None, false);
            for (k, woke) in variants().into_iter().enumerate() {
                let start = 1_000 * (k as u64 + 1);
                let end = start + 500 + k as u64;
                let id = 0x4000_0000_0000_0000 | k as u64;
                assert!(fast(site, id, start, end, woke), "variant {k}: fast");
                general(site, id, start, end, woke, false);
            }
            site.name_ref()
        })
        .join()
        .unwrap();
        let mut trace = Vec::new();
        session.finish_to_writer(&mut trace).unwrap();
        let polls = polls(&trace, name_ref);
        assert_eq!(polls.len(), variants().len() + 1, "{polls:x?}");
        for (k, woke) in variants().into_iter().enumerate() {
            let start = 1_000 * (k as u64 + 1);
            let records = &polls[&start];
            assert_eq!(records.len(), 2, "variant {k} ({woke:?}): {records:x?}");
            assert_eq!(records[0], records[1], "variant {k} ({woke:?})");
            let args = records[0][0] >> 20 & 0xf;
            let want = match woke {
                None => 1,
                Some(w) if w.by == wake::DRIVER => 5,
                Some(w) if w.by != 0 => 4,
                Some(w) if w.thread != 0 => 3,
                Some(_) => 2,
            };
            assert_eq!(args, want, "variant {k} ({woke:?}): arguments");
        }
    }

    /// Writes `n` polls' records (every variant in turn, through
    /// [`poll_records`], as a poll does) on a thread of its own in a
    /// session of `config` (finished to its file when `file`); the
    /// session's stats.
    fn polls_in(config: crate::Config, n: usize, file: bool) -> crate::Stats {
        let session = crate::start(config).unwrap();
        std::thread::spawn(move || {
            let site = name::callsite(Name::Given("poll-record-count"))
                .site()
                .expect("the category records");
            let variants = variants();
            for i in 0..n {
                let start = ms::now();
                poll_records(site, i as u64 + 1, start, variants[i % variants.len()]);
            }
        })
        .join()
        .unwrap();
        match file {
            true => session.finish().unwrap(),
            false => session.finish_to_writer(&mut std::io::sink()).unwrap(),
        }
    }

    /// Every poll's record is written or counted as dropped, through what
    /// the fast writer leaves to the general functions: chunks filled and
    /// rolled over, a circular buffer's overwrites, a full oneshot buffer,
    /// a crash-safe session (whose gate never opens).
    #[test]
    fn every_poll_is_written_or_counted() {
        let _g = crate::thread::tests::sessions();
        let n = 20_000;
        let small = || crate::Config::new().chunk_size(32 << 10);
        let stats = polls_in(small(), n, false);
        assert_eq!(stats.emitted_records_written, n as u64, "{stats:?}");
        assert_eq!(stats.records_dropped, 0, "{stats:?}");
        let circular = small().mode(crate::Mode::Circular).buffer_size(1 << 20);
        let stats = polls_in(circular, n, false);
        assert_eq!(
            stats.emitted_records_written + stats.records_dropped,
            n as u64
        );
        assert!(stats.records_dropped > 0, "overwritten: {stats:?}");
        let full = small().drain(false).buffer_size(1 << 20);
        let stats = polls_in(full, n, false);
        assert_eq!(
            stats.emitted_records_written + stats.records_dropped,
            n as u64
        );
        assert!(
            stats.limit_reached && stats.records_dropped > 0,
            "{stats:?}"
        );
        let path = std::env::temp_dir().join(format!("fxt-polls-{}.fxt", std::process::id()));
        let stats = polls_in(crate::Config::new().output(&path).crash_safe(true), n, true);
        let _ = std::fs::remove_file(&path);
        assert_eq!(stats.emitted_records_written, n as u64, "{stats:?}");
        assert_eq!(stats.records_dropped, 0, "{stats:?}");
    }
}
