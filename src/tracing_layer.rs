//! A [`tracing-subscriber`](tracing_subscriber) layer that records `tracing`
//! spans and events into the running fxt session (cargo feature
//! **`tracing`**).
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let subscriber = tracing_subscriber::registry().with(fxt::tracing_layer::FxtLayer::new());
//! let session = fxt::start(fxt::Config::new()).expect("no other session is running");
//! tracing_core::dispatcher::with_default(&tracing_core::Dispatch::new(subscriber), || {
//!     // spans and events of `tracing` (and `#[instrument]`) land in the session
//! });
//! let (bytes, _stats) = session.finish_to_vec().expect("collected");
//! # assert!(!bytes.is_empty());
//! ```
//!
//! # What is written
//!
//! | `tracing` | FXT |
//! |---|---|
//! | span entered / exited | duration begin / duration end, on the entering thread |
//! | event | instant event |
//! | metadata target | category |
//! | span name | name |
//! | event `message` | name, when the call site's message is always the same text; otherwise the event's metadata name, with the message as a `message` argument |
//! | fields | typed arguments: `i64`, `u64`, `f64`, `bool`, `&str`; anything else as its `Debug` text |
//!
//! **Why begin/end on enter/exit, not a complete event on close.** `tracing`
//! enters and exits spans in stack order on each thread, so a begin on
//! enter and an end on exit always nest correctly within the thread's other
//! slices in Perfetto. A span that is entered several times (the span of a
//! future, entered on each poll; re-entry) gives one slice per entry, each
//! on the thread that entered it, and the time the span sat idle between
//! polls is not drawn as work. A complete event from creation to close
//! would instead cover idle time and other threads' work, and overlap
//! unrelated slices on one thread. A span's arguments (as recorded so far,
//! including later `Span::record` calls) are attached to every begin.
//!
//! # Cost
//!
//! Each `tracing` call site gets, once, a leaked fxt call site (category,
//! name, argument names) built in [`Layer::register_callsite`]; events and
//! spans find it in a lock-free table indexed by the address of the call
//! site's `&'static Metadata` (one multiplication, no hasher, no lock).
//! From there the record goes through the same path as the `trace_*!`
//! macros: interned category, name and argument names, no allocation for
//! numeric fields. With no session running, an event costs the table
//! lookup and one relaxed load.
//!
//! * An event's message is a `fmt::Arguments` that `tracing` hands over
//!   only as `&dyn Debug`, so learning its text means formatting it. While
//!   a call site's message has always been the same, it is formatted into a
//!   comparing writer that copies nothing (the event is named by the
//!   interned constant); only a message that differs is copied, into a
//!   reused per-thread buffer, and written inline. That formatting (through
//!   `core::fmt::write`) is most of what the layer adds to an event.
//! * Spans without fields store nothing in the registry: entering one
//!   finds its call site from its metadata, and each thread keeps the spans
//!   it entered on a small stack, so exiting writes the end without looking
//!   the span up in the registry again. Spans with fields keep their
//!   values (owned) in the registry's extensions.
//!
//! Limits: at most 15 fields per call site are recorded (the format's
//! argument limit); a field that was not recorded sits as a null argument
//! when a later field was; `i128`/`u128` fields are written as text.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use fxt_runtime::__macro_support::{self as ms, ArgValue, StringRef};
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Interest, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Most arguments a record holds.
const MAX_ARGS: usize = 15;

/// A [`Layer`] that writes spans as durations and events as instants into
/// the running fxt session. See the [module documentation](self).
///
/// Add it to a registry: `tracing_subscriber::registry().with(FxtLayer::new())`.
/// It records only while an fxt session runs (and only categories the
/// session enables); otherwise it does nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct FxtLayer {
    _private: (),
}

impl FxtLayer {
    /// A layer writing into whatever fxt session is running.
    pub fn new() -> FxtLayer {
        FxtLayer { _private: () }
    }
}

/// What the layer keeps for one `tracing` call site (built once, leaked).
struct LayerSite {
    /// Category = target, name = the metadata name, arguments = the fields
    /// other than `message`, in field order.
    plain: &'static ms::Callsite,
    /// The same with a trailing `message` argument (events with a message
    /// that varies).
    with_message: &'static ms::Callsite,
    /// Argument position of each field, by field index (`None`: the
    /// message, or a field beyond the argument limit).
    positions: &'static [Option<u8>],
    /// The argument names of `plain`.
    names: &'static [&'static str],
    /// Index of the `message` field, if the call site has one.
    message: Option<usize>,
    /// Events: the call site named by its message, while that message has
    /// always been the same text.
    named: OnceLock<Named>,
    /// Events: the message has varied; use `with_message`.
    varying: AtomicBool,
}

