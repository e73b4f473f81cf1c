//! The first pass over an input: which records `fxt recover` would keep
//! ([`crate::keep`]), the names of processes and threads, and every slice's
//! thread, begin and end in the order slices end ([`super::nesting`]).
//! Memory: the open begins, the names, and the decisions about damaged
//! records; never the trace.

use std::collections::HashMap;
use std::path::Path;

use rustc_hash::FxHashMap;

use fxt_format::decode::{
    Context, Event, EventHead, EventKind, EventView, Head, HeadAt, Record, StrRef, Text, Thread,
    View,
};
use fxt_format::encode::header::event_type::{DURATION_COMPLETE, DURATION_END};
use fxt_format::time::{ticks_per_second_or_default, ticks_to_ns};

use super::labels::Labels;
use super::nesting::{Intervals, Nesting, NO_THREAD};
use crate::epoch::Epoch;
use crate::error::Error;
use crate::input::Input;
use crate::keep::{Fix, Keep, Verdict};
use crate::samples::{allocs, Gather, Names};
use crate::walk::Walk;
use fxt_format::samples::AllocKind;

/// An async span's key: provider, process, category, name and id.
pub type AsyncKey = (Option<u32>, u64, Text, Text, u64);

/// Open spans per key, innermost last.
pub struct Stacks<K, V>(FxHashMap<K, Vec<V>>);

impl<K: std::hash::Hash + Eq, V> Default for Stacks<K, V> {
    fn default() -> Self {
        Stacks(FxHashMap::default())
    }
}

impl<K: std::hash::Hash + Eq, V> Stacks<K, V> {
    /// Opens `v` under `k`.
    pub fn push(&mut self, k: K, v: V) {
        self.0.entry(k).or_default().push(v);
    }

    /// Closes the innermost span open under `k`.
    pub fn pop(&mut self, k: &K) -> Option<V> {
        let stack = self.0.get_mut(k)?;
        let v = stack.pop();
        if stack.is_empty() {
            self.0.remove(k);
        }
        v
    }

    /// Spans still open.
    pub fn open(&self) -> u64 {
        self.0.values().map(|s| s.len() as u64).sum()
    }
}

/// A timestamp as the tables hold it: nanoseconds, signed 64-bit (Spark
/// has no unsigned type), saturating (only damaged input gets past 292
/// years).
pub fn ns(ticks: u64, ticks_per_second: u64) -> i64 {
    i64::try_from(ticks_to_ns(ticks, ticks_per_second)).unwrap_or(i64::MAX)
}

/// The key of an async event.
pub fn async_key(provider: Option<u32>, e: &Event, id: u64) -> AsyncKey {
    (
        provider,
        pid_of(e.thread),
        e.category.clone(),
        e.name.clone(),
        id,
    )
}

/// What the first pass found.
pub struct Scan {
    /// Records to leave out (and repairs, which change nothing read).
    pub fixes: HashMap<u64, Fix>,
    /// Process and thread names.
    pub labels: Labels,
    /// Every slice's depth and parent, in the order slices end.
    pub nesting: Nesting,
    /// Slices out of end order on their thread.
    pub out_of_order: u64,
    /// What the walk saw.
    pub walk: Walk,
    /// The names of sampled addresses (the trace's `fxt.symbols`).
    pub names: Names,
}

/// The state of the first pass.
struct Pass<'d> {
    dir: &'d Path,
    keep: Keep,
    labels: Labels,
    intervals: Intervals,
    asyncs: Stacks<AsyncKey, ()>,
    gather: Gather,
    /// Whether each string index names the symbols (see [`SymbolNames`]).
    symbols: SymbolNames,
}

/// Per string index of an event's name, whether it is a name
/// [`Gather`] takes (the trace's symbols and modules): an event is handed
/// to it only then, so that the name of every other one is not compared
/// again at each event. Forgotten when the strings epoch changes.
#[derive(Default)]
struct SymbolNames {
    /// Whether a string record has given an index a name [`Gather`]
    /// takes: until one does (most traces, which have no symbols), no
    /// name by index is one, and none is looked up.
    defined: bool,
    epoch: Epoch,
    /// By index: 0 not looked up yet, 1 not wanted, 2 wanted.
    by_index: Vec<u8>,
}

