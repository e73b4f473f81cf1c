//! The official Perfetto SDK (`perfetto-sdk`, Google's Rust bindings of
//! the C SDK, the C++ SDK vendored), set up as its users do for a trace
//! collected by the program itself: the in-process backend with a 4 MiB
//! shared memory buffer, a tracing session per measurement with a 512 MiB
//! central buffer, and the trace read back at the end.
//!
//! [`count_track_events`] walks the returned trace with the SDK's own
//! protobuf decoder (`perfetto_sdk::pb_decoder`, the C SDK's) rather than a
//! generated-message crate: counting needs three fields of three messages
//! (`Trace.packet`, `TracePacket.track_event`, `TrackEvent.type`), and the
//! walk checks that the top level was read to its last byte, so a
//! truncated trace is an error rather than a lower count.

use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use perfetto_sdk::heap_buffer::HeapBuffer;
use perfetto_sdk::pb_decoder::{PbDecoder, PbDecoderField};
use perfetto_sdk::pb_msg::{PbMsg, PbMsgWriter};
use perfetto_sdk::producer::{Backends, Producer, ProducerInitArgsBuilder};
use perfetto_sdk::protos::config::data_source_config::DataSourceConfig;
use perfetto_sdk::protos::config::trace_config::{
    TraceConfig, TraceConfigBufferConfig, TraceConfigDataSource,
};
use perfetto_sdk::protos::config::track_event::track_event_config::TrackEventConfig;
use perfetto_sdk::tracing_session::TracingSession;
use perfetto_sdk::track_event::TrackEvent;

/// The producer's shared memory buffer (what writers fill, the in-process
/// service drains).
pub const SHMEM_KB: u32 = 4 << 10;
/// The session's central buffer (holds 4 threads x 1M events whole).
pub const CENTRAL_KB: u32 = 512 << 10;

/// Initializes the in-process producer and the track event data source
/// (once per process), then `register`s the caller's categories.
pub fn init(register: impl FnOnce()) {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let args = ProducerInitArgsBuilder::new()
            .backends(Backends::IN_PROCESS)
            .shmem_size_hint_kb(SHMEM_KB);
        Producer::init(args.build());
        TrackEvent::init();
        register();
    });
}

/// The encoded `TraceConfig`: one central buffer, the `track_event` data
/// source with `categories` (comma separated) enabled.
fn trace_config(categories: &str) -> Vec<u8> {
    let writer = PbMsgWriter::new();
    let hb = HeapBuffer::new(writer.stream_writer());
    let mut msg = PbMsg::new(&writer).expect("a protobuf message");
    {
        let mut cfg = TraceConfig { msg: &mut msg };
        cfg.set_buffers(|buf: &mut TraceConfigBufferConfig| {
            buf.set_size_kb(CENTRAL_KB);
        });
        cfg.set_data_sources(|sources: &mut TraceConfigDataSource| {
            sources.set_config(|ds: &mut DataSourceConfig| {
                ds.set_name("track_event");
                ds.set_track_event_config(|te: &mut TrackEventConfig| {
                    te.set_enabled_categories(categories);
                });
            });
        });
    }
    msg.finalize();
    let mut bytes = vec![0u8; writer.stream_writer().get_written_size()];
    hb.copy_into(&mut bytes);
    bytes
}

/// A running in-process tracing session.
pub struct Capture {
    session: TracingSession,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture").finish_non_exhaustive()
    }
}

impl Capture {
    /// Starts a session with `categories` enabled (after [`init`]);
    /// returns once the data source is on.
    pub fn start(categories: &str) -> Capture {
        let mut session = TracingSession::in_process().expect("an in-process tracing session");
        session.setup(&trace_config(categories));
        session.start_blocking();
        Capture { session }
    }

    /// Flushes, stops the session and returns its trace (a `Trace`
    /// protobuf).
    pub fn finish(mut self) -> Vec<u8> {
        self.session.flush_blocking(Duration::from_secs(30));
        self.session.stop_blocking();
        let trace = Arc::new(Mutex::new(Vec::new()));
        let sink = trace.clone();
        self.session.read_trace_blocking(move |data, _more| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(data);
        });
        let bytes = std::mem::take(&mut *trace.lock().unwrap_or_else(|e| e.into_inner()));
        bytes
    }
}

