//! Raw stacks to frames: a sample that carries the interrupted registers
//! and a copy of its stack ([`fxt_format::samples::RawStackRecord`]) is
//! unwound here, by samply's unwinder `framehop`, with the unwind tables
//! (`.eh_frame`, `.eh_frame_hdr`, `.debug_frame`) of the files that the
//! trace's `fxt.modules` names: the build id checked, as for names. This
//! is the one unwinder: the `fxt` command's readers use it, and a program
//! built with feature `symbolize` uses it at collection.
//!
//! A return address in no module whose file could be read (the file is
//! gone, changed, or the code was generated at run time) ends the stack
//! there: the sample is marked truncated, the addresses found so far are
//! kept. Nothing read from the copy can make the walk read elsewhere: the
//! unwinder reads only the copy's words.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, MayAllocateDuringUnwind, Module, Unwinder};
use fxt_format::samples::modules::VDSO_PATH;
use fxt_format::samples::{
    Arch, ModuleEntry, ModulesRecord, RawStackRecord, SampleRecord, MAX_FRAMES,
};
use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSegment};

use crate::symbolize::open_regular;

/// Section bytes, shared by the processes that map the same file.
type Data = Arc<[u8]>;

/// A section's stated addresses and bytes.
type Section = (Range<u64>, Data);

/// The unwind tables of one file.
struct Tables {
    build_id: Vec<u8>,
    /// Loadable segments: (stated address, file offset, file size).
    segments: Vec<(u64, u64, u64)>,
    eh_frame: Option<Section>,
    eh_frame_hdr: Option<Section>,
    debug_frame: Option<Data>,
}

impl Tables {
    fn open(path: &Path) -> Option<Tables> {
        if path == Path::new(VDSO_PATH) {
            let image = own_vdso()?;
            return Tables::parse(&object::File::parse(&*image).ok()?);
        }
        let cache = ReadCache::new(open_regular(path)?);
        Tables::parse(&object::File::parse(&cache).ok()?)
    }

    fn parse<'d, R: object::ReadRef<'d>>(file: &object::File<'d, R>) -> Option<Tables> {
        let section = |name: &str| {
            let s = file.section_by_name(name)?;
            let data = s.uncompressed_data().ok()?;
            Some((s.address()..s.address() + s.size(), Data::from(&*data)))
        };
        let segments = file
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                (s.address(), offset, size)
            })
            .collect();
        Some(Tables {
            build_id: file.build_id().ok().flatten().unwrap_or_default().to_vec(),
            segments,
            eh_frame: section(".eh_frame"),
            eh_frame_hdr: section(".eh_frame_hdr"),
            debug_frame: section(".debug_frame").map(|(_, d)| d),
        })
    }

    /// The load bias of `mapping` (runtime address less stated address):
    /// from the loadable segment that most of the mapping's bytes come
    /// from (the mapping is page-aligned, so its first bytes may belong to
    /// the segment before, whose addresses are biased differently).
    fn bias(&self, mapping: &ModuleEntry) -> Option<u64> {
        let len = mapping.end.checked_sub(mapping.start)?;
        let file = mapping.offset..mapping.offset.checked_add(len)?;
        let overlap = |&&(_, start, size): &&(u64, u64, u64)| {
            let end = start.saturating_add(size);
            end.min(file.end).saturating_sub(start.max(file.start))
        };
        let &(address, start, _) = self
            .segments
            .iter()
            .filter(|s| overlap(s) > 0)
            .max_by_key(overlap)?;
        // The segment's first byte is at `mapping.start + (start -
        // mapping.offset)` in the process.
        Some(
            mapping
                .start
                .wrapping_add(start)
                .wrapping_sub(mapping.offset)
                .wrapping_sub(address),
        )
    }

    /// A framehop module for `mapping` of this file.
    fn module(&self, mapping: &ModuleEntry) -> Option<Module<Data>> {
        let base = self.bias(mapping)?;
        let text = mapping.start.wrapping_sub(base)..mapping.end.wrapping_sub(base);
        let sections = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: Some(text),
            eh_frame_svma: self.eh_frame.as_ref().map(|(r, _)| r.clone()),
            eh_frame: self.eh_frame.as_ref().map(|(_, d)| d.clone()),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|(r, _)| r.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|(_, d)| d.clone()),
            debug_frame: self.debug_frame.clone(),
            ..Default::default()
        };
        Some(Module::new(
            mapping.path.clone(),
            mapping.start..mapping.end,
            base,
            sections,
        ))
    }
}

