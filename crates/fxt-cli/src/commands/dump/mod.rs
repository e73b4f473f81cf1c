//! `fxt dump`: one readable line per record.
//!
//! ```text
//! magic
//! provider_info id=1 name="app"
//! initialization ticks_per_second=1000000000
//! string index=1 "demo"
//! thread index=1 process=10 thread=11
//! duration_complete ts=1000 end=1500 thread=10/11 category="demo" name="work" n=3 label="x"
//! ```
//!
//! Strings are quoted (Rust escapes); a reference to an undefined string or
//! thread index shows as `<undefined string #N>` / `<undefined thread #N>`.
//!
//! A split blob group (an instant `fxt.blob.size` / `fxt.blob.parts`, then
//! its blob records; see `fxt_format::encode::SplitBlob`) shows as the
//! instant and one blob holding the whole payload, `(joined from N blob
//! records)`, at the offset of its first part; `--no-join` shows the parts
//! as written. `--payloads` adds the bytes of blobs, large blobs and blob
//! arguments in hex (`payload=0a1b..`).
//!
//! CPU samples, module lists and symbol tables (issue 31) have lines of
//! their own ([`crate::samples::lines`]); a sample's stack shows function
//! names where the trace holds symbols (read first, in a pass of their own,
//! for a file; stdin shows addresses).
//!
//! A file is read on every core ([`crate::walk::walk_ordered`]); a split blob group
//! that straddles the cut between two ranges is joined as on one thread
//! (see `RangeEnd`).

use std::fmt::{self, Write as _};
use std::io::{self, BufWriter, Write};
use std::process::ExitCode;
use std::sync::OnceLock;

use fxt_format::decode::{
    Arg, ArgValue, BlobJoiner, Context, DecodeError, Event, EventHead, EventKind, EventView, Head,
    Joined, LargeBlobWithMetadata, LegacyContextSwitch, Process, Record, Text, Thread,
    UserspaceObject, View,
};

use crate::error::Error;
use crate::input::{Input, Reader};
use crate::names::event_kind_name;
use crate::samples::{lines, Names};
use crate::usual::Usual;
use crate::walk::{walk_ordered, Out, Sink, Views};

mod views;

use views::{EventLines, Line};

/// Arguments of `fxt dump`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin).
    file: String,
    /// Start each line with the record's byte offset.
    #[arg(long)]
    offsets: bool,
    /// Print the bytes of blobs, large blobs and blob arguments (hex).
    #[arg(long)]
    payloads: bool,
    /// Show the blob records of a split blob group as written instead of
    /// one joined blob.
    #[arg(long)]
    no_join: bool,
}

/// Runs `fxt dump`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let mut input = Input::open_trace(&args.file)?;
    let names = OnceLock::new();
    let mut out: Sink = BufWriter::with_capacity(1 << 16, Box::new(io::stdout().lock()));
    // Where the blob records read past a cut by the range before end: the
    // next ranges' lines for them are dropped.
    let mut skip_until = 0u64;
    let merge = |sink: &mut Sink, bytes: &[u8], range: RangeEnd| {
        let from = range
            .lead
            .iter()
            .take_while(|&&(record_end, _)| record_end <= skip_until)
            .last()
            .map_or(0, |&(_, line_end)| line_end);
        skip_until = skip_until.max(range.overran_to);
        sink.write_all(&bytes[from..])
            .map_err(|e| Error::io("stdout", e))
    };
    walk_ordered(
        &mut input,
        "dump",
        &mut out,
        |records, out| dump_range(records, out, &args, &names),
        merge,
    )?;
    out.flush().map_err(|e| Error::io("stdout", e))?;
    Ok(ExitCode::SUCCESS)
}

