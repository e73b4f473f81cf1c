//! CPU samples (and sampled allocations, issue 45) at collection (issue
//! 31, issue 42): the collector notices the `fxt.sample` (`fxt.alloc`)
//! records it writes, and the trace ends with this
//! process's `fxt.modules` ([`super::modules`]: which file and build id
//! each sampled address belongs to), from which the `fxt` command names the
//! samples with the binaries on the machine. With feature `symbolize` the
//! program does that itself: the collector keeps the samples, and the
//! appendix also holds `fxt.symbols` and `fxt.perfetto`
//! ([`fxt_symbols::appendix`]), so that any machine reads the samples'
//! names without the binaries, and Perfetto shows them from the file as
//! written.
//!
//! Only a session that samples keeps anything: the walk below looks at one
//! header word per record, and without feature `symbolize` at none once a
//! sample has been seen (all the appendix needs to know).

use fxt_format::encode::header::{blob_name_and_type, record_type, record_words};
use fxt_format::encode::{BlobType, ThreadRef};
use fxt_format::samples::{ModuleEntry, Modules, ALLOC_NAME, SAMPLE_NAME};

use crate::memory::atomic::{AtomicU64, Ordering};

/// The name field of a blob named `fxt.sample` inline (bit 15: inline,
/// then the length).
const SAMPLE_NAME_REF: u16 = 0x8000 | SAMPLE_NAME.len() as u16;
/// The name field of a blob named `fxt.alloc` inline (a sampled
/// allocation's stack is named from the same modules).
const ALLOC_NAME_REF: u16 = 0x8000 | ALLOC_NAME.len() as u16;

/// Whether the tap keeps the samples it sees (feature `symbolize`), or
/// only notes that there are some.
const KEEPS: bool = cfg!(feature = "symbolize");

/// The samples a collector has written.
#[derive(Debug, Default)]
pub(crate) struct SampleTap {
    /// Sample records seen (without feature `symbolize`, the walk stops
    /// at the first).
    seen: u64,
    /// The samples themselves, to name at collection.
    #[cfg(feature = "symbolize")]
    samples: Vec<fxt_format::samples::SampleRecord>,
    /// The sampled allocations and frees, for the heap profile.
    #[cfg(feature = "symbolize")]
    allocs: Vec<fxt_format::samples::AllocRecord>,
}

impl SampleTap {
    /// Notes the `fxt.sample` and `fxt.alloc` records among `words`
    /// (whole records, as a large record or a chunk copied aside holds
    /// them).
    pub(crate) fn scan(&mut self, words: &[u64]) {
        self.scan_with(words.len(), |i| words[i]);
    }

    /// As [`SampleTap::scan`], for a chunk's words read in place (Relaxed
    /// loads: the caller established their visibility, and no writer
    /// stores into them while it holds the chunk). Nothing is copied: a
    /// chunk written straight from the ring is read here only as far as
    /// its records' headers (and, with feature `symbolize`, its samples).
    pub(crate) fn scan_atomic(&mut self, words: &[AtomicU64]) {
        self.scan_with(words.len(), |i| words[i].load(Ordering::Relaxed));
    }

    /// Walks the `len` words `word(i)` reads, record by record.
    fn scan_with(&mut self, len: usize, word: impl Fn(usize) -> u64) {
        // Without feature `symbolize` the appendix needs only to know
        // that the session wrote a sample: once one is seen, the rest of
        // the session's records are not looked at.
        if !KEEPS && self.seen > 0 {
            return;
        }
        let mut i = 0;
        while i < len {
            let h = word(i);
            let size = record_words(h) as usize;
            if size == 0 || i + size > len {
                // The end of the published records (or damage: nothing
                // after it is framed).
                return;
            }
            let blob = h & 0xf == record_type::BLOB;
            let (name, ty) = blob_name_and_type(h);
            let data = blob && ty == BlobType::Data.value();
            // An `fxt.alloc` record's stack is named from the same
            // modules as a CPU sample's.
            if data && (name == SAMPLE_NAME_REF || name == ALLOC_NAME_REF) {
                self.seen += 1;
                #[cfg(feature = "symbolize")]
                self.keep((i..i + size).map(&word));
                if !KEEPS {
                    return;
                }
            }
            i += size;
        }
    }