/// One process's unwinder: the modules whose files were found.
struct Process {
    unwinder: UnwinderX86_64<Data, MayAllocateDuringUnwind>,
    cache: Box<CacheX86_64<MayAllocateDuringUnwind>>,
    /// The mappings added to the unwinder.
    known: Vec<Range<u64>>,
}

/// Unwinds raw stacks with the files on this machine, opening each file
/// once.
#[derive(Default)]
pub struct StackUnwinder {
    files: HashMap<PathBuf, Option<Arc<Tables>>>,
    processes: HashMap<u64, Process>,
}

/// The frames unwound from one raw stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwound {
    /// Code addresses, innermost first: the pc, then return addresses.
    pub frames: Vec<u64>,
    /// The walk stopped before the thread's outermost frame (an address
    /// in no known module, a word outside the copy, the frame limit).
    pub truncated: bool,
}

impl StackUnwinder {
    /// An unwinder with nothing opened yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Unwinds `raw`, taken in process `pid` whose executable mappings are
    /// `modules` (all of them: the process's unwinder is made on its first
    /// raw stack).
    pub fn unwind(&mut self, pid: u64, modules: &[ModuleEntry], raw: &RawStackRecord) -> Unwound {
        let Some(pc) = raw.pc() else {
            return Unwound {
                frames: Vec::new(),
                truncated: true,
            };
        };
        if raw.arch != Arch::X86_64 || raw.registers.len() < 3 {
            return Unwound {
                frames: vec![pc],
                truncated: true,
            };
        }
        if !self.processes.contains_key(&pid) {
            let process = self.process(modules);
            self.processes.insert(pid, process);
        }
        let Some(process) = self.processes.get_mut(&pid) else {
            return Unwound {
                frames: vec![pc],
                truncated: true,
            };
        };
        walk(process, raw)
    }

    fn process(&mut self, modules: &[ModuleEntry]) -> Process {
        let mut unwinder = UnwinderX86_64::new();
        let mut known = Vec::new();
        for mapping in modules {
            let tables = self
                .files
                .entry(PathBuf::from(&mapping.path))
                .or_insert_with(|| Tables::open(Path::new(&mapping.path)).map(Arc::new));
            let Some(tables) = tables else { continue };
            if !mapping.build_id.is_empty() && mapping.build_id != tables.build_id {
                continue;
            }
            if let Some(module) = tables.module(mapping) {
                unwinder.add_module(module);
                known.push(mapping.start..mapping.end);
            }
        }
        Process {
            unwinder,
            cache: Box::new(CacheX86_64::new()),
            known,
        }
    }
}

/// The walk of one raw stack (x86-64).
fn walk(process: &mut Process, raw: &RawStackRecord) -> Unwound {
    let (pc, sp, bp) = (raw.registers[0], raw.registers[1], raw.registers[2]);
    let mut read = |address: u64| raw.word_at(address).ok_or(());
    let regs = UnwindRegsX86_64::new(pc, sp, bp);
    let known = &process.known;
    let knows = |address: u64| known.iter().any(|r| r.contains(&address));
    let mut iter = process
        .unwinder
        .iter_frames(pc, regs, &mut process.cache, &mut read);
    let mut frames = Vec::new();
    loop {
        match iter.next() {
            Ok(Some(frame)) => {
                if frames.len() == MAX_FRAMES {
                    return Unwound {
                        frames,
                        truncated: true,
                    };
                }
                frames.push(frame.address());
                if !knows(frame.address_for_lookup()) {
                    // No tables for this code: going on would guess.
                    return Unwound {
                        frames,
                        truncated: true,
                    };
                }
            }
            Ok(None) => {
                return Unwound {
                    frames,
                    truncated: false,
                }
            }
            Err(_) => {
                return Unwound {
                    frames,
                    truncated: true,
                }
            }
        }
    }
}

