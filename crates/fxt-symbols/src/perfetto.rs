//! Perfetto packets for the samples of a trace: per process, one packet
//! sequence whose interned data (build ids, mapping paths, mappings,
//! function names, source paths, frames, callstacks) comes first, then one
//! `PerfSample` per sample, stamped in nanoseconds on the trace's clock.
//! trace_processor shows them as CPU samples (`perf_sample`, with the
//! `stack_profile_*` tables).
//!
//! With the samples, each process's sampled allocations make a heap
//! profile (module `heap`: `ProfilePacket`s, the `heap_profile_allocation`
//! table).
//!
//! The stream is cut into chunks that each hold whole packets and fit one
//! FXT blob record, so no packet spans two records.

use std::collections::HashMap;

use fxt_format::samples::{AllocRecord, FrameEntry, ModuleEntry, SampleRecord};
use prost::Message;

mod heap;

use crate::proto::{
    Callstack, Frame, InternedData, InternedString, Mapping, PerfSample, TracePacket,
};

/// Bytes of packets a chunk holds at most: what one blob record named
/// `fxt.perfetto` inline carries.
pub const CHUNK_BYTES: usize =
    fxt_format::encode::split_blob::inline_part_capacity(fxt_format::samples::PERFETTO_NAME);

/// Interned data is cut into packets of about this size, well under a
/// chunk.
const INTERNED_PACKET_BYTES: usize = 16 * 1024;

/// Function names and paths longer than this are cut in packets (a frame
/// must fit an interned packet).
const MAX_NAME: usize = 4096;

const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;
const CPU_MODE_USER: i32 = 2;
/// The packet sequence of a process: bit 30 set (away from the small ids
/// real producers use) and the pid's low 30 bits (Linux pids stay below
/// 2^22), so the sequences of two traces merged into one archive differ
/// unless their processes do not. A sequence met again starts over: its
/// first packet clears the incremental state, and the samples before keep
/// the interned data they were read with.
fn sequence_of(pid: u64) -> u32 {
    0x4000_0000 | (pid as u32 & 0x3fff_ffff)
}

/// The samples of one process, with what names their addresses.
pub struct ProcessSamples<'a> {
    /// Process koid.
    pub pid: u64,
    /// Its executable mappings.
    pub modules: &'a [ModuleEntry],
    /// Frames of each sampled address (innermost inlined first).
    pub symbols: &'a HashMap<u64, Vec<FrameEntry>>,
    /// The samples, each with its timestamp in nanoseconds.
    pub samples: &'a [(u64, &'a SampleRecord)],
    /// Its sampled allocations and frees of sampled blocks (stacks
    /// unwound), each with its timestamp in nanoseconds, in file order.
    pub allocs: &'a [(u64, &'a AllocRecord)],
}

