//! `fxt check`: strict validation.
//!
//! Reports, each with its byte offset:
//!
//! * records the decoder rejects (malformed, cut short, size 0);
//! * a trace that does not start with a magic number record;
//! * reserved bits that are not zero, in record headers, in the large blob
//!   format header and in argument headers (read from the raw words);
//! * references to string or thread indices no earlier record defined;
//! * duration complete events that end before they begin;
//! * duration begin / end events not matched per thread (an end with no
//!   open begin, a begin never ended, an end whose name is not its begin's,
//!   an end before its begin).
//!
//! Prints `FILE: offset 0x..: problem` lines and a summary; exits 1 if
//! there is any problem. Records of types this tool does not know are not
//! problems (readers skip them by their size); the summary counts them.

use std::collections::HashMap;
use std::io::{self, Write};
use std::process::ExitCode;

use fxt_format::decode::{Arg, ArgValue, EventKind, Process, Record, Text, Thread};
use fxt_format::encode::header::{arg_type, metadata_type, record_type};
use fxt_format::encode::stream::stream_words;

use crate::input::Input;
use crate::Error;

/// Arguments of `fxt check`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
}

/// An open duration begin.
struct Open {
    offset: u64,
    name: Text,
    timestamp: u64,
}

/// Runs `fxt check`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_bytes(&args.file)?;
    input.quiet = true;
    let mut problems: Vec<(u64, String)> = Vec::new();
    let mut open: HashMap<(Option<u32>, Thread), Vec<Open>> = HashMap::new();
    let mut first = true;
    let mut unknown = 0u64;
    let walk = input.walk("check", |reader, record| {
        let offset = reader.record_offset();
        let mut report = |message: String| problems.push((offset, message));
        if first && record != Record::Magic {
            report("the trace does not start with a magic number record".into());
        }
        first = false;
        if let Some(raw) = reader.record_bytes() {
            let words: Vec<u64> = raw
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect();
            reserved_bits(&words, &mut report);
        }
        undefined_refs(&record, &mut report);
        match &record {
            Record::Unknown(_) => unknown += 1,
            Record::Event(e) => match e.kind {
                EventKind::DurationComplete { end } if end < e.timestamp => report(format!(
                    "duration complete event {} ends (ts {end}) before it begins (ts {})",
                    e.name, e.timestamp
                )),
                EventKind::DurationBegin => {
                    open.entry((reader.provider_id(), e.thread))
                        .or_default()
                        .push(Open {
                            offset,
                            name: e.name.clone(),
                            timestamp: e.timestamp,
                        });
                }
                EventKind::DurationEnd => {
                    match open
                        .get_mut(&(reader.provider_id(), e.thread))
                        .and_then(Vec::pop)
                    {
                        None => report(format!(
                            "duration end {} on thread {} has no matching begin",
                            e.name,
                            thread(&e.thread)
                        )),
                        Some(begin) => {
                            if e.name != begin.name && e.name != "" {
                                report(format!(
                                    "duration end {} closes duration begin {} (offset {:#x})",
                                    e.name, begin.name, begin.offset
                                ));
                            }
                            if e.timestamp < begin.timestamp {
                                report(format!(
                                    "duration end {} (ts {}) is before its begin (ts {}, offset {:#x})",
                                    e.name, e.timestamp, begin.timestamp, begin.offset
                                ));
                            }
                        }
                    }
                }
                _ => {}
            },
            _ => {}
        }
        Ok(())
    })?;
    for ((_, t), stack) in &open {
        for begin in stack {
            problems.push((
                begin.offset,
                format!(
                    "duration begin {} on thread {} is never ended",
                    begin.name,
                    thread(t)
                ),
            ));
        }
    }
    for e in walk.skipped.iter().chain(&walk.damage) {
        let mut message = e.to_string();
        if e.is_fatal() {
            message.push_str("; nothing after it can be read");
        }
        problems.push((e.offset(), message));
    }
    problems.sort_by_key(|p| p.0);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let name = &input.name;
    for (offset, message) in &problems {
        writeln!(out, "{name}: offset {offset:#x}: {message}")?;
    }
    let notes = if unknown > 0 {
        format!(", {unknown} of unknown types (skipped)")
    } else {
        String::new()
    };
    if problems.is_empty() {
        writeln!(out, "{name}: ok, {} records{notes}", walk.records)?;
        Ok(ExitCode::SUCCESS)
    } else {
        let n = problems.len();
        let s = if n == 1 { "" } else { "s" };
        writeln!(
            out,
            "{name}: {n} problem{s} in {} records{notes}",
            walk.records
        )?;
        Ok(ExitCode::from(1))
    }
}

fn thread(t: &Thread) -> String {
    match t {
        Thread::Known { process, thread } => format!("{process}/{thread}"),
        Thread::Undefined(i) => format!("<undefined thread #{i}>"),
    }
}