/// Identifies a raw stack among a trace's: its process, and a hash of its
/// registers and words (the same stack unwinds to the same frames). What a
/// reader that keeps raw samples looks their frames up by.
pub type StackKey = (u64, u64);

/// The [`StackKey`] of `raw`, taken in process `pid`.
pub fn stack_key(pid: u64, raw: &RawStackRecord) -> StackKey {
    let mut hasher = DefaultHasher::new();
    raw.hash(&mut hasher);
    (pid, hasher.finish())
}

/// The modules of each process: the union of its records.
pub fn modules_by_pid(modules: &[ModulesRecord]) -> BTreeMap<u64, Vec<ModuleEntry>> {
    let mut by_pid: BTreeMap<u64, Vec<ModuleEntry>> = BTreeMap::new();
    for record in modules {
        let entry = by_pid.entry(record.pid).or_default();
        for m in &record.modules {
            if !entry.contains(m) {
                entry.push(m.clone());
            }
        }
    }
    by_pid
}

/// Replaces every raw-stack sample of `samples` by the frame-list sample
/// unwound from it ([`SampleRecord::with_frames`]), with the modules of
/// its process in `modules` (the union of a process's records). Returns
/// the frames of each distinct raw stack, by key.
pub fn unwind_samples(
    samples: &mut [SampleRecord],
    modules: &[ModulesRecord],
) -> HashMap<StackKey, Unwound> {
    let mut unwound = HashMap::new();
    if samples.iter().all(|s| s.raw_stack.is_none()) {
        return unwound;
    }
    let by_pid = modules_by_pid(modules);
    let mut unwinder = StackUnwinder::new();
    for sample in samples.iter_mut() {
        let Some(raw) = sample.raw_stack.take() else {
            continue;
        };
        let key = stack_key(sample.pid, &raw);
        let frames = unwound.entry(key).or_insert_with(|| {
            let modules = by_pid.get(&sample.pid).map_or(&[][..], Vec::as_slice);
            unwinder.unwind(sample.pid, modules, &raw)
        });
        let (frames, truncated) = (frames.frames.clone(), frames.truncated);
        *sample = SampleRecord {
            frames: Vec::new(),
            raw_stack: None,
            ..*sample
        }
        .with_frames(frames, truncated);
    }
    unwound
}

/// The length of the mapping that starts at `base` and that the kernel
/// names `[vdso]` in this process's `/proc/self/maps`.
fn vdso_mapping_len(base: u64) -> Option<u64> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (start, rest) = line.split_once('-')?;
    let end = rest.split_whitespace().next()?;
    let (start, end) = (
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    );
    (start == base).then(|| end.saturating_sub(start))
}