/// The packets for `processes`, in chunks of at most [`CHUNK_BYTES`] bytes
/// of a protobuf `Trace` stream each.
pub fn packets(processes: &[ProcessSamples<'_>]) -> Vec<Vec<u8>> {
    let mut out = Chunks::default();
    for process in processes {
        heap::packets_into(&mut out, process);
        if process.samples.is_empty() {
            continue;
        }
        let sequence = sequence_of(process.pid);
        let mut interner = Interner::new(process);
        let callstacks: Vec<u64> = process
            .samples
            .iter()
            .map(|(_, s)| interner.callstack(&s.frames))
            .collect();
        interner.flush_into(&mut out, sequence);
        for ((ns, sample), callstack) in process.samples.iter().zip(callstacks) {
            out.push(&TracePacket {
                timestamp: Some(*ns),
                trusted_packet_sequence_id: Some(sequence),
                sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                perf_sample: Some(PerfSample {
                    // Perfetto's process and thread ids are 32-bit.
                    pid: Some(sample.pid as u32),
                    tid: Some(sample.tid as u32),
                    callstack_iid: Some(callstack),
                    cpu_mode: Some(CPU_MODE_USER),
                }),
                interned_data: None,
                ..TracePacket::default()
            });
        }
    }
    out.finish()
}

/// Chunks of framed packets (`Trace.packet`, field 1).
#[derive(Default)]
struct Chunks {
    done: Vec<Vec<u8>>,
    current: Vec<u8>,
}

impl Chunks {
    fn push(&mut self, packet: &TracePacket) {
        let mut framed = Vec::with_capacity(packet.encoded_len() + 6);
        // A Vec grows as needed: encoding cannot fail.
        prost::encoding::message::encode(1, packet, &mut framed);
        if self.current.len() + framed.len() > CHUNK_BYTES && !self.current.is_empty() {
            self.done.push(std::mem::take(&mut self.current));
        }
        self.current.extend_from_slice(&framed);
    }

    fn finish(mut self) -> Vec<Vec<u8>> {
        if !self.current.is_empty() {
            self.done.push(self.current);
        }
        self.done
    }
}

fn cut(s: &str) -> &str {
    fxt_format::encode::stream::truncate_str_to(s, MAX_NAME)
}

/// Builds one process's interned data, giving ids from 1 per kind.
struct Interner<'a> {
    process: &'a ProcessSamples<'a>,
    strings: [HashMap<Vec<u8>, u64>; 4],
    /// All strings in one table, one id space (a heap profile's).
    shared_strings: bool,
    mappings: HashMap<usize, u64>,
    frames: HashMap<(u64, usize), u64>,
    callstacks: HashMap<Vec<u64>, u64>,
    /// Interned items in the order they were made (a referenced item
    /// always comes before the item referencing it).
    data: Vec<Item>,
}

enum Item {
    String(Kind, InternedString),
    Mapping(Mapping),
    Frame(Frame),
    Callstack(Callstack),
}

#[derive(Clone, Copy)]
enum Kind {
    BuildId = 0,
    MappingPath = 1,
    FunctionName = 2,
    SourcePath = 3,
}

impl<'a> Interner<'a> {
    fn new(process: &'a ProcessSamples<'a>) -> Self {
        Self {
            process,
            strings: Default::default(),
            shared_strings: false,
            mappings: HashMap::new(),
            frames: HashMap::new(),
            callstacks: HashMap::new(),
            data: Vec::new(),
        }
    }

    fn string(&mut self, kind: Kind, bytes: &[u8]) -> u64 {
        let table = &mut self.strings[if self.shared_strings {
            0
        } else {
            kind as usize
        }];
        if let Some(&iid) = table.get(bytes) {
            return iid;
        }
        let iid = table.len() as u64 + 1;
        table.insert(bytes.to_vec(), iid);
        self.data.push(Item::String(
            kind,
            InternedString {
                iid: Some(iid),
                str: Some(bytes.to_vec()),
            },
        ));
        iid
    }

    fn mapping(&mut self, index: usize) -> u64 {
        if let Some(&iid) = self.mappings.get(&index) {
            return iid;
        }
        let module = &self.process.modules[index];
        let build_id =
            (!module.build_id.is_empty()).then(|| self.string(Kind::BuildId, &module.build_id));
        let path_string_ids = module
            .path
            .split('/')
            .filter(|c| !c.is_empty())
            .map(|c| self.string(Kind::MappingPath, c.as_bytes()))
            .collect();
        let iid = self.mappings.len() as u64 + 1;
        self.mappings.insert(index, iid);
        self.data.push(Item::Mapping(Mapping {
            iid: Some(iid),
            build_id,
            start_offset: Some(module.offset),
            start: Some(module.start),
            end: Some(module.end),
            path_string_ids,
        }));
        iid
    }

