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

mod fields;
mod sites;

use std::cell::RefCell;

use fxt_runtime::__macro_support::{self as ms, ArgValue, StringRef};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Interest, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use fields::{arg_value, EventVisitor, Message, Owned, Slot, SpanData};
use sites::{site_of, LayerSite};

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

thread_local! {
    /// Reused buffer for an event's string and `Debug` fields.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
    /// The spans this thread entered and wrote a begin for, innermost last:
    /// `on_exit` finds its call site on this stack instead of looking the span up
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