/// An fxt call site named by an event's (constant) message.
struct Named {
    message: &'static str,
    callsite: &'static ms::Callsite,
}

fn leak<T>(value: T) -> &'static T {
    Box::leak(Box::new(value))
}

fn leak_callsite(
    category: &'static str,
    name: &'static str,
    names: &'static [&'static str],
) -> &'static ms::Callsite {
    let keys: &'static [ms::KeyCache] = Box::leak(
        (0..names.len())
            .map(|_| ms::KeyCache::NEW)
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    leak(ms::Callsite::new(category, name, names, keys))
}

impl LayerSite {
    fn build(meta: &'static Metadata<'static>) -> LayerSite {
        let fields = meta.fields();
        let mut names = Vec::new();
        let mut positions = Vec::with_capacity(fields.len());
        let mut message = None;
        for (i, f) in fields.iter().enumerate() {
            if f.name() == "message" && meta.is_event() {
                message = Some(i);
                positions.push(None);
            } else if names.len() < MAX_ARGS {
                positions.push(Some(names.len() as u8));
                names.push(f.name());
            } else {
                positions.push(None);
            }
        }
        let plain_names: &'static [&'static str] = Box::leak(names.clone().into_boxed_slice());
        let plain = leak_callsite(meta.target(), meta.name(), plain_names);
        let with_message = if message.is_some() && names.len() < MAX_ARGS {
            names.push("message");
            leak_callsite(
                meta.target(),
                meta.name(),
                Box::leak(names.into_boxed_slice()),
            )
        } else {
            plain
        };
        LayerSite {
            plain,
            with_message,
            positions: Box::leak(positions.into_boxed_slice()),
            names: plain_names,
            message,
            named: OnceLock::new(),
            varying: AtomicBool::new(false),
        }
    }

    #[inline]
    fn position(&self, field: &Field) -> Option<usize> {
        self.positions
            .get(field.index())
            .copied()
            .flatten()
            .map(usize::from)
    }

    /// The call site an event with `message` is written with, and whether
    /// the message goes in as an argument.
    fn event_callsite(&self, message: Option<&str>) -> (&'static ms::Callsite, bool) {
        let Some(message) = message else {
            return (self.plain, false);
        };
        if !self.varying.load(Ordering::Relaxed) {
            let named = self.named.get_or_init(|| {
                let text: &'static str = Box::leak(message.to_owned().into_boxed_str());
                Named {
                    message: text,
                    callsite: leak_callsite(self.plain.category(), text, self.names),
                }
            });
            if named.message == message {
                return (named.callsite, false);
            }
            self.varying.store(true, Ordering::Relaxed);
        }
        (self.with_message, true)
    }
}

// ---------------------------------------------------------------------------
// The table from `&'static Metadata` to `LayerSite`.
//
// Open addressing over a fixed array of `OnceLock`s indexed by the
// metadata's address: a lookup is a multiplication and one or a few Acquire
// loads, never a lock or a hash function. Insertions (once per call site,
// from `register_callsite`) are serialized by `INSERT`; a call site that
// finds no free slot within `MAX_PROBE` goes to a locked overflow list.

const TABLE_BITS: u32 = 12;
const TABLE_SIZE: usize = 1 << TABLE_BITS;
const MAX_PROBE: usize = 16;

struct Entry {
    meta: &'static Metadata<'static>,
    site: &'static LayerSite,
}

static TABLE: [OnceLock<Entry>; TABLE_SIZE] = [const { OnceLock::new() }; TABLE_SIZE];
static INSERT: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

#[inline]
fn home(meta: &'static Metadata<'static>) -> usize {
    let addr = meta as *const Metadata<'static> as usize as u64;
    (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - TABLE_BITS)) as usize
}

#[inline]
fn lookup(meta: &'static Metadata<'static>) -> Option<&'static LayerSite> {
    let mut i = home(meta);
    for _ in 0..MAX_PROBE {
        match TABLE[i].get() {
            None => return None,
            Some(e) if std::ptr::eq(e.meta, meta) => return Some(e.site),
            Some(_) => i = (i + 1) % TABLE_SIZE,
        }
    }
    lookup_overflow(meta)
}