    /// The frames of `address` (innermost inlined first), interned.
    fn address_frames(&mut self, address: u64, leaf: bool) -> Vec<u64> {
        let process = self.process;
        let lookup = if leaf {
            address
        } else {
            address.saturating_sub(1)
        };
        let module = process.modules.iter().position(|m| m.contains(lookup));
        let names: Vec<(String, &str, u32)> = match process.symbols.get(&address) {
            Some(frames) if !frames.is_empty() => frames
                .iter()
                .map(|f| (cut(&f.function).to_owned(), cut(&f.file), f.line))
                .collect(),
            _ => vec![(
                crate::unresolved_name(module.map(|i| &process.modules[i]), address),
                "",
                0,
            )],
        };
        let mut ids = Vec::with_capacity(names.len());
        for (depth, (function, file, line)) in names.into_iter().enumerate() {
            if let Some(&iid) = self.frames.get(&(address, depth)) {
                ids.push(iid);
                continue;
            }
            let function_name_id = Some(self.string(Kind::FunctionName, function.as_bytes()));
            let source_path_iid =
                (!file.is_empty()).then(|| self.string(Kind::SourcePath, file.as_bytes()));
            let (mapping_id, rel_pc) = match module {
                Some(i) => {
                    let m = &process.modules[i];
                    (
                        Some(self.mapping(i)),
                        Some(address.wrapping_sub(m.start).wrapping_add(m.offset)),
                    )
                }
                None => (None, None),
            };
            let iid = self.frames.len() as u64 + 1;
            self.frames.insert((address, depth), iid);
            self.data.push(Item::Frame(Frame {
                iid: Some(iid),
                function_name_id,
                mapping_id,
                rel_pc,
                source_path_iid,
                line_number: (line != 0).then_some(line),
            }));
            ids.push(iid);
        }
        ids
    }

    /// The callstack of a sample's addresses (innermost first), interned.
    fn callstack(&mut self, addresses: &[u64]) -> u64 {
        let mut frame_ids: Vec<u64> = Vec::new();
        for (i, &address) in addresses.iter().enumerate() {
            frame_ids.extend(self.address_frames(address, i == 0));
        }
        // Perfetto lists a callstack's frames root first.
        frame_ids.reverse();
        if let Some(&iid) = self.callstacks.get(&frame_ids) {
            return iid;
        }
        let iid = self.callstacks.len() as u64 + 1;
        self.callstacks.insert(frame_ids.clone(), iid);
        self.data.push(Item::Callstack(Callstack {
            iid: Some(iid),
            frame_ids,
        }));
        iid
    }

    /// Writes the interned data as packets of bounded size, the first
    /// clearing the sequence's incremental state.
    fn flush_into(self, out: &mut Chunks, sequence: u32) {
        let mut flags = SEQ_INCREMENTAL_STATE_CLEARED;
        let mut data = InternedData::default();
        let mut size = 0;
        let mut emit = |data: &mut InternedData, flags: &mut u32| {
            out.push(&TracePacket {
                trusted_packet_sequence_id: Some(sequence),
                sequence_flags: Some(*flags),
                interned_data: Some(std::mem::take(data)),
                ..TracePacket::default()
            });
            *flags = SEQ_NEEDS_INCREMENTAL_STATE;
        };
        for item in self.data {
            size += match item {
                Item::String(kind, s) => {
                    let len = s.encoded_len();
                    match kind {
                        Kind::BuildId => data.build_ids.push(s),
                        Kind::MappingPath => data.mapping_paths.push(s),
                        Kind::FunctionName => data.function_names.push(s),
                        Kind::SourcePath => data.source_paths.push(s),
                    }
                    len
                }
                Item::Mapping(m) => {
                    let len = m.encoded_len();
                    data.mappings.push(m);
                    len
                }
                Item::Frame(f) => {
                    let len = f.encoded_len();
                    data.frames.push(f);
                    len
                }
                Item::Callstack(c) => {
                    let len = c.encoded_len();
                    data.callstacks.push(c);
                    len
                }
            } + 4;
            if size >= INTERNED_PACKET_BYTES {
                emit(&mut data, &mut flags);
                size = 0;
            }
        }
        if size > 0 || flags == SEQ_INCREMENTAL_STATE_CLEARED {
            emit(&mut data, &mut flags);
        }
    }
}
