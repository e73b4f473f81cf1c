//! Helpers shared by `tests/limits.rs`, `tests/reliability.rs` and
//! `tests/soak.rs`: run a session, decode what it wrote (keeping each
//! record's raw header word, to tell indexed from inline references), and
//! check that the trace's counts add up with the session's [`Stats`].
#![allow(dead_code, unused_imports)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

pub use fxt::format::decode::{
    ArgValue, Blob, Event, EventKind, KernelObject, LargeBlobWithMetadata, Log, Record,
    SliceReader, Thread,
};
pub use fxt::{Config, Mode, Stats};

/// Sessions are process-global: the tests of one binary take turns.
static SESSION_LOCK: Mutex<()> = Mutex::new(());

/// Takes the session lock (even if another test panicked with it).
pub fn lock() -> MutexGuard<'static, ()> {
    SESSION_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `ZX_OBJ_TYPE_PROCESS`.
pub const OBJ_PROCESS: u8 = 1;
/// `ZX_OBJ_TYPE_THREAD`.
pub const OBJ_THREAD: u8 = 2;
/// Provider event id "a buffer filled up, records were likely dropped".
pub const BUFFER_FILLED: u8 = 0;

/// A decoded trace: every record with the header word it was decoded
/// from, and the [`Stats`] the session returned.
#[derive(Debug)]
pub struct Trace {
    pub records: Vec<Record>,
    /// `headers[i]` is the first word of `records[i]` in the file.
    pub headers: Vec<u64>,
    pub stats: Stats,
    pub bytes: usize,
}

/// Decodes `bytes` strictly (any malformed record fails the test).
pub fn decode(bytes: &[u8], stats: Stats) -> Trace {
    let mut reader = SliceReader::new(bytes);
    let mut records = Vec::new();
    let mut headers = Vec::new();
    while let Some(r) = reader.next() {
        let offset = reader.record_offset() as usize;
        let record =
            r.unwrap_or_else(|e| panic!("the trace decodes: {e} (record {})", records.len()));
        let header = u64::from_le_bytes(bytes[offset..offset + 8].try_into().unwrap());
        records.push(record);
        headers.push(header);
    }
    Trace {
        records,
        headers,
        stats,
        bytes: bytes.len(),
    }
}

/// Finishes a oneshot or circular session into memory and decodes it.
pub fn finish(session: fxt::Session) -> Trace {
    let (bytes, stats) = session.finish_to_vec().expect("the session collects");
    assert_eq!(
        stats.bytes_written,
        bytes.len() as u64,
        "bytes_written is the file size"
    );
    decode(&bytes, stats)
}

