//! `fxt recover`: a clean trace from a damaged one (say, the file of a
//! killed process), one that `fxt check` passes.
//!
//! Every well-formed record up to the damage is copied byte for byte (by
//! its span in the input), except what the strict check would refuse, by
//! the check's own rules ([`crate::keep`], which `fxt export` shares):
//!
//! | found | done |
//! |---|---|
//! | a malformed record whose size is intact | left out |
//! | a record whose framing is lost (cut short, size 0) | reading stops there |
//! | reserved bits set | cleared (the decoder reads the same record) |
//! | a reference to an undefined string or thread | the record is left out |
//! | a complete duration ending before it begins | left out |
//! | a duration end with no open begin on its thread | left out |
//! | a duration end whose name or time does not fit its begin | both left out |
//! | a duration begin never ended | left out |
//! | no magic number record first | one is put first (with `--force`) |
//!
//! Leaving a record out never changes how the records kept decode: string,
//! thread and provider records are never left out unless the decoder
//! rejects them (and then it applied nothing of them), so every reference
//! resolves in the output as it did in the input. Begin / end pairs are
//! matched on the records kept only, as `check` matches them in the output.
//!
//! Two passes over the input: the first decides (holding only the offsets of
//! records to leave out or repair, and the open begins), the second writes.
//! The summary goes to stderr, with the records left out per reason.
//!
//! A file that does not begin with the magic number record is not taken
//! for a trace (exit status 2, as every reading command does), unless
//! `--force` says it is one whose first word was lost: a damaged trace
//! keeps its magic record (damage comes at the end, from a killed writer,
//! or in the middle), and reading any other file as records would write
//! whatever its bytes happen to frame as.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

use fxt_format::decode::{Record, SliceReader, View};
use fxt_format::encode::{write_record, MagicNumber};
use fxt_format::reserved::clear_reserved_bits;

use crate::error::Error;
use crate::input::Input;
use crate::keep::{Fix, Keep};
use crate::problems::Reason;
use crate::walk::Walk;

/// Arguments of `fxt recover`.
#[derive(clap::Args)]
pub struct Args {
    /// The damaged trace (`-` for stdin).
    file: String,
    /// The clean trace to write.
    #[arg(short, long)]
    output: String,
    /// Read the file even if it does not begin with the FXT magic number
    /// record (a trace whose first word was lost); a magic record is put
    /// first in the output.
    #[arg(long)]
    force: bool,
}

/// Runs `fxt recover`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_bytes(&args.file)?;
    if !args.force {
        input = input.require_trace().map_err(|e| {
            Error::msg(format!(
                "{e}; --force reads it as a trace whose first word was lost"
            ))
        })?;
    }
    let (fixes, walk) = decide(&mut input)?;
    let bytes = input.bytes().unwrap_or_default();
    // Decided once every fix is known: a begin left out for its end may
    // have been the first record. Even a trace of nothing begins with one,
    // so that every command reads the output as a trace.
    let needs_magic = first_kept_is_magic(bytes, &fixes) != Some(true);
    let copied = write_clean(bytes, &fixes, needs_magic, &args.output)?;
    report(
        &input.name,
        bytes.len() as u64,
        &walk,
        &fixes,
        needs_magic,
        copied,
    );
    Ok(ExitCode::SUCCESS)
}

/// Pass 1: what to do with each record that is not copied as it is, by
/// record offset ([`Keep`]), and what the walk saw. Events are walked as
/// views: none is decoded whole.
fn decide(input: &mut Input) -> Result<(HashMap<u64, Fix>, Walk), Error> {
    let mut keep = Keep::new(true);
    let walk = input.walk_views_in_order("recover", |ctx, view| {
        keep.see(ctx, view);
        Ok(())
    })?;
    Ok((keep.finish(), walk))
}

/// What pass 2 copied: records and bytes.
struct Copied {
    records: u64,
    bytes: u64,
}

