//! `fxt convert --perfetto`: a copy of a trace that Perfetto and Tracy read
//! whole, by [`fxt_format::compat::convert_for_viewers`].
//!
//! Large blob records become split blob groups, string and thread records
//! move in front of their first use, complete events beginning on the same
//! nanosecond are put outermost first, and what Perfetto would drop anyway
//! (or what no viewer can walk, or what refers to indices never defined) is
//! left out. The output is checked as `fxt check --perfetto` checks it; the
//! summary (stderr) says what was changed and left out.

use std::process::ExitCode;

use fxt_format::compat::{check_perfetto, convert_for_viewers};

use crate::error::Error;
use crate::input::Input;

/// Arguments of `fxt convert`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// Convert for Perfetto and Tracy (the only target so far).
    #[arg(long)]
    perfetto: bool,
    /// The trace to write.
    #[arg(short, long)]
    output: String,
}

/// Runs `fxt convert`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    if !args.perfetto {
        return Err(Error::msg(
            "convert: say which viewer to convert for (--perfetto)",
        ));
    }
    let input = Input::open_trace_bytes(&args.file)?;
    let bytes = input.bytes().unwrap_or_default();
    let converted = convert_for_viewers(bytes);
    std::fs::write(&args.output, &converted.bytes)
        .map_err(|e| Error::msg(format!("cannot write {}: {e}", args.output)))?;

    let s = &converted.summary;
    let name = &input.name;
    eprintln!(
        "fxt: converted {name} for Perfetto: {} records in, {} out ({} bytes)",
        s.records_in,
        s.records_out,
        converted.bytes.len()
    );
    let line = |n: u64, what: &str| {
        if n > 0 {
            eprintln!("fxt:   {what}: {n}");
        }
    };
    line(
        s.large_blobs_split,
        "large blob records written as split blob groups",
    );
    line(
        s.large_blob_args_dropped,
        "arguments of large blobs left out (a split blob carries none)",
    );
    line(
        s.definitions_moved,
        "string and thread records copied in front of their first use",
    );
    line(
        s.slices_reordered,
        "complete events put outermost first (same nanosecond)",
    );
    line(
        s.dropped_slices,
        "left out: slices Perfetto would drop (partial overlaps, negative durations, ends without a begin)",
    );
    line(
        s.dropped_undefined_refs,
        "left out: records referring to a string or thread never defined",
    );
    line(
        s.dropped_unwalkable,
        "left out: records no viewer can walk (sized differently by header bits 4-15)",
    );
    line(s.dropped_malformed, "left out: malformed records");
    if let Some(d) = &s.damage {
        eprintln!(
            "fxt:   damage at offset {:#x}: nothing after it was read ({d})",
            d.offset()
        );
    }
    // The conversion promises a clean check: a finding is a bug in fxt,
    // worth a failing status.
    let report = check_perfetto(&converted.bytes);
    if report.is_clean() {
        eprintln!("fxt:   {}: ok for Perfetto and Tracy", args.output);
        Ok(ExitCode::SUCCESS)
    } else {
        eprint!("{report}");
        eprintln!(
            "fxt:   {}: {} findings remain for Perfetto (a bug in fxt: please report it)",
            args.output,
            report.len()
        );
        Ok(ExitCode::from(1))
    }
}
