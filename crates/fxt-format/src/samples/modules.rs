//! `fxt.modules`: the executable mappings of a process, enough to
//! symbolize its samples later with the binaries (by path and build id).
//!
//! Written at session start (so a killed crash-safe file has it) and again
//! at collection (libraries loaded later); a reader takes the union per
//! process. Payload words:
//!
//! | word | content |
//! |---|---|
//! | 0 | process koid |
//! | 1 | entry count M |
//! | then M entries | start address, end address (exclusive), file offset of the start, a word with bits `[0 .. 15]` build-id length B and `[16 .. 31]` path length P (the rest 0), B bytes of build id padded to 8, P bytes of path (UTF-8) padded to 8 |

use super::payload::{padded_len, put_padded, put_word, PayloadReader};
use super::{encode_named_blob, SamplesError, MODULES_NAME};
use crate::encode::{EncodeError, ThreadRef};

/// The path of the kernel's vDSO in a module list (it has no file; as
/// `/proc/PID/maps` names it).
pub const VDSO_PATH: &str = "[vdso]";

/// One executable mapping, borrowed for encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Module<'a> {
    /// First address of the mapping.
    pub start: u64,
    /// Address after its last byte.
    pub end: u64,
    /// Offset in the file of the mapping's first byte.
    pub offset: u64,
    /// The file's build id (GNU build-id note), empty if it has none.
    pub build_id: &'a [u8],
    /// The file's path (at most 65535 bytes).
    pub path: &'a str,
}

/// The modules of one process, ready to encode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modules<'a> {
    /// Process koid.
    pub pid: u64,
    /// Its executable mappings.
    pub modules: &'a [Module<'a>],
}

impl Modules<'_> {
    /// Bytes of the payload.
    pub fn payload_len(&self) -> usize {
        16 + self
            .modules
            .iter()
            .map(|m| 32 + padded_len(m.build_id.len()) + padded_len(m.path.len()))
            .sum::<usize>()
    }

    /// The payload bytes. A build id or path longer than 65535 bytes does
    /// not fit its length field.
    pub fn payload(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(self.payload_len());
        put_word(&mut out, self.pid);
        put_word(&mut out, self.modules.len() as u64);
        for m in self.modules {
            let b = u16::try_from(m.build_id.len())
                .map_err(|_| EncodeError::FieldOverflow("module build id length"))?;
            let p = u16::try_from(m.path.len())
                .map_err(|_| EncodeError::FieldOverflow("module path length"))?;
            put_word(&mut out, m.start);
            put_word(&mut out, m.end);
            put_word(&mut out, m.offset);
            put_word(&mut out, u64::from(b) | (u64::from(p) << 16));
            put_padded(&mut out, m.build_id);
            put_padded(&mut out, m.path.as_bytes());
        }
        Ok(out)
    }

    /// Appends the `fxt.modules` blob record (or split blob group, stamped
    /// `timestamp` on `thread`) to `out`; returns the words appended.
    pub fn encode_records(
        &self,
        timestamp: u64,
        thread: ThreadRef,
        out: &mut Vec<u64>,
    ) -> Result<usize, EncodeError> {
        encode_named_blob(MODULES_NAME, &self.payload()?, timestamp, thread, out)
    }
}

/// One decoded mapping.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleEntry {
    /// First address of the mapping.
    pub start: u64,
    /// Address after its last byte.
    pub end: u64,
    /// Offset in the file of the mapping's first byte.
    pub offset: u64,
    /// The file's build id (empty if unknown).
    pub build_id: Vec<u8>,
    /// The file's path.
    pub path: String,
}

impl ModuleEntry {
    /// Whether `address` lies in the mapping.
    pub fn contains(&self, address: u64) -> bool {
        (self.start..self.end).contains(&address)
    }

    /// The borrowed form, for encoding.
    pub fn as_module(&self) -> Module<'_> {
        Module {
            start: self.start,
            end: self.end,
            offset: self.offset,
            build_id: &self.build_id,
            path: &self.path,
        }
    }
}

/// A decoded `fxt.modules` payload.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModulesRecord {
    /// Process koid.
    pub pid: u64,
    /// Its executable mappings.
    pub modules: Vec<ModuleEntry>,
}

/// Smallest encoded entry: four words.
const MIN_ENTRY: usize = 32;

impl ModulesRecord {
    /// Decodes an `fxt.modules` payload (joined, if it was split). Bytes
    /// after the last entry are ignored.
    pub fn decode(payload: &[u8]) -> Result<Self, SamplesError> {
        let mut r = PayloadReader::new(payload);
        let pid = r.word("modules process koid")?;
        let count = r.word("modules entry count")?;
        // Never trust the count for an allocation: at most what fits.
        let fits = r.remaining() / MIN_ENTRY;
        let mut modules = Vec::with_capacity(usize::try_from(count).unwrap_or(fits).min(fits));
        for _ in 0..count {
            let start = r.word("module start")?;
            let end = r.word("module end")?;
            let offset = r.word("module file offset")?;
            let at = r.position();
            let lengths = r.word("module lengths")?;
            if lengths >> 32 != 0 {
                return Err(SamplesError::ReservedBits {
                    field: "module lengths",
                    offset: at,
                    word: lengths,
                });
            }
            let build_id = r
                .padded("module build id", (lengths & 0xffff) as usize)?
                .to_vec();
            let path = r.text("module path", (lengths >> 16 & 0xffff) as usize)?;
            modules.push(ModuleEntry {
                start,
                end,
                offset,
                build_id,
                path,
            });
        }
        Ok(Self { pid, modules })
    }
}