/// What the merge needs of a range to join split blob groups across cuts.
///
/// A group open at the end of a range (its instant, maybe some parts) takes
/// the blob records right after the cut, as one reader would: the range
/// reads on past its end while the group collects and the next records are
/// blobs. The ranges after it have printed those records as plain blobs
/// (a blob never opens a group, so their own state is the same from there
/// on); the merge drops those lines.
#[derive(Default)]
struct RangeEnd {
    /// For each blob record the range starts with (after a cut: the ones a
    /// range before may have taken), where the record ends in the file and
    /// where its lines end in the range's output.
    lead: Vec<(u64, usize)>,
    /// Where the last record read past the range's end ends (0 if none).
    overran_to: u64,
}

/// Prints the records of one range, joining split blob groups unless
/// `--no-join`.
fn dump_range(
    records: &mut Views<'_>,
    out: &mut Out<'_>,
    args: &Args,
    names: &OnceLock<Names>,
) -> Result<RangeEnd, Error> {
    // The whole file, which the function names of samples are searched
    // for (none for a stream).
    let trace = match records.reader() {
        Reader::Slice(_, bytes) => Some(*bytes),
        Reader::Stream(_) => None,
    };
    let mut dumper = Dumper {
        args,
        names: LazyNames { names, trace },
        lines: EventLines::default(),
        joiner: BlobJoiner::new(),
        line: String::new(),
        event_line: Vec::new(),
        next_offset: records.start(),
        leading: records.start() > 0,
        end: RangeEnd::default(),
    };
    let io_err = |e| Error::io("stdout", e);
    // The options the usual event's step tests, as values rather than
    // read through `args` at each event.
    let usual = (!args.offsets).then_some(!args.no_join);
    records
        .heads(|ctx, head| match &head {
            // By reference: a copy of the head is loaded in 16-byte
            // halves across the words the walk has just stored apart.
            Head::Event(event, _) => dumper.step_head(out, ctx, event, usual),
            Head::Other(view) => dumper.step(out, ctx, view, usual),
        })
        .map_err(io_err)?;
    if args.no_join {
        return Ok(dumper.end);
    }
    while dumper.joiner.is_collecting() {
        let Some(Ok(Record::Blob(blob))) = records.next_beyond() else {
            break; // anything else ends the group, as in one reader
        };
        let offset = records.reader().record_offset();
        dumper.joiner.push(offset, Ok(Record::Blob(blob)));
        dumper.end.overran_to = records.reader().position();
        dumper.drain(out).map_err(io_err)?;
    }
    dumper.joiner.finish();
    dumper.drain(out).map_err(io_err)?;
    Ok(dumper.end)
}

/// The walk of one range: events straight from their views
/// ([`EventLines`]), every other record (and an event that may start a
/// split blob group, or comes while one is collected) decoded, through the
/// joiner.
struct Dumper<'x> {
    args: &'x Args,
    names: LazyNames<'x>,
    lines: EventLines,
    joiner: BlobJoiner,
    /// The line of a decoded record, being built.
    line: String,
    /// The line of an event that is not the usual one, being built.
    event_line: Vec<u8>,
    /// Where the record after the last one seen starts: a record starting
    /// elsewhere means the walk skipped a malformed one, which ends a
    /// group.
    next_offset: u64,
    /// Whether every record so far is a blob, after a cut.
    leading: bool,
    end: RangeEnd,
}

