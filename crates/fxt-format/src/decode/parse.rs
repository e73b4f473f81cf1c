//! Turning the bytes of one record, already framed by a reader, into a
//! [`Record`], and applying table-building records to the reader's state.
//!
//! Field positions below are the bit ranges of the specification
//! (`[lsb .. msb]`, inclusive). Records larger than their fields need are
//! accepted (the format grows by appending), reserved bits are ignored, and
//! a subtype this decoder does not know becomes [`Record::Unknown`].

use std::sync::Arc;

use super::args::decode_args;
use super::cursor::{Cursor, Region};
use super::error::DecodeError;
use super::record::{
    Blob, BlobType, ContextSwitch, Event, EventKind, KernelObject, LargeBlobNoMetadata,
    LargeBlobWithMetadata, LegacyContextSwitch, Log, Record, ThreadState, ThreadWakeup,
    UnknownRecord, UserspaceObject,
};
use super::resolve::Resolver;
use super::tables::Providers;
use crate::encode::header::{record_type, MAGIC};

/// Extracts header bits `[lsb .. lsb + width - 1]`.
#[inline(always)]
pub(crate) fn bits(word: u64, lsb: u32, width: u32) -> u64 {
    (word >> lsb) & ((1u64 << width) - 1)
}

/// The framing rule, written once where headers are made.
pub(crate) use crate::encode::header::record_words;

/// The reader state every record is decoded against.
#[derive(Default, Clone)]
pub(crate) struct Decoder {
    pub(crate) providers: Providers,
}

