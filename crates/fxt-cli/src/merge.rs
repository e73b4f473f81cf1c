//! `fxt merge`: the trace manager's job. Concatenates the traces of several
//! providers (several processes, say) into one archive that opens as one
//! trace.
//!
//! The archive is one magic number record, then each input in turn. Each
//! provider of each input gets a distinct provider id: its provider info
//! record is rewritten with the new id and followed by a provider section
//! record, so a reader starts fresh string and thread tables for it and
//! each provider keeps its own (two inputs may use the same string index
//! for different strings). Provider section and provider event records are
//! rewritten to the new ids; records that an input has before any provider
//! info get a provider named after the input file. Other records are copied
//! byte for byte, magic number records are dropped, and a malformed record
//! is left out with a warning. A damaged input contributes the records up to
//! its damage.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use fxt_format::decode::Record;
use fxt_format::encode::{write_record, MagicNumber, ProviderEvent, ProviderInfo, ProviderSection};

use crate::input::Input;
use crate::Error;

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
    let out_name = args.output.clone();
    let file = File::create(&args.output)
        .map_err(|e| Error::msg(format!("cannot create {out_name}: {e}")))?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let io_err = |e: std::io::Error| Error::io(&out_name, e);
    write_record(&mut out, &MagicNumber).map_err(io_err)?;
    let mut next_id: u32 = 1;
    for path in &args.files {
        let mut input = Input::open_bytes(path)?;
        let default_name = Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".into());
        // Old provider id (None: records before any provider info) -> new id.
        let mut ids: HashMap<Option<u32>, u32> = HashMap::new();
        let mut fresh = |ids: &mut HashMap<Option<u32>, u32>, old: Option<u32>| {
            let id = next_id;
            next_id = next_id.wrapping_add(1).max(1);
            ids.insert(old, id);
            id
        };
        let mut started = false;
        input.walk("merge", |reader, record| {
            let begin = |out: &mut BufWriter<File>, id: u32, name: &str| {
                write_record(
                    out,
                    &ProviderInfo {
                        provider_id: id,
                        name,
                    },
                )?;
                write_record(out, &ProviderSection { provider_id: id })
            };
            match record {
                Record::Magic => {}
                Record::ProviderInfo { provider_id, name } => {
                    let id = fresh(&mut ids, Some(provider_id));
                    begin(&mut out, id, &name).map_err(io_err)?;
                    started = true;
                }
                Record::ProviderSection { provider_id } => {
                    let id = match ids.get(&Some(provider_id)) {
                        Some(&id) => id,
                        None => fresh(&mut ids, Some(provider_id)),
                    };
                    write_record(&mut out, &ProviderSection { provider_id: id }).map_err(io_err)?;
                    started = true;
                }
                Record::ProviderEvent { provider_id, event } => {
                    let id = ids
                        .get(&Some(provider_id))
                        .or_else(|| ids.get(&reader.provider_id()))
                        .copied()
                        .unwrap_or(0);
                    write_record(
                        &mut out,
                        &ProviderEvent {
                            provider_id: id,
                            event,
                        },
                    )
                    .map_err(io_err)?;
                }
                _ => {
                    if !started {
                        let id = fresh(&mut ids, None);
                        begin(&mut out, id, &default_name).map_err(io_err)?;
                        started = true;
                    }
                    let raw = reader.record_bytes().unwrap_or_default();
                    out.write_all(raw).map_err(io_err)?;
                }
            }
            Ok(())
        })?;
    }
    out.flush().map_err(io_err)?;
    Ok(ExitCode::SUCCESS)
}