/// Waits until the file at `path` is at least `len` bytes long, for pacing
/// a writer on the streamer's progress: a condition rather than a pause,
/// so a loaded machine or a single core makes the test slower, never
/// lossy. Panics after 60 s.
pub fn wait_for_len(path: &std::path::Path, len: u64) {
    let t0 = std::time::Instant::now();
    loop {
        let now = std::fs::metadata(path).map_or(0, |m| m.len());
        if now >= len {
            return;
        }
        assert!(
            t0.elapsed().as_secs() < 60,
            "{} is {now} bytes after 60 s, waiting for {len}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// A file path of this test process for a streaming session.
pub fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("fxt-reliability-{}-{name}.fxt", std::process::id()))
}

/// Finishes a session to its configured output `path` (how streaming and
/// crash-safe sessions finish), reads the file back, removes it and
/// decodes it.
pub fn finish_to_file(session: fxt::Session, path: &std::path::Path) -> Trace {
    let stats = session.finish().expect("the session finishes to its file");
    let bytes = std::fs::read(path).expect("the trace file is readable");
    let _ = std::fs::remove_file(path);
    assert_eq!(
        stats.bytes_written,
        bytes.len() as u64,
        "bytes_written is the file size"
    );
    decode(&bytes, stats)
}

/// Finishes a session of any mode (`path` is its configured output).
pub fn finish_any(session: fxt::Session, mode: Mode, path: &std::path::Path) -> Trace {
    match mode {
        Mode::Streaming => finish_to_file(session, path),
        _ => finish(session),
    }
}

/// Runs `f` in a session with `config` (taking the session lock) and
/// decodes the trace (oneshot or circular).
pub fn trace_with(config: Config, f: impl FnOnce()) -> Trace {
    let _turn = lock();
    let session = fxt::start(config).expect("session starts");
    f();
    finish(session)
}

impl Trace {
    /// The event records, in file order.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.records.iter().filter_map(|r| match r {
            Record::Event(e) => Some(e),
            _ => None,
        })
    }

    /// Events with their header words.
    pub fn events_with_headers(&self) -> impl Iterator<Item = (u64, &Event)> {
        self.records
            .iter()
            .zip(&self.headers)
            .filter_map(|(r, h)| match r {
                Record::Event(e) => Some((*h, e)),
                _ => None,
            })
    }

    /// The events named `name`, in file order.
    pub fn named<'t>(&'t self, name: &'t str) -> impl Iterator<Item = &'t Event> + 't {
        self.events().filter(move |e| e.name == name)
    }

    /// The only event named `name`.
    pub fn one(&self, name: &str) -> &Event {
        let found: Vec<&Event> = self.events().filter(|e| e.name == name).collect();
        assert_eq!(
            found.len(),
            1,
            "exactly one event named {name:?}: {found:#?}"
        );
        found[0]
    }

    /// Kernel object records of `object_type`, with their header words.
    pub fn kernel_objects(&self, object_type: u8) -> Vec<(u64, &KernelObject)> {
        self.records
            .iter()
            .zip(&self.headers)
            .filter_map(|(r, h)| match r {
                Record::KernelObject(k) if k.object_type == object_type => Some((*h, k)),
                _ => None,
            })
            .collect()
    }

    /// Log records.
    pub fn logs(&self) -> Vec<&Log> {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Log(l) => Some(l),
                _ => None,
            })
            .collect()
    }

    /// String records: (index, value).
    pub fn strings(&self) -> Vec<(u16, &str)> {
        self.records
            .iter()
            .filter_map(|r| match r {
                // Index 0 is reserved, its records ignored: fillers.
                Record::String { index: 0, .. } => None,
                Record::String { index, value } => Some((*index, &**value)),
                _ => None,
            })
            .collect()
    }

    /// Thread records: (index, process, thread).
    pub fn thread_records(&self) -> Vec<(u8, u64, u64)> {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Thread {
                    index,
                    process,
                    thread,
                } => Some((*index, *process, *thread)),
                _ => None,
            })
            .collect()
    }

    /// "Buffer filled up" provider events.
    pub fn buffer_filled_events(&self) -> usize {
        self.records
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    Record::ProviderEvent {
                        event: BUFFER_FILLED,
                        ..
                    }
                )
            })
            .count()
    }

    /// Records the program emitted (events, logs, blobs) in the file. A
    /// split blob group (an instant with the size and part count, then its
    /// blob records) is one emitted blob.
    pub fn emitted_in_file(&self) -> u64 {
        let records = self
            .records
            .iter()
            .filter(|r| {
                matches!(
                    r,
                    Record::Event(_)
                        | Record::Log(_)
                        | Record::Blob(_)
                        | Record::LargeBlobWithMetadata(_)
                        | Record::LargeBlobNoMetadata(_)
                )
            })
            .count() as u64;
        let parts: u64 = self
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Event(e) => split_blob_parts(e),
                _ => None,
            })
            .sum();
        records - parts
    }

    /// Checks that the file and the [`Stats`] agree:
    /// * every record of the file is counted in `records_written`, which is
    ///   the 3 preamble records + the durable records + the emitted records
    ///   + the "buffer filled up" event;
    /// * `emitted_records_written` is the number of events, logs and blobs;
    /// * the "buffer filled up" event is there (once, last) iff something was
    ///   dropped;
    /// * with `emitted = Some(n)`: written + dropped == n.
    pub fn check_accounting(&self, emitted: Option<u64>) {
        let s = &self.stats;
        assert_eq!(
            self.records.len() as u64,
            s.records_written,
            "records in the file == Stats.records_written"
        );
        assert_eq!(
            self.emitted_in_file(),
            s.emitted_records_written,
            "events, logs and blobs in the file == Stats.emitted_records_written"
        );
        let filled = self.buffer_filled_events() as u64;
        assert_eq!(
            filled,
            u64::from(s.records_dropped > 0),
            "a 'buffer filled up' event iff records were dropped ({} dropped)",
            s.records_dropped
        );
        if filled == 1 {
            assert!(
                matches!(
                    self.records.last(),
                    Some(Record::ProviderEvent {
                        event: BUFFER_FILLED,
                        ..
                    })
                ),
                "the 'buffer filled up' event ends the file"
            );
        }
        // A split blob group is one emitted record in as many records as
        // its event and parts.
        let split_parts: u64 = self
            .records
            .iter()
            .filter_map(|r| match r {
                Record::Event(e) => split_blob_parts(e),
                _ => None,
            })
            .sum();
        // Fillers (string records for index 0) pad a file written while
        // the session ran to whole blocks.
        let fillers = self
            .records
            .iter()
            .filter(|r| matches!(r, Record::String { index: 0, .. }))
            .count() as u64;
        assert_eq!(fillers, s.filler_records, "fillers in the file");
        assert_eq!(
            3 + s.durable_records + s.emitted_records_written + split_parts + filled + fillers,
            s.records_written,
            "preamble + durable + emitted (+ split blob parts) + filled + fillers == records_written"
        );
        assert!(
            matches!(self.records.first(), Some(Record::Magic)),
            "the file starts with the magic number"
        );
        if let Some(n) = emitted {
            assert_eq!(
                s.emitted_records_written + s.records_dropped,
                n,
                "every emitted record is either in the file or counted as dropped"
            );
        }
    }

    /// Checks that every string in events resolved (no dangling refs) and
    /// every event's thread is known.
    pub fn check_resolved(&self) {
        for e in self.events() {
            assert!(
                !e.category.is_undefined() && !e.name.is_undefined(),
                "unresolved string in {e:?}"
            );
            assert!(
                matches!(e.thread, Thread::Known { .. }),
                "unresolved thread in {e:?}"
            );
            for a in &e.args {
                assert!(!a.name.is_undefined(), "unresolved arg name in {e:?}");
                if let ArgValue::Str(t) = &a.value {
                    assert!(!t.is_undefined(), "unresolved arg value in {e:?}");
                }
            }
        }
    }

    /// Checks that, for each (thread, event name), the `u64` argument `key`
    /// strictly increases in file order. Returns how many events had it.
    pub fn check_increasing(&self, key: &str) -> usize {
        let mut last: BTreeMap<(Thread, String), u64> = BTreeMap::new();
        let mut n = 0;
        for e in self.events() {
            let Some(v) = try_u64(e, key) else { continue };
            n += 1;
            if let Some(prev) = last.insert((e.thread, e.name.to_string()), v) {
                assert!(
                    v > prev,
                    "{key} strictly increases per thread: {prev} then {v} in {:?} on {:?}",
                    e.name,
                    e.thread
                );
            }
        }
        n
    }
}

