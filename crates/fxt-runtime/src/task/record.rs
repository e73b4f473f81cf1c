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

/// The keys' bits for `site` (see [`Keys`]), read from its key caches
/// when this thread has not yet found them for its session; `None` when
/// they are not all indexed in it.
#[inline(always)]
fn keys(site: Site) -> Option<[u64; POLL_KEYS]> {
    KEYS.with(|k| {
        let token = site.token();
        if k.token.get() != token {
            refill(k, site)?;
        }
        Some(core::array::from_fn(|i| k.bits[i].get()))
    })
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
/// (`fxt_format::derived::task`).
#[inline]
pub(crate) fn poll_records(site: Site, id: u64, start: u64, woke: Option<Woke>) {
    let end = ms::now().max(start);
    let took = clock::ticks_to_ns(end - start);
    // Relaxed: see `long_poll_threshold`.
    let long = took >= LONG_POLL_NS.load(Ordering::Relaxed);
    if long || !fast(site, id, start, end, woke) {
        general(site, id, start, end, woke, long);
    }
}

/// The record of a poll that was not long, through the thread's cursor
/// (see the module docs); `false`: nothing was written.
#[inline(always)]
fn fast(site: Site, id: u64, start: u64, end: u64, woke: Option<Woke>) -> bool {
    let Some([task, delay, thread, by, driver, _]) = keys(site) else {
        return false;
    };
    let Some(w) = woke else {
        // `task` alone.
        let Some(r) = emit::reserve(site, 5) else {
            return false;
        };
        r.put(1, start);
        r.put(2, U64 | task);
        r.put(3, id);
        r.put(4, end);
        r.publish(event_type::DURATION_COMPLETE, 1);
        return true;
    };
    // `task` and `delay`, then `waker_thread` (null when the wake was not
    // recorded but `woken_by` or `woken_by_driver` follows), then
    // `woken_by` or, for a driver's wake, a null `woken_by` and
    // `woken_by_driver`: the arguments up to the last a poll has.
    let by_driver = w.by == wake::DRIVER;
    let by_task = w.by != 0 && !by_driver;
    let thread_words = match (w.thread != 0, w.by != 0) {
        (true, _) => 2,
        (false, true) => 1,
        (false, false) => 0,
    };
    let by_words = if w.by != 0 { 2 } else { 0 };
    let words = 7 + thread_words + by_words;
    let args = 2 + usize::from(thread_words != 0) + by_words / 2 + usize::from(by_driver);
    let Some(r) = emit::reserve(site, words) else {
        return false;
    };
    r.put(1, start);
    r.put(2, U64 | task);
    r.put(3, id);
    r.put(4, U64 | delay);
    r.put(5, w.delay);
    let mut i = 6;
    if w.thread != 0 {
        r.put(i, U64 | thread);
        r.put(i + 1, w.thread);
        i += 2;
    } else if w.by != 0 {
        r.put(i, NULL | thread);
        i += 1;
    }
    if by_task {
        r.put(i, U64 | by);
        r.put(i + 1, w.by);
        i += 2;
    } else if by_driver {
        r.put(i, NULL | by);
        r.put(i + 1, TRUE | driver);
        i += 2;
    }
    r.put(i, end);
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
}
