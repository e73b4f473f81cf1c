//! Rewriting a trace so that Perfetto and Tracy read it whole.
//!
//! [`convert_for_viewers`] copies every record byte for byte except:
//!
//! | input | output |
//! |---|---|
//! | a large blob record (type 15) | a split blob group (an instant and blob records, see [`crate::encode::split_blob`]); the large blob's own arguments are dropped (counted), a blob without metadata gets timestamp 0 and thread 0/0 |
//! | any other record sized differently by header bits `[4 .. 15]` | dropped (no viewer can walk it) |
//! | a record using a string or thread index defined only later | the later definition is copied in front of it |
//! | a record using an index never defined | dropped |
//! | a malformed record | dropped; reading stops at damage to the framing |
//! | complete events on one thread beginning on the same nanosecond (Perfetto's truncation), the inner one first | moved together, outermost first, re-encoded with inline strings and thread |
//! | slices Perfetto drops even so (partial overlaps, negative durations, ends without a begin) | dropped |
//!
//! A magic number record is put first if the input lacks one. The output
//! passes [`check_perfetto`](super::check_perfetto) except for slices
//! Perfetto merely cuts short ([`SliceDropKind::Truncated`]).

use std::collections::{HashMap, HashSet};

use super::framing::decoder_walk;
use super::refs::{undefined_refs, RefKind};
use super::slices::{is_slice_kind, perfetto_ns, perfetto_slice_drops, SliceDropKind, SliceEvent};
use crate::decode::{self, DecodeError, Record, SliceReader, Text, Thread};
use crate::encode::{self, encode_into_vec, MagicNumber, SplitBlob, StringRef, ThreadRef};
use crate::time::ticks_per_second_or_default;

/// What [`convert_for_viewers`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertSummary {
    /// Records read (well-formed).
    pub records_in: u64,
    /// Records written.
    pub records_out: u64,
    /// Large blob records rewritten as split blob groups.
    pub large_blobs_split: u64,
    /// Arguments of large blobs that a split blob cannot carry.
    pub large_blob_args_dropped: u64,
    /// Other records no viewer can walk (sized differently by bits 4..15).
    pub dropped_unwalkable: u64,
    /// String and thread records copied in front of their first use.
    pub definitions_moved: u64,
    /// Records dropped for a reference to an index never defined.
    pub dropped_undefined_refs: u64,
    /// Malformed records dropped.
    pub dropped_malformed: u64,
    /// Complete events moved so that Perfetto nests them.
    pub slices_reordered: u64,
    /// Duration events dropped because Perfetto would drop them anyway.
    pub dropped_slices: u64,
    /// The error that stopped reading (damage to the framing), if any.
    pub damage: Option<DecodeError>,
}

/// The converted trace and what was done.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The output trace.
    pub bytes: Vec<u8>,
    /// What was done.
    pub summary: ConvertSummary,
}

/// One record of the input.
struct Item {
    offset: u64,
    end: u64,
    record: Record,
    provider: Option<u32>,
    ticks_per_second: u64,
}

/// What happens to one input record.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Copy,
    Drop,
    /// Emitted (re-encoded) at the head of its reorder group instead.
    Moved,
}

type DefKey = (Option<u32>, RefKind, u16);

/// Rewrites `bytes` so that Perfetto and Tracy read every record of it (see
/// the [module documentation](self)).
pub fn convert_for_viewers(bytes: &[u8]) -> Converted {
    let mut summary = ConvertSummary::default();
    let items = read_items(bytes, &mut summary);
    let definitions = index_definitions(&items);
    let mut plan = Plan::new(items.len());
    plan_references(bytes, &items, &definitions, &mut plan, &mut summary);
    let events = resolved_slice_events(&items, &definitions, &plan.actions);
    reorder_same_nanosecond(&items, &events, &mut plan, &mut summary);
    drop_refused_slices(&items, &events, &mut plan, &mut summary);
    let bytes = write_output(bytes, &items, &plan, &mut summary);
    Converted { bytes, summary }
}

