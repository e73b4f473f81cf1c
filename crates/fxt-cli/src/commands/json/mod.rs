//! `fxt json`: Chrome Trace Event JSON, streamed.
//!
//! Each event is written as soon as it is decoded (the array and object
//! framing is written by hand), so memory stays bounded whatever the size of
//! the trace. A file is read on every core ([`crate::walk::walk_ordered`]): each range
//! of records is written into a buffer of its own, and the buffers go out in
//! file order, with the comma between two ranges' events added there.
//!
//! | FXT | Chrome `ph` |
//! |---|---|
//! | instant | `i` (thread scope) |
//! | counter | `C` (`id` when not 0) |
//! | duration begin / end / complete | `B` / `E` / `X` (`dur`) |
//! | async begin / instant / end | `b` / `n` / `e` with `id` |
//! | flow begin / step / end | `s` / `t` / `f` with `id`; `t` and `f` have `"bp":"e"` (FXT flows bind to the enclosing slice) |
//! | kernel object (process / thread) | `M` `process_name` / `thread_name` |
//! | log | `i` in category `log`, named by the message |
//!
//! `pid` and `tid` are the process and thread koids; `ts` and `dur` are
//! microseconds (fractions keep nanoseconds); arguments become `args`
//! (pointers as hex strings, blobs as their size).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use fxt_format::decode::{
    Arg, ArgValue, Context, Event, EventHead, EventKind, Head, Record, Text, Thread, View,
};
use fxt_format::time::ticks_per_second_or_default;

use crate::error::Error;
use crate::input::{ticks_to_ns, Input};
use crate::usual::Usual;
use crate::walk::{walk_ordered, Out, Sink, Views};

mod views;

use views::EventObjects;

/// Arguments of `fxt json`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// Output file (default: stdout).
    #[arg(short, long)]
    output: Option<String>,
}

/// Runs `fxt json`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_trace(&args.file)?;
    let out_name = args.output.clone().unwrap_or_else(|| "stdout".into());
    let sink: Box<dyn Write> = match &args.output {
        Some(path) if path != "-" => Box::new(
            File::create(path).map_err(|e| Error::msg(format!("cannot create {path}: {e}")))?,
        ),
        _ => Box::new(io::stdout().lock()),
    };
    let mut out: Sink = BufWriter::with_capacity(1 << 16, sink);
    let io_err = |e: io::Error| Error::io(&out_name, e);
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")
        .map_err(io_err)?;
    // Each range starts its events with "\n"; the comma between the last
    // event of one range and the first of the next is written at the merge.
    let mut wrote_any = false;
    let work =
        |records: &mut Views<'_>, out: &mut Out<'_>| write_range(records, out).map_err(io_err);
    let merge = |sink: &mut Sink, bytes: &[u8], wrote: bool| {
        if wrote && wrote_any {
            sink.write_all(b",").map_err(io_err)?;
        }
        wrote_any |= wrote;
        sink.write_all(bytes).map_err(io_err)
    };
    walk_ordered(&mut input, "json", &mut out, work, merge)?;
    out.write_all(b"\n]}\n").map_err(io_err)?;
    out.flush().map_err(io_err)?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the Chrome events of a range's records; whether it wrote any.
/// A function of its own, not inlined into the walk: the reader's loop is
/// then compiled apart from the walk's setup, pool and merge (inlined
/// among them, in one large frame, the same loop ran slower).
#[inline(never)]
fn write_range(records: &mut Views<'_>, out: &mut Out<'_>) -> io::Result<bool> {
    let mut objects = EventObjects::default();
    let mut first = true;
    records.heads(|ctx, head| {
        // By reference: a copy of the head is loaded in 16-byte halves
        // across the words the walk has just stored apart, which waits for
        // the stores to reach the cache.
        first &= !match &head {
            Head::Event(event, _) => write_event_head(out, &mut objects, ctx, event, first)?,
            Head::Other(view) => write_view(out, &mut objects, ctx, view, first)?,
        };
        Ok::<_, io::Error>(())
    })?;
    Ok(!first)
}

/// Writes the Chrome event of an event read by its head (the usual
/// shape: no view made); returns whether it wrote anything. The usual
/// event is written in the walk's own loop, as in [`write_view`], any
/// other from its view, through [`write_other`].
#[inline(always)]
fn write_event_head(
    out: &mut Out<'_>,
    objects: &mut EventObjects,
    ctx: &Context<'_>,
    event: &EventHead<'_>,
    first: bool,
) -> io::Result<bool> {
    if write_usual(out, objects, ctx, event, first)? {
        return Ok(true);
    }
    write_head_other(out, objects, ctx, event, first)
}

