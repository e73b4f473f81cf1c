//! The general encoders, for everything the simple layout cannot write:
//! inline strings or thread refs, blob arguments, long argument lists, log
//! records and blob records. Slow paths, through the thread's writer.

use fxt_format::encode::header::{self, record_type};
use fxt_format::encode::split_blob::{PARTS_KEY, SIZE_KEY};
use fxt_format::encode::stream::stream_words;
use fxt_format::encode::{
    encode_to_vec, truncate_str, ArgValue, LargeBlobWithMetadata, SplitBlob, StringRef, ThreadRef,
    MAX_ARGS, MAX_RECORD_WORDS,
};

use super::simple::{event_header, header_base, value_parts, value_words};
use crate::callsite::Site;
use crate::clock;
use crate::large::Large;
use crate::memory::filler::Store;
use crate::thread::Writer;

/// Stores a record's words and streams after its header, then the header
/// (through the one store protocol, [`Store`]).
struct Sink<'a> {
    store: Store<'a>,
    i: usize,
    #[cfg(debug_assertions)]
    words: usize,
}

/// Reserves `words` in the writer's chunk and writes one record there:
/// `body` stores everything after the header word and returns the header,
/// which is stored last; then the record is published. Nothing is written
/// when the chunk and the buffer have no room (the drop is counted by
/// `reserve`).
#[inline]
fn write_record(w: &mut Writer, words: usize, body: impl FnOnce(&mut Sink<'_>) -> u64) {
    let crash_safe = w.crash_safe;
    let Some(record) = w.reserve(words) else {
        return;
    };
    let mut sink = Sink {
        store: Store::begin(record.slots(), words, crash_safe),
        i: 1,
        #[cfg(debug_assertions)]
        words,
    };
    let header = body(&mut sink);
    #[cfg(debug_assertions)]
    debug_assert_eq!(sink.i, sink.words);
    sink.store.end(header);
    record.publish();
}

impl Sink<'_> {
    /// Stores the inline process and thread koids, if the thread has no
    /// index in the thread table.
    #[inline]
    fn koids(&mut self, koids: Option<(u64, u64)>) {
        if let Some((process, thread)) = koids {
            self.word(process);
            self.word(thread);
        }
    }

    #[inline]
    fn word(&mut self, w: u64) {
        self.store.put(self.i, w);
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

/// Words of the inline stream of a string ref (0 when indexed or empty).
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

/// Any event: inline strings or thread, blobs, long argument lists. Same
/// record layout as the simple encoder, with streams.
#[cold]
#[inline(never)]
pub(super) fn event(
    w: &mut Writer,
    site: Site,
    ty: u64,
    times: super::Times,
    extra: Option<u64>,
    args: &[ArgValue<'_>],
) {
    let cs = site.callsite;
    let generation = site.generation();
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
        let key = match cs.keys.get(i).and_then(|k| k.get(generation)) {
            Some(r) => r,
            None => inline_ref(key_str),
        };
        let (value_ref, value_len) = match a {
            ArgValue::Str(StringRef::Inline(s)) => {
                let r = inline_ref(s);
                (r, inline_len(r))
            }
            ArgValue::Str(StringRef::Index(i)) if (1..=0x7fff).contains(i) => (*i, 0),
            ArgValue::Str(_) => (0, 0),
            ArgValue::Blob(b) => (0, stream_words(b.len())),
            v => (0, value_words(v).unwrap_or(0)),
        };
        let aw = 1 + inline_len(key) + value_len;
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
    let (ts, extra) = super::stamps(w.use_tsc, times, extra);
    let koids = w.inline_koids();
    let header = event_header(header_base(site, w.thread_bits), ty, args.len(), words);
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

/// A log record.
pub(super) fn log(w: &mut Writer, message: &str) {
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
}

/// A blob record named by the site's name (type "data") when the data fits
/// one (32 KiB); else a split blob group, or a large blob record with
/// metadata (`Config::large_records`), kept outside the ring (see
/// `crate::large`).
pub(super) fn blob(w: &mut Writer, site: Site, data: &[u8]) {
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
}

/// A blob too large for one record, encoded into its own allocation and
/// kept in the session's side list: a split blob group (the default) or a
/// large blob record with metadata (format 0). Dropped and counted when
/// over the list's budget or too large to encode.
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
    let category = string(site.category_ref(), cs.category);
    let name = string(site.name_ref(), cs.name);
    let timestamp = clock::read(w.use_tsc);
    let encoded = if shared.settings.large_records {
        encode_to_vec(&LargeBlobWithMetadata {
            category,
            name,
            timestamp,
            thread,
            args: &[],
            payload: data,
        })
        .map(|words| Large { words, records: 1 })
    } else {
        let mut blob = SplitBlob::new(category, name, timestamp, thread, data);
        blob.size_key = string(shared.buffers.durable.intern(SIZE_KEY), SIZE_KEY);
        blob.parts_key = string(shared.buffers.durable.intern(PARTS_KEY), PARTS_KEY);
        let records = 1 + blob.part_count() as u64;
        encode_to_vec(&blob).map(|words| Large { words, records })
    };
    let kept = match encoded {
        Ok(large) => shared.buffers.large.push(large),
        Err(_) => false,
    };
    if !kept {
        w.drop_records(1);
    }
}
