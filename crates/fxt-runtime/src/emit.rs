//! The event functions: encode a record straight into the writer's chunk.
//!
//! The common case (indexed category, name, keys and thread; numeric,
//! boolean, null or indexed-string arguments) is a short inlined path: read
//! the clock, size the record, reserve in the thread's chunk, store the
//! precomputed header (the call site's cached word already holds the
//! category and name refs in header position, the thread state the thread
//! ref), the timestamp and the arguments, and publish. Anything else
//! (inline strings or threads, blobs, more than 15 arguments) takes
//! [`general_event`], which writes the same layout with streams.
//!
//! The common case is tried first with [`try_fast`], through the thread's
//! fast cursor (`crate::thread::Fast`: raw pointers into the leased chunk,
//! no `RefCell`, no `LocalKey::try_with`); when the cursor is off (first
//! event of the thread in a session, crash-safe session, inline thread
//! ref) or the record does not fit the rest of the chunk, the event takes
//! the slow path through the writer ([`with_writer`], then [`event_in`]),
//! which handles chunk rollover and registration and turns the cursor back
//! on.
//!
//! The layout is the one of `fxt_format::encode::Event`; a test checks
//! both produce the same words.
//!
//! Every encoder stores a record's header *last*. In a crash-safe session
//! it also stores a filler covering the record first (see `crate::mapped`).
//! The fast path's instance for that ([`fast_event`] with `CRASH_SAFE`)
//! sits behind the check the fast path already makes for inline thread
//! refs (the writer's `slow` flag folds "crash-safe" into it), so a normal
//! session's hot path executes exactly the same instructions as without
//! crash-safe support.

use crate::mapped::filler;
use crate::sync::{fence, AtomicU64, Ordering};
use std::sync::atomic::AtomicU64 as StdAtomicU64;

use fxt_format::encode::header::{self, arg_type, event_type as ty, record_type};
use fxt_format::encode::stream::stream_words;
use fxt_format::encode::{
    encode_to_vec, truncate_str, ArgValue, LargeBlobWithMetadata, StringRef, ThreadRef, MAX_ARGS,
    MAX_RECORD_WORDS,
};

use crate::callsite::Site;
use crate::clock;
use crate::thread::{with_writer, Writer};

/// Words of an argument's value beyond its header, for the types the fast
/// path handles; `None` for the others.
#[inline(always)]
fn simple_value_words(v: &ArgValue<'_>) -> Option<usize> {
    match v {
        ArgValue::Null | ArgValue::I32(_) | ArgValue::U32(_) | ArgValue::Bool(_) => Some(0),
        ArgValue::I64(_)
        | ArgValue::U64(_)
        | ArgValue::F64(_)
        | ArgValue::Pointer(_)
        | ArgValue::Koid(_) => Some(1),
        ArgValue::Str(StringRef::Empty) => Some(0),
        ArgValue::Str(StringRef::Index(i)) if (1..=0x7fff).contains(i) => Some(0),
        _ => None,
    }
}

/// The argument header's type and upper 32 bits for a value, and its value
/// word if any. (For `Str` the ref is computed by the caller.)
#[inline(always)]
fn value_parts(v: &ArgValue<'_>) -> (u64, u64, Option<u64>) {
    match *v {
        ArgValue::Null => (arg_type::NULL, 0, None),
        ArgValue::I32(x) => (arg_type::I32, x as u32 as u64, None),
        ArgValue::U32(x) => (arg_type::U32, x as u64, None),
        ArgValue::I64(x) => (arg_type::I64, 0, Some(x as u64)),
        ArgValue::U64(x) => (arg_type::U64, 0, Some(x)),
        ArgValue::F64(x) => (arg_type::F64, 0, Some(x.to_bits())),
        ArgValue::Str(StringRef::Index(i)) => (arg_type::STRING, i as u64, None),
        ArgValue::Str(_) => (arg_type::STRING, 0, None),
        ArgValue::Pointer(x) => (arg_type::POINTER, 0, Some(x)),
        ArgValue::Koid(x) => (arg_type::KOID, 0, Some(x)),
        ArgValue::Bool(b) => (arg_type::BOOL, b as u64, None),
        ArgValue::Blob(b) => (arg_type::BLOB, b.len() as u64, None),
    }
}