#[cold]
fn lookup_overflow(meta: &'static Metadata<'static>) -> Option<&'static LayerSite> {
    let overflow = INSERT.lock().unwrap_or_else(|e| e.into_inner());
    overflow
        .iter()
        .find(|e| std::ptr::eq(e.meta, meta))
        .map(|e| e.site)
}

/// The call site's `LayerSite`, built on first sight.
#[inline]
fn site_of(meta: &'static Metadata<'static>) -> &'static LayerSite {
    match lookup(meta) {
        Some(site) => site,
        None => insert(meta),
    }
}

#[cold]
#[inline(never)]
fn insert(meta: &'static Metadata<'static>) -> &'static LayerSite {
    let mut overflow = INSERT.lock().unwrap_or_else(|e| e.into_inner());
    let mut i = home(meta);
    for _ in 0..MAX_PROBE {
        match TABLE[i].get() {
            Some(e) if std::ptr::eq(e.meta, meta) => return e.site,
            Some(_) => i = (i + 1) % TABLE_SIZE,
            None => {
                let site = leak(LayerSite::build(meta));
                // Only inserters set slots, and they hold the lock: the slot
                // is still free.
                let _ = TABLE[i].set(Entry { meta, site });
                return site;
            }
        }
    }
    if let Some(e) = overflow.iter().find(|e| std::ptr::eq(e.meta, meta)) {
        return e.site;
    }
    let site = leak(LayerSite::build(meta));
    overflow.push(Entry { meta, site });
    site
}

// ---------------------------------------------------------------------------
// Field values.

/// A field value of an event, with strings as ranges of a scratch buffer.
#[derive(Clone, Copy)]
enum Slot {
    Unset,
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(usize, usize),
}

/// What an event's `message` turned out to be.
#[derive(Clone, Copy)]
enum Message {
    /// The call site has no message, or it was not visited.
    Absent,
    /// Exactly the text of the call site's [`Named`] message: nothing was
    /// copied.
    Same,
    /// Any other text, as a range of the scratch buffer.
    Text(usize, usize),
}

/// A `fmt::Write` that compares what is written with `expected` and copies
/// nothing while it matches; from the first difference on, it copies
/// (the matched prefix, then the rest) into `scratch`.
struct Compare<'a> {
    expected: &'static str,
    matched: usize,
    diverged: bool,
    scratch: &'a mut String,
}

impl std::fmt::Write for Compare<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if !self.diverged {
            let rest = &self.expected.as_bytes()[self.matched..];
            // Byte by byte: messages are short, and a `memcmp` call costs
            // more than the loop.
            if rest.len() >= s.len() && rest.iter().zip(s.as_bytes()).all(|(a, b)| a == b) {
                self.matched += s.len();
                return Ok(());
            }
            self.diverged = true;
            self.scratch.push_str(&self.expected[..self.matched]);
        }
        self.scratch.push_str(s);
        Ok(())
    }
}

/// Collects an event's fields by argument position (`N`: slots, at least
/// the call site's argument count).
struct EventVisitor<'a, const N: usize> {
    site: &'static LayerSite,
    slots: [Slot; N],
    scratch: &'a mut String,
    message: Message,
}

impl<const N: usize> EventVisitor<'_, N> {
    #[inline]
    fn set(&mut self, field: &Field, slot: Slot) {
        if let Some(p) = self.site.position(field) {
            self.slots[p] = slot;
        }
    }

    /// Formats the message: compared with the call site's constant message
    /// while it has one, copied into the scratch buffer otherwise.
    fn message(&mut self, value: &dyn std::fmt::Debug) {
        let start = self.scratch.len();
        if !self.site.varying.load(Ordering::Relaxed) {
            if let Some(named) = self.site.named.get() {
                let mut compare = Compare {
                    expected: named.message,
                    matched: 0,
                    diverged: false,
                    scratch: self.scratch,
                };
                let _ = write!(compare, "{value:?}");
                if !compare.diverged && compare.matched == named.message.len() {
                    self.message = Message::Same;
                    return;
                }
                if !compare.diverged {
                    // A strict prefix of the constant.
                    let prefix = &named.message[..compare.matched];
                    self.scratch.push_str(prefix);
                }
                self.message = Message::Text(start, self.scratch.len());
                return;
            }
        }
        let _ = write!(self.scratch, "{value:?}");
        self.message = Message::Text(start, self.scratch.len());
    }

    fn text(&mut self, field: &Field, write: impl FnOnce(&mut String)) {
        if self.site.position(field).is_none() {
            return;
        }
        let start = self.scratch.len();
        write(self.scratch);
        self.set(field, Slot::Str(start, self.scratch.len()));
    }
}

