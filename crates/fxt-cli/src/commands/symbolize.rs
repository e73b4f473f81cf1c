//! `fxt symbolize TRACE [-o OUT]`: names the CPU samples of a trace that
//! has none (what a killed crash-safe process left, or a trace recorded
//! where symbolizing was not possible), with the binaries on this machine.
//!
//! The trace's `fxt.modules` records say which file and build id each
//! sampled address belongs to; [`fxt_symbols::appendix`] resolves them and
//! builds the `fxt.symbols` and `fxt.perfetto` records, which are appended
//! to the trace: in place, or after a copy into OUT. A file whose build id
//! differs from the recorded one is not used (its addresses stay
//! unnamed). A trace cut short inside a record (a killed writer) is written
//! to OUT up to its last whole record, then the appendix; it is never
//! changed in place. A trace that has Perfetto packets already (symbolized
//! before, `--force`, or some addresses left unnamed then) is rewritten
//! without them, so that Perfetto sees each sample once.
//!
//! Raw-stack samples (the registers and a copy of the stack, which only a
//! machine with the binaries can unwind) are rewritten as the frame lists
//! unwound from them here, so the file needs no binary anywhere else; the
//! trace is then rewritten, never appended to.
//!
//! It also appends the records a viewer draws from the trace's compact
//! ones ([`fxt_symbols::derived`]: locks' `held` and `handoff` slices,
//! tasks' polls on their tracks, the arrows between them, the heap
//! counter), once: a trace with lock waits and no samples gains those alone,
//! and one that carries them (a program built with feature `symbolize`
//! appends them) is left as it is.

use std::fs::OpenOptions;
use std::io::Write;
use std::process::ExitCode;

use std::collections::HashMap;

use fxt_format::decode::{BlobType, Record, SliceReader};
use fxt_format::encode::{encode_to_vec, words_to_bytes};
use fxt_format::samples::{SampleBlob, PERFETTO_NAME};
use fxt_symbols::scan::TraceSamples;
use fxt_symbols::{appendix, stack_key, StackKey, Symbolizer, Unwound};

use crate::error::Error;
use crate::input::Input;

/// Arguments of `fxt symbolize`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin, then -o is required).
    file: String,
    /// Write the symbolized trace here instead of appending to FILE.
    #[arg(short, long)]
    output: Option<String>,
    /// Resolve again the addresses of a trace that already has symbols
    /// (only the addresses still without any are resolved otherwise).
    #[arg(long)]
    force: bool,
}

/// Runs `fxt symbolize`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let input = Input::open_trace_bytes(&args.file)?;
    let bytes = input.bytes().unwrap_or_default();
    let mut scan = TraceSamples::read(bytes);
    let derived = fxt_symbols::derived::records(bytes);
    if scan.samples.is_empty() && scan.allocs.is_empty() {
        return only_derived(&args, &input.name, bytes, scan.end, &derived);
    }
    let raw = !scan.unwound.is_empty();
    if scan.is_symbolized() && scan.perfetto_records > 0 && !raw && !args.force {
        if !derived.is_empty() {
            return append_derived(&args, &input.name, bytes, scan.end, &derived);
        }
        eprintln!(
            "fxt: {} is symbolized already (--force resolves again)",
            input.name
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.force {
        scan.symbols.clear();
    }
    let out = appendix(&scan.request(), &mut Symbolizer::new())
        .map_err(|e| Error::msg(format!("symbolize: {e}")))?;
    let mut appended = fxt_format::encode::words_to_bytes(&out.words);
    appended.extend_from_slice(&fxt_format::encode::words_to_bytes(&derived));
    let whole = usize::try_from(scan.end)
        .unwrap_or(bytes.len())
        .min(bytes.len());
    let rewrite = scan.perfetto_records > 0 || raw;
    let data = || {
        let mut data = if rewrite {
            rewritten(&bytes[..whole], &scan.unwound)
        } else {
            bytes[..whole].to_vec()
        };
        data.extend_from_slice(&appended);
        data
    };
    // Where a trace cut short inside a record ends.
    let cut_at = (whole < bytes.len()).then_some(whole);
    let target = write(&args, &input.name, cut_at, rewrite, data, &appended)?;
    report(&target, &out, !scan.modules.is_empty());
    Ok(ExitCode::SUCCESS)
}

/// A trace without samples or sampled allocations: only the records
/// drawn from its compact ones are appended, if it has any and does not
/// carry them already.
fn only_derived(
    args: &Args,
    name: &str,
    bytes: &[u8],
    end: u64,
    derived: &[u64],
) -> Result<ExitCode, Error> {
    if derived.is_empty() && carries_derived(bytes) {
        // A program built with feature `symbolize` appended them.
        eprintln!("fxt: {name} carries the records drawn from its compact ones already");
        return Ok(ExitCode::SUCCESS);
    }
    if derived.is_empty() {
        return Err(Error::msg(format!(
            "symbolize: {name} has no CPU samples, sampled allocations, lock waits or task polls to draw"
        )));
    }
    append_derived(args, name, bytes, end, derived)
}

/// Writes the symbolized trace where `args` say (the whole of `data()`
/// to OUT or in place of FILE, or only `appended` to FILE's end); the
/// path written.
fn write(
    args: &Args,
    name: &str,
    cut_at: Option<usize>,
    rewrite: bool,
    data: impl Fn() -> Vec<u8>,
    appended: &[u8],
) -> Result<String, Error> {
    match &args.output {
        Some(path) => {
            std::fs::write(path, data()).map_err(|e| Error::io(path, e))?;
            Ok(path.clone())
        }
        None if args.file == "-" => Err(Error::msg(
            "symbolize: say where to write the trace (-o OUT)",
        )),
        None if cut_at.is_some() => Err(Error::msg(format!(
            "symbolize: {name} ends inside a record at offset {:#x}; write a copy with -o OUT",
            cut_at.unwrap_or_default()
        ))),
        None if rewrite => {
            // Written beside it, then renamed over it: never half a trace.
            let temp = format!("{}.symbolize-partial", args.file);
            std::fs::write(&temp, data()).map_err(|e| Error::io(&temp, e))?;
            std::fs::rename(&temp, &args.file).map_err(|e| Error::io(&args.file, e))?;
            Ok(args.file.clone())
        }
        None => {
            append_to(&args.file, appended)?;
            Ok(args.file.clone())
        }
    }
}

/// What was named, on stderr.
fn report(target: &str, out: &fxt_symbols::Appendix, has_modules: bool) {
    eprintln!(
        "fxt: {target}: {} samples{} of {} process{}, {} of {} addresses named{}",
        out.samples,
        if out.allocs > 0 {
            format!(" and {} allocation records", out.allocs)
        } else {
            String::new()
        },
        out.processes,
        if out.processes == 1 { "" } else { "es" },
        out.resolved,
        out.addresses,
        if has_modules {
            ""
        } else {
            " (the trace has no fxt.modules record: nothing says which binaries)"
        }
    );
}

/// Appends `bytes` to the trace at `path` (a whole trace stays whole:
/// only records are appended).
fn append_to(path: &str, bytes: &[u8]) -> Result<(), Error> {
    let mut file = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))
}