/// Reports references to undefined string and thread indices.
fn undefined_refs(record: &Record, report: &mut impl FnMut(String)) {
    let mut text = |what: &str, t: &Text| {
        if let Some(i) = t.undefined_index() {
            report(format!("the {what} refers to undefined string #{i}"));
        }
    };
    let mut threads: Vec<(&str, Thread)> = Vec::new();
    let mut args: &[Arg] = &[];
    match record {
        Record::Event(e) => {
            text("category", &e.category);
            text("name", &e.name);
            threads.push(("thread", e.thread));
            args = &e.args;
        }
        Record::Blob(b) => text("name", &b.name),
        Record::UserspaceObject(o) => {
            text("name", &o.name);
            if let Process::Undefined(i) = o.process {
                threads.push(("process", Thread::Undefined(i)));
            }
            args = &o.args;
        }
        Record::KernelObject(o) => {
            text("name", &o.name);
            args = &o.args;
        }
        Record::ContextSwitch(c) => args = &c.args,
        Record::ThreadWakeup(w) => args = &w.args,
        Record::LegacyContextSwitch(c) => {
            threads.push(("outgoing thread", c.outgoing_thread));
            threads.push(("incoming thread", c.incoming_thread));
        }
        Record::Log(l) => threads.push(("thread", l.thread)),
        Record::LargeBlobWithMetadata(b) => {
            text("category", &b.category);
            text("name", &b.name);
            threads.push(("thread", b.thread));
            args = &b.args;
        }
        Record::LargeBlobNoMetadata(b) => {
            text("category", &b.category);
            text("name", &b.name);
        }
        _ => {}
    }
    for a in args {
        text("argument name", &a.name);
        if let ArgValue::Str(v) = &a.value {
            text("string argument value", v);
        }
    }
    for (what, t) in threads {
        if let Thread::Undefined(i) = t {
            report(format!("the {what} refers to undefined thread #{i}"));
        }
    }
}

/// Header bits `[lo .. hi]` (inclusive).
fn field(word: u64, lo: u32, hi: u32) -> u64 {
    (word >> lo) & range(0, hi - lo)
}

/// A mask of bits `[lo .. hi]` (inclusive).
fn range(lo: u32, hi: u32) -> u64 {
    (u64::MAX >> (63 - (hi - lo))) << lo
}

/// Words of an inline string's stream for a string ref (0 when indexed).
fn inline_words(string_ref: u64) -> usize {
    if string_ref & 0x8000 != 0 {
        stream_words((string_ref & 0x7fff) as usize)
    } else {
        0
    }
}

/// Reports reserved bits that are set in a record's headers (record header,
/// large blob format header, argument headers). The bit ranges are the
/// "reserved (must be zero)" fields of the specification.
fn reserved_bits(words: &[u64], report: &mut impl FnMut(String)) {
    let Some(&h) = words.first() else { return };
    let mut check = |what: &str, word: u64, mask: u64| {
        if word & mask != 0 {
            report(format!(
                "reserved bits {:#018x} of the {what} are set",
                word & mask
            ));
        }
    };
    // Where the arguments start (in words) and how many there are.
    let mut args: Option<(usize, u64)> = None;
    match h & 0xf {
        record_type::METADATA => match field(h, 16, 19) {
            metadata_type::PROVIDER_INFO => check("provider info header", h, range(60, 63)),
            metadata_type::PROVIDER_SECTION => check("provider section header", h, range(52, 63)),
            metadata_type::PROVIDER_EVENT => check("provider event header", h, range(56, 63)),
            metadata_type::TRACE_INFO if field(h, 20, 23) == 0 => {
                check("magic number record", h, range(56, 63))
            }
            _ => {}
        },
        record_type::INITIALIZATION => check("initialization record header", h, range(16, 63)),
        record_type::STRING => check("string record header", h, range(31, 31) | range(47, 63)),
        record_type::THREAD => check("thread record header", h, range(24, 63)),
        record_type::EVENT => {
            let start = 2
                + if field(h, 24, 31) == 0 { 2 } else { 0 }
                + inline_words(field(h, 32, 47))
                + inline_words(field(h, 48, 63));
            args = Some((start, field(h, 20, 23)));
        }
        record_type::BLOB => check("blob record header", h, range(47, 47) | range(56, 63)),
        record_type::USERSPACE_OBJECT => {
            check("userspace object record header", h, range(44, 63));
            let start =
                2 + if field(h, 16, 23) == 0 { 1 } else { 0 } + inline_words(field(h, 24, 39));
            args = Some((start, field(h, 40, 43)));
        }
        record_type::KERNEL_OBJECT => {
            check("kernel object record header", h, range(44, 63));
            args = Some((2 + inline_words(field(h, 24, 39)), field(h, 40, 43)));
        }
        record_type::SCHEDULING => match field(h, 60, 63) {
            1 => {
                check("context switch record header", h, range(40, 59));
                args = Some((4, field(h, 16, 19)));
            }
            2 => {
                check("thread wakeup record header", h, range(36, 59));
                args = Some((3, field(h, 16, 19)));
            }
            _ => {}
        },
        record_type::LOG => check("log record header", h, range(31, 31) | range(40, 63)),
        record_type::LARGE => {
            check("large record header", h, range(44, 63));
            if let (0, Some(&f)) = (field(h, 36, 39), words.get(1)) {
                match field(h, 40, 43) {
                    0 => {
                        check("large blob format header", f, range(44, 63));
                        let start = 2
                            + inline_words(field(f, 0, 15))
                            + inline_words(field(f, 16, 31))
                            + 1
                            + if field(f, 36, 43) == 0 { 2 } else { 0 };
                        args = Some((start, field(f, 32, 35)));
                    }
                    1 => check("large blob format header", f, range(32, 63)),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    let Some((mut pos, count)) = args else { return };
    for _ in 0..count {
        let Some(&a) = words.get(pos) else { return };
        let size = field(a, 4, 15) as usize;
        if size == 0 {
            return; // the decoder reports it
        }
        let mask = match field(a, 0, 3) {
            arg_type::NULL
            | arg_type::I64
            | arg_type::U64
            | arg_type::F64
            | arg_type::POINTER
            | arg_type::KOID => range(32, 63),
            arg_type::STRING => range(48, 63),
            arg_type::BOOL => range(33, 63),
            _ => 0,
        };
        check("argument header", a, mask);
        pos += size;
    }
}