impl SymbolNames {
    /// Notes a record of the walk that may define a string (string
    /// indices name only what string records define).
    fn see(&mut self, record: &Record) {
        if let Record::String { value, .. } = record {
            self.defined |= Gather::wants(value);
        }
    }

    /// Whether an event named `name` may be one [`Gather`] takes (any
    /// name not by index is handed over, to be looked at there).
    #[inline(always)]
    fn may_want(&mut self, ctx: &Context<'_>, name: StrRef<'_>) -> bool {
        let StrRef::Indexed(index) = name else {
            return true;
        };
        if !self.defined {
            return false;
        }
        if self.epoch.changed(ctx) {
            self.by_index.clear();
        }
        match self.remembered(index) {
            Some(wanted) => wanted,
            None => self.look_up(ctx, index),
        }
    }

    /// The answer remembered for string index `index`, if any.
    #[inline(always)]
    fn remembered(&self, index: u16) -> Option<bool> {
        match self.by_index.get(usize::from(index)) {
            Some(1) => Some(false),
            Some(2) => Some(true),
            _ => None,
        }
    }

    /// [`SymbolNames::may_want`] of an event read by its head (`at`:
    /// where the walk read it): an index remembered in the strings epoch
    /// there is found here, anything else by a call.
    #[inline(always)]
    fn may_want_at(&mut self, at: HeadAt<'_, '_>, name: StrRef<'_>) -> bool {
        if let StrRef::Indexed(index) = name {
            if !self.defined {
                return false;
            }
            if self.epoch.holds(at.strings_epoch()) {
                if let Some(wanted) = self.remembered(index) {
                    return wanted;
                }
            }
        }
        self.may_want_slowly(at, name)
    }

    /// [`SymbolNames::may_want_at`] of a name not found by index.
    #[inline(never)]
    fn may_want_slowly(&mut self, at: HeadAt<'_, '_>, name: StrRef<'_>) -> bool {
        self.may_want(&at.context(), name)
    }

    /// Looks index `index` up and remembers the answer.
    #[cold]
    fn look_up(&mut self, ctx: &Context<'_>, index: u16) -> bool {
        let wanted = ctx.str(StrRef::Indexed(index)).is_some_and(Gather::wants);
        let slot = usize::from(index);
        if self.by_index.len() <= slot {
            self.by_index.resize(slot + 1, 0);
        }
        self.by_index[slot] = 1 + u8::from(wanted);
        wanted
    }
}

/// Runs the first pass over `input`, with temporary files in `dir`.
/// Events are walked as heads where they can be
/// ([`Input::walk_heads_in_order`]), else as
/// views: only an async span's texts are read, and only an event named
/// as the symbols is decoded whole.
pub fn scan(input: &mut Input, dir: &Path) -> Result<Scan, Error> {
    let mut pass = Pass {
        dir,
        keep: Keep::new(false),
        labels: Labels::default(),
        intervals: Intervals::new(dir).map_err(|e| temp_error(dir, e))?,
        asyncs: Stacks::default(),
        gather: Gather::default(),
        symbols: SymbolNames::default(),
    };
    let walk = input.walk_heads_in_order(
        "export (1/2)",
        #[inline(always)]
        |ctx, head| match head {
            Head::Event(e, at) => pass.head(ctx, at, &e),
            Head::Other(view) => pass.view(ctx, view),
        },
    )?;
    let Pass {
        keep,
        labels,
        intervals,
        gather,
        ..
    } = pass;
    let (nesting, out_of_order) = intervals.resolve(dir).map_err(|e| temp_error(dir, e))?;
    Ok(Scan {
        fixes: keep.finish(),
        labels,
        nesting,
        out_of_order,
        walk,
        names: gather.finish(),
    })
}