    #[cfg(feature = "symbolize")]
    fn keep(&mut self, record: impl Iterator<Item = u64>) {
        use fxt_format::decode::{Record, SliceReader};
        use fxt_format::samples::{AllocRecord, SampleBlob};
        let bytes: Vec<u8> = record.flat_map(u64::to_le_bytes).collect();
        if let Some(Ok(Record::Blob(blob))) = SliceReader::new(&bytes).next() {
            if let Some(Ok(SampleBlob::Sample(s))) = SampleBlob::from_blob(&blob) {
                self.samples.push(s);
            } else if let Some(Ok(a)) = AllocRecord::from_blob(&blob) {
                self.allocs.push(a);
            }
        }
    }

    /// The records to append: the modules of this process (read now,
    /// stamped `timestamp` on `thread`), and with feature `symbolize` the
    /// symbols of every sampled address and the Perfetto packets. Empty
    /// when nothing was sampled, or when they cannot be encoded (the
    /// samples stay in the trace; `fxt symbolize` adds the rest later).
    pub(crate) fn appendix(
        &self,
        pid: u64,
        timestamp: u64,
        thread: ThreadRef,
        ticks_per_second: u64,
    ) -> Vec<u64> {
        if self.seen == 0 {
            return Vec::new();
        }
        let found = super::modules::of_this_process();
        let words = modules_records(pid, &found, timestamp, thread);
        #[cfg(feature = "symbolize")]
        let words = [words, self.names(pid, found, ticks_per_second)].concat();
        #[cfg(not(feature = "symbolize"))]
        let _ = ticks_per_second;
        words
    }

    /// `fxt.symbols` and `fxt.perfetto` for the samples and allocations
    /// kept (the CPU samples and the heap profile), their raw stacks
    /// unwound first (by `fxt_symbols`, the readers' unwinder, with
    /// this process's files).
    #[cfg(feature = "symbolize")]
    fn names(&self, pid: u64, modules: Vec<ModuleEntry>, ticks_per_second: u64) -> Vec<u64> {
        use fxt_format::samples::SampleRecord;
        let mut unwinder = fxt_symbols::StackUnwinder::new();
        let samples: Vec<SampleRecord> = self
            .samples
            .iter()
            .map(|s| match &s.raw_stack {
                Some(raw) => {
                    let unwound = unwinder.unwind(s.pid, &modules, raw);
                    SampleRecord {
                        frames: Vec::new(),
                        raw_stack: None,
                        ..*s
                    }
                    .with_frames(unwound.frames, unwound.truncated)
                }
                None => s.clone(),
            })
            .collect();
        let allocs: Vec<_> = self
            .allocs
            .iter()
            .map(|a| match &a.raw_stack {
                Some(raw) => {
                    let unwound = unwinder.unwind(a.pid, &modules, raw);
                    a.clone().with_frames(unwound.frames, unwound.truncated)
                }
                None => a.clone(),
            })
            .collect();
        let modules = [fxt_format::samples::ModulesRecord { pid, modules }];
        let request = fxt_symbols::Request {
            samples: &samples,
            allocs: &allocs,
            ticks_per_second,
            modules: &modules,
            symbols: &[],
        };
        let mut symbolizer = fxt_symbols::Symbolizer::new();
        match fxt_symbols::appendix(&request, &mut symbolizer) {
            Ok(a) => a.words,
            Err(e) => {
                eprintln!("fxt: cannot symbolize the CPU samples: {e}");
                Vec::new()
            }
        }
    }
}

/// The `fxt.modules` records of `modules` (empty if they cannot be encoded).
fn modules_records(
    pid: u64,
    modules: &[ModuleEntry],
    timestamp: u64,
    thread: ThreadRef,
) -> Vec<u64> {
    let list: Vec<_> = modules.iter().map(ModuleEntry::as_module).collect();
    let mut words = Vec::new();
    let modules = Modules {
        pid,
        modules: &list,
    };
    if modules
        .encode_records(timestamp, thread, &mut words)
        .is_err()
    {
        words.clear();
    }
    words
}

/// `words` (whole records) cut into its records.
pub(crate) fn records(words: &[u64]) -> Vec<&[u64]> {
    let mut out = Vec::new();
    let mut rest = words;
    while let Some(&h) = rest.first() {
        let size = record_words(h) as usize;
        if size == 0 || size > rest.len() {
            break;
        }
        let (record, tail) = rest.split_at(size);
        out.push(record);
        rest = tail;
    }
    out
}

/// The `fxt.modules` records of this process as it is mapped now (stamped
/// `timestamp` on `thread` if split), for a crash-safe session's durable
/// region: a killed process's samples can be named later (any `fxt`
/// command, or `fxt symbolize`) with the binaries on the machine.
pub(crate) fn modules_now(pid: u64, timestamp: u64, thread: ThreadRef) -> Vec<u64> {
    modules_records(pid, &super::modules::of_this_process(), timestamp, thread)
}