/// Emits an event record of type `ty` (with the trailing word `extra` for
/// the types that have one).
#[inline(always)]
pub(crate) fn event(site: Site, ty: u64, extra: Option<u64>, args: &[ArgValue<'_>]) {
    if !try_fast(site, ty, None, extra, args) {
        event_slow(site, ty, extra, args);
    }
}

#[cold]
#[inline(never)]
fn event_slow(site: Site, ty: u64, extra: Option<u64>, args: &[ArgValue<'_>]) {
    with_writer(site, |w| event_in(w, site, ty, None, extra, args));
}

/// Emits a duration complete event from `start` to now.
#[inline(always)]
pub(crate) fn duration_complete(site: Site, start: u64, args: &[ArgValue<'_>]) {
    if !try_fast(site, ty::DURATION_COMPLETE, Some(start), Some(0), args) {
        duration_slow(site, start, args);
    }
}

#[cold]
#[inline(never)]
fn duration_slow(site: Site, start: u64, args: &[ArgValue<'_>]) {
    with_writer(site, |w| {
        event_in(w, site, ty::DURATION_COMPLETE, Some(start), Some(0), args)
    });
}

/// Size and argument key refs of an event the simple paths can write:
/// indexed key refs and simple argument values (`None` otherwise, for the
/// general encoder).
#[inline(always)]
fn simple_layout(
    site: Site,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) -> Option<(usize, [u16; MAX_ARGS])> {
    let gen = site.gen();
    let keys = site.callsite.keys;
    let mut words = 2 + extra.is_some() as usize;
    let mut key_refs = [0u16; MAX_ARGS];
    for (i, a) in args.iter().enumerate() {
        let v = simple_value_words(a)?;
        if let Some(k) = keys.get(i) {
            match k.get(gen) {
                Some(r) if r & 0x8000 == 0 => key_refs[i] = r,
                _ => return None,
            }
        }
        words += 1 + v;
    }
    Some((words, key_refs))
}

/// Stores everything but the header (word 0) of a simple event: the
/// timestamp, the arguments and the trailing word.
#[inline(always)]
fn store_body(
    slots: &[AtomicU64],
    ts: u64,
    args: &[ArgValue<'_>],
    key_refs: &[u16; MAX_ARGS],
    extra: Option<u64>,
) {
    slots[1].store(ts, Ordering::Relaxed);
    let mut i = 2;
    for (n, a) in args.iter().enumerate() {
        let (t, high, value) = value_parts(a);
        let aw = 1 + value.is_some() as usize;
        slots[i].store(
            header::arg(t, aw, key_refs[n]) | (high << 32),
            Ordering::Relaxed,
        );
        if let Some(v) = value {
            slots[i + 1].store(v, Ordering::Relaxed);
        }
        i += aw;
    }
    if let Some(x) = extra {
        slots[i].store(x, Ordering::Relaxed);
    }
}

/// The event header: the call site's category and name refs (already in
/// header position), the thread ref bits, type, argument count and size.
#[inline(always)]
fn event_header(site: Site, thread_bits: u64, ty: u64, arg_count: usize, words: usize) -> u64 {
    (site.word & 0xffff_ffff_0000_0000)
        | thread_bits
        | ((arg_count as u64) << 20)
        | (ty << 16)
        | header::record(record_type::EVENT, words)
}

/// The hot path: the common event (indexed strings, simple arguments)
/// written through the thread's fast cursor (`crate::thread::fast_reserve`),
/// without touching the writer. `false`: nothing was written (cursor off:
/// first event in the session, crash-safe session, inline thread ref,
/// re-entrancy; or the record does not fit the chunk, or the event needs
/// the general encoder); the caller takes the slow path, which handles it
/// exactly as before.
#[inline(always)]
fn try_fast(
    site: Site,
    ty: u64,
    start: Option<u64>,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) -> bool {
    if site.has_inline() || args.len() > MAX_ARGS {
        return false;
    }
    let Some((words, key_refs)) = simple_layout(site, extra, args) else {
        return false;
    };
    let Some(rec) = crate::thread::fast_reserve(site.gen(), words) else {
        return false;
    };
    let slots = rec.slots();
    let (ts, extra) = stamps(rec.use_tsc(), start, extra);
    store_body(slots, ts, args, &key_refs, extra);
    // The header last, like every encoder.
    slots[0].store(
        event_header(site, rec.thread_bits(), ty, args.len(), words),
        Ordering::Relaxed,
    );
    rec.publish();
    true
}

/// The timestamp and trailing word of an event: normally now and `extra`;
/// for a duration complete event (`start` given), `start` and now.
#[inline(always)]
fn stamps(use_tsc: bool, start: Option<u64>, extra: Option<u64>) -> (u64, Option<u64>) {
    let now = clock::read(use_tsc);
    match start {
        Some(s) => (s, Some(now)),
        None => (now, extra),
    }
}

#[inline(always)]
fn event_in(
    w: &mut Writer,
    site: Site,
    ty: u64,
    start: Option<u64>,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) {
    if !w.ready(site) {
        return;
    }
    if site.has_inline() || w.slow || args.len() > MAX_ARGS {
        if w.crash_safe && !site.has_inline() && !w.inline_thread && args.len() <= MAX_ARGS {
            // Inlined here (in the branch a normal session never takes) so
            // that it is specialized for the call site's arguments like
            // the normal fast path.
            return fast_event::<true>(w, site, ty, start, extra, args);
        }
        return general_event(w, site, ty, start, extra, args);
    }
    fast_event::<false>(w, site, ty, start, extra, args)
}

/// The common case: indexed refs, simple argument values (else it falls
/// back to [`general_event`]).
#[inline(always)]
fn fast_event<const CRASH_SAFE: bool>(
    w: &mut Writer,
    site: Site,
    ty: u64,
    start: Option<u64>,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) {
    let Some((words, key_refs)) = simple_layout(site, extra, args) else {
        return general_event(w, site, ty, start, extra, args);
    };
    let (ts, extra) = stamps(w.use_tsc, start, extra);
    let Some(pos) = w.reserve(words) else {
        return;
    };
    let Some(shared) = w.shared.as_deref() else {
        return;
    };
    let slots = &shared.ring.words()[pos..pos + words];
    if CRASH_SAFE {
        slots[0].store(filler(words), Ordering::Relaxed);
        // Release: the filler reaches memory before the body (`mapped`).
        fence(Ordering::Release);
    }
    store_body(slots, ts, args, &key_refs, extra);
    let hdr = event_header(site, w.thread_bits, ty, args.len(), words);
    if CRASH_SAFE {
        // Release: the body reaches memory before the header.
        fence(Ordering::Release);
    }
    slots[0].store(hdr, Ordering::Relaxed);
    shared.ring.publish(&mut w.lease, words);
}

/// Stores a record's words and streams into its slots: [`Sink::begin`],
/// the body, then the header with [`Sink::end`].
struct Sink<'a> {
    slots: &'a [AtomicU64],
    i: usize,
    crash_safe: bool,
}

/// Reserves `words` in the writer's chunk and writes one record there:
/// `body` stores everything after the header word and returns the header,
/// which is stored last; then the record is published. Nothing is written
/// when the chunk and the buffer have no room (the drop is counted by
/// `reserve`).
#[inline]
fn write_record(w: &mut Writer, words: usize, body: impl FnOnce(&mut Sink<'_>) -> u64) {
    let Some(pos) = w.reserve(words) else {
        return;
    };
    let Some(shared) = w.shared.as_deref() else {
        return;
    };
    let mut sink = Sink::begin(&shared.ring.words()[pos..pos + words], w.crash_safe);
    let header = body(&mut sink);
    sink.end(header);
    shared.ring.publish(&mut w.lease, words);
}

impl<'a> Sink<'a> {
    /// Stores the inline process and thread koids, if the thread has no
    /// index in the thread table.
    #[inline]
    fn koids(&mut self, koids: Option<(u64, u64)>) {
        if let Some((process, thread)) = koids {
            self.word(process);
            self.word(thread);
        }
    }

    /// Starts the record that fills `slots` exactly (crash-safe: behind a
    /// filler covering it, see `crate::mapped`).
    #[inline]
    fn begin(slots: &'a [AtomicU64], crash_safe: bool) -> Sink<'a> {
        if crash_safe {
            slots[0].store(filler(slots.len()), Ordering::Relaxed);
            // Release: the filler reaches memory before the body.
            fence(Ordering::Release);
        }
        Sink {
            slots,
            i: 1,
            crash_safe,
        }
    }

    /// Stores the header, completing the record.
    #[inline]
    fn end(self, header: u64) {
        debug_assert_eq!(self.i, self.slots.len());
        if self.crash_safe {
            // Release: the body reaches memory before the header.
            fence(Ordering::Release);
        }
        self.slots[0].store(header, Ordering::Relaxed);
    }

    #[inline]
    fn word(&mut self, w: u64) {
        self.slots[self.i].store(w, Ordering::Relaxed);
        self.i += 1;
    }

    fn stream(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.word(u64::from_le_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(b));
        }
    }

    /// The inline stream of a string ref, if it is inline.
    fn string(&mut self, r: u16, s: &str) {
        if r & 0x8000 != 0 {
            self.stream(&s.as_bytes()[..(r & 0x7fff) as usize]);
        }
    }
}

/// The ref and the string for a ref that may be inline, given the string
/// it stands for.
#[inline]
fn inline_len(r: u16) -> usize {
    if r & 0x8000 != 0 {
        stream_words((r & 0x7fff) as usize)
    } else {
        0
    }
}

/// Ref for a string written inline (or empty).
fn inline_ref(s: &str) -> u16 {
    let s = truncate_str(s);
    if s.is_empty() {
        0
    } else {
        0x8000 | s.len() as u16
    }
}

/// An argument resolved for the general encoder.
struct ResolvedArg<'a> {
    key: u16,
    key_str: &'static str,
    value: ArgValue<'a>,
    /// The value's string ref (string arguments).
    value_ref: u16,
    words: usize,
}

/// Any event: inline strings or thread, blobs, long argument lists.
#[cold]
#[inline(never)]
fn general_event(
    w: &mut Writer,
    site: Site,
    ty: u64,
    start: Option<u64>,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) {
    let cs = site.callsite;
    let gen = site.gen();
    // At most 15 arguments fit the header's count field; the rest are cut.
    let args = &args[..args.len().min(MAX_ARGS)];
    let cat = site.category_ref();
    let name = site.name_ref();
    let mut words = 2
        + if w.inline_thread { 2 } else { 0 }
        + inline_len(cat)
        + inline_len(name)
        + extra.is_some() as usize;
    let mut resolved: [Option<ResolvedArg<'_>>; MAX_ARGS] = Default::default();
    for (i, a) in args.iter().enumerate() {
        let key_str = cs.arg_names.get(i).copied().unwrap_or("");
        let key = match cs.keys.get(i).and_then(|k| k.get(gen)) {
            Some(r) => r,
            None => inline_ref(key_str),
        };
        let (value_ref, value_words) = match a {
            ArgValue::Str(StringRef::Inline(s)) => {
                let r = inline_ref(s);
                (r, inline_len(r))
            }
            ArgValue::Str(StringRef::Index(i)) if (1..=0x7fff).contains(i) => (*i, 0),
            ArgValue::Str(_) => (0, 0),
            ArgValue::Blob(b) => (0, stream_words(b.len())),
            v => (0, simple_value_words(v).unwrap_or(0)),
        };
        let aw = 1 + inline_len(key) + value_words;
        if aw > 0xfff {
            // An argument that cannot be encoded: the record is dropped.
            w.drop_records(1);
            return;
        }
        words += aw;
        resolved[i] = Some(ResolvedArg {
            key,
            key_str,
            value: *a,
            value_ref,
            words: aw,
        });
    }
    if words > MAX_RECORD_WORDS {
        w.drop_records(1);
        return;
    }
    let (ts, extra) = stamps(w.use_tsc, start, extra);
    let koids = w.inline_koids();
    let header = event_header(site, w.thread_bits, ty, args.len(), words);
    write_record(w, words, |sink| {
        sink.word(ts);
        sink.koids(koids);
        sink.string(cat, truncate_str(cs.category));
        sink.string(name, truncate_str(cs.name));
        for r in resolved.iter().flatten() {
            let (t, high, value) = value_parts(&r.value);
            let high = match r.value {
                ArgValue::Str(_) => r.value_ref as u64,
                _ => high,
            };
            sink.word(header::arg(t, r.words, r.key) | (high << 32));
            sink.string(r.key, truncate_str(r.key_str));
            match r.value {
                ArgValue::Str(StringRef::Inline(s)) => sink.string(r.value_ref, truncate_str(s)),
                ArgValue::Blob(b) => sink.stream(b),
                _ => {
                    if let Some(v) = value {
                        sink.word(v);
                    }
                }
            }
        }
        if let Some(x) = extra {
            sink.word(x);
        }
        header
    });
}

/// Emits a log record.
pub(crate) fn log(site: Site, message: &str) {
    with_writer(site, |w| {
        if !w.ready(site) {
            return;
        }
        let msg = truncate_str(message);
        let words = 2 + if w.inline_thread { 2 } else { 0 } + stream_words(msg.len());
        let ts = clock::read(w.use_tsc);
        let koids = w.inline_koids();
        let header = header::record(record_type::LOG, words)
            | ((msg.len() as u64) << 16)
            | ((w.thread_bits >> 24) << 32);
        write_record(w, words, |sink| {
            sink.word(ts);
            sink.koids(koids);
            sink.stream(msg.as_bytes());
            header
        });
    });
}

/// Emits a blob record named by the site's name (type "data") when the
/// data fits one (32 KiB); else a large blob record with metadata, kept
/// outside the ring (see `crate::large`).
pub(crate) fn blob(site: Site, data: &[u8]) {
    with_writer(site, |w| {
        if !w.ready(site) {
            return;
        }
        let cs = site.callsite;
        let name = site.name_ref();
        let small = 1 + inline_len(name) + stream_words(data.len());
        if data.len() <= 0x7fff && small <= MAX_RECORD_WORDS {
            write_record(w, small, |sink| {
                sink.string(name, truncate_str(cs.name));
                sink.stream(data);
                header::record(record_type::BLOB, small)
                    | ((name as u64) << 16)
                    | ((data.len() as u64) << 32)
                    | (1u64 << 48)
            });
            return;
        }
        large_blob(w, site, data);
    });
}

/// A large blob record with metadata (format 0), encoded into its own
/// allocation and kept in the session's side list; dropped and counted
/// when over its budget or too large to encode.
#[cold]
#[inline(never)]
fn large_blob(w: &mut Writer, site: Site, data: &[u8]) {
    let Some(shared) = w.shared.clone() else {
        return;
    };
    let cs = site.callsite;
    let string = |r: u16, s: &'static str| match r {
        0 => StringRef::Empty,
        r if r & 0x8000 != 0 => StringRef::Inline(truncate_str(s)),
        i => StringRef::Index(i),
    };
    let thread = match w.inline_koids() {
        Some((process, thread)) => ThreadRef::Inline { process, thread },
        None => ThreadRef::Index((w.thread_bits >> 24) as u8),
    };
    let record = LargeBlobWithMetadata {
        category: string(site.category_ref(), cs.category),
        name: string(site.name_ref(), cs.name),
        timestamp: clock::read(w.use_tsc),
        thread,
        args: &[],
        payload: data,
    };
    let kept = match encode_to_vec(&record) {
        Ok(words) => shared.large.push(words),
        Err(_) => false,
    };
    if !kept {
        w.drop_records(1);
    }
}

static NEXT_ASYNC_ID: StdAtomicU64 = StdAtomicU64::new(1);

/// A process-unique id for async and flow events.
pub(crate) fn next_async_id() -> u64 {
    NEXT_ASYNC_ID.fetch_add(1, Ordering::Relaxed)
}