impl Pass<'_> {
    /// Takes an event read by its head: a counter, an instant or a
    /// duration of a shape found clean before ([`Keep::see_head`]) is
    /// taken from its head; any other event (an async span's texts, the
    /// symbols' arguments are needed) from its view.
    #[inline(always)]
    fn head(
        &mut self,
        ctx: &Context<'_>,
        at: HeadAt<'_, '_>,
        e: &EventHead<'_>,
    ) -> Result<(), Error> {
        let event_type = u64::from(e.event_type());
        if event_type > DURATION_COMPLETE || self.symbols.may_want_at(at, e.name()) {
            return self.view_of(at);
        }
        let Some(verdict) = self.keep.see_head(at, e) else {
            return self.view_of(at);
        };
        let (thread, begin, end) = match (event_type, verdict) {
            (DURATION_COMPLETE, Verdict::Kept) => {
                let end = e.end_ts().unwrap_or_default();
                (self.keep.head_thread(at, e), e.timestamp(), end)
            }
            (DURATION_END, Verdict::Ended { begin_ts, thread }) => {
                (thread, begin_ts, e.timestamp())
            }
            _ => return Ok(()),
        };
        self.interval(ctx, thread, begin, end)
    }

    /// [`Pass::head`] of an event taken from its view.
    #[cold]
    #[inline(never)]
    fn view_of(&mut self, at: HeadAt<'_, '_>) -> Result<(), Error> {
        // Always read: `at` is where a head was read.
        match at.read() {
            Some((e, ctx)) => self.view(&ctx, &View::Event(e.view(&ctx))),
            None => Ok(()),
        }
    }

    /// Appends a slice of thread `thread` ([`Keep::thread`]) from `begin`
    /// to `end` (ticks of the provider of the record at `ctx`).
    #[inline(always)]
    fn interval(
        &mut self,
        ctx: &Context<'_>,
        thread: u32,
        begin: u64,
        end: u64,
    ) -> Result<(), Error> {
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        self.intervals
            .push(thread, ns(begin, tps), ns(end, tps))
            .map_err(|e| temp_error(self.dir, e))
    }

    /// Takes one record of the walk, unless `fxt recover` would leave it
    /// out. Reserved bits are not looked at: they change no decision of a
    /// reader ([`Keep::new`]).
    fn view(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        if let View::Record(record) = view {
            // Before any verdict: the decoder has taken its string anyway.
            self.symbols.see(record);
        }
        let verdict = self.keep.see(ctx, view);
        if verdict == Verdict::Dropped {
            return Ok(());
        }
        let symbols = match view {
            View::Event(e) => self.symbols.may_want(ctx, e.name),
            View::Record(_) => true,
        };
        if symbols {
            self.gather.see_view(ctx, view)?;
        }
        match view {
            View::Event(e) => self.event(ctx, e, verdict),
            View::Record(record) => {
                self.labels.see(record);
                if let Some(Ok(a)) = allocs::alloc_of(record) {
                    if a.kind == AllocKind::Alloc {
                        self.gather.add(allocs::sample_shaped(&a));
                    }
                }
                Ok(())
            }
        }
    }

    /// A kept event: a slice's interval, an async span opened or closed
    /// (only then are its category and name looked up).
    fn event(
        &mut self,
        ctx: &Context<'_>,
        e: &EventView<'_>,
        verdict: Verdict,
    ) -> Result<(), Error> {
        let (kind, timestamp, thread) = (e.kind, e.timestamp, e.thread);
        let texts = || (ctx.text(e.category), ctx.text(e.name));
        let provider = ctx.provider_id();
        let key = |id| {
            let (category, name) = texts();
            (provider, pid_of(thread), category, name, id)
        };
        let interval = match (kind, verdict) {
            (EventKind::DurationComplete { end }, _) => {
                Some((self.keep.thread(provider, thread), timestamp, end))
            }
            (EventKind::DurationEnd, Verdict::Ended { begin_ts, thread }) => {
                Some((thread, begin_ts, timestamp))
            }
            (EventKind::AsyncBegin { id }, _) => {
                self.asyncs.push(key(id), ());
                None
            }
            (EventKind::AsyncEnd { id }, _) => {
                self.asyncs.pop(&key(id)).map(|()| (NO_THREAD, 0, 0))
            }
            _ => None,
        };
        match interval {
            Some((thread, begin, end)) => self.interval(ctx, thread, begin, end),
            None => Ok(()),
        }
    }
}

/// The process of a thread field (0 for an undefined one).
pub fn pid_of(t: Thread) -> u64 {
    match t {
        Thread::Known { process, .. } => process,
        Thread::Undefined(_) => 0,
    }
}

/// An error on the temporary files.
pub fn temp_error(dir: &Path, e: std::io::Error) -> Error {
    Error::msg(format!("temporary file in {}: {e}", dir.display()))
}
