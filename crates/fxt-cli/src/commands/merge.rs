//! `fxt merge`: the trace manager's job. Concatenates the traces of several
//! providers (several processes, say) into one archive that opens as one
//! trace.
//!
//! The archive is written by [`crate::archive`]: each provider of each
//! input under a fresh provider id; records that an input has before any
//! provider info get a provider named after the input file. A damaged input
//! contributes the records up to its damage. CPU samples that their
//! programs did not name are named in the archive, with their Perfetto
//! packets ([`crate::samples::append_names`]).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::process::ExitCode;

use crate::archive::Archive;
use crate::error::Error;
use crate::input::Input;
use crate::samples;

/// Arguments of `fxt merge`.
#[derive(clap::Args)]
pub struct Args {
    /// The traces to merge, in order (`-` for stdin, once).
    #[arg(required = true)]
    files: Vec<String>,
    /// The archive to write.
    #[arg(short, long)]
    output: String,
}

/// Runs `fxt merge`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    // Every input is opened (and checked to be a trace) before the
    // archive is created: a wrong name leaves no half-written archive.
    let inputs = args
        .files
        .iter()
        .map(|path| Input::open_trace_bytes(path))
        .collect::<Result<Vec<_>, _>>()?;
    let out_name = args.output.clone();
    let file = File::create(&args.output)
        .map_err(|e| Error::msg(format!("cannot create {out_name}: {e}")))?;
    let mut archive = Archive::new(BufWriter::with_capacity(1 << 16, file), &out_name)?;
    for (path, mut input) in args.files.iter().zip(inputs) {
        let default_name = Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".into());
        archive.append(&mut input, &default_name, None)?;
    }
    archive.finish()?;
    samples::append_names(Path::new(&args.output)).map_err(|e| Error::io(&out_name, e))?;
    Ok(ExitCode::SUCCESS)
}
