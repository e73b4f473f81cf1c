//! The code this process has loaded, for its `fxt.modules` record: each
//! object's executable segment, file and build id, read from the loader's
//! own list (`dl_iterate_phdr`) and the build-id note mapped in memory, so
//! that neither `/proc` nor the files are read and no object-file parser
//! is compiled into the program. The page-rounded start, end and file
//! offset are what `/proc/PID/maps` shows for the same mapping.

use fxt_format::samples::ModuleEntry;

/// The executable segments of the objects loaded now that are files
/// (the vDSO is not), with their build ids.
pub(crate) fn of_this_process() -> Vec<ModuleEntry> {
    let mut found: Vec<ModuleEntry> = Vec::new();
    // SAFETY: `dl_iterate_phdr` calls `each` with valid `dl_phdr_info`
    // pointers while holding the loader's lock; `found` outlives the call,
    // and the callback does not unwind (it reads program headers and
    // pushes to the vector; an allocation failure aborts).
    unsafe {
        libc::dl_iterate_phdr(Some(each), (&mut found as *mut Vec<ModuleEntry>).cast());
    }
    found
}

/// `dl_iterate_phdr`'s callback: one loaded object.
unsafe extern "C" fn each(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: called by `dl_iterate_phdr` with a valid `info` and the
    // `data` pointer `of_this_process` gave it (its vector).
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Vec<ModuleEntry>>()) };
    found.extend(entries_of(info));
    0
}

/// The entries of one loaded object: one per executable segment.
fn entries_of(info: &libc::dl_phdr_info) -> Vec<ModuleEntry> {
    let Some(path) = path_of(info) else {
        return Vec::new();
    };
    if info.dlpi_phdr.is_null() || info.dlpi_phnum == 0 {
        return Vec::new();
    }
    // SAFETY: the loader gives `dlpi_phnum` program headers at `dlpi_phdr`.
    let phdrs = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let base = info.dlpi_addr;
    let build_id = phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_NOTE)
        .find_map(|p| build_id_in(mapped(base, p.p_vaddr, p.p_memsz)))
        .unwrap_or_default();
    let page = page_size();
    phdrs
        .iter()
        .filter(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0)
        .map(|p| {
            let start = base + p.p_vaddr;
            ModuleEntry {
                start: start & !(page - 1),
                end: (start + p.p_memsz).next_multiple_of(page),
                offset: p.p_offset & !(page - 1),
                build_id: build_id.clone(),
                path: path.clone(),
            }
        })
        .collect()
}

/// The object's file: the loader's name for a library, this executable's
/// path for the main program (which the loader leaves unnamed),
/// [`VDSO`] for the kernel's vDSO (no file: a reader on a machine whose
/// own vDSO has the same build id unwinds and names it from that).
fn path_of(info: &libc::dl_phdr_info) -> Option<String> {
    let name = if info.dlpi_name.is_null() {
        &[][..]
    } else {
        // SAFETY: a non-null `dlpi_name` is a NUL-terminated string.
        unsafe { core::ffi::CStr::from_ptr(info.dlpi_name) }.to_bytes()
    };
    if name.is_empty() {
        let exe = std::env::current_exe().ok()?;
        return exe.into_os_string().into_string().ok();
    }
    let name = std::str::from_utf8(name).ok()?;
    if name.starts_with("linux-vdso") || name.starts_with("linux-gate") {
        return Some(VDSO.to_owned());
    }
    name.starts_with('/').then(|| name.to_owned())
}

/// The path the vDSO is listed under (as `/proc/PID/maps` names it).
const VDSO: &str = fxt_format::samples::modules::VDSO_PATH;

/// The bytes of a segment of an object loaded at `base`.
fn mapped(base: u64, vaddr: u64, len: u64) -> &'static [u8] {
    // SAFETY: the range is a loaded segment of the object, as its program
    // headers state, mapped readable while the object is loaded: it is
    // read at once, under the loader's lock (no `dlclose` meanwhile).
    unsafe { core::slice::from_raw_parts((base + vaddr) as *const u8, len as usize) }
}

/// The GNU build id among the ELF notes `notes` (namesz, descsz, type,
/// then the name and the descriptor, each padded to 4 bytes).
fn build_id_in(mut notes: &[u8]) -> Option<Vec<u8>> {
    /// `NT_GNU_BUILD_ID`.
    const BUILD_ID: u32 = 3;
    let word = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    while notes.len() >= 12 {
        let name_len = word(notes, 0)? as usize;
        let desc_len = word(notes, 4)? as usize;
        let kind = word(notes, 8)?;
        let name_end = 12usize.checked_add(name_len.next_multiple_of(4))?;
        let desc_end = name_end.checked_add(desc_len.next_multiple_of(4))?;
        let name = notes.get(12..12 + name_len)?;
        let desc = notes.get(name_end..name_end.checked_add(desc_len)?)?;
        if kind == BUILD_ID && name == b"GNU\0" {
            return Some(desc.to_vec());
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

fn page_size() -> u64 {
    // SAFETY: `sysconf` takes a constant and returns -1 on failure.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend((name.len() as u32).to_ne_bytes());
        out.extend((desc.len() as u32).to_ne_bytes());
        out.extend(kind.to_ne_bytes());
        out.extend(name);
        out.resize(out.len().next_multiple_of(4), 0);
        out.extend(desc);
        out.resize(out.len().next_multiple_of(4), 0);
        out
    }

    #[test]
    fn the_build_id_is_the_gnu_note_of_type_3() {
        let mut notes = note(b"GNU\0", 1, &[0; 16]); // ABI tag
        notes.extend(note(b"Go\0", 3, b"not this"));
        notes.extend(note(b"GNU\0", 3, &[0xab, 0xcd, 0xef]));
        assert_eq!(build_id_in(&notes), Some(vec![0xab, 0xcd, 0xef]));
        assert_eq!(build_id_in(&note(b"GNU\0", 1, &[1; 4])), None);
        // Lengths that run past the segment end the search.
        let mut cut = note(b"GNU\0", 3, &[7; 20]);
        cut.truncate(24);
        assert_eq!(build_id_in(&cut), None);
        let mut huge = note(b"GNU\0", 3, &[7; 4]);
        huge[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(build_id_in(&huge), None);
        assert_eq!(build_id_in(&[]), None);
    }

    #[inline(never)]
    fn probe() {}

    #[test]
    fn this_program_maps_its_own_code_with_the_build_id_of_its_file() {
        let here = probe as *const () as usize as u64;
        let modules = of_this_process();
        let me = modules
            .iter()
            .find(|m| m.contains(here))
            .expect("the test binary maps its own code");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(std::path::Path::new(&me.path), exe);
        assert!(!me.build_id.is_empty(), "Rust's linkers write a build id");
        // The same mapping, start, end and offset, as the kernel lists it.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let line = format!("{:x}-{:x} r-xp {:08x}", me.start, me.end, me.offset);
        assert!(
            maps.lines().any(|l| l.starts_with(&line)),
            "{line} not in\n{maps}"
        );
        // Libraries are named by absolute paths, the vDSO as such.
        assert!(modules
            .iter()
            .all(|m| m.path.starts_with('/') || m.path == VDSO));
        assert!(modules.iter().any(|m| m.path.contains("libc")));
        let vdso = modules.iter().find(|m| m.path == VDSO).expect("the vDSO");
        assert!(!vdso.build_id.is_empty());
        assert!(
            maps.lines()
                .any(|l| l.starts_with(&format!("{:x}-", vdso.start)) && l.ends_with("[vdso]")),
            "{vdso:x?} not in\n{maps}"
        );
    }
}