/// Whether `trace` holds the marker of derived records
/// ([`fxt_format::derived`]), with nothing left to derive.
fn carries_derived(trace: &[u8]) -> bool {
    SliceReader::new(trace).flatten().any(|r| {
        matches!(r, Record::Blob(b) if b.blob_type == BlobType::Data
            && fxt_format::derived::is_marker(b.name.as_str().unwrap_or(""), b.payload.len()))
    })
}

/// Writes `bytes` (its whole records, up to `end`) with the `derived`
/// records appended (a trace whose samples are named already, or that has
/// none): to `-o OUT`, or appended to FILE.
fn append_derived(
    args: &Args,
    name: &str,
    bytes: &[u8],
    end: u64,
    derived: &[u64],
) -> Result<ExitCode, Error> {
    let whole = usize::try_from(end).unwrap_or(bytes.len()).min(bytes.len());
    let appended = words_to_bytes(derived);
    let target = match &args.output {
        Some(path) => {
            let mut data = bytes[..whole].to_vec();
            data.extend_from_slice(&appended);
            std::fs::write(path, data).map_err(|e| Error::io(path, e))?;
            path.clone()
        }
        None if args.file == "-" => {
            return Err(Error::msg(
                "symbolize: say where to write the trace (-o OUT)",
            ))
        }
        None if whole < bytes.len() => {
            return Err(Error::msg(format!(
            "symbolize: {name} ends inside a record at offset {whole:#x}; write a copy with -o OUT"
        )))
        }
        None => {
            append_to(&args.file, &appended)?;
            args.file.clone()
        }
    };
    eprintln!(
        "fxt: {target}: {} records drawn from the compact ones ({})",
        crate::samples::record_count(derived),
        fxt_symbols::derived::WHAT
    );
    Ok(ExitCode::SUCCESS)
}

/// `trace` without its `fxt.perfetto` blob records (their names are
/// inline, so no other record depends on them), and with each raw-stack
/// sample replaced by the frame-list sample of the frames `unwound` from
/// it (a sample is one record that no other refers to).
fn rewritten(trace: &[u8], unwound: &HashMap<StackKey, Unwound>) -> Vec<u8> {
    let mut out = Vec::with_capacity(trace.len());
    let mut copied = 0;
    let mut reader = SliceReader::new(trace);
    while let Some(item) = reader.next() {
        let Ok(Record::Blob(blob)) = item else {
            continue;
        };
        let replacement = if blob.blob_type == BlobType::Perfetto && blob.name == PERFETTO_NAME {
            Vec::new()
        } else if let Some(Ok(SampleBlob::Sample(s))) = SampleBlob::from_blob(&blob) {
            let Some(raw) = &s.raw_stack else {
                continue;
            };
            let (frames, truncated) = match unwound.get(&stack_key(s.pid, raw)) {
                Some(u) => (u.frames.clone(), u.truncated),
                None => (raw.pc().into_iter().collect(), true),
            };
            let sample = s.clone().with_frames(frames, truncated);
            match sample.as_sample().map(|s| encode_to_vec(&s)) {
                Some(Ok(words)) => words_to_bytes(&words),
                // Never (at most 256 frames): the raw record stays.
                _ => continue,
            }
        } else {
            continue;
        };
        let start = reader.record_offset() as usize;
        out.extend_from_slice(trace.get(copied..start).unwrap_or_default());
        out.extend_from_slice(&replacement);
        copied = reader.position() as usize;
    }
    out.extend_from_slice(trace.get(copied..).unwrap_or_default());
    out
}