/// What the phases decided, by input record index.
struct Plan {
    /// What happens to each record.
    actions: Vec<Action>,
    /// Definitions copied in front of a record.
    hoist: HashMap<usize, Vec<usize>>,
    /// Head record of a reorder group → the group's events in output order,
    /// re-encoded.
    moved: HashMap<usize, Vec<(usize, Vec<u64>)>>,
    /// Slices Perfetto drops even in the new order.
    dropped_slices: HashSet<usize>,
}

impl Plan {
    fn new(records: usize) -> Plan {
        Plan {
            actions: vec![Action::Copy; records],
            hoist: HashMap::new(),
            moved: HashMap::new(),
            dropped_slices: HashSet::new(),
        }
    }
}

/// Reads the well-formed records with their provider and clock; malformed
/// ones are counted, damage to the framing ends the read.
fn read_items(bytes: &[u8], summary: &mut ConvertSummary) -> Vec<Item> {
    let mut items = Vec::new();
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next() {
        match item {
            Ok(record) => items.push(Item {
                offset: reader.record_offset(),
                end: reader.position(),
                record,
                provider: reader.provider_id(),
                ticks_per_second: ticks_per_second_or_default(reader.ticks_per_second()),
            }),
            Err(e) if e.is_fatal() => summary.damage = Some(e),
            Err(_) => summary.dropped_malformed += 1,
        }
    }
    summary.records_in = items.len() as u64;
    items
}

/// Definitions by (provider, kind, index), in file order.
fn index_definitions(items: &[Item]) -> HashMap<DefKey, Vec<usize>> {
    let mut definitions: HashMap<DefKey, Vec<usize>> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(key) = definition_key(item) {
            definitions.entry(key).or_default().push(i);
        }
    }
    definitions
}

/// The first definition of `key` after record `i`.
fn later_definition(
    definitions: &HashMap<DefKey, Vec<usize>>,
    key: &DefKey,
    i: usize,
) -> Option<usize> {
    definitions
        .get(key)
        .and_then(|d| d.iter().copied().find(|&d| d > i))
}

/// Drops records no viewer can walk, and for every reference to an index
/// defined only later, which definition to copy in front of the record
/// (records referring to an index never defined are dropped).
fn plan_references(
    bytes: &[u8],
    items: &[Item],
    definitions: &HashMap<DefKey, Vec<usize>>,
    plan: &mut Plan,
    summary: &mut ConvertSummary,
) {
    let mut hoisted: HashSet<DefKey> = HashSet::new();
    let walk_sizes = viewer_walkable(bytes);
    for (i, item) in items.iter().enumerate() {
        if let Record::ProviderInfo { provider_id, .. } = item.record {
            // Fresh tables for this provider.
            hoisted.retain(|k| k.0 != Some(provider_id));
        }
        if !is_large_blob(&item.record) && !walk_sizes.contains(&item.offset) {
            plan.actions[i] = Action::Drop;
            summary.dropped_unwalkable += 1;
            continue;
        }
        let mut missing = Vec::new();
        undefined_refs(&item.record, &mut |kind, index| {
            missing.push((item.provider, kind, index))
        });
        let mut defs = Vec::new();
        let mut resolvable = true;
        for key in missing {
            if hoisted.contains(&key) {
                continue;
            }
            match later_definition(definitions, &key, i) {
                Some(d) => {
                    defs.push(d);
                    hoisted.insert(key);
                }
                None => resolvable = false,
            }
        }
        if !resolvable {
            plan.actions[i] = Action::Drop;
            summary.dropped_undefined_refs += 1;
        } else if !defs.is_empty() {
            summary.definitions_moved += defs.len() as u64;
            plan.hoist.insert(i, defs);
        }
    }
}

