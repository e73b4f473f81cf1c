//! A process's sampled allocations as a heap profile: heapprofd's
//! `ProfilePacket`s, which trace_processor reads into
//! `heap_profile_allocation` (one row per callstack: the bytes allocated
//! there and, of those, freed) with the `stack_profile_*` tables, and
//! Perfetto's UI shows as a heap profile flame graph of the process.
//!
//! One dump per process, at its last record: per callstack, the bytes its
//! samples stand for ([`fxt_format::samples::AllocRecord::estimated_bytes`], as `fxt flame
//! --alloc` sums them) and the bytes of those whose free was recorded
//! (paired by address as `fxt flame --alloc --live` pairs them). The
//! packet's strings, mappings, frames and callstacks are its own (one
//! string id space), cut over packets marked `continued` up to the last.

use std::collections::HashMap;

use fxt_format::samples::AllocKind;

use super::{Chunks, Interner, Item, ProcessSamples, INTERNED_PACKET_BYTES};
use crate::proto::{
    Clock, ClockSnapshot, HeapSample, ProcessHeapSamples, ProfilePacket, TracePacket,
};

/// The heap's name in Perfetto.
const HEAP_NAME: &str = "fxt.alloc";

/// Callstacks' samples per packet (each a few dozen bytes).
const SAMPLES_PER_PACKET: usize = 256;

/// Perfetto's `BUILTIN_CLOCK_MONOTONIC_COARSE`, the clock a dump's
/// timestamp is read on.
const CLOCK_MONOTONIC_COARSE: u32 = 4;
/// Perfetto's `BUILTIN_CLOCK_BOOTTIME`, the clock its FXT importer puts
/// trace time on.
const CLOCK_BOOTTIME: u32 = 6;

/// The packet sequence of a process's heap profile: bit 29 set (apart from
/// the CPU samples' sequences, bit 30) and the pid's low 29 bits.
fn sequence_of(pid: u64) -> u32 {
    0x2000_0000 | (pid as u32 & 0x1fff_ffff)
}

/// What one callstack's samples add up to.
#[derive(Default, Clone, Copy)]
struct Totals {
    allocated: f64,
    freed: f64,
    allocs: u64,
    frees: u64,
}

/// Appends the heap profile of `process`'s allocations to `out` (nothing
/// for a process without sampled allocations).
pub(super) fn packets_into(out: &mut Chunks, process: &ProcessSamples<'_>) {
    // The session's mean: the least of the records' (a thread samples at
    // it until its rate raises its own, and every thread's first sample
    // is at it). The totals weight each record by its own.
    let Some(mean) = process
        .allocs
        .iter()
        .filter(|(_, a)| a.kind == AllocKind::Alloc)
        .map(|(_, a)| a.mean)
        .min()
    else {
        return;
    };
    let end = process.allocs.iter().map(|(ns, _)| *ns).max().unwrap_or(0);
    let mut interner = Interner::new(process);
    interner.shared_strings = true;
    let totals = totals(process, &mut interner);
    let sequence = sequence_of(process.pid);
    // The dump's timestamp is read on MONOTONIC_COARSE: a reading of it
    // beside one of the trace's clock puts the dump at the trace's `end`.
    out.push(&TracePacket {
        timestamp: Some(end),
        trusted_packet_sequence_id: Some(sequence),
        clock_snapshot: Some(ClockSnapshot {
            clocks: [CLOCK_BOOTTIME, CLOCK_MONOTONIC_COARSE]
                .map(|id| Clock {
                    clock_id: Some(id),
                    timestamp: Some(end),
                })
                .to_vec(),
            primary_trace_clock: Some(CLOCK_BOOTTIME as i32),
        }),
        ..TracePacket::default()
    });
    let mut packets = interned_packets(interner.data);
    let samples: Vec<HeapSample> = totals
        .iter()
        .map(|&(callstack, t)| HeapSample {
            callstack_id: Some(callstack),
            self_allocated: Some(t.allocated.round() as u64),
            self_freed: Some(t.freed.round() as u64),
            alloc_count: Some(t.allocs),
            free_count: Some(t.frees),
        })
        .collect();
    for chunk in samples.chunks(SAMPLES_PER_PACKET) {
        packets.push(ProfilePacket {
            process_dumps: vec![ProcessHeapSamples {
                pid: Some(process.pid),
                samples: chunk.to_vec(),
                timestamp: Some(end),
                heap_name: Some(HEAP_NAME.into()),
                sampling_interval_bytes: Some(mean),
            }],
            ..ProfilePacket::default()
        });
    }
    let last = packets.len().saturating_sub(1);
    for (index, mut packet) in packets.into_iter().enumerate() {
        packet.index = Some(index as u64);
        packet.continued = Some(index != last);
        out.push(&TracePacket {
            timestamp: Some(end),
            trusted_packet_sequence_id: Some(sequence),
            profile_packet: Some(packet),
            ..TracePacket::default()
        });
    }
}