/// `TrackEvent`s of a trace, by type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackEventCounts {
    /// `TYPE_SLICE_BEGIN`.
    pub begin: u64,
    /// `TYPE_SLICE_END`.
    pub end: u64,
    /// `TYPE_INSTANT`.
    pub instant: u64,
    /// `TYPE_COUNTER`.
    pub counter: u64,
    /// Any other type (or none).
    pub other: u64,
}

/// `Trace.packet`.
const TRACE_PACKET: u32 = 1;
/// `TracePacket.track_event`.
const PACKET_TRACK_EVENT: u32 = 11;
/// `TrackEvent.type`.
const TRACK_EVENT_TYPE: u32 = 9;

/// Bytes of `v` as a protobuf varint.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Counts the `TrackEvent` packets of `trace` (a `Trace` protobuf) by
/// type. An error if the top level does not decode to its last byte.
pub fn count_track_events(trace: &[u8]) -> Result<TrackEventCounts, String> {
    let mut counts = TrackEventCounts::default();
    let mut consumed = 0usize;
    for field in PbDecoder::new(trace) {
        let (id, value) = field.map_err(|e| format!("trace: {e}"))?;
        let key = varint_len(u64::from(id) << 3);
        consumed += key
            + match value {
                PbDecoderField::Varint(v) => varint_len(v),
                PbDecoderField::Fixed64(_) => 8,
                PbDecoderField::Fixed32(_) => 4,
                PbDecoderField::Delimited(d) => varint_len(d.len() as u64) + d.len(),
            };
        let (TRACE_PACKET, PbDecoderField::Delimited(packet)) = (id, value) else {
            continue;
        };
        for field in PbDecoder::new(packet) {
            let (id, value) = field.map_err(|e| format!("packet: {e}"))?;
            let (PACKET_TRACK_EVENT, PbDecoderField::Delimited(event)) = (id, value) else {
                continue;
            };
            let kind = PbDecoder::new(event).find_map(|f| match f {
                Ok((TRACK_EVENT_TYPE, PbDecoderField::Varint(t))) => Some(t),
                _ => None,
            });
            match kind {
                Some(1) => counts.begin += 1,
                Some(2) => counts.end += 1,
                Some(3) => counts.instant += 1,
                Some(4) => counts.counter += 1,
                _ => counts.other += 1,
            }
        }
    }
    if consumed != trace.len() {
        return Err(format!(
            "the trace decodes to byte {consumed} of {}",
            trace.len()
        ));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-delimited field.
    fn delimited(id: u32, body: &[u8]) -> Vec<u8> {
        let mut out = vec![((id << 3) | 2) as u8, body.len() as u8];
        out.extend_from_slice(body);
        out
    }

    /// A packet holding a `TrackEvent` of `kind` (and a timestamp, field 8
    /// of the packet, before it).
    fn packet(kind: u8) -> Vec<u8> {
        let mut body = vec![8 << 3, 0x96, 0x01];
        body.extend(delimited(
            PACKET_TRACK_EVENT,
            &[TRACK_EVENT_TYPE as u8 * 8, kind],
        ));
        delimited(TRACE_PACKET, &body)
    }

    #[test]
    fn counts_track_events_by_type() {
        let mut trace = Vec::new();
        for kind in [3, 3, 1, 2, 4, 5] {
            trace.extend(packet(kind));
        }
        // A packet without a track event (e.g. a clock snapshot).
        trace.extend(delimited(TRACE_PACKET, &[8 << 3, 1]));
        let counts = count_track_events(&trace).unwrap();
        assert_eq!(
            counts,
            TrackEventCounts {
                begin: 1,
                end: 1,
                instant: 2,
                counter: 1,
                other: 1,
            }
        );
    }

    #[test]
    fn a_truncated_trace_is_an_error() {
        let mut trace = packet(3);
        trace.extend(packet(3));
        trace.pop();
        assert!(count_track_events(&trace).is_err());
        assert_eq!(count_track_events(&[]), Ok(TrackEventCounts::default()));
    }

    #[test]
    fn varint_lengths() {
        let cases = [(0, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3)];
        for (v, n) in cases {
            assert_eq!(varint_len(v), n, "{v}");
        }
        assert_eq!(varint_len(u64::MAX), 10);
    }
}
