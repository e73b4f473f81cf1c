//! The scheduler's tracepoints as tracefs describes them: each event's id
//! (what `perf_event_open` takes) and the offsets of its fields in a
//! sample's raw data, read from `events/sched/NAME/format` rather than
//! assumed, since they differ between kernel versions.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// Where tracefs is (mounted at `/sys/kernel/tracing` if nothing is).
pub fn tracefs() -> io::Result<PathBuf> {
    for dir in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if Path::new(dir).join("events/sched").is_dir() {
            return Ok(PathBuf::from(dir));
        }
    }
    let target = c"/sys/kernel/tracing";
    // SAFETY: NUL-terminated strings that outlive the call; a null data
    // pointer is allowed for tracefs.
    let r = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PathBuf::from("/sys/kernel/tracing"))
}

/// A field of a tracepoint's raw data.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
}

/// One tracepoint: its id and fields.
#[derive(Debug)]
pub struct Tracepoint {
    pub id: u64,
    fields: HashMap<String, Field>,
}

impl Tracepoint {
    /// Reads `events/sched/NAME/format` under `tracefs`.
    pub fn read(tracefs: &Path, name: &str) -> io::Result<Tracepoint> {
        let text = std::fs::read_to_string(tracefs.join("events/sched").join(name).join("format"))?;
        parse(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("cannot read the format of sched:{name}"),
            )
        })
    }

    /// The field `name`.
    pub fn field(&self, name: &str) -> io::Result<Field> {
        self.fields.get(name).copied().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("tracepoint has no field {name}"),
            )
        })
    }
}

/// Parses a tracefs format file: `ID: N` and lines
/// `field:TYPE NAME[LEN];\toffset:O;\tsize:S;\tsigned:X;`.
fn parse(text: &str) -> Option<Tracepoint> {
    let id = text
        .lines()
        .find_map(|l| l.strip_prefix("ID:"))?
        .trim()
        .parse()
        .ok()?;
    let mut fields = HashMap::new();
    for line in text.lines() {
        let Some(decl) = line.trim().strip_prefix("field:") else {
            continue;
        };
        let mut parts = decl.split(';').map(str::trim);
        let decl = parts.next()?;
        let name = decl.rsplit(' ').next()?.split('[').next()?.to_string();
        let mut offset = None;
        let mut size = None;
        for p in parts {
            if let Some(v) = p.strip_prefix("offset:") {
                offset = v.parse().ok();
            } else if let Some(v) = p.strip_prefix("size:") {
                size = v.parse().ok();
            }
        }
        fields.insert(
            name,
            Field {
                offset: offset?,
                size: size?,
            },
        );
    }
    Some(Tracepoint { id, fields })
}

/// Reads a signed integer field (1, 2, 4 or 8 bytes) of `raw`.
pub fn int(raw: &[u8], f: Field) -> Option<i64> {
    let b = raw.get(f.offset..f.offset + f.size)?;
    Some(match f.size {
        1 => b[0] as i8 as i64,
        2 => i16::from_ne_bytes(b.try_into().ok()?) as i64,
        4 => i32::from_ne_bytes(b.try_into().ok()?) as i64,
        8 => i64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// Reads a fixed `char[N]` field of `raw` (up to its first NUL).
pub fn text(raw: &[u8], f: Field) -> Option<&str> {
    let b = raw.get(f.offset..f.offset + f.size)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..end]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_file() {
        let tp = parse(
            "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n",
        )
        .unwrap();
        assert_eq!(tp.id, 372);
        let f = tp.field("prev_pid").unwrap();
        assert_eq!((f.offset, f.size), (24, 4));
        let mut raw = vec![0u8; 40];
        raw[8..12].copy_from_slice(b"sh\0x");
        raw[24..28].copy_from_slice(&(-5i32).to_ne_bytes());
        raw[32..40].copy_from_slice(&0x100i64.to_ne_bytes());
        assert_eq!(int(&raw, f), Some(-5));
        assert_eq!(int(&raw, tp.field("prev_state").unwrap()), Some(0x100));
        assert_eq!(text(&raw, tp.field("prev_comm").unwrap()), Some("sh"));
        assert!(tp.field("nope").is_err());
        assert_eq!(int(&raw[..20], f), None, "out of the sample: no value");
    }
}