/// The slice events of the records kept as they are, with the definitions
/// copied in front of them applied: (record index, event).
fn resolved_slice_events(
    items: &[Item],
    definitions: &HashMap<DefKey, Vec<usize>>,
    actions: &[Action],
) -> Vec<(usize, decode::Event)> {
    items
        .iter()
        .enumerate()
        .filter(|&(i, _)| actions[i] == Action::Copy)
        .filter_map(|(i, _)| resolve_slice_event(items, definitions, i).map(|e| (i, e)))
        .collect()
}

/// Record `i` as a slice event, its thread and strings defined only later
/// filled in from those definitions.
fn resolve_slice_event(
    items: &[Item],
    definitions: &HashMap<DefKey, Vec<usize>>,
    i: usize,
) -> Option<decode::Event> {
    let item = &items[i];
    let Record::Event(e) = &item.record else {
        return None;
    };
    if !is_slice_kind(&e.kind) {
        return None;
    }
    let mut e = e.clone();
    let lookup = |kind, index: u16| {
        later_definition(definitions, &(item.provider, kind, index), i).map(|d| &items[d].record)
    };
    if let Thread::Undefined(t) = e.thread {
        if let Some(Record::Thread {
            process, thread, ..
        }) = lookup(RefKind::Thread, u16::from(t))
        {
            e.thread = Thread::Known {
                process: *process,
                thread: *thread,
            };
        }
    }
    for text in [&mut e.category, &mut e.name] {
        if let Some(index) = text.undefined_index() {
            if let Some(Record::String { value, .. }) = lookup(RefKind::String, index) {
                *text = Text::from(value.clone());
            }
        }
    }
    Some(e)
}

/// Complete events beginning on the same nanosecond of one thread: Perfetto
/// keeps them in file order, so the outermost must come first. Groups not
/// in that order are re-encoded, outermost first, at their first record.
fn reorder_same_nanosecond(
    items: &[Item],
    events: &[(usize, decode::Event)],
    plan: &mut Plan,
    summary: &mut ConvertSummary,
) {
    let mut groups: HashMap<(Option<u32>, u64, Thread, i64), Vec<usize>> = HashMap::new();
    for (k, (i, e)) in events.iter().enumerate() {
        if let encode::EventKind::DurationComplete { .. } = e.kind {
            let item = &items[*i];
            let ns = perfetto_ns(e.timestamp, item.ticks_per_second);
            groups
                .entry((item.provider, item.ticks_per_second, e.thread, ns))
                .or_default()
                .push(k);
        }
    }
    let end_ns = |k: usize| -> i64 {
        let (i, e) = &events[k];
        match e.kind {
            encode::EventKind::DurationComplete { end } => {
                perfetto_ns(end, items[*i].ticks_per_second)
            }
            _ => 0,
        }
    };
    for members in groups.values() {
        if members.len() < 2 {
            continue;
        }
        let mut order = members.clone();
        order.sort_by_key(|&k| std::cmp::Reverse(end_ns(k)));
        if order == *members {
            continue;
        }
        let encoded: Option<Vec<(usize, Vec<u64>)>> = order
            .iter()
            .map(|&k| encode_event_inline(&events[k].1).map(|w| (events[k].0, w)))
            .collect();
        let Some(encoded) = encoded else {
            continue; // too large to inline: left where it is
        };
        let head = events[members[0]].0;
        for &k in members {
            plan.actions[events[k].0] = Action::Moved;
        }
        summary.slices_reordered += members.len() as u64;
        plan.moved.insert(head, encoded);
    }
}