/// The totals of each callstack (interned in `interner`), sorted by
/// callstack id: allocations, and frees paired with the latest allocation
/// of their address (a block allocated again at an address whose free was
/// not seen counts as freed, as two live blocks never share an address).
fn totals(process: &ProcessSamples<'_>, interner: &mut Interner<'_>) -> Vec<(u64, Totals)> {
    let mut order: Vec<usize> = (0..process.allocs.len()).collect();
    // Allocations before frees at one instant; otherwise file order.
    order.sort_by_key(|&i| {
        let (ns, a) = process.allocs[i];
        (ns, a.kind == AllocKind::Free)
    });
    let mut by_callstack: HashMap<u64, Totals> = HashMap::new();
    let mut live: HashMap<u64, (u64, f64)> = HashMap::new();
    for i in order {
        let a = process.allocs[i].1;
        let freed = match a.kind {
            AllocKind::Alloc => {
                let callstack = interner.callstack(program_frames(process, &a.frames));
                let bytes = a.estimated_bytes();
                let t = by_callstack.entry(callstack).or_default();
                t.allocated += bytes;
                t.allocs += 1;
                live.insert(a.address, (callstack, bytes))
            }
            AllocKind::Free => live.remove(&a.address),
        };
        if let Some((callstack, bytes)) = freed {
            let t = by_callstack.entry(callstack).or_default();
            t.freed += bytes;
            t.frees += 1;
        }
    }
    let mut out: Vec<(u64, Totals)> = by_callstack.into_iter().collect();
    out.sort_unstable_by_key(|(callstack, _)| *callstack);
    out
}

/// An allocation's frames without fxt's own hook at the inner end (the
/// addresses whose every name is in `fxt_runtime`), as `fxt flame
/// --alloc` shows them.
fn program_frames<'a>(process: &ProcessSamples<'_>, frames: &'a [u64]) -> &'a [u64] {
    let hook = frames
        .iter()
        .take_while(|a| {
            process.symbols.get(a).is_some_and(|names| {
                !names.is_empty() && names.iter().all(|f| f.function.contains("fxt_runtime::"))
            })
        })
        .count();
    &frames[hook..]
}