impl<const N: usize> Visit for EventVisitor<'_, N> {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, Slot::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, Slot::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, Slot::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, Slot::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if Some(field.index()) == self.site.message {
            let start = self.scratch.len();
            self.scratch.push_str(value);
            self.message = Message::Text(start, self.scratch.len());
            return;
        }
        self.text(field, |s| s.push_str(value));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if Some(field.index()) == self.site.message {
            return self.message(value);
        }
        self.text(field, |s| {
            let _ = write!(s, "{value:?}");
        });
    }
}

/// The argument value of a slot (strings from `scratch`).
#[inline]
fn arg_value(slot: Slot, scratch: &str) -> ArgValue<'_> {
    match slot {
        Slot::Unset => ArgValue::Null,
        Slot::I64(v) => ArgValue::I64(v),
        Slot::U64(v) => ArgValue::U64(v),
        Slot::F64(v) => ArgValue::F64(v),
        Slot::Bool(v) => ArgValue::Bool(v),
        Slot::Str(a, b) => ArgValue::Str(StringRef::Inline(&scratch[a..b])),
    }
}

/// A span's field value, owned (it outlives the `new_span`/`record` call).
#[derive(Clone)]
enum Owned {
    Unset,
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(String),
}

/// What a span keeps in its extensions.
struct SpanData {
    site: &'static LayerSite,
    values: Vec<Owned>,
}

impl SpanData {
    fn set(&mut self, field: &Field, value: Owned) {
        if let Some(p) = self.site.position(field) {
            if self.values.len() <= p {
                self.values.resize(p + 1, Owned::Unset);
            }
            self.values[p] = value;
        }
    }
}

