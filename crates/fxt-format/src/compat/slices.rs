//! Perfetto's slice import, replayed: which duration events it would drop.
//!
//! What is modelled (Perfetto's FXT importer and its `SliceTracker`):
//!
//! * **Timestamps** become nanoseconds by
//!   [`crate::time::ticks_to_ns_as_perfetto`] (Perfetto's own conversion,
//!   rounded down) with the ticks per second of the record's provider,
//!   held in Perfetto's signed 64 bits.
//! * **Order**: all events are sorted by that timestamp (a complete event by
//!   its begin); events with equal timestamps keep their file order.
//! * **Per thread**, one stack of open slices. A duration begin opens a
//!   slice; a complete event opens a slice that already has its end; an
//!   instant is a slice of duration 0. Before a slice opens, slices that
//!   ended before it (or at its start) are closed. A complete event that
//!   begins inside an open complete slice and ends after it is dropped
//!   (`slice_drop_overlapping_complete_event`). A complete event whose end
//!   is before its begin is dropped (`fuchsia_timestamp_overflow`). A
//!   duration end closes the innermost open begin of its thread, whatever
//!   its name (the importer passes none); with no open begin it is dropped. A begin still open when a complete slice below it has ended
//!   is cut at that end (`misplaced_end_event`).
//!
//! Counters, async and flow events live on other tracks and are not replayed.

use std::collections::HashMap;
use std::fmt;

use crate::decode::{EventKind, Text, Thread};
use crate::time::ticks_to_ns_as_perfetto;

/// A duration-like event as the importer sees it.
#[derive(Debug, Clone)]
pub struct SliceEvent {
    /// Byte offset of the record.
    pub offset: u64,
    /// The thread (its track).
    pub thread: Thread,
    /// Category.
    pub category: Text,
    /// Name.
    pub name: Text,
    /// Timestamp in ticks.
    pub timestamp: u64,
    /// The event kind: instant, duration begin, end or complete (others
    /// are ignored).
    pub kind: EventKind,
    /// Ticks per second of the record's provider.
    pub ticks_per_second: u64,
}

/// A timestamp as Perfetto holds it: [`ticks_to_ns_as_perfetto`] in a signed 64-bit
/// nanosecond count, saturating at `i64::MAX` (Perfetto refuses such
/// events; saturating keeps them last in the replayed order).
pub(crate) fn perfetto_ns(ticks: u64, ticks_per_second: u64) -> i64 {
    i64::try_from(ticks_to_ns_as_perfetto(ticks, ticks_per_second)).unwrap_or(i64::MAX)
}

/// Whether Perfetto imports events of this kind as thread slices.
pub(crate) fn is_slice_kind(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Instant
            | EventKind::DurationBegin
            | EventKind::DurationEnd
            | EventKind::DurationComplete { .. }
    )
}

/// Why Perfetto would not show a slice as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SliceDropKind {
    /// A complete event that partially overlaps the open complete slice
    /// recorded at `crosses` (it begins inside it and ends after it):
    /// dropped (`slice_drop_overlapping_complete_event`).
    OverlappingComplete {
        /// Byte offset of the slice it crosses.
        crosses: u64,
        /// Where that slice begins and ends, in nanoseconds.
        crosses_ns: (i64, i64),
    },
    /// A complete event ending before it begins: dropped
    /// (`fuchsia_timestamp_overflow`).
    NegativeDuration,
    /// A duration end with no matching open begin on its thread: dropped.
    EndWithoutBegin,
    /// A duration begin cut short at the end of the complete slice recorded
    /// at `cut_at` (`misplaced_end_event`): shown, with a shorter duration.
    Truncated {
        /// Byte offset of the complete slice whose end cut it.
        cut_at: u64,
    },
}

/// A slice Perfetto would drop or cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceDrop {
    /// Byte offset of the event record.
    pub offset: u64,
    /// Its name.
    pub name: Text,
    /// Its thread.
    pub thread: Thread,
    /// Its timestamp (begin), in nanoseconds as Perfetto computes them.
    pub begin_ns: i64,
    /// Its end in nanoseconds (complete events only).
    pub end_ns: Option<i64>,
    /// What happens to it.
    pub kind: SliceDropKind,
}

impl SliceDrop {
    /// Whether the slice is lost entirely (not just cut short).
    pub fn is_dropped(&self) -> bool {
        !matches!(self.kind, SliceDropKind::Truncated { .. })
    }
}

impl fmt::Display for SliceDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "offset {:#x}: slice {:?} ",
            self.offset,
            self.name.to_string()
        )?;
        match self.thread {
            Thread::Known { process, thread } => write!(f, "on thread {process}/{thread}")?,
            Thread::Undefined(i) => write!(f, "on undefined thread #{i}")?,
        }
        write!(f, " at {} ns", self.begin_ns)?;
        if let Some(end) = self.end_ns {
            write!(f, "..{end} ns")?;
        }
        match &self.kind {
            SliceDropKind::OverlappingComplete {
                crosses,
                crosses_ns,
            } => write!(
                f,
                ": dropped by Perfetto (slice_drop_overlapping_complete_event): it begins inside the slice at offset {crosses:#x} ({}..{} ns) and ends after it",
                crosses_ns.0, crosses_ns.1
            ),
            SliceDropKind::NegativeDuration => {
                write!(f, ": dropped by Perfetto (fuchsia_timestamp_overflow): it ends before it begins")
            }
            SliceDropKind::EndWithoutBegin => write!(
                f,
                ": duration end dropped by Perfetto: no open begin on its thread"
            ),
            SliceDropKind::Truncated { cut_at } => write!(
                f,
                ": cut short by Perfetto (misplaced_end_event) at the end of the slice at offset {cut_at:#x}"
            ),
        }
    }
}