/// The interned items as profile packets of bounded size (a referenced
/// item always in a packet before or with the one referencing it).
fn interned_packets(items: Vec<Item>) -> Vec<ProfilePacket> {
    use prost::Message;
    let mut packets = Vec::new();
    let mut packet = ProfilePacket::default();
    let mut size = 0;
    for item in items {
        size += 4 + match item {
            Item::String(_, s) => {
                let len = s.encoded_len();
                packet.strings.push(s);
                len
            }
            Item::Mapping(m) => {
                let len = m.encoded_len();
                packet.mappings.push(m);
                len
            }
            Item::Frame(f) => {
                let len = f.encoded_len();
                packet.frames.push(f);
                len
            }
            Item::Callstack(c) => {
                let len = c.encoded_len();
                packet.callstacks.push(c);
                len
            }
        };
        if size >= INTERNED_PACKET_BYTES {
            packets.push(std::mem::take(&mut packet));
            size = 0;
        }
    }
    if size > 0 {
        packets.push(packet);
    }
    packets
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use fxt_format::samples::{AllocKind, AllocRecord, FrameEntry, Walk};
    use prost::Message;

    use super::super::{packets, ProcessSamples};
    use crate::proto::TracePacket;

    /// `Trace`: the framing of a chunk.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Trace {
        #[prost(message, repeated, tag = "1")]
        packet: Vec<TracePacket>,
    }

    fn record(kind: AllocKind, address: u64, size: u64, frames: &[u64]) -> AllocRecord {
        AllocRecord {
            timestamp: 0,
            pid: 7,
            tid: 8,
            address,
            size,
            mean: 4096,
            kind,
            untracked: false,
            walk: Walk::UnwindTables,
            truncated: false,
            frames: frames.to_vec(),
            raw_stack: None,
        }
    }

    fn named(function: &str) -> Vec<FrameEntry> {
        vec![FrameEntry {
            function: function.into(),
            file: String::new(),
            line: 0,
        }]
    }

    /// Per callstack: the bytes each allocation stands for, those of the
    /// freed ones (by address; an address allocated again counts its
    /// earlier block freed), the counts; fxt's hook frames left out; the
    /// dump at the last record after a clock snapshot; packets indexed
    /// from 0, all but the last `continued`. Each record weighted by its
    /// own mean (a thread whose rate raised its mean samples at a larger
    /// one); the dump's sampling interval is the session's, the least.
    #[test]
    fn a_heap_profile_sums_each_callstack_and_pairs_frees() {
        let (hook, a, b) = (0x100, 0x200, 0x300);
        let symbols: HashMap<u64, Vec<FrameEntry>> = [
            (hook, named("fxt_runtime::alloc::sample")),
            (a, named("app::site_a")),
            (b, named("app::site_b")),
        ]
        .into();
        let raised = AllocRecord {
            mean: 16384,
            ..record(AllocKind::Alloc, 0x1000, 100, &[hook, a])
        };
        let records = [
            raised,
            record(AllocKind::Alloc, 0x2000, 8192, &[hook, a]),
            record(AllocKind::Free, 0x1000, 0, &[]),
            record(AllocKind::Alloc, 0x3000, 100, &[hook, b]),
            // Again at 0x3000 without a free: the first was freed unseen.
            record(AllocKind::Alloc, 0x3000, 100, &[hook, b]),
        ];
        let allocs: Vec<(u64, &AllocRecord)> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (1000 + i as u64, r))
            .collect();
        let process = ProcessSamples {
            pid: 7,
            modules: &[],
            symbols: &symbols,
            samples: &[],
            allocs: &allocs,
        };
        let packets: Vec<TracePacket> = packets(&[process])
            .iter()
            .flat_map(|chunk| Trace::decode(&chunk[..]).unwrap().packet)
            .collect();
        assert!(packets.iter().all(|p| p.perf_sample.is_none()));
        let snapshot = packets[0]
            .clock_snapshot
            .as_ref()
            .expect("a clock snapshot");
        assert!(snapshot.clocks.iter().all(|c| c.timestamp == Some(1004)));
        let profile: Vec<_> = packets[1..]
            .iter()
            .map(|p| p.profile_packet.clone().expect("profile packets"))
            .collect();
        for (i, p) in profile.iter().enumerate() {
            assert_eq!(p.index, Some(i as u64));
            assert_eq!(p.continued, Some(i + 1 < profile.len()));
        }
        let names: HashMap<u64, String> = profile
            .iter()
            .flat_map(|p| &p.strings)
            .map(|s| {
                (
                    s.iid.unwrap(),
                    String::from_utf8(s.str.clone().unwrap()).unwrap(),
                )
            })
            .collect();
        let frames: HashMap<u64, &str> = profile
            .iter()
            .flat_map(|p| &p.frames)
            .map(|f| (f.iid.unwrap(), names[&f.function_name_id.unwrap()].as_str()))
            .collect();
        let stacks: HashMap<u64, Vec<&str>> = profile
            .iter()
            .flat_map(|p| &p.callstacks)
            .map(|c| {
                (
                    c.iid.unwrap(),
                    c.frame_ids.iter().map(|f| frames[f]).collect(),
                )
            })
            .collect();
        let dumps: Vec<_> = profile.iter().flat_map(|p| &p.process_dumps).collect();
        assert!(dumps.iter().all(|d| d.pid == Some(7)
            && d.timestamp == Some(1004)
            && d.sampling_interval_bytes == Some(4096)));
        let mut rows: Vec<(Vec<&str>, u64, u64, u64, u64)> = dumps
            .iter()
            .flat_map(|d| &d.samples)
            .map(|s| {
                (
                    stacks[&s.callstack_id.unwrap()].clone(),
                    s.self_allocated.unwrap(),
                    s.self_freed.unwrap(),
                    s.alloc_count.unwrap(),
                    s.free_count.unwrap(),
                )
            })
            .collect();
        rows.sort();
        let small = fxt_format::samples::estimated_bytes(100, 4096);
        let small_raised = fxt_format::samples::estimated_bytes(100, 16384);
        let big = fxt_format::samples::estimated_bytes(8192, 4096);
        assert_eq!(
            rows,
            [
                (
                    vec!["app::site_a"],
                    (small_raised + big).round() as u64,
                    small_raised.round() as u64,
                    2,
                    1
                ),
                (
                    vec!["app::site_b"],
                    (2.0 * small).round() as u64,
                    small.round() as u64,
                    2,
                    1
                ),
            ]
        );
    }
}
