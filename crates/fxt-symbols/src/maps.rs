//! The executable mappings of a process, from `/proc/PID/maps`, with the
//! build id of each file (read with `object`, only the parts it needs).

use std::collections::HashMap;
use std::path::Path;

use fxt_format::samples::{ModuleEntry, ModulesRecord};
use object::read::ReadCache;
use object::Object;

/// The executable, file-backed mappings of process `pid` (Linux only; any
/// other system, or a process that is gone or not readable, gives an
/// error). Mappings of the same file share one build-id read.
pub fn process_modules(pid: u32) -> std::io::Result<ModulesRecord> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    let mut build_ids: HashMap<String, Vec<u8>> = HashMap::new();
    let mut modules = Vec::new();
    for line in maps.lines() {
        let Some(mapping) = parse_maps_line(line) else {
            continue;
        };
        let build_id = build_ids
            .entry(mapping.path.clone())
            .or_insert_with(|| build_id(Path::new(&mapping.path)).unwrap_or_default())
            .clone();
        modules.push(ModuleEntry {
            build_id,
            ..mapping
        });
    }
    Ok(ModulesRecord {
        pid: u64::from(pid),
        modules,
    })
}

/// One line of `/proc/PID/maps` if it maps a file executable:
/// `start-end perms offset dev inode path`.
pub(crate) fn parse_maps_line(line: &str) -> Option<ModuleEntry> {
    let mut fields = line.split_ascii_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let _dev = fields.next()?;
    let _inode = fields.next()?;
    // The path may contain spaces: it is the rest of the line.
    let path = line.get(line.find('/')?..)?.trim_end();
    if !perms.contains('x') || path.ends_with(" (deleted)") {
        return None;
    }
    Some(ModuleEntry {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset: u64::from_str_radix(offset, 16).ok()?,
        build_id: Vec::new(),
        path: path.to_owned(),
    })
}

/// The GNU build id of the object file at `path`, if it has one.
pub fn build_id(path: &Path) -> Option<Vec<u8>> {
    let cache = ReadCache::new(crate::symbolize::open_regular(path)?);
    let file = object::File::parse(&cache).ok()?;
    file.build_id().ok()?.map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let m =
            parse_maps_line("5555d000-5556e000 r-xp 00002000 08:01 123   /usr/bin/my app").unwrap();
        assert_eq!(
            (m.start, m.end, m.offset),
            (0x5555_d000, 0x5556_e000, 0x2000)
        );
        assert_eq!(m.path, "/usr/bin/my app");
        assert!(
            parse_maps_line("5555d000-5556e000 r--p 00000000 08:01 123 /usr/bin/app").is_none()
        );
        assert!(parse_maps_line("7ffd000-7ffe000 r-xp 00000000 00:00 0   [vdso]").is_none());
        assert!(parse_maps_line("7ffd000-7ffe000 rw-p 00000000 00:00 0").is_none());
        assert!(parse_maps_line("1000-2000 r-xp 0 08:01 1 /tmp/x (deleted)").is_none());
        assert!(parse_maps_line("garbage").is_none());
    }

    #[test]
    fn this_process_maps_its_own_code_with_a_build_id() {
        let me = process_modules(std::process::id()).unwrap();
        let here = maps_line_probe as *const () as usize as u64;
        let module = me
            .modules
            .iter()
            .find(|m| m.contains(here))
            .expect("the test binary maps its own code");
        let exe = std::env::current_exe().unwrap();
        assert_eq!(Path::new(&module.path), exe.canonicalize().unwrap());
        // Rust's linker (lld or GNU ld via cc) writes a GNU build id.
        assert_eq!(Some(module.build_id.clone()), build_id(&exe));
        assert!(!module.build_id.is_empty());
    }

    #[inline(never)]
    fn maps_line_probe() {}
}
