//! Addresses to demangled function names, inlined frames and file:line,
//! with `addr2line`'s loader (DWARF, split DWARF, the symbol table as a
//! fallback) and `object` (the file's segments and build id).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use addr2line::Loader;
use fxt_format::samples::{FrameEntry, ModuleEntry};
use object::read::ReadCache;
use object::{Object, ObjectSegment};

/// One loaded segment of a file: where its bytes are in the file and at
/// which address the file's own (link-time) addresses put them.
#[derive(Debug, Clone, Copy)]
struct Segment {
    address: u64,
    file_offset: u64,
    file_size: u64,
}

/// `path` opened to read if it is a regular file. A trace names the files
/// its samples are symbolized from, and every reader of a trace symbolizes:
/// a FIFO would block the open until a writer came (hence `O_NONBLOCK`,
/// which changes nothing for a regular file's reads), a device would be
/// read as a binary.
pub(crate) fn open_regular(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// A binary opened for symbolization.
struct Binary {
    loader: Loader,
    segments: Vec<Segment>,
    build_id: Vec<u8>,
}

impl Binary {
    fn open(path: &Path) -> Option<Self> {
        let cache = ReadCache::new(open_regular(path)?);
        let file = object::File::parse(&cache).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (file_offset, file_size) = s.file_range();
                Segment {
                    address: s.address(),
                    file_offset,
                    file_size,
                }
            })
            .collect();
        let build_id = file.build_id().ok().flatten().unwrap_or_default().to_vec();
        let loader = Loader::new(path).ok()?;
        Some(Self {
            loader,
            segments,
            build_id,
        })
    }

    /// The file's own address of runtime `address` in `module`: the file
    /// offset it maps, moved to the address of the segment holding it.
    fn file_address(&self, module: &ModuleEntry, address: u64) -> Option<u64> {
        let file_offset = address
            .checked_sub(module.start)?
            .checked_add(module.offset)?;
        let segment = self.segments.iter().find(|s| {
            (s.file_offset..s.file_offset.saturating_add(s.file_size)).contains(&file_offset)
        })?;
        segment
            .address
            .checked_add(file_offset - segment.file_offset)
    }

    /// Frames of `probe` (a file address), innermost inlined first.
    fn frames(&self, probe: u64) -> Vec<FrameEntry> {
        let mut out = Vec::new();
        if let Ok(mut frames) = self.loader.find_frames(probe) {
            while let Ok(Some(frame)) = frames.next() {
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|name| name.into_owned());
                let (file, line) = frame
                    .location
                    .map(|l| (l.file.unwrap_or_default().to_owned(), l.line.unwrap_or(0)))
                    .unwrap_or_default();
                out.push(FrameEntry {
                    function: function.unwrap_or_default(),
                    file,
                    line,
                });
            }
        }
        // Without debug info (or a name in it), the symbol table names the
        // containing function.
        let unnamed = out.last().is_none_or(|f| f.function.is_empty());
        if unnamed {
            if let Some(name) = self.loader.find_symbol(probe) {
                let name = addr2line::demangle_auto(name.into(), None).into_owned();
                match out.last_mut() {
                    Some(last) => last.function = name,
                    None => out.push(FrameEntry {
                        function: name,
                        file: String::new(),
                        line: 0,
                    }),
                }
            }
        }
        out.retain(|f| !f.function.is_empty());
        out
    }
}

/// Resolves addresses of processes against the binaries on this machine,
/// opening each file once.
#[derive(Default)]
pub struct Symbolizer {
    binaries: HashMap<PathBuf, Option<Binary>>,
}

impl Symbolizer {
    /// A symbolizer with nothing opened yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frames of `address` in a process whose executable mappings are
    /// `modules`, innermost inlined frame first; empty if no mapping holds
    /// it, its file cannot be read, its build id differs from the one
    /// recorded (the file changed since), or nothing names the address.
    /// `return_address`: the address follows a call (every frame but the
    /// interrupted one), so the call itself, at `address - 1`, is looked up.
    pub fn resolve(
        &mut self,
        modules: &[ModuleEntry],
        address: u64,
        return_address: bool,
    ) -> Vec<FrameEntry> {
        let lookup = if return_address {
            address.saturating_sub(1)
        } else {
            address
        };
        let Some(module) = modules.iter().find(|m| m.contains(lookup)) else {
            return Vec::new();
        };
        if module.path == fxt_format::samples::modules::VDSO_PATH {
            // No file (not one by that name in the working directory).
            return Vec::new();
        }
        let binary = self
            .binaries
            .entry(PathBuf::from(&module.path))
            .or_insert_with(|| Binary::open(Path::new(&module.path)));
        let Some(binary) = binary else {
            return Vec::new();
        };
        if !module.build_id.is_empty() && module.build_id != binary.build_id {
            return Vec::new();
        }
        binary
            .file_address(module, lookup)
            .map(|probe| binary.frames(probe))
            .unwrap_or_default()
    }
}

/// What a frame without symbols is called, by every reader (the Perfetto
/// packets, `fxt`'s flame graphs, stats, dumps and tables): its file and
/// offset in it, the same in every run of the program (its address moves
/// with the mapping's randomized base), or its bare address outside any
/// module.
pub fn unresolved_name(module: Option<&ModuleEntry>, address: u64) -> String {
    match module {
        Some(m) => {
            let file = m.path.rsplit('/').next().unwrap_or(&m.path);
            format!(
                "{file}+{:#x}",
                address.wrapping_sub(m.start).wrapping_add(m.offset)
            )
        }
        None => format!("{address:#x}"),
    }
}