/// This process's vDSO image, copied: the kernel maps it whole (an ELF
/// file with its section headers at the end), at the address the
/// auxiliary vector gives. A trace's vDSO is unwound with it when their
/// build ids match (the same kernel build).
fn own_vdso() -> Option<Vec<u8>> {
    /// Far more than any vDSO (two to four pages).
    const MOST: u64 = 1 << 20;
    // SAFETY: `getauxval` reads the auxiliary vector.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
    if base == 0 {
        return None;
    }
    if vdso_mapping_len(base)? < 64 {
        return None;
    }
    // SAFETY: `AT_SYSINFO_EHDR` is the address of the vDSO's ELF header
    // (64 bytes on a 64-bit kernel), in its mapping (at least that long,
    // checked above), mapped readable for the process's life.
    let header = unsafe { core::slice::from_raw_parts(base as *const u8, 64) };
    if header[..4] != *b"\x7fELF" || header[4] != 2 {
        return None;
    }
    let u16_at = |at: usize| u64::from(u16::from_le_bytes([header[at], header[at + 1]]));
    let mut shoff = [0u8; 8];
    shoff.copy_from_slice(&header[0x28..0x30]);
    let size = u64::from_le_bytes(shoff).checked_add(u16_at(0x3a) * u16_at(0x3c))?;
    if !(64..=MOST).contains(&size) || size > vdso_mapping_len(base)? {
        return None;
    }
    // SAFETY: the image runs from its header to the end of its section
    // headers, which lie in the vDSO's mapping (checked against the
    // kernel's list of this process's mappings just above).
    let image = unsafe { core::slice::from_raw_parts(base as *const u8, size as usize) };
    Some(image.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::ObjectSymbol;

    /// A mapping whose page-rounded start holds the last bytes of the
    /// segment before its own (the linker packs segments in the file, each
    /// one page further on in memory): the bias comes from its own
    /// segment, not from the one its first byte belongs to.
    #[test]
    fn the_bias_is_the_executable_segments() {
        let tables = Tables {
            build_id: Vec::new(),
            segments: vec![(0, 0, 0x5a4b0), (0x5b4b0, 0x5a4b0, 0x10000)],
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
        };
        let bias = 0x5555_0000_0000;
        let mapping = ModuleEntry {
            start: bias + 0x5b000,
            end: bias + 0x6c000,
            offset: 0x5a000,
            build_id: Vec::new(),
            path: String::new(),
        };
        assert_eq!(tables.bias(&mapping), Some(bias));
    }

    #[inline(never)]
    fn caller() -> u64 {
        std::hint::black_box(1)
    }

    /// A sample interrupted at the entry of the vDSO's `clock_gettime`
    /// (its return address on top of the stack): the vDSO, listed as
    /// [`VDSO_PATH`] with its build id, is unwound with this process's own
    /// copy, so the walk goes on to the caller; with another build id it
    /// stops at the pc.
    #[test]
    fn a_vdso_frame_is_unwound_with_this_machines_vdso() {
        let image = own_vdso().expect("a vDSO");
        let file = object::File::parse(&*image).unwrap();
        // SAFETY: `getauxval` reads the auxiliary vector.
        let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
        let entry = file
            .dynamic_symbols()
            .find(|s| s.name().is_ok_and(|n| n.ends_with("clock_gettime")))
            .expect("clock_gettime in the vDSO")
            .address();
        let text = file
            .segments()
            .find(|s| s.address() <= entry && entry < s.address() + s.size())
            .unwrap();
        let (offset, _) = text.file_range();
        let page = 4096;
        let start = (base + text.address()) & !(page - 1);
        let vdso = ModuleEntry {
            start,
            end: (base + text.address() + text.size()).next_multiple_of(page),
            offset: offset & !(page - 1),
            build_id: file.build_id().unwrap().unwrap().to_vec(),
            path: VDSO_PATH.to_owned(),
        };
        let ret = caller as *const () as u64 + 4;
        let raw = RawStackRecord {
            arch: Arch::X86_64,
            registers: vec![base + entry, 0x7000, 0],
            stack_address: 0x7000,
            stack: vec![ret, 0, 0, 0],
        };
        let unwound = StackUnwinder::new().unwind(1, std::slice::from_ref(&vdso), &raw);
        assert_eq!(unwound.frames[..2], [base + entry, ret], "{unwound:x?}");
        // The caller is in no listed module: the walk ends there.
        assert!(unwound.truncated);
        let other = ModuleEntry {
            build_id: vec![1, 2, 3],
            ..vdso
        };
        let unwound = StackUnwinder::new().unwind(1, &[other], &raw);
        assert_eq!(unwound.frames, [base + entry]);
    }
}
