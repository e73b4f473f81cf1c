//! The few Perfetto protobuf messages the sample packets use, written by
//! hand with `prost` (field numbers and types from Perfetto's
//! `protos/perfetto/trace/trace_packet.proto`,
//! `interned_data/interned_data.proto`, `profiling/profile_common.proto`
//! and `profiling/profile_packet.proto`; heap profiles: `ProfilePacket`
//! of `profiling/profile_packet.proto`). Perfetto declares its repeated
//! integers without `[packed = true]` and its decoder reads them unpacked,
//! hence `packed = "false"`.

/// `TracePacket`, the fields used here.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Nanoseconds on the trace's default clock (no `timestamp_clock_id`:
    /// Perfetto then uses the clock FXT timestamps are on).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// The sequence the interned data belongs to.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// Interned strings, mappings, frames and callstacks.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `SEQ_INCREMENTAL_STATE_CLEARED` (1) on the first packet of a
    /// sequence, `SEQ_NEEDS_INCREMENTAL_STATE` (2) after.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// One CPU sample.
    #[prost(message, optional, tag = "66")]
    pub perf_sample: Option<PerfSample>,
    /// Readings of two clocks at one instant.
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// A part of a heap profile.
    #[prost(message, optional, tag = "37")]
    pub profile_packet: Option<ProfilePacket>,
}

/// `InternedData`, the profiling fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// Function names.
    #[prost(message, repeated, tag = "5")]
    pub function_names: Vec<InternedString>,
    /// Frames.
    #[prost(message, repeated, tag = "6")]
    pub frames: Vec<Frame>,
    /// Callstacks.
    #[prost(message, repeated, tag = "7")]
    pub callstacks: Vec<Callstack>,
    /// Build ids (raw bytes).
    #[prost(message, repeated, tag = "16")]
    pub build_ids: Vec<InternedString>,
    /// Components of mapping paths.
    #[prost(message, repeated, tag = "17")]
    pub mapping_paths: Vec<InternedString>,
    /// Source file paths.
    #[prost(message, repeated, tag = "18")]
    pub source_paths: Vec<InternedString>,
    /// Mappings.
    #[prost(message, repeated, tag = "19")]
    pub mappings: Vec<Mapping>,
}

/// `InternedString`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// Interning id (from 1).
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// The bytes.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `Mapping`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Interning id.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Interned build id.
    #[prost(uint64, optional, tag = "2")]
    pub build_id: Option<u64>,
    /// File offset of the mapping's start.
    #[prost(uint64, optional, tag = "3")]
    pub start_offset: Option<u64>,
    /// First address.
    #[prost(uint64, optional, tag = "4")]
    pub start: Option<u64>,
    /// Address after the last byte.
    #[prost(uint64, optional, tag = "5")]
    pub end: Option<u64>,
    /// Interned path components.
    #[prost(uint64, repeated, packed = "false", tag = "7")]
    pub path_string_ids: Vec<u64>,
}

/// `Frame`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Frame {
    /// Interning id.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Interned function name.
    #[prost(uint64, optional, tag = "2")]
    pub function_name_id: Option<u64>,
    /// Interned mapping (0: none).
    #[prost(uint64, optional, tag = "3")]
    pub mapping_id: Option<u64>,
    /// Address relative to the mapped file.
    #[prost(uint64, optional, tag = "4")]
    pub rel_pc: Option<u64>,
    /// Interned source path.
    #[prost(uint64, optional, tag = "5")]
    pub source_path_iid: Option<u64>,
    /// Source line.
    #[prost(uint32, optional, tag = "6")]
    pub line_number: Option<u32>,
}

/// `Callstack`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Callstack {
    /// Interning id.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Interned frames, outermost (root) first.
    #[prost(uint64, repeated, packed = "false", tag = "2")]
    pub frame_ids: Vec<u64>,
}

/// `PerfSample`, the fields used here.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PerfSample {
    /// Process id.
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    /// Thread id.
    #[prost(uint32, optional, tag = "3")]
    pub tid: Option<u32>,
    /// Interned callstack.
    #[prost(uint64, optional, tag = "4")]
    pub callstack_iid: Option<u64>,
    /// `Profiling.CpuMode` (2 = user).
    #[prost(int32, optional, tag = "5")]
    pub cpu_mode: Option<i32>,
}

/// `ProfilePacket` (heapprofd's heap profile), the fields used here. Its
/// strings, mappings, frames and callstacks are its own (one string id
/// space), kept by the reader across the packets of a dump until one
/// that is not `continued`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProfilePacket {
    /// Strings: build ids, path components, function names, source paths.
    #[prost(message, repeated, tag = "1")]
    pub strings: Vec<InternedString>,
    /// Frames.
    #[prost(message, repeated, tag = "2")]
    pub frames: Vec<Frame>,
    /// Callstacks.
    #[prost(message, repeated, tag = "3")]
    pub callstacks: Vec<Callstack>,
    /// Mappings.
    #[prost(message, repeated, tag = "4")]
    pub mappings: Vec<Mapping>,
    /// The dumps of processes.
    #[prost(message, repeated, tag = "5")]
    pub process_dumps: Vec<ProcessHeapSamples>,
    /// More packets of this dump follow.
    #[prost(bool, optional, tag = "6")]
    pub continued: Option<bool>,
    /// The packet's index in its sequence, from 0.
    #[prost(uint64, optional, tag = "7")]
    pub index: Option<u64>,
}

/// `ProfilePacket.ProcessHeapSamples`, the fields used here.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessHeapSamples {
    /// Process id.
    #[prost(uint64, optional, tag = "1")]
    pub pid: Option<u64>,
    /// The samples, one per callstack.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<HeapSample>,
    /// When the dump was taken (`BUILTIN_CLOCK_MONOTONIC_COARSE`).
    #[prost(uint64, optional, tag = "9")]
    pub timestamp: Option<u64>,
    /// The heap's name.
    #[prost(string, optional, tag = "11")]
    pub heap_name: Option<String>,
    /// The sampling mean in bytes.
    #[prost(uint64, optional, tag = "12")]
    pub sampling_interval_bytes: Option<u64>,
}

/// `ProfilePacket.HeapSample`, the fields used here.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HeapSample {
    /// The callstack (an id of the packets' callstacks).
    #[prost(uint64, optional, tag = "1")]
    pub callstack_id: Option<u64>,
    /// Bytes allocated there.
    #[prost(uint64, optional, tag = "2")]
    pub self_allocated: Option<u64>,
    /// Of those, bytes freed.
    #[prost(uint64, optional, tag = "3")]
    pub self_freed: Option<u64>,
    /// Allocations there.
    #[prost(uint64, optional, tag = "5")]
    pub alloc_count: Option<u64>,
    /// Of those, allocations freed.
    #[prost(uint64, optional, tag = "6")]
    pub free_count: Option<u64>,
}

/// `ClockSnapshot`: clocks read at one instant.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// The readings.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// The clock trace time is on (`BuiltinClock`).
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `ClockSnapshot.Clock`: one reading.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// `BuiltinClock` id.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// The reading in nanoseconds.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
}
