//! `fxt dump`'s lines for the sample records:
//!
//! ```text
//! sample ts=1000 thread=10/11 walk=frame_pointers frames=3 stack=inner <- outer <- 0x5555d0001234
//! modules pid=10 count=4 [0x5555d000..0x5556e000 @0x2000 /usr/bin/app build_id=ab12..]
//! symbols pid=10 count=120
//! ```

use std::fmt::Write as _;

use fxt_format::decode::Record;
use fxt_format::samples::{SampleBlob, Walk};

use super::Names;

/// Writes the line of `record` into `out` if it is a sample, modules or
/// symbols record, and returns whether it was one.
pub fn format(out: &mut String, record: &Record, names: &Names) -> bool {
    let Record::Blob(blob) = record else {
        return false;
    };
    let Some(decoded) = SampleBlob::from_blob(blob) else {
        return false;
    };
    let _ = match decoded {
        Err(e) => write!(
            out,
            "blob name={:?} (malformed: {e})",
            blob.name.to_string()
        ),
        Ok(SampleBlob::Sample(s)) => {
            let walk = match s.walk {
                Walk::UnwindTables => "unwind_tables",
                Walk::FramePointers => "frame_pointers",
                Walk::PcOnly => "pc_only",
                Walk::RawStack => "raw_stack",
            };
            let _ = write!(
                out,
                "sample ts={} thread={}/{} walk={walk} frames={}{} stack=",
                s.timestamp,
                s.pid,
                s.tid,
                names.addresses(&s).len(),
                if names.truncated(&s) {
                    " truncated"
                } else {
                    ""
                }
            );
            out.push_str(&names.stack(&s).join(" <- "));
            Ok(())
        }
        Ok(SampleBlob::Modules(m)) => {
            let _ = write!(out, "modules pid={} count={}", m.pid, m.modules.len());
            for module in &m.modules {
                let id: String = module.build_id.iter().map(|b| format!("{b:02x}")).collect();
                let _ = write!(
                    out,
                    " [{:#x}..{:#x} @{:#x} {} build_id={id}]",
                    module.start, module.end, module.offset, module.path
                );
            }
            Ok(())
        }
        Ok(SampleBlob::Symbols(s)) => {
            write!(out, "symbols pid={} count={}", s.pid, s.symbols.len())
        }
    };
    true
}
