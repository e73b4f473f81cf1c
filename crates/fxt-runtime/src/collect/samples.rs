//! CPU samples at collection (issue 31): the collector keeps the
//! `fxt.sample` records it writes, and the trace ends with their appendix
//! (`fxt.modules`, `fxt.symbols`, `fxt.perfetto`, built by
//! [`fxt_symbols::appendix`]) so that any machine reads the samples' names
//! without the binaries, and Perfetto shows them.
//!
//! Only a session that samples keeps anything: the walk below looks at one
//! header word per record, and decodes only the records whose header says
//! "data blob named `fxt.sample` inline".

use fxt_format::decode::{Record, SliceReader};
use fxt_format::encode::ThreadRef;
use fxt_format::samples::{ModuleEntry, Modules, SampleBlob, SampleRecord, SAMPLE_NAME};

/// Record type of a blob record, and of a large record (whose size field
/// is wider).
const BLOB: u64 = 5;
const LARGE: u64 = 15;
/// The name field of a blob named `fxt.sample` inline (bit 15: inline,
/// then the length).
const SAMPLE_NAME_REF: u64 = 0x8000 | SAMPLE_NAME.len() as u64;
/// Blob type "data".
const DATA: u64 = 1;

/// The samples a collector has written.
#[derive(Debug, Default)]
pub(crate) struct SampleTap {
    samples: Vec<SampleRecord>,
}

impl SampleTap {
    /// Keeps the `fxt.sample` records among `words` (whole records, as a
    /// chunk or a large record holds them).
    pub(crate) fn scan(&mut self, words: &[u64]) {
        let mut i = 0;
        while i < words.len() {
            let h = words[i];
            let kind = h & 0xf;
            let size = if kind == LARGE {
                ((h >> 4) & 0xffff_ffff) as usize
            } else {
                ((h >> 4) & 0xfff) as usize
            };
            if size == 0 || i + size > words.len() {
                // The end of the published records (or damage: nothing
                // after it is framed).
                return;
            }
            if kind == BLOB && (h >> 16) & 0xffff == SAMPLE_NAME_REF && (h >> 48) & 0xff == DATA {
                self.keep(&words[i..i + size]);
            }
            i += size;
        }
    }

    fn keep(&mut self, record: &[u64]) {
        let bytes: Vec<u8> = record.iter().flat_map(|w| w.to_le_bytes()).collect();
        if let Some(Ok(Record::Blob(blob))) = SliceReader::new(&bytes).next() {
            if let Some(Ok(SampleBlob::Sample(s))) = SampleBlob::from_blob(&blob) {
                self.samples.push(s);
            }
        }
    }

    /// The records to append: modules of this process (read now), the
    /// symbols of every sampled address, the Perfetto packets. Empty when
    /// nothing was sampled, or when they cannot be encoded (the samples
    /// stay in the trace; `fxt symbolize` can add the rest later).
    pub(crate) fn appendix(&self, ticks_per_second: u64) -> Vec<u64> {
        if self.samples.is_empty() {
            return Vec::new();
        }
        let request = fxt_symbols::Request {
            samples: &self.samples,
            ticks_per_second,
            modules: &[],
            symbols: &[],
            // This process is the sampled one and still runs.
            discover: true,
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

/// `words` (whole records) cut into its records.
pub(crate) fn records(words: &[u64]) -> Vec<&[u64]> {
    let mut out = Vec::new();
    let mut rest = words;
    while let Some(&h) = rest.first() {
        let size = if h & 0xf == LARGE {
            ((h >> 4) & 0xffff_ffff) as usize
        } else {
            ((h >> 4) & 0xfff) as usize
        };
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
/// region: a killed process's samples can be symbolized later (`fxt
/// symbolize`) with the binaries on the machine. Empty when the mappings
/// cannot be read.
pub(crate) fn modules_now(pid: u64, timestamp: u64, thread: ThreadRef) -> Vec<u64> {
    let mut words = Vec::new();
    let Ok(found) = u32::try_from(pid)
        .map_err(drop)
        .and_then(|p| fxt_symbols::process_modules(p).map_err(drop))
    else {
        return words;
    };
    let list: Vec<_> = found.modules.iter().map(ModuleEntry::as_module).collect();
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