/// The value of argument `key` of an event.
pub fn arg<'e>(event: &'e Event, key: &str) -> &'e ArgValue {
    &event
        .args
        .iter()
        .find(|a| a.name == key)
        .unwrap_or_else(|| panic!("argument {key:?} in {event:?}"))
        .value
}

/// The `u64` argument `key` of an event, if it has one.
pub fn try_u64(event: &Event, key: &str) -> Option<u64> {
    event
        .args
        .iter()
        .find(|a| a.name == key)
        .and_then(|a| match a.value {
            ArgValue::U64(v) => Some(v),
            _ => None,
        })
}

/// The `u64` argument `key` of an event.
pub fn u64_arg(event: &Event, key: &str) -> u64 {
    try_u64(event, key).unwrap_or_else(|| panic!("u64 argument {key:?} in {event:?}"))
}

/// `(key, value)` pairs of an event, for comparing with a literal list.
pub fn args(event: &Event) -> Vec<(String, ArgValue)> {
    event
        .args
        .iter()
        .map(|a| (a.name.to_string(), a.value.clone()))
        .collect()
}

/// A string argument value.
pub fn s(text: &str) -> ArgValue {
    ArgValue::Str(text.into())
}

/// Record size in words from a normal record header.
pub fn header_words(header: u64) -> u64 {
    (header >> 4) & 0xfff
}

/// Record type from a header.
pub fn header_type(header: u64) -> u64 {
    header & 0xf
}

/// Thread ref of an event header (0 = inline).
pub fn event_thread_ref(header: u64) -> u8 {
    (header >> 24) as u8
}

/// Category string ref of an event header.
pub fn event_category_ref(header: u64) -> u16 {
    (header >> 32) as u16
}

/// Name string ref of an event header.
pub fn event_name_ref(header: u64) -> u16 {
    (header >> 48) as u16
}

/// Name string ref of a kernel object record header.
pub fn kernel_object_name_ref(header: u64) -> u16 {
    (header >> 24) as u16
}

/// Whether a string ref is inline (vs. empty or indexed).
pub fn is_inline(string_ref: u16) -> bool {
    string_ref & 0x8000 != 0
}

/// The longest prefix of `s` of at most 32000 bytes that ends on a char
/// boundary (what the format keeps of a longer string).
pub fn cut_32000(s: &str) -> &str {
    let mut end = s.len().min(32000);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The part count of a split blob group's event (its `fxt.blob.parts`
/// argument, when it also has `fxt.blob.size`).
pub fn split_blob_parts(e: &fxt_format::decode::Event) -> Option<u64> {
    use fxt_format::decode::ArgValue as V;
    use fxt_format::encode::split_blob::{PARTS_KEY, SIZE_KEY};
    let arg = |key: &str| {
        e.args
            .iter()
            .find(|a| a.name.as_str() == Some(key))
            .map(|a| &a.value)
    };
    match (arg(SIZE_KEY), arg(PARTS_KEY)) {
        (Some(V::U64(_)), Some(V::U64(n))) => Some(*n),
        _ => None,
    }
}