/// The usual event (read from its view or its head), written in place in
/// the output; `false`: it is not the usual event, nothing was written.
#[inline(always)]
fn write_usual<'a>(
    out: &mut Out<'_>,
    objects: &mut EventObjects,
    ctx: &Context<'_>,
    event: &impl Usual<'a>,
    first: bool,
) -> io::Result<bool> {
    let tps = ticks_per_second_or_default(ctx.ticks_per_second());
    if out
        .line(|line| objects.usual(line, ctx, event, tps, first))
        .is_none()
    {
        return Ok(false);
    }
    out.settle()?;
    Ok(true)
}

/// [`write_event_head`] of an event that is not the usual one: written
/// from its view.
#[inline(never)]
fn write_head_other(
    out: &mut Out<'_>,
    objects: &mut EventObjects,
    ctx: &Context<'_>,
    event: &EventHead<'_>,
    first: bool,
) -> io::Result<bool> {
    write_other(out, objects, ctx, &View::Event(event.view(ctx)), first)
}

/// Writes the Chrome event for the record of `view`, if it has one (an
/// event straight from its view, built in place in the output); returns
/// whether it wrote anything. The usual event is written in the walk's
/// own loop, anything else through [`write_other`], a call of its own,
/// so that the usual event pays for no call and no frame.
#[inline(always)]
fn write_view(
    out: &mut Out<'_>,
    objects: &mut EventObjects,
    ctx: &Context<'_>,
    view: &View<'_>,
    first: bool,
) -> io::Result<bool> {
    if let View::Event(event) = view {
        if write_usual(out, objects, ctx, event, first)? {
            return Ok(true);
        }
    }
    write_other(out, objects, ctx, view, first)
}

/// [`write_view`] of any record but the usual event.
#[inline(never)]
fn write_other(
    out: &mut Out<'_>,
    objects: &mut EventObjects,
    ctx: &Context<'_>,
    view: &View<'_>,
    first: bool,
) -> io::Result<bool> {
    let tps = ticks_per_second_or_default(ctx.ticks_per_second());
    match view {
        View::Event(event) => {
            let sep: &[u8] = if first { b"\n" } else { b",\n" };
            if let Some(object) = objects.event(ctx, event, tps, sep) {
                out.write_all(object)?;
                return Ok(true);
            }
            match ctx.event(event) {
                Ok(event) => write_record(out, &Record::Event(event), tps, first),
                Err(_) => Ok(false), // not met: the view read as the event decodes
            }
        }
        View::Record(record) => write_record(out, record, tps, first),
    }
}