/// Pass 2: writes every well-formed record of `bytes` to `output`, as
/// `fixes` say, after a magic number record if `needs_magic`.
fn write_clean(
    bytes: &[u8],
    fixes: &HashMap<u64, Fix>,
    needs_magic: bool,
    output: &str,
) -> Result<Copied, Error> {
    let file =
        File::create(output).map_err(|e| Error::msg(format!("cannot create {output}: {e}")))?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let io_err = |e: std::io::Error| Error::io(output, e);
    let mut copied = Copied {
        records: 0,
        bytes: 0,
    };
    if needs_magic {
        write_record(&mut out, &MagicNumber).map_err(io_err)?;
        copied.bytes += 8;
    }
    // Records are read as views (the same records and errors as decoding
    // each whole, which only its bytes are needed of).
    let mut reader = SliceReader::new(bytes);
    let mut words: Vec<u64> = Vec::new();
    while let Some((item, ctx)) = reader.next_view() {
        if item.is_err() {
            continue; // counted by pass 1; a fatal one ends the iteration
        }
        let raw = ctx.record_bytes();
        match fixes.get(&ctx.record_offset()) {
            Some(Fix::Drop(_)) => continue,
            Some(Fix::ClearReserved) => {
                words.clear();
                words.extend(
                    raw.chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
                );
                clear_reserved_bits(&mut words);
                for w in &words {
                    out.write_all(&w.to_le_bytes()).map_err(io_err)?;
                }
            }
            None => out.write_all(raw).map_err(io_err)?,
        }
        copied.bytes += raw.len() as u64;
        copied.records += 1;
    }
    out.flush().map_err(io_err)?;
    Ok(copied)
}

/// The summary on stderr: what was kept, where the damage is, the records
/// left out per reason and those repaired.
fn report(
    name: &str,
    len: u64,
    walk: &Walk,
    fixes: &HashMap<u64, Fix>,
    needs_magic: bool,
    copied: Copied,
) {
    let mut dropped: BTreeMap<Reason, u64> = BTreeMap::new();
    let mut repaired = 0u64;
    for fix in fixes.values() {
        match fix {
            Fix::Drop(reason) => *dropped.entry(*reason).or_default() += 1,
            Fix::ClearReserved => repaired += 1,
        }
    }
    let malformed = walk.skipped.len() as u64;
    if malformed > 0 {
        dropped.insert(Reason::Malformed, malformed);
    }
    let left_out: u64 = dropped.values().sum();
    let where_damage = match &walk.damage {
        Some(d) => format!(
            "damage at offset {:#x} ({} bytes after it not read)",
            d.offset(),
            len - walk.bytes
        ),
        None => "no damage to the framing".into(),
    };
    let Copied { records, bytes } = copied;
    eprintln!(
        "fxt: recovered {records} records ({bytes} bytes) of {name}; {where_damage}; {left_out} records left out"
    );
    for (reason, n) in &dropped {
        eprintln!("fxt:   left out {n}: {}", reason.describe());
    }
    if repaired > 0 {
        let s = if repaired == 1 { "" } else { "s" };
        eprintln!("fxt:   reserved bits cleared in {repaired} record{s}");
    }
    if needs_magic {
        eprintln!("fxt:   magic number record added first");
    }
}

/// Whether the first record pass 2 will copy (well-formed, not left out)
/// is a magic number record; `None` if it will copy none.
fn first_kept_is_magic(bytes: &[u8], fixes: &HashMap<u64, Fix>) -> Option<bool> {
    let mut reader = SliceReader::new(bytes);
    while let Some((item, ctx)) = reader.next_view() {
        let Ok(view) = item else { continue };
        if matches!(fixes.get(&ctx.record_offset()), Some(Fix::Drop(_))) {
            continue;
        }
        return Some(matches!(view, View::Record(Record::Magic)));
    }
    None
}
