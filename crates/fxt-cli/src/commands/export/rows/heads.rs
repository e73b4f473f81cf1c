//! Events of the usual shape read by their heads
//! ([`crate::input::Input::walk_heads_in_order`]): a counter's, an
//! instant's or a complete event's row written by its thread's plan
//! ([`super::plan`]) once the plan holds, a duration's begin kept and its
//! end's slice written, all from the record's words, with no view made.
//! Anything else (a plan made or its key numbered anew, a begin whose
//! arguments only decoding reads) is taken from the event's view, as
//! before: the rows are the same.

use fxt_format::decode::{Context as At, EventHead, Thread};
use fxt_format::encode::header::event_type;
use fxt_format::time::ticks_per_second_or_default;

use super::plan::thread_of;
use super::Rows;
use crate::commands::export::args::Args;
use crate::commands::export::begins::{BeginArgs, Open};
use crate::commands::export::keys::koids;
use crate::error::Error;

impl Rows<'_> {
    /// Takes the event whose head `h` the walk read at `ctx`.
    #[inline(always)]
    pub(super) fn head(&mut self, ctx: &At<'_>, h: &EventHead<'_>) -> Result<(), Error> {
        // Each call looks the thread up itself: handed over, it would be
        // stored here and read back there at once, which stalls.
        let done = match u64::from(h.event_type()) {
            event_type::INSTANT => self.instant_by_head(ctx, h)?,
            event_type::COUNTER => self.counter_by_head(ctx, h)?,
            event_type::DURATION_BEGIN => self.begin_by_head(ctx, h, thread_of(ctx, h)),
            event_type::DURATION_END => return self.end_by_head(ctx, h),
            event_type::DURATION_COMPLETE => self.complete_by_head(ctx, h)?,
            _ => false,
        };
        if done {
            return Ok(());
        }
        self.head_as_view(ctx, h)
    }

    /// Takes the event of head `h` (at `ctx`) from its view.
    #[inline(never)]
    fn head_as_view(&mut self, ctx: &At<'_>, h: &EventHead<'_>) -> Result<(), Error> {
        let e = h.view(ctx);
        self.event_view(ctx, &e)
    }

    /// Keeps duration begin `h` (at `ctx`, of thread `thread`) open, its
    /// arguments read from its words as [`Rows::event_view`] reads them
    /// from its view; false, nothing kept, if only decoding reads them.
    #[inline(always)]
    fn begin_by_head(&mut self, ctx: &At<'_>, h: &EventHead<'_>, thread: Thread) -> bool {
        let Some(list) = self.begin_args(ctx, (h.args(), h.arg_count())) else {
            return false;
        };
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let provider = ctx.provider_id();
        let (pid, tid) = koids(thread);
        let open = Open {
            ts: self.ns(h.timestamp(), tps),
            pid,
            tid,
            category: self.texts.id(ctx, h.category()),
            name: self.texts.id(ctx, h.name()),
            args: BeginArgs::Kept(list),
        };
        self.durations.push((provider, thread), open);
        true
    }

    /// Writes the slice that duration end `h` (at `ctx`) ends, its
    /// arguments after its begin's.
    #[inline(never)]
    fn end_by_head(&mut self, ctx: &At<'_>, h: &EventHead<'_>) -> Result<(), Error> {
        let thread = thread_of(ctx, h);
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        let provider = ctx.provider_id();
        let ts = self.ns(h.timestamp(), tps);
        match self.durations.pop((provider, thread)) {
            // Straight to its plan, as `slice` would hand it.
            Some(
                begin @ Open {
                    args: BeginArgs::Kept(_),
                    ..
                },
            ) => self.duration_by_plan(provider, begin, ts, Args::Head(h, ctx)),
            Some(begin) => self.slice(provider, begin, ts, "duration", None, Args::Head(h, ctx)),
            // The first pass left out every end without a begin.
            None => Err(Error::msg("internal error: a kept end has no begin")),
        }
    }
}