/// Replays Perfetto's slice import over the output order and drops what it
/// would drop (not what it merely cuts short), again until nothing more
/// drops (a drop can expose another), for a bounded number of rounds.
fn drop_refused_slices(
    items: &[Item],
    events: &[(usize, decode::Event)],
    plan: &mut Plan,
    summary: &mut ConvertSummary,
) {
    let event_of: HashMap<usize, usize> = events
        .iter()
        .enumerate()
        .map(|(k, (i, _))| (*i, k))
        .collect();
    let mut new_order: Vec<usize> = Vec::new();
    for (k, (i, _)) in events.iter().enumerate() {
        match plan.actions[*i] {
            Action::Copy => new_order.push(k),
            Action::Moved => {
                if let Some(group) = plan.moved.get(i) {
                    new_order.extend(group.iter().filter_map(|(j, _)| event_of.get(j)));
                }
            }
            Action::Drop => {}
        }
    }
    let dropped_slices = &mut plan.dropped_slices;
    for _ in 0..4 {
        let slice_events: Vec<SliceEvent> = new_order
            .iter()
            .filter(|&&k| !dropped_slices.contains(&events[k].0))
            .map(|&k| {
                let (i, e) = &events[k];
                SliceEvent {
                    // The record's index stands in for its offset here, to
                    // map drops back to records.
                    offset: *i as u64,
                    thread: e.thread,
                    category: e.category.clone(),
                    name: e.name.clone(),
                    timestamp: e.timestamp,
                    kind: e.kind,
                    ticks_per_second: items[*i].ticks_per_second,
                }
            })
            .collect();
        let drops: Vec<usize> = perfetto_slice_drops(&slice_events)
            .into_iter()
            .filter(|d| !matches!(d.kind, SliceDropKind::Truncated { .. }))
            .map(|d| d.offset as usize)
            .collect();
        if drops.is_empty() {
            break;
        }
        dropped_slices.extend(drops);
    }
    summary.dropped_slices = dropped_slices.len() as u64;
}

/// Writes the output: a magic number first if the input lacks one, then
/// every record as planned.
fn write_output(
    bytes: &[u8],
    items: &[Item],
    plan: &Plan,
    summary: &mut ConvertSummary,
) -> Vec<u8> {
    let mut out: Vec<u64> = Vec::with_capacity(bytes.len() / 8 + 1);
    let mut records_out = 0u64;
    if !matches!(items.first().map(|i| &i.record), Some(Record::Magic)) {
        let _ = encode_into_vec(&MagicNumber, &mut out);
        records_out += 1;
    }
    let copy = |out: &mut Vec<u64>, item: &Item| {
        let span = bytes
            .get(item.offset as usize..item.end as usize)
            .unwrap_or_default();
        out.extend(
            span.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default())),
        );
    };
    for (i, item) in items.iter().enumerate() {
        for &d in plan.hoist.get(&i).map(Vec::as_slice).unwrap_or_default() {
            copy(&mut out, &items[d]);
            records_out += 1;
        }
        match plan.actions[i] {
            Action::Drop => continue,
            Action::Moved => {
                for (j, words) in plan.moved.get(&i).map(Vec::as_slice).unwrap_or_default() {
                    if !plan.dropped_slices.contains(j) {
                        out.extend_from_slice(words);
                        records_out += 1;
                    }
                }
                continue;
            }
            Action::Copy => {}
        }
        if plan.dropped_slices.contains(&i) {
            continue;
        }
        if let Some((words, records)) = split_large_blob(&item.record, summary) {
            out.extend(words);
            records_out += records;
            continue;
        }
        copy(&mut out, item);
        records_out += 1;
    }
    summary.records_out = records_out;
    let mut bytes_out = Vec::with_capacity(out.len() * 8);
    for w in out {
        bytes_out.extend_from_slice(&w.to_le_bytes());
    }
    bytes_out
}

fn definition_key(item: &Item) -> Option<DefKey> {
    match item.record {
        Record::String { index, .. } if index != 0 => Some((item.provider, RefKind::String, index)),
        Record::Thread { index, .. } if index != 0 => {
            Some((item.provider, RefKind::Thread, u16::from(index)))
        }
        _ => None,
    }
}

