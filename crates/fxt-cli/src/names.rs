//! The names `dump` and `stats` give record types and event kinds (one
//! spelling, so that the two commands' outputs can be matched).

use fxt_format::decode::{EventKind, Record};

/// The name of an event kind.
pub const fn event_kind_name(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::Instant => "instant",
        EventKind::Counter { .. } => "counter",
        EventKind::DurationBegin => "duration_begin",
        EventKind::DurationEnd => "duration_end",
        EventKind::DurationComplete { .. } => "duration_complete",
        EventKind::AsyncBegin { .. } => "async_begin",
        EventKind::AsyncInstant { .. } => "async_instant",
        EventKind::AsyncEnd { .. } => "async_end",
        EventKind::FlowBegin { .. } => "flow_begin",
        EventKind::FlowStep { .. } => "flow_step",
        EventKind::FlowEnd { .. } => "flow_end",
    }
}

/// The name of a record's type.
pub fn record_type_name(record: &Record) -> &'static str {
    match record {
        Record::Magic => "magic",
        Record::ProviderInfo { .. } => "provider_info",
        Record::ProviderSection { .. } => "provider_section",
        Record::ProviderEvent { .. } => "provider_event",
        Record::Initialization { .. } => "initialization",
        Record::String { .. } => "string",
        Record::Thread { .. } => "thread",
        Record::Event(_) => "event",
        Record::Blob(_) => "blob",
        Record::UserspaceObject(_) => "userspace_object",
        Record::KernelObject(_) => "kernel_object",
        Record::ContextSwitch(_) => "context_switch",
        Record::ThreadWakeup(_) => "thread_wakeup",
        Record::LegacyContextSwitch(_) => "legacy_context_switch",
        Record::Log(_) => "log",
        Record::LargeBlobWithMetadata(_) | Record::LargeBlobNoMetadata(_) => "large_blob",
        Record::Unknown(_) => "unknown",
    }
}
