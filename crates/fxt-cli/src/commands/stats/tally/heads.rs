//! The head walk's side of [`RangeTally`]: an event of the usual shape
//! counted by its head ([`RangeTally::add_head`]), its (category, name)
//! and thread found by index while the tables hold, anything else taken
//! by one call out of the loop.

use fxt_format::decode::{Context, EventHead, Head, HeadAt, Thread, ThreadRef, View};
use fxt_format::time::ticks_per_second_or_default;

use super::{Counted, Current, RangeTally};

impl RangeTally {
    /// Counts one record of a head walk: an event by its head (its name
    /// found by its string indices, its thread by its thread index, the
    /// whole event decoded only as [`RangeTally::add_view`] would), any
    /// other record as [`RangeTally::add_view`]. What the head's step
    /// hands a call kept out of it is where the head was read ([`HeadAt`],
    /// two words in registers), not the head or its context, so that
    /// nothing is written to memory for it per event.
    #[inline(always)]
    pub fn add_head(&mut self, ctx: &Context<'_>, head: Head<'_, '_>) {
        let (e, at) = match head {
            Head::Event(e, at) => (e, at),
            Head::Other(view) => return self.add_other(ctx, view),
        };
        let Some(Current { tps, .. }) = self.current else {
            return self.add_head_slowly(at);
        };
        let (category, name) = (e.category_index(), e.name_index());
        match self.by_refs.get(usize::from(name)) {
            Some(&(c, key)) if c == category => self.count_head(at, e, key as usize, tps),
            _ => self.add_head_slowly(at),
        }
    }

    /// [`RangeTally::add_head`] of an event whose (category, name) is not
    /// remembered by index, or that is decoded whole, or that comes first
    /// after another record: its name looked up the slow way, with the
    /// head and its context read again here.
    #[inline(never)]
    fn add_head_slowly(&mut self, at: HeadAt<'_, '_>) {
        // Always read: `at` is where a head was read.
        let Some((e, ctx)) = at.read() else {
            return;
        };
        let Current { provider, tps } = match self.current {
            Some(current) => current,
            None => self.start_heads(&ctx),
        };
        let key = self.key_of(&ctx, e.category(), e.name());
        if self.whole[key] {
            if let Ok(whole) = ctx.event(&e.view(&ctx)) {
                self.keep_whole(provider, tps, key, whole);
            }
        }
        self.count_head(at, e, key, tps);
    }

    /// Counts an event head whose (category, name) is entry `key` of
    /// `names`, after [`RangeTally::start_heads`] (its clock `tps`).
    #[inline(always)]
    fn count_head(&mut self, at: HeadAt<'_, '_>, e: EventHead<'_>, key: usize, tps: u64) {
        let ticks = e.timestamp();
        // The run is this provider's at this clock (`start_heads`).
        self.run.first = self.run.first.min(ticks);
        self.run.last = self.run.last.max(ticks);
        let thread = match e.thread_ref() {
            ThreadRef::Indexed(index) => match self.by_thread_index.get(index) {
                Some(known) => known,
                None => self.find_head_thread(at, index),
            },
            ThreadRef::Inline { process, thread } => self.inline_thread(process, thread),
        };
        let counted = Counted {
            event_type: e.event_type(),
            end: e.end_ts().unwrap_or(0),
            thread,
            key,
            ticks,
        };
        self.count_event(tps, counted);
    }

    /// The provider and clock of the event heads from here to the next
    /// other record ([`Current`]), with what was kept by string and thread
    /// index forgotten if their epochs changed, and the run of spans
    /// switched to them.
    fn start_heads(&mut self, ctx: &Context<'_>) -> Current {
        let current = Current {
            provider: ctx.provider_id(),
            tps: ticks_per_second_or_default(ctx.ticks_per_second()),
        };
        if self.refs_epoch.changed(ctx) {
            self.by_refs.clear();
        }
        self.by_thread_index.check(ctx);
        let at = self.provider_index(current.provider);
        self.switch_run(at, current.tps);
        self.current = Some(current);
        current
    }

    /// [`RangeTally::add_head`] of a record that is not an event head:
    /// a call of its own, out of the head's loop.
    #[inline(never)]
    fn add_other(&mut self, ctx: &Context<'_>, view: &View<'_>) {
        self.add_view(ctx, view)
    }

    /// The index in `threads` of an event head's thread given by its
    /// koids, of the heads' provider.
    #[inline(never)]
    fn inline_thread(&mut self, process: u64, thread: u64) -> usize {
        let provider = self.current.and_then(|c| c.provider);
        self.thread_index(provider, Thread::Known { process, thread })
    }

    /// The index in `threads` of the thread of thread index `index`, not
    /// looked up since the threads epoch changed (checked by
    /// [`RangeTally::start_heads`]), remembered.
    #[inline(never)]
    fn find_head_thread(&mut self, at: HeadAt<'_, '_>, index: u8) -> usize {
        let provider = self.current.and_then(|c| c.provider);
        let at = self.thread_index(provider, at.context().thread(index));
        self.by_thread_index.set(index, at);
        at
    }
}
