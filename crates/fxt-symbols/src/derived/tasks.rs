//! A task's drawings from its compact polls (`fxt::task`, see
//! [`fxt_format::derived::task`]): each poll again as an async slice on
//! the task's own track (id: the task's, inside the task's life, which
//! the runtime writes), and, for a poll whose wake was recorded, a flow
//! from the waking thread at the wake to the poll, so that a viewer draws
//! the arrow from the waker to the poll it caused.
//!
//! The flow begins on the waker's thread `delay` before the poll's start
//! (a duration, turned back into ticks here), in a `wake` slice of no
//! length drawn there (inside whatever slice was open: a producer's poll,
//! a plain thread's `send`, a parked worker's `parked`); it ends halfway
//! through the poll, inside the poll's slice, which a viewer binds it to.
//!
//! The `wake` slice is there because Perfetto's importer binds a flow's
//! begin to the slice on top of its thread's stack when it reads it: a
//! wake made with no slice open was dropped (an import error,
//! `flow_no_enclosing_slice`), and one made after a slice of the thread
//! had ended but before the next began was bound to that ended slice (a
//! worker's `parked`, which read as a driver's wake).
//!
//! A trace of a runtime before the compact poll (which wrote each poll's
//! async slice and flows itself) has arg-less async begins of the task
//! category in its provider section: nothing is derived for that section.

use std::collections::{BTreeMap, BTreeSet};

use fxt_format::decode::{Event, EventKind, Thread};
use fxt_format::derived::task::{CATEGORY, DELAY, TASK, WAKER_THREAD};
use fxt_format::encode::{
    encode_into_vec, Arg, ArgValue, Event as Out, EventKind as OutKind, StringRef, ThreadRef,
};

use super::{ns_to_ticks, u64_arg, Names, Section, TASK_FLOWS};

/// The name of the slice of no length a wake's flow begins in.
const WAKE: &str = "wake";
/// Its argument: the id of the task the wake woke (u64).
const WOKE: &str = "woke";

/// A poll, as read.
struct Poll {
    provider: Option<u32>,
    process: u64,
    thread: u64,
    /// Index into [`Tasks::names`].
    name: usize,
    task: u64,
    start: u64,
    end: u64,
    /// The recorded wake that caused it: the waker's koid and when
    /// (ticks).
    wake: Option<(u64, u64)>,
}

/// The polls of a trace, gathered during the walk.
#[derive(Default)]
pub(crate) struct Tasks {
    polls: Vec<Poll>,
    names: Names,
    /// The provider sections whose runtime drew the tasks' tracks itself.
    drawn: BTreeSet<Option<u32>>,
}

impl Tasks {
    /// Takes one event of `section`: a task's poll, or nothing.
    pub(crate) fn see(&mut self, section: Section, e: &Event) {
        if e.category.as_str() != Some(CATEGORY) {
            return;
        }
        // A life's begin has arguments; a poll's on the track, none.
        if matches!(e.kind, EventKind::AsyncBegin { .. }) && e.args.is_empty() {
            self.drawn.insert(section.provider);
        }
        let (EventKind::DurationComplete { end }, Thread::Known { process, thread }) =
            (e.kind, &e.thread)
        else {
            return;
        };
        let (Some(task), Some(name)) = (u64_arg(e, TASK), e.name.as_str()) else {
            return;
        };
        let name = self.names.index(name);
        let start = e.timestamp;
        let wake = match (u64_arg(e, WAKER_THREAD), u64_arg(e, DELAY)) {
            (Some(waker), Some(delay)) => {
                let ticks = ns_to_ticks(delay, section.ticks_per_second);
                Some((waker, start.saturating_sub(ticks)))
            }
            _ => None,
        };
        self.polls.push(Poll {
            provider: section.provider,
            process: *process,
            thread: *thread,
            name,
            task,
            start,
            end: end.max(start),
            wake,
        });
    }

    /// Appends each poll's async slice on its task's track, and its
    /// wake's flow, to `out`'s words of each provider section.
    pub(crate) fn derive(&self, out: &mut BTreeMap<Option<u32>, Vec<u64>>) {
        let mut next_flow = TASK_FLOWS;
        for poll in &self.polls {
            if self.drawn.contains(&poll.provider) {
                continue;
            }
            let words = out.entry(poll.provider).or_default();
            let name = StringRef::Inline(self.names.get(poll.name));
            let on = |thread| ThreadRef::Inline {
                process: poll.process,
                thread,
            };
            let event = |kind, timestamp, thread| Out {
                kind,
                timestamp,
                thread,
                category: StringRef::Inline(CATEGORY),
                name,
                args: &[],
            };
            let id = poll.task;
            let begin = event(OutKind::AsyncBegin { id }, poll.start, on(poll.thread));
            let _ = encode_into_vec(&begin, words);
            if let Some((waker, at)) = poll.wake {
                let id = super::flow_id(next_flow, poll.process);
                next_flow += 1;
                let mid = poll.start + (poll.end - poll.start) / 2;
                let woke = [Arg::new(StringRef::Inline(WOKE), ArgValue::U64(poll.task))];
                let wake = Out {
                    name: StringRef::Inline(WAKE),
                    args: &woke,
                    ..event(OutKind::DurationComplete { end: at }, at, on(waker))
                };
                let flow_begin = event(OutKind::FlowBegin { id }, at, on(waker));
                let flow_end = event(OutKind::FlowEnd { id }, mid, on(poll.thread));
                // The wake right before its flow's begin: at equal
                // timestamps a viewer takes them in file order.
                let _ = encode_into_vec(&wake, words);
                let _ = encode_into_vec(&flow_begin, words);
                let _ = encode_into_vec(&flow_end, words);
            }
            let end = event(OutKind::AsyncEnd { id }, poll.end, on(poll.thread));
            let _ = encode_into_vec(&end, words);
        }
    }
}