/// Writes the Chrome event for `record`, if it has one; returns whether it
/// wrote anything.
fn write_record<W: Write>(w: &mut W, record: &Record, tps: u64, first: bool) -> io::Result<bool> {
    let sep: &[u8] = if first { b"\n" } else { b",\n" };
    match record {
        Record::Event(e) => {
            w.write_all(sep)?;
            event(w, e, tps)?;
        }
        Record::KernelObject(o) if o.object_type == 1 || o.object_type == 2 => {
            w.write_all(sep)?;
            if o.object_type == 1 {
                write!(
                    w,
                    "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},",
                    o.koid
                )?;
                w.write_all(b"\"args\":{\"name\":")?;
            } else {
                let process = o.process_koid().unwrap_or(0);
                write!(
                    w,
                    "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{process},\"tid\":{},",
                    o.koid
                )?;
                w.write_all(b"\"args\":{\"name\":")?;
            }
            text(w, &o.name)?;
            w.write_all(b"}}")?;
        }
        Record::Log(l) => {
            w.write_all(sep)?;
            w.write_all(b"{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"log\",\"name\":")?;
            string(w, &l.message)?;
            w.write_all(b",\"ts\":")?;
            micros(w, ticks_to_ns(l.timestamp, tps))?;
            pid_tid(w, &l.thread)?;
            w.write_all(b"}")?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn event<W: Write>(w: &mut W, e: &Event, tps: u64) -> io::Result<()> {
    let ph = match e.kind {
        EventKind::Instant => "i",
        EventKind::Counter { .. } => "C",
        EventKind::DurationBegin => "B",
        EventKind::DurationEnd => "E",
        EventKind::DurationComplete { .. } => "X",
        EventKind::AsyncBegin { .. } => "b",
        EventKind::AsyncInstant { .. } => "n",
        EventKind::AsyncEnd { .. } => "e",
        EventKind::FlowBegin { .. } => "s",
        EventKind::FlowStep { .. } => "t",
        EventKind::FlowEnd { .. } => "f",
    };
    w.write_all(b"{\"ph\":\"")?;
    w.write_all(ph.as_bytes())?;
    w.write_all(b"\",\"cat\":")?;
    text(w, &e.category)?;
    w.write_all(b",\"name\":")?;
    text(w, &e.name)?;
    w.write_all(b",\"ts\":")?;
    let start = ticks_to_ns(e.timestamp, tps);
    micros(w, start)?;
    pid_tid(w, &e.thread)?;
    match e.kind {
        EventKind::Instant => w.write_all(b",\"s\":\"t\"")?,
        EventKind::DurationComplete { end } => {
            w.write_all(b",\"dur\":")?;
            micros(w, ticks_to_ns(end, tps).saturating_sub(start))?;
        }
        EventKind::Counter { id } if id != 0 => write!(w, ",\"id\":\"{id:#x}\"")?,
        EventKind::AsyncBegin { id }
        | EventKind::AsyncInstant { id }
        | EventKind::AsyncEnd { id }
        | EventKind::FlowBegin { id } => write!(w, ",\"id\":\"{id:#x}\"")?,
        EventKind::FlowStep { id } | EventKind::FlowEnd { id } => {
            write!(w, ",\"id\":\"{id:#x}\",\"bp\":\"e\"")?
        }
        _ => {}
    }
    if !e.args.is_empty() {
        w.write_all(b",\"args\":")?;
        args(w, &e.args)?;
    }
    w.write_all(b"}")
}

fn pid_tid<W: Write>(w: &mut W, thread: &Thread) -> io::Result<()> {
    let (p, t) = match *thread {
        Thread::Known { process, thread } => (process, thread),
        Thread::Undefined(_) => (0, 0),
    };
    w.write_all(b",\"pid\":")?;
    int(w, p)?;
    w.write_all(b",\"tid\":")?;
    int(w, t)
}

fn int<W: Write>(w: &mut W, n: impl itoa::Integer) -> io::Result<()> {
    w.write_all(itoa::Buffer::new().format(n).as_bytes())
}

/// Nanoseconds as microseconds.
fn micros<W: Write>(w: &mut W, ns: u64) -> io::Result<()> {
    int(w, ns / 1000)?;
    let (digits, len) = micros_fraction(ns);
    w.write_all(&digits[..len])
}

/// The fraction of nanoseconds as microseconds: `.` and three digits, of
/// which the first `len` are written (trailing zeros dropped, none at all
/// when the fraction is 0).
#[inline(always)]
fn micros_fraction(ns: u64) -> ([u8; 4], usize) {
    let (digits, len) = FRACTIONS[(ns % 1000) as usize];
    (digits, usize::from(len))
}

/// [`micros_fraction`] of each fraction, made when compiled: a look-up
/// instead of three divisions and three tests per timestamp.
static FRACTIONS: [([u8; 4], u8); 1000] = fractions();

const fn fractions() -> [([u8; 4], u8); 1000] {
    let mut table = [([0; 4], 0); 1000];
    let mut frac = 0;
    while frac < 1000 {
        let digits = [
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ];
        let len = if frac == 0 {
            0
        } else if frac % 100 == 0 {
            2
        } else if frac % 10 == 0 {
            3
        } else {
            4
        };
        table[frac] = (digits, len);
        frac += 1;
    }
    table
}

fn string<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    // What serde_json escapes: control characters, `"` and `\`.
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        w.write_all(b"\"")?;
        w.write_all(s.as_bytes())?;
        w.write_all(b"\"")
    } else {
        serde_json::to_writer(w, s).map_err(io::Error::from)
    }
}

fn text<W: Write>(w: &mut W, t: &Text) -> io::Result<()> {
    match t.as_str() {
        Some(s) => string(w, s),
        None => string(w, &t.to_string()),
    }
}

fn args<W: Write>(w: &mut W, args: &[Arg]) -> io::Result<()> {
    w.write_all(b"{")?;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        text(w, &a.name)?;
        w.write_all(b":")?;
        match &a.value {
            ArgValue::Null => w.write_all(b"null")?,
            ArgValue::I32(x) => int(w, *x)?,
            ArgValue::U32(x) => int(w, *x)?,
            ArgValue::I64(x) => int(w, *x)?,
            ArgValue::U64(x) | ArgValue::Koid(x) => int(w, *x)?,
            ArgValue::F64(x) => serde_json::to_writer(&mut *w, x).map_err(io::Error::from)?,
            ArgValue::Str(t) => text(w, t)?,
            ArgValue::Pointer(p) => write!(w, "\"{p:#x}\"")?,
            ArgValue::Bool(b) => write!(w, "{b}")?,
            ArgValue::Blob(b) => write!(w, "\"<blob of {} bytes>\"", b.len())?,
            ArgValue::Unknown { arg_type, .. } => {
                write!(w, "\"<unknown argument type {arg_type}>\"")?
            }
        }
    }
    w.write_all(b"}")
}