fn is_large_blob(record: &Record) -> bool {
    matches!(
        record,
        Record::LargeBlobWithMetadata(_) | Record::LargeBlobNoMetadata(_)
    )
}

/// Offsets of the decoder's records that a bits-4..15 reader also visits
/// as records of the same size.
fn viewer_walkable(bytes: &[u8]) -> HashSet<u64> {
    decoder_walk(bytes)
        .starts
        .into_iter()
        .filter(|&at| {
            let at = at as usize;
            let header = bytes
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes);
            crate::decode::record_words(header) == (header >> 4) & 0xfff
        })
        .collect()
}

fn str_ref(t: &Text) -> StringRef<'_> {
    match t.as_str() {
        Some("") | None => StringRef::Empty,
        Some(s) => StringRef::Inline(s),
    }
}

fn thread_ref(t: &Thread) -> ThreadRef {
    match *t {
        Thread::Known { process, thread } => ThreadRef::Inline { process, thread },
        Thread::Undefined(_) => ThreadRef::Inline {
            process: 0,
            thread: 0,
        },
    }
}

/// A large blob as a split blob group, or `None` for other records.
fn split_large_blob(record: &Record, summary: &mut ConvertSummary) -> Option<(Vec<u64>, u64)> {
    let (category, name, timestamp, thread, args, payload) = match record {
        Record::LargeBlobWithMetadata(b) => (
            &b.category,
            &b.name,
            b.timestamp,
            thread_ref(&b.thread),
            b.args.len(),
            &b.payload,
        ),
        Record::LargeBlobNoMetadata(b) => (
            &b.category,
            &b.name,
            0,
            ThreadRef::Inline {
                process: 0,
                thread: 0,
            },
            0,
            &b.payload,
        ),
        _ => return None,
    };
    let blob = SplitBlob::new(str_ref(category), str_ref(name), timestamp, thread, payload);
    let words = encode::encode_to_vec(&blob).ok()?;
    summary.large_blobs_split += 1;
    summary.large_blob_args_dropped += args as u64;
    Some((words, 1 + blob.part_count() as u64))
}

/// A decoded event re-encoded with inline strings and thread, so that it
/// can be placed anywhere in its provider's section.
fn encode_event_inline(e: &decode::Event) -> Option<Vec<u64>> {
    let values: Vec<Option<encode::ArgValue<'_>>> = e
        .args
        .iter()
        .map(|a| {
            Some(match &a.value {
                decode::ArgValue::Null => encode::ArgValue::Null,
                decode::ArgValue::I32(v) => encode::ArgValue::I32(*v),
                decode::ArgValue::U32(v) => encode::ArgValue::U32(*v),
                decode::ArgValue::I64(v) => encode::ArgValue::I64(*v),
                decode::ArgValue::U64(v) => encode::ArgValue::U64(*v),
                decode::ArgValue::F64(v) => encode::ArgValue::F64(*v),
                decode::ArgValue::Str(t) => encode::ArgValue::Str(str_ref(t)),
                decode::ArgValue::Pointer(v) => encode::ArgValue::Pointer(*v),
                decode::ArgValue::Koid(v) => encode::ArgValue::Koid(*v),
                decode::ArgValue::Bool(v) => encode::ArgValue::Bool(*v),
                decode::ArgValue::Blob(b) => encode::ArgValue::Blob(b),
                decode::ArgValue::Unknown { .. } => return None,
            })
        })
        .collect();
    let args: Vec<encode::Arg<'_>> = e
        .args
        .iter()
        .zip(&values)
        .filter_map(|(a, v)| v.map(|v| encode::Arg::new(str_ref(&a.name), v)))
        .collect();
    encode::encode_to_vec(&encode::Event {
        kind: e.kind,
        timestamp: e.timestamp,
        thread: thread_ref(&e.thread),
        category: str_ref(&e.category),
        name: str_ref(&e.name),
        args: &args,
    })
    .ok()
}