/// A userspace object record (type 6), after its header.
fn userspace_object(
    header: u64,
    cur: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Record, DecodeError> {
    let pointer = cur.word()?;
    let process = resolver.process(bits(header, 16, 8) as u8, cur)?;
    let name = resolver.text(bits(header, 24, 16) as u16, cur)?;
    let args = decode_args(bits(header, 40, 4), cur, resolver)?;
    Ok(Record::UserspaceObject(UserspaceObject {
        pointer,
        process,
        name,
        args,
    }))
}

/// A kernel object record (type 7), after its header.
fn kernel_object(
    header: u64,
    cur: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Record, DecodeError> {
    let koid = cur.word()?;
    let name = resolver.text(bits(header, 24, 16) as u16, cur)?;
    let args = decode_args(bits(header, 40, 4), cur, resolver)?;
    Ok(Record::KernelObject(KernelObject {
        koid,
        object_type: bits(header, 16, 8) as u8,
        name,
        args,
    }))
}

impl Decoder {
    /// Decodes one record. `bytes` is exactly the record (its size from the
    /// header, a non-zero multiple of 8) and starts at input offset `offset`.
    pub(crate) fn decode_record(
        &mut self,
        bytes: &[u8],
        offset: u64,
    ) -> Result<Record, DecodeError> {
        let header = Cursor::new(bytes, offset, Region::Record(0)).peek_word()?;
        let rtype = (header & 0xf) as u8;
        let mut cur = Cursor::new(bytes, offset, Region::Record(rtype));
        cur.word()?;
        let unknown = || {
            Record::Unknown(UnknownRecord {
                offset,
                record_type: rtype,
                header,
                size_words: (bytes.len() / 8) as u32,
            })
        };
        let resolver = Resolver {
            tables: &self.providers.current,
        };
        let record = match u64::from(rtype) {
            record_type::METADATA => return self.metadata(header, &mut cur, offset, unknown),
            record_type::INITIALIZATION => {
                let ticks_per_second = cur.word()?;
                self.providers.set_ticks_per_second(ticks_per_second);
                Record::Initialization { ticks_per_second }
            }
            record_type::STRING => {
                let index = bits(header, 16, 15) as u16;
                let len = bits(header, 32, 15);
                let value: Arc<str> = Arc::from(cur.utf8(len)?);
                self.providers.define_string(index, &value);
                Record::String { index, value }
            }
            record_type::THREAD => {
                let index = bits(header, 16, 8) as u8;
                let process = cur.word()?;
                let thread = cur.word()?;
                self.providers.define_thread(index, process, thread);
                Record::Thread {
                    index,
                    process,
                    thread,
                }
            }
            // The hot path: returning directly lets the event be built in
            // the caller's slot instead of being copied there.
            record_type::EVENT if bits(header, 16, 4) <= 10 => {
                return event(header, &mut cur, &resolver).map(Record::Event);
            }
            record_type::BLOB => {
                let name = resolver.text(bits(header, 16, 16) as u16, &mut cur)?;
                let payload = cur.stream(bits(header, 32, 15))?.to_vec();
                Record::Blob(Blob {
                    name,
                    blob_type: BlobType::from_value(bits(header, 48, 8) as u8),
                    payload,
                })
            }
            record_type::USERSPACE_OBJECT => userspace_object(header, &mut cur, &resolver)?,
            record_type::KERNEL_OBJECT => kernel_object(header, &mut cur, &resolver)?,
            record_type::SCHEDULING => match scheduling(header, &mut cur, &resolver)? {
                Some(record) => record,
                None => unknown(),
            },
            record_type::LOG => {
                let timestamp = cur.word()?;
                let thread = resolver.thread(bits(header, 32, 8) as u8, &mut cur)?;
                let message = cur.utf8(bits(header, 16, 15))?.to_owned();
                Record::Log(Log {
                    timestamp,
                    thread,
                    message,
                })
            }
            record_type::LARGE => match large(header, &mut cur, &resolver)? {
                Some(record) => record,
                None => unknown(),
            },
            _ => unknown(),
        };
        Ok(record)
    }

    /// Metadata records (record type 0); provider info and section switch
    /// the tables in force.
    fn metadata(
        &mut self,
        header: u64,
        cur: &mut Cursor<'_>,
        offset: u64,
        unknown: impl FnOnce() -> Record,
    ) -> Result<Record, DecodeError> {
        let provider_id = bits(header, 20, 32) as u32;
        Ok(match bits(header, 16, 4) {
            1 => {
                let name = cur.utf8(bits(header, 52, 8))?.to_owned();
                self.providers.start_provider(provider_id, &name);
                Record::ProviderInfo { provider_id, name }
            }
            2 => {
                self.providers.switch_to(Some(provider_id));
                Record::ProviderSection { provider_id }
            }
            3 => Record::ProviderEvent {
                provider_id,
                event: bits(header, 52, 4) as u8,
            },
            4 => match bits(header, 20, 4) {
                0 if bits(header, 24, 32) == MAGIC => Record::Magic,
                0 => return Err(DecodeError::BadMagic { offset, header }),
                _ => unknown(),
            },
            _ => unknown(),
        })
    }
}

/// Event records (record type 4) of a known event type (0..=10).
#[inline(always)]
pub(crate) fn event(
    header: u64,
    cur: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Event, DecodeError> {
    let event_type = bits(header, 16, 4);
    let timestamp = cur.word()?;
    let thread = resolver.thread(bits(header, 24, 8) as u8, cur)?;
    let category = resolver.text(bits(header, 32, 16) as u16, cur)?;
    let name = resolver.text(bits(header, 48, 16) as u16, cur)?;
    let args = decode_args(bits(header, 20, 4), cur, resolver)?;
    let kind = event_kind(event_type, cur)?;
    Ok(Event {
        kind,
        timestamp,
        thread,
        category,
        name,
        args,
    })
}

/// An event's type (0..=10) and the word after its arguments that some
/// types carry.
#[inline(always)]
pub(crate) fn event_kind(event_type: u64, cur: &mut Cursor<'_>) -> Result<EventKind, DecodeError> {
    Ok(match event_type {
        0 => EventKind::Instant,
        1 => EventKind::Counter { id: cur.word()? },
        2 => EventKind::DurationBegin,
        3 => EventKind::DurationEnd,
        4 => EventKind::DurationComplete { end: cur.word()? },
        5 => EventKind::AsyncBegin { id: cur.word()? },
        6 => EventKind::AsyncInstant { id: cur.word()? },
        7 => EventKind::AsyncEnd { id: cur.word()? },
        8 => EventKind::FlowBegin { id: cur.word()? },
        9 => EventKind::FlowStep { id: cur.word()? },
        _ => EventKind::FlowEnd { id: cur.word()? },
    })
}

/// Scheduling records (record type 8), dispatched on bits 60..=63. The
/// legacy layout has zeros there, so older traces, whose only record type
/// 8 is that layout, decode as [`Record::LegacyContextSwitch`].
fn scheduling(
    header: u64,
    cur: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Option<Record>, DecodeError> {
    Ok(Some(match bits(header, 60, 4) {
        0 => {
            let timestamp = cur.word()?;
            let outgoing_thread = resolver.thread(bits(header, 28, 8) as u8, cur)?;
            let incoming_thread = resolver.thread(bits(header, 36, 8) as u8, cur)?;
            Record::LegacyContextSwitch(LegacyContextSwitch {
                timestamp,
                cpu: bits(header, 16, 8) as u8,
                outgoing_state: ThreadState::from_value(bits(header, 24, 4) as u8),
                outgoing_thread,
                incoming_thread,
                outgoing_priority: bits(header, 44, 8) as u8,
                incoming_priority: bits(header, 52, 8) as u8,
            })
        }
        1 => {
            let timestamp = cur.word()?;
            let outgoing_thread = cur.word()?;
            let incoming_thread = cur.word()?;
            let args = decode_args(bits(header, 16, 4), cur, resolver)?;
            Record::ContextSwitch(ContextSwitch {
                timestamp,
                cpu: bits(header, 20, 16) as u16,
                outgoing_state: ThreadState::from_value(bits(header, 36, 4) as u8),
                outgoing_thread,
                incoming_thread,
                args,
            })
        }
        2 => {
            let timestamp = cur.word()?;
            let waking_thread = cur.word()?;
            let args = decode_args(bits(header, 16, 4), cur, resolver)?;
            Record::ThreadWakeup(ThreadWakeup {
                timestamp,
                cpu: bits(header, 20, 16) as u16,
                waking_thread,
                args,
            })
        }
        _ => return Ok(None),
    }))
}

/// Large records (record type 15); only large blobs (large type 0, blob
/// formats 0 and 1) are defined.
fn large(
    header: u64,
    cur: &mut Cursor<'_>,
    resolver: &Resolver<'_>,
) -> Result<Option<Record>, DecodeError> {
    let large_type = bits(header, 36, 4);
    let format = bits(header, 40, 4);
    if large_type != 0 || format > 1 {
        return Ok(None);
    }
    let format_header = cur.word()?;
    let category = resolver.text(bits(format_header, 0, 16) as u16, cur)?;
    let name = resolver.text(bits(format_header, 16, 16) as u16, cur)?;
    if format == 1 {
        let payload_len = cur.word()?;
        let payload = cur.stream(payload_len)?.to_vec();
        return Ok(Some(Record::LargeBlobNoMetadata(LargeBlobNoMetadata {
            category,
            name,
            payload,
        })));
    }
    let timestamp = cur.word()?;
    let thread = resolver.thread(bits(format_header, 36, 8) as u8, cur)?;
    let args = decode_args(bits(format_header, 32, 4), cur, resolver)?;
    let payload_len = cur.word()?;
    let payload = cur.stream(payload_len)?.to_vec();
    Ok(Some(Record::LargeBlobWithMetadata(LargeBlobWithMetadata {
        category,
        name,
        timestamp,
        thread,
        args,
        payload,
    })))
}