/// A slice open on a thread's stack.
struct Open {
    offset: u64,
    begin: i64,
    /// `None` while a begin waits for its end.
    dur: Option<i64>,
    name: Text,
}

/// The sorted event, reduced to what the tracker needs.
struct Sorted {
    index: usize,
    ts: i64,
}

/// Replays Perfetto's slice import over `events` (in file order) and
/// returns every slice it would drop or cut, in import order.
pub fn perfetto_slice_drops(events: &[SliceEvent]) -> Vec<SliceDrop> {
    let mut order: Vec<Sorted> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| is_slice_kind(&e.kind))
        .map(|(index, e)| Sorted {
            index,
            ts: perfetto_ns(e.timestamp, e.ticks_per_second),
        })
        .collect();
    // Stable: equal timestamps keep file order, as Perfetto's sorter does.
    order.sort_by_key(|s| s.ts);

    let mut stacks: HashMap<Thread, Vec<Open>> = HashMap::new();
    let mut drops = Vec::new();
    for s in order {
        let e = &events[s.index];
        let drop = |kind, end_ns| SliceDrop {
            offset: e.offset,
            name: e.name.clone(),
            thread: e.thread,
            begin_ns: s.ts,
            end_ns,
            kind,
        };
        match e.kind {
            EventKind::DurationEnd => {
                let Some(stack) = stacks.get_mut(&e.thread) else {
                    drops.push(drop(SliceDropKind::EndWithoutBegin, None));
                    continue;
                };
                // An open-ended close never refuses (only a complete slice can
                // cross an end).
                let _ = close_stack(stack, e.thread, s.ts, None, &mut drops);
                match matching_open(stack) {
                    Some(i) => {
                        stack[i].dur = Some(s.ts.saturating_sub(stack[i].begin));
                        if i + 1 == stack.len() {
                            stack.pop();
                        }
                    }
                    None => drops.push(drop(SliceDropKind::EndWithoutBegin, None)),
                }
            }
            kind => {
                let dur = match kind {
                    EventKind::DurationBegin => None,
                    EventKind::DurationComplete { end } => {
                        let end_ns = perfetto_ns(end, e.ticks_per_second);
                        if end_ns < s.ts {
                            drops.push(drop(SliceDropKind::NegativeDuration, Some(end_ns)));
                            continue;
                        }
                        Some(end_ns - s.ts)
                    }
                    _ => Some(0),
                };
                let stack = stacks.entry(e.thread).or_default();
                if let Err(i) = close_stack(stack, e.thread, s.ts, dur, &mut drops) {
                    let crossed = &stack[i];
                    let crossed_end = crossed.begin.saturating_add(crossed.dur.unwrap_or(0));
                    drops.push(drop(
                        SliceDropKind::OverlappingComplete {
                            crosses: crossed.offset,
                            crosses_ns: (crossed.begin, crossed_end),
                        },
                        dur.map(|d| s.ts.saturating_add(d)),
                    ));
                    continue;
                }
                stack.push(Open {
                    offset: e.offset,
                    begin: s.ts,
                    dur,
                    name: e.name.clone(),
                });
            }
        }
    }
    drops
}

/// The begin a duration end closes: Perfetto's FXT importer passes no
/// category or name with an end, so it closes the innermost open begin of
/// its thread, whatever its name.
fn matching_open(stack: &[Open]) -> Option<usize> {
    stack.iter().rposition(|o| o.dur.is_none())
}

/// Closes what has ended before a slice at `new_ts` lasting `new_dur`
/// (`None`: a begin or end, open-ended) opens; `Err(i)` if the new slice
/// would cross the end of the complete slice at stack index `i`.
///
/// As in Perfetto, a slice found ended is removed from the top of the
/// stack (the innermost), not necessarily at its own index.
fn close_stack(
    stack: &mut Vec<Open>,
    thread: Thread,
    new_ts: i64,
    new_dur: Option<i64>,
    drops: &mut Vec<SliceDrop>,
) -> Result<(), usize> {
    let mut open_descendant = false;
    let mut i = stack.len();
    while i > 0 {
        i -= 1;
        let Some(entry) = stack.get(i) else {
            continue;
        };
        let Some(dur) = entry.dur else {
            open_descendant = true;
            continue;
        };
        let end = entry.begin.saturating_add(dur);
        if open_descendant {
            if new_ts <= end {
                continue;
            }
            // A begin above this complete slice is still open past its end:
            // Perfetto cuts every slice above at this end and closes them.
            let cut_at = entry.offset;
            for open in stack.drain(i + 1..) {
                if open.dur.is_none() {
                    drops.push(SliceDrop {
                        offset: open.offset,
                        name: open.name,
                        thread,
                        begin_ns: open.begin,
                        end_ns: Some(end),
                        kind: SliceDropKind::Truncated { cut_at },
                    });
                }
            }
            stack.truncate(i);
            open_descendant = false;
            continue;
        }
        let ends_before = end < new_ts;
        let ends_at = end == new_ts && !(dur == 0 && new_dur == Some(0));
        if ends_before || ends_at {
            stack.pop();
            continue;
        }
        let Some(new_dur) = new_dur else {
            continue;
        };
        if new_ts < end && new_ts.saturating_add(new_dur) > end {
            return Err(i);
        }
    }
    Ok(())
}