impl Dumper<'_> {
    /// Prints the record of `view` (or takes it into the joiner): the
    /// usual event's line in the walk's own loop, anything else through
    /// [`Dumper::step_other`], a call of its own, so that the usual event
    /// pays for no call and no frame.
    /// `usual`: whether to join, where the usual event is printed in the
    /// loop (not with offsets).
    #[inline(always)]
    fn step(
        &mut self,
        out: &mut Out<'_>,
        ctx: &Context<'_>,
        view: &View<'_>,
        usual: Option<bool>,
    ) -> io::Result<()> {
        if let (View::Event(event), Some(join)) = (view, usual) {
            if self.usual(out, ctx, event, join) {
                return out.settle();
            }
        }
        self.step_other(out, ctx, view)
    }

    /// [`Dumper::step`] of an event read by its head (the usual shape:
    /// no view made), printed as its view would be; any that is not the
    /// usual event goes through [`Dumper::step_other`] as its view.
    #[inline(always)]
    fn step_head(
        &mut self,
        out: &mut Out<'_>,
        ctx: &Context<'_>,
        event: &EventHead<'_>,
        usual: Option<bool>,
    ) -> io::Result<()> {
        if let Some(join) = usual {
            if self.usual(out, ctx, event, join) {
                return out.settle();
            }
        }
        self.step_head_other(out, ctx, event)
    }

    /// [`Dumper::step_head`] of an event that is not the usual one: taken
    /// as its view.
    #[inline(never)]
    fn step_head_other(
        &mut self,
        out: &mut Out<'_>,
        ctx: &Context<'_>,
        event: &EventHead<'_>,
    ) -> io::Result<()> {
        self.step_other(out, ctx, &View::Event(event.view(ctx)))
    }

    /// Prints the usual event's line in place in the output, if the event
    /// is the usual one and may be printed at once; whether it did.
    /// Joining, an event is printed at once only where the joiner holds
    /// nothing back and no record was skipped before it (its queue is
    /// empty after every step: each step drains it).
    #[inline(always)]
    fn usual<'a>(
        &mut self,
        out: &mut Out<'_>,
        ctx: &Context<'_>,
        event: &impl Usual<'a>,
        join: bool,
    ) -> bool {
        let offset = ctx.record_offset();
        if join && (self.joiner.is_collecting() || offset != self.next_offset) {
            return false;
        }
        let lines = &mut self.lines;
        if out.line(|bytes| lines.usual(bytes, ctx, event, join)) != Some(Line::Written) {
            return false;
        }
        // What the step of any other record notes of an event.
        self.next_offset = offset + ctx.record_bytes().len() as u64;
        self.leading = false;
        true
    }

    /// [`Dumper::step`] of any record but the usual event (which it
    /// prints too: its line is built again).
    #[inline(never)]
    fn step_other(
        &mut self,
        out: &mut Out<'_>,
        ctx: &Context<'_>,
        view: &View<'_>,
    ) -> io::Result<()> {
        let offset = ctx.record_offset();
        if self.args.no_join {
            return match view {
                View::Event(event) => self.print_event(out, ctx, event, offset).map(|_| ()),
                View::Record(record) => self.print(out, pass(offset, Ok(record.clone()))),
            };
        }
        if offset != self.next_offset {
            self.joiner.finish();
            self.leading = false;
        }
        self.next_offset = offset + ctx.record_bytes().len() as u64;
        self.leading &= matches!(view, View::Record(Record::Blob(_)));
        let item = match view {
            View::Event(event) if !self.joiner.is_collecting() => {
                self.drain(out)?;
                match self.print_event(out, ctx, event, offset)? {
                    Line::GroupStart => Some(ctx.event(event).map(Record::Event)),
                    _ => None,
                }
            }
            View::Event(event) => Some(ctx.event(event).map(Record::Event)),
            View::Record(record) => Some(Ok(record.clone())),
        };
        if let Some(item) = item {
            if let Some(joined) = self.joiner.push_direct(offset, item) {
                self.print(out, joined)?;
            }
            self.drain(out)?;
        }
        if self.leading {
            self.end.lead.push((self.next_offset, out.len()));
        }
        Ok(())
    }

    /// Prints an event from its view (decoded if an argument does not
    /// read), unless it may start a split blob group (when joining): that
    /// one is for the joiner, and nothing is printed.
    #[inline]
    fn print_event(
        &mut self,
        out: &mut Out<'_>,
        ctx: &Context<'_>,
        event: &EventView<'_>,
        offset: u64,
    ) -> io::Result<Line> {
        let join = !self.args.no_join;
        if !self.args.offsets {
            // The usual event, written in place in the output.
            let lines = &mut self.lines;
            if let Some(line) = out.line(|bytes| lines.usual(bytes, ctx, event, join)) {
                out.settle()?;
                return Ok(line);
            }
        }
        let bytes = &mut self.event_line;
        bytes.clear();
        if self.args.offsets {
            let _ = write!(bytes, "{offset:#010x} ");
        }
        let line = self
            .lines
            .event(bytes, ctx, event, self.args.payloads, join);
        match line {
            Line::Written => {
                bytes.push(b'\n');
                out.write_all(bytes)?;
            }
            Line::GroupStart => {}
            Line::Unreadable => {
                let item = ctx.event(event).map(Record::Event);
                self.print(out, pass(offset, item))?;
            }
        }
        Ok(line)
    }

    /// Prints what the joiner has ready.
    fn drain(&mut self, out: &mut Out<'_>) -> io::Result<()> {
        while let Some(joined) = self.joiner.pop() {
            self.print(out, joined)?;
        }
        Ok(())
    }

    /// Prints a decoded record.
    fn print(&mut self, out: &mut Out<'_>, joined: Joined) -> io::Result<()> {
        print_joined(out, &mut self.line, joined, self.args, &self.names)
    }
}

