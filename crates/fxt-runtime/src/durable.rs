//! The durable region: the string table, the thread table and naming
//! (kernel object) records.
//!
//! These records live apart from the ring of chunks, in a region the ring
//! never overwrites, so every string or thread ref in the kept data resolves
//! (circular mode), and the collector writes all of them before any chunk
//! (readers such as Perfetto drop records whose refs are not yet known).
//!
//! The region is budgeted ([`Durable::new`]); when it is full, or the string
//! table has all 32767 entries, strings are written inline in the records
//! that use them, and past 255 threads (or a full region) thread refs are
//! inline too. Appending takes a mutex: only slow paths (a call site's first
//! use in a session, a thread's first event) come here, never the per-event
//! hot path.
//!
//! In crash-safe mode each appended record is also stored, with the
//! crash-safe protocol (`crate::memory::filler::store_record`), at the same offset
//! of the durable region of the mapped file (the budget is that region's
//! size), so a killed process leaves its strings and threads before its
//! chunks in the file.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::memory::words::Words;

use fxt_format::encode::object::{OBJ_TYPE_PROCESS, OBJ_TYPE_THREAD};
use fxt_format::encode::{
    encode_into_vec, truncate_str, Arg, ArgValue, Encode, KernelObject, StringRecord, StringRef,
    ThreadRecord, MAX_RECORD_WORDS,
};

/// Largest string table index.
pub const MAX_STRING_INDEX: u16 = 0x7fff;
/// Largest thread table index.
pub const MAX_THREAD_INDEX: u16 = 0xff;

/// The durable region of one session.
#[derive(Debug)]
pub(crate) struct Durable {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The records, in order. Never longer than `budget`.
    words: Vec<u64>,
    budget: usize,
    records: u64,
    strings: HashMap<Box<str>, u16>,
    next_string: u16,
    next_thread: u16,
    /// The durable region of the crash-safe file (`budget` words).
    mirror: Option<Words>,
}

impl Inner {
    fn append<R: Encode>(&mut self, record: &R) -> bool {
        match record.word_len() {
            // Every durable record is a normal one (at most 4095 words), so
            // a filler can cover it in the mirror.
            Ok(n) if self.words.len() + n <= self.budget && n <= MAX_RECORD_WORDS => {
                let start = self.words.len();
                let ok = encode_into_vec(record, &mut self.words).is_ok();
                self.records += ok as u64;
                if let (true, Some(m)) = (ok, &self.mirror) {
                    crate::memory::filler::store_record(
                        m.slice(start..self.words.len()),
                        &self.words[start..],
                    );
                }
                ok
            }
            _ => false,
        }
    }

    /// Appends already encoded whole `records` (each a normal record of at
    /// most [`MAX_RECORD_WORDS`] words), all or none.
    fn append_words(&mut self, records: &[&[u64]]) -> bool {
        let words: usize = records.iter().map(|r| r.len()).sum();
        let fits = self.words.len() + words <= self.budget
            && records
                .iter()
                .all(|r| !r.is_empty() && r.len() <= MAX_RECORD_WORDS);
        if !fits {
            return false;
        }
        for record in records {
            let start = self.words.len();
            self.words.extend_from_slice(record);
            self.records += 1;
            if let Some(m) = &self.mirror {
                crate::memory::filler::store_record(m.slice(start..self.words.len()), record);
            }
        }
        true
    }

    /// The string ref for `s`: 0 for "", an index, or `0x8000 | len`
    /// (inline) when the table or region is full.
    fn intern(&mut self, s: &str) -> u16 {
        let s = truncate_str(s);
        if s.is_empty() {
            return 0;
        }
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        if self.next_string <= MAX_STRING_INDEX {
            let index = self.next_string;
            if self.append(&StringRecord { index, value: s }) {
                self.next_string += 1;
                self.strings.insert(s.into(), index);
                return index;
            }
        }
        0x8000 | s.len() as u16
    }

    fn name_ref<'a>(&mut self, s: &'a str) -> StringRef<'a> {
        match self.intern(s) {
            0 => StringRef::Empty,
            r if r & 0x8000 != 0 => StringRef::Inline(s),
            i => StringRef::Index(i),
        }
    }

    fn kernel_object(
        &mut self,
        koid: u64,
        object_type: u8,
        name: &str,
        process: Option<u64>,
    ) -> bool {
        let name = self.name_ref(name);
        let key = self.name_ref("process");
        let args_buf;
        let args: &[Arg<'_>] = match process {
            Some(pid) => {
                args_buf = [Arg::new(key, ArgValue::Koid(pid))];
                &args_buf
            }
            None => &[],
        };
        self.append(&KernelObject {
            koid,
            object_type,
            name,
            args,
        })
    }
}

impl Durable {
    /// A region of at most `budget_words` words.
    pub(crate) fn new(budget_words: usize) -> Durable {
        Durable::build(budget_words, None)
    }

    /// A region whose records are also stored in `mirror` (crash-safe
    /// mode; prefilled with fillers), and at most as long.
    pub(crate) fn mirrored(mirror: Words) -> Durable {
        Durable::build(mirror.len(), Some(mirror))
    }

    fn build(budget_words: usize, mirror: Option<Words>) -> Durable {
        Durable {
            inner: Mutex::new(Inner {
                words: Vec::with_capacity(budget_words.min(1 << 16)),
                budget: budget_words,
                records: 0,
                strings: HashMap::new(),
                next_string: 1,
                next_thread: 1,
                mirror,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the region torn (a
        // record is appended whole or not at all), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The string ref for `s` (see the module docs).
    pub(crate) fn intern(&self, s: &str) -> u16 {
        self.lock().intern(s)
    }

    /// Names the process (kernel object record of type `ZX_OBJ_TYPE_PROCESS`).
    pub(crate) fn name_process(&self, pid: u64, name: &str) {
        self.lock().kernel_object(pid, OBJ_TYPE_PROCESS, name, None);
    }

    /// Appends encoded records (see [`Inner::append_words`]); false when
    /// they do not fit (nothing is appended then).
    pub(crate) fn append_records(&self, records: &[&[u64]]) -> bool {
        self.lock().append_words(records)
    }

    /// Registers a thread: a thread record (if an index and room are left)
    /// and a kernel object record naming it. Returns its thread index, or
    /// `None` when its refs must be inline.
    pub(crate) fn add_thread(&self, pid: u64, tid: u64, name: &str) -> Option<u8> {
        let mut d = self.lock();
        let mut index = None;
        if d.next_thread <= MAX_THREAD_INDEX {
            let i = d.next_thread as u8;
            if d.append(&ThreadRecord {
                index: i,
                process: pid,
                thread: tid,
            }) {
                d.next_thread += 1;
                index = Some(i);
            }
        }
        d.kernel_object(tid, OBJ_TYPE_THREAD, name, Some(pid));
        index
    }

    /// Names a thread again (kernel object record of type `ZX_OBJ_TYPE_THREAD`).
    pub(crate) fn name_thread(&self, pid: u64, tid: u64, name: &str) {
        self.lock()
            .kernel_object(tid, OBJ_TYPE_THREAD, name, Some(pid));
    }

    /// Calls `f` with the records from word `from` on, and the number of
    /// records in the region; returns the region's length in words.
    pub(crate) fn read_from<R>(&self, from: usize, f: impl FnOnce(&[u64], u64) -> R) -> (usize, R) {
        let d = self.lock();
        let from = from.min(d.words.len());
        (d.words.len(), f(&d.words[from..], d.records))
    }
}