impl Visit for SpanData {
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field, Owned::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field, Owned::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field, Owned::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field, Owned::Bool(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if self.site.position(field).is_some() {
            self.set(field, Owned::Str(value.to_owned()));
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if self.site.position(field).is_some() {
            self.set(field, Owned::Str(format!("{value:?}")));
        }
    }
}

thread_local! {
    /// Reused buffer for an event's string and `Debug` fields.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
    /// The spans this thread entered and wrote a begin for, innermost last:
    /// `on_exit` finds its call site here instead of looking the span up
    /// in the registry.
    static ENTERED: RefCell<Vec<(u64, &'static ms::Callsite)>> = const { RefCell::new(Vec::new()) };
}

/// Most spans a thread keeps on [`ENTERED`]; deeper entries write neither
/// begin nor end (a guard against spans entered and never exited).
const MAX_ENTERED: usize = 1024;

/// Pushes an entered span; `false` (write no begin) when the stack is full
/// or busy.
#[inline]
fn entered_push(id: &Id, callsite: &'static ms::Callsite) -> bool {
    ENTERED.with(|cell| match cell.try_borrow_mut() {
        Ok(mut stack) if stack.len() < MAX_ENTERED => {
            stack.push((id.into_u64(), callsite));
            true
        }
        _ => false,
    })
}

/// Removes the innermost entry of span `id` (spans exit in stack order, so
/// it is almost always the top) and returns its call site.
#[inline]
fn entered_pop(id: &Id) -> Option<&'static ms::Callsite> {
    let id = id.into_u64();
    ENTERED.with(|cell| {
        let mut stack = cell.try_borrow_mut().ok()?;
        match stack.last() {
            Some(&(top, callsite)) if top == id => {
                stack.pop();
                Some(callsite)
            }
            _ => {
                let at = stack.iter().rposition(|&(entry, _)| entry == id)?;
                Some(stack.remove(at).1)
            }
        }
    })
}

// ---------------------------------------------------------------------------
// The layer.

impl<S> Layer<S> for FxtLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // The per-call-site slow path: build and publish the fxt call site.
        site_of(metadata);
        // Whether anything is recorded is decided per use by the fxt call
        // site (session running, category enabled): one relaxed load.
        Interest::always()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let site = site_of(attrs.metadata());
        // A span without fields needs nothing stored: its call site is
        // found again from its metadata when it is entered.
        if site.names.is_empty() || site.plain.site().is_none() {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut data = SpanData {
            site,
            values: Vec::new(),
        };
        attrs.record(&mut data);
        span.extensions_mut().insert(data);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let site = site_of(span.metadata());
        if site.names.is_empty() || site.plain.site().is_none() {
            return;
        }
        let mut ext = span.extensions_mut();
        match ext.get_mut::<SpanData>() {
            Some(data) => values.record(data),
            None => {
                // Created while no session ran (or before its category was
                // enabled): keep what is recorded from now on.
                let mut data = SpanData {
                    site,
                    values: Vec::new(),
                };
                values.record(&mut data);
                ext.insert(data);
            }
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let site = site_of(span.metadata());
        let Some(fxt_site) = site.plain.site() else {
            return;
        };
        if !entered_push(id, site.plain) {
            return;
        }
        if site.names.is_empty() {
            return ms::duration_begin(fxt_site, &[]);
        }
        let ext = span.extensions();
        let values = ext.get::<SpanData>().map_or(&[][..], |d| &d.values[..]);
        let mut args = [ArgValue::Null; MAX_ARGS];
        for (slot, value) in args.iter_mut().zip(values) {
            *slot = match value {
                Owned::Unset => ArgValue::Null,
                Owned::I64(v) => ArgValue::I64(*v),
                Owned::U64(v) => ArgValue::U64(*v),
                Owned::F64(v) => ArgValue::F64(*v),
                Owned::Bool(v) => ArgValue::Bool(*v),
                Owned::Str(s) => ArgValue::Str(StringRef::Inline(s)),
            };
        }
        ms::duration_begin(fxt_site, &args[..values.len().min(MAX_ARGS)]);
    }

    fn on_exit(&self, id: &Id, _ctx: Context<'_, S>) {
        // The entry pushed by `on_enter` (no registry lookup): a begin was
        // written for it, so its end is written too.
        if let Some(callsite) = entered_pop(id) {
            if let Some(site) = callsite.site() {
                ms::duration_end(site, &[]);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let site = site_of(event.metadata());
        if site.plain.site().is_none() {
            return;
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                scratch.clear();
                record_sized(site, event, &mut scratch);
            }
            // An event emitted while formatting another one's fields.
            Err(_) => record_sized(site, event, &mut String::new()),
        });
    }
}

/// [`record_event`] with arrays sized for the call site: few arguments (the
/// common case) use small ones.
#[inline]
fn record_sized(site: &'static LayerSite, event: &Event<'_>, scratch: &mut String) {
    match site.names.len() {
        // Room for the message argument only.
        0 => record_event::<1>(site, event, scratch),
        1..=3 => record_event::<4>(site, event, scratch),
        _ => record_event::<{ MAX_ARGS + 1 }>(site, event, scratch),
    }
}

/// Records `event` of call site `site`, with room for `N` arguments
/// (`N` > the call site's argument count, so the message fits too).
fn record_event<const N: usize>(site: &'static LayerSite, event: &Event<'_>, scratch: &mut String) {
    let mut visitor = EventVisitor::<N> {
        site,
        slots: [Slot::Unset; N],
        scratch,
        message: Message::Absent,
    };
    event.record(&mut visitor);
    // Borrowed in place, not moved (a move copies the slot array).
    let (slots, message) = (&visitor.slots, visitor.message);
    let scratch: &str = visitor.scratch;
    let (callsite, message_arg) = match message {
        Message::Absent => (site.plain, None),
        Message::Same => match site.named.get() {
            Some(named) => (named.callsite, None),
            None => (site.plain, None),
        },
        Message::Text(a, b) => {
            let text = &scratch[a..b];
            match site.event_callsite(Some(text)) {
                (callsite, true) => (callsite, Some(text)),
                (callsite, false) => (callsite, None),
            }
        }
    };
    let Some(fxt_site) = callsite.site() else {
        return;
    };
    let fields = site.names.len();
    let mut args = [ArgValue::Null; N];
    // Arguments up to the last recorded field (an unrecorded one before it
    // stays a null argument).
    let mut n = 0;
    for (i, (arg, slot)) in args.iter_mut().zip(&slots[..fields]).enumerate() {
        if !matches!(slot, Slot::Unset) {
            *arg = arg_value(*slot, scratch);
            n = i + 1;
        }
    }
    if let Some(m) = message_arg.filter(|_| fields < MAX_ARGS) {
        // `with_message` has the message right after the fields.
        args[fields] = ArgValue::Str(StringRef::Inline(m));
        n = fields + 1;
    }
    // Fixed-length slices for the common counts: the engine's emit path is
    // inlined and specialised for them, as for the `trace_*!` macros.
    match n {
        0 => ms::instant(fxt_site, &[]),
        1 => ms::instant(fxt_site, &[args[0]]),
        2 => ms::instant(fxt_site, &[args[0], args[1]]),
        _ => ms::instant(fxt_site, &args[..n]),
    }
}