/// The function names of the trace's symbols records, found (a search
/// of the whole file) only once a blob may need them: most traces have no
/// samples, and the search was a tenth of a dump.
struct LazyNames<'x> {
    names: &'x OnceLock<Names>,
    trace: Option<&'x [u8]>,
}

impl LazyNames<'_> {
    /// The names (the same whichever range asks first).
    fn get(&self) -> &Names {
        self.names
            .get_or_init(|| self.trace.map(Names::from_trace).unwrap_or_default())
    }
}

/// A record as it was read, not joined.
fn pass(offset: u64, item: Result<Record, DecodeError>) -> Joined {
    Joined {
        offset,
        item,
        joined_parts: 0,
    }
}

/// Prints one record (or joined blob) as a line, built in `line`.
fn print_joined(
    out: &mut Out<'_>,
    line: &mut String,
    joined: Joined,
    args: &Args,
    names: &LazyNames<'_>,
) -> io::Result<()> {
    let Ok(record) = joined.item else {
        return Ok(()); // the walk warns about it
    };
    line.clear();
    if args.offsets {
        let _ = write!(line, "{:#010x} ", joined.offset);
    }
    // Only blobs have lines of their own (samples, modules, symbols).
    let own_line = |line: &mut String| {
        matches!(record, Record::Blob(_)) && lines::format(line, &record, names.get())
    };
    if args.payloads || !own_line(line) {
        format_record(line, &record, args.payloads);
    }
    if joined.joined_parts > 0 {
        let _ = write!(line, " (joined from {} blob records)", joined.joined_parts);
    }
    line.push('\n');
    out.write_all(line.as_bytes())
}

/// Appends a quoted string field.
fn text(out: &mut String, t: &Text) {
    let _ = match t.as_str() {
        Some(s) => quoted(out, s),
        None => write!(out, "{t}"),
    };
}

/// Appends `s` quoted and escaped as `{s:?}` writes it, without the
/// formatting machinery when nothing needs escaping (printable ASCII but
/// `"` and `\`, which Debug writes as they are).
fn quoted(out: &mut String, s: &str) -> fmt::Result {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
        Ok(())
    } else {
        write!(out, "{s:?}")
    }
}

