//! `fxt recover`: a clean trace from a damaged one (say, the file of a
//! killed process).
//!
//! Every well-formed record up to the damage is copied byte for byte (by
//! its span in the input); a malformed record whose size is intact is left
//! out, and reading stops at the first record whose framing is lost (cut
//! short, size 0). A magic number record is put first if the input lacks
//! one. The summary goes to stderr.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use fxt_format::decode::Record;
use fxt_format::encode::{write_record, MagicNumber};

use crate::input::Input;
use crate::Error;

/// Arguments of `fxt recover`.
#[derive(clap::Args)]
pub struct Args {
    /// The damaged trace (`-` for stdin).
    file: String,
    /// The clean trace to write.
    #[arg(short, long)]
    output: String,
}

/// Runs `fxt recover`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_bytes(&args.file)?;
    let out_name = args.output.clone();
    let file = File::create(&args.output)
        .map_err(|e| Error::msg(format!("cannot create {out_name}: {e}")))?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let io_err = |e: std::io::Error| Error::io(&out_name, e);
    let mut first = true;
    let mut kept = 0u64;
    let mut written = 0u64;
    let walk = input.walk("recover", |reader, record| {
        if first && record != Record::Magic {
            write_record(&mut out, &MagicNumber).map_err(io_err)?;
            written += 8;
        }
        first = false;
        let raw = reader.record_bytes().unwrap_or_default();
        out.write_all(raw).map_err(io_err)?;
        written += raw.len() as u64;
        kept += 1;
        Ok(())
    })?;
    out.flush().map_err(io_err)?;
    let skipped = walk.skipped.len();
    match &walk.damage {
        Some(d) => eprintln!(
            "fxt: recovered {kept} records ({written} bytes) of {}; damage at offset {:#x}, {skipped} malformed records left out",
            input.name,
            d.offset()
        ),
        None => eprintln!(
            "fxt: recovered {kept} records ({written} bytes) of {}; no damage to the framing, {skipped} malformed records left out",
            input.name
        ),
    }
    Ok(ExitCode::SUCCESS)
}