/// Appends an integer.
fn int(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Appends a thread field (`process/thread`).
fn thread(out: &mut String, t: &Thread) {
    match t {
        Thread::Known { process, thread } => {
            int(out, *process);
            out.push('/');
            int(out, *thread);
        }
        Thread::Undefined(i) => {
            let _ = write!(out, "<undefined thread #{i}>");
        }
    }
}

/// Appends an argument value.
fn arg_value(out: &mut String, v: &ArgValue) {
    let _ = match v {
        ArgValue::Null => write!(out, "null"),
        ArgValue::I32(x) => {
            int(out, *x);
            Ok(())
        }
        ArgValue::U32(x) => {
            int(out, *x);
            Ok(())
        }
        ArgValue::I64(x) => {
            int(out, *x);
            Ok(())
        }
        ArgValue::U64(x) => {
            int(out, *x);
            Ok(())
        }
        ArgValue::F64(x) => write!(out, "{x:?}"),
        ArgValue::Str(t) => {
            text(out, t);
            Ok(())
        }
        ArgValue::Pointer(p) => write!(out, "{p:#x}"),
        ArgValue::Koid(k) => write!(out, "koid({k})"),
        ArgValue::Bool(b) => write!(out, "{b}"),
        ArgValue::Blob(b) => write!(out, "blob({} bytes)", b.len()),
        ArgValue::Unknown { arg_type, .. } => write!(out, "unknown(type {arg_type})"),
    };
}

/// Appends ` key=value` for each argument (blob arguments with their
/// bytes if `payloads`).
fn args(out: &mut String, args: &[Arg], payloads: bool) {
    for a in args {
        out.push(' ');
        match a.name.as_str() {
            Some(s) => out.push_str(s),
            None => text(out, &a.name),
        }
        out.push('=');
        match &a.value {
            ArgValue::Blob(b) if payloads => {
                let _ = write!(out, "blob({} bytes: ", b.len());
                hex(out, b);
                out.push(')');
            }
            v => arg_value(out, v),
        }
    }
}

/// Appends ` payload=<hex>` if `payloads`.
fn payload(out: &mut String, bytes: &[u8], payloads: bool) {
    if payloads {
        out.push_str(" payload=");
        hex(out, bytes);
    }
}

/// Appends `bytes` in lowercase hex.
fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
}

/// Formats one record as a line (without the newline), with the bytes of
/// its blobs if `payloads`.
fn format_record(out: &mut String, record: &Record, payloads: bool) {
    let _ = match record {
        Record::Magic => write!(out, "magic"),
        Record::ProviderInfo { provider_id, name } => {
            write!(out, "provider_info id={provider_id} name={name:?}")
        }
        Record::ProviderSection { provider_id } => write!(out, "provider_section id={provider_id}"),
        Record::ProviderEvent { provider_id, event } => {
            let what = if *event == 0 {
                " (buffer filled up)"
            } else {
                ""
            };
            write!(out, "provider_event id={provider_id} event={event}{what}")
        }
        Record::Initialization { ticks_per_second } => {
            write!(out, "initialization ticks_per_second={ticks_per_second}")
        }
        Record::String { index, value } => write!(out, "string index={index} {:?}", &**value),
        Record::Thread {
            index,
            process,
            thread,
        } => write!(
            out,
            "thread index={index} process={process} thread={thread}"
        ),
        Record::Event(e) => event(out, e, payloads),
        Record::Blob(b) => {
            out.push_str("blob name=");
            text(out, &b.name);
            let _ = write!(out, " type={:?} size={}", b.blob_type, b.payload.len());
            payload(out, &b.payload, payloads);
            Ok(())
        }
        Record::UserspaceObject(o) => userspace_object(out, o, payloads),
        Record::KernelObject(o) => {
            let _ = write!(
                out,
                "kernel_object koid={} type={} name=",
                o.koid, o.object_type
            );
            text(out, &o.name);
            args(out, &o.args, payloads);
            Ok(())
        }
        Record::ContextSwitch(c) => {
            let _ = write!(
                out,
                "context_switch ts={} cpu={} outgoing_state={:?} outgoing={} incoming={}",
                c.timestamp, c.cpu, c.outgoing_state, c.outgoing_thread, c.incoming_thread
            );
            args(out, &c.args, payloads);
            Ok(())
        }
        Record::ThreadWakeup(w) => {
            let _ = write!(
                out,
                "thread_wakeup ts={} cpu={} waking={}",
                w.timestamp, w.cpu, w.waking_thread
            );
            args(out, &w.args, payloads);
            Ok(())
        }
        Record::LegacyContextSwitch(c) => legacy_context_switch(out, c),
        Record::Log(l) => {
            let _ = write!(out, "log ts={} thread=", l.timestamp);
            thread(out, &l.thread);
            write!(out, " message={:?}", l.message)
        }
        Record::LargeBlobWithMetadata(b) => large_blob_with_metadata(out, b, payloads),
        Record::LargeBlobNoMetadata(b) => {
            out.push_str("large_blob category=");
            text(out, &b.category);
            out.push_str(" name=");
            text(out, &b.name);
            let _ = write!(out, " size={}", b.payload.len());
            payload(out, &b.payload, payloads);
            Ok(())
        }
        Record::Unknown(u) => write!(
            out,
            "unknown record_type={} header={:#018x} words={}",
            u.record_type, u.header, u.size_words
        ),
    };
}

/// The number a line gives after an event's time, with its label: the
/// id of a counter, async span or flow, the end of a complete event.
fn id_or_end(kind: EventKind) -> Option<(&'static str, u64)> {
    match kind {
        EventKind::DurationComplete { end } => Some((" end=", end)),
        _ => kind.id().map(|id| (" id=", id)),
    }
}

/// An event: its kind, time, id or end, thread, category, name, arguments.
fn event(out: &mut String, e: &Event, payloads: bool) -> fmt::Result {
    out.push_str(event_kind_name(&e.kind));
    out.push_str(" ts=");
    int(out, e.timestamp);
    if let Some((label, n)) = id_or_end(e.kind) {
        out.push_str(label);
        int(out, n);
    }
    out.push_str(" thread=");
    thread(out, &e.thread);
    out.push_str(" category=");
    text(out, &e.category);
    out.push_str(" name=");
    text(out, &e.name);
    args(out, &e.args, payloads);
    Ok(())
}

/// A userspace object: pointer, process, name, arguments.
fn userspace_object(out: &mut String, o: &UserspaceObject, payloads: bool) -> fmt::Result {
    write!(out, "userspace_object pointer={:#x} process=", o.pointer)?;
    match o.process {
        Process::Known(p) => write!(out, "{p}"),
        Process::Undefined(i) => write!(out, "<undefined thread #{i}>"),
    }?;
    out.push_str(" name=");
    text(out, &o.name);
    args(out, &o.args, payloads);
    Ok(())
}

/// A legacy context switch: both threads inline, with priorities.
fn legacy_context_switch(out: &mut String, c: &LegacyContextSwitch) -> fmt::Result {
    write!(
        out,
        "legacy_context_switch ts={} cpu={} outgoing_state={:?} outgoing=",
        c.timestamp, c.cpu, c.outgoing_state
    )?;
    thread(out, &c.outgoing_thread);
    out.push_str(" incoming=");
    thread(out, &c.incoming_thread);
    write!(
        out,
        " outgoing_priority={} incoming_priority={}",
        c.outgoing_priority, c.incoming_priority
    )
}

/// A large blob with metadata: time, thread, category, name, size,
/// arguments, payload.
fn large_blob_with_metadata(
    out: &mut String,
    b: &LargeBlobWithMetadata,
    payloads: bool,
) -> fmt::Result {
    write!(out, "large_blob ts={} thread=", b.timestamp)?;
    thread(out, &b.thread);
    out.push_str(" category=");
    text(out, &b.category);
    out.push_str(" name=");
    text(out, &b.name);
    write!(out, " size={}", b.payload.len())?;
    args(out, &b.args, payloads);
    payload(out, &b.payload, payloads);
    Ok(())
}
