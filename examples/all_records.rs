//! Writes a trace holding one of every record type, event type, argument
//! type and metadata type of the Fuchsia Trace Format, with the inline and
//! the indexed form of each string and thread reference.
//!
//! ```text
//! cargo run --release --example all_records -- OUT.fxt [--portable]
//! ```
//!
//! `--portable` leaves out only what the PyPI `fxt` reader (0.3.0) cannot
//! read: the blob argument (type 10) and the legacy context switch record
//! (scheduling record type 0).

use fxt_format::encode::{
    encode_into_vec, Arg, ArgValue, Blob, BlobType, ContextSwitch, Encode, Event, EventKind,
    Initialization, KernelObject, LargeBlobNoMetadata, LargeBlobWithMetadata, LegacyContextSwitch,
    Log, MagicNumber, ProcessRef, ProviderEvent, ProviderInfo, ProviderSection, StringRecord,
    StringRef, ThreadRecord, ThreadRef, ThreadState, ThreadWakeup, UserspaceObject,
    OBJ_TYPE_PROCESS, OBJ_TYPE_THREAD,
};

/// Indices of the string table (provider 1).
const CATEGORY: StringRef<'static> = StringRef::Index(1);
const NAME: StringRef<'static> = StringRef::Index(2);
const KEY: StringRef<'static> = StringRef::Index(3);
/// Index of the thread table (provider 1).
const MAIN_THREAD: ThreadRef = ThreadRef::Index(1);
const OTHER_THREAD: ThreadRef = ThreadRef::Inline {
    process: 100,
    thread: 102,
};

/// The trace as words; `portable` drops what the Python reader cannot read.
pub fn all_records(portable: bool) -> Vec<u64> {
    let mut words = Vec::new();
    let mut put = |record: &dyn Encode| {
        encode_into_vec(record, &mut words).expect("every record here is within the limits");
    };

    // Metadata and tables: the Python reader wants provider info first.
    put(&MagicNumber);
    put(&ProviderInfo {
        provider_id: 1,
        name: "all_records",
    });
    put(&Initialization {
        ticks_per_second: 1_000_000_000,
    });
    put(&StringRecord {
        index: 1,
        value: "category",
    });
    put(&StringRecord {
        index: 2,
        value: "name",
    });
    put(&StringRecord {
        index: 3,
        value: "key",
    });
    put(&ThreadRecord {
        index: 1,
        process: 100,
        thread: 101,
    });

    // The eleven event types, with indexed refs.
    let kinds = [
        EventKind::Instant,
        EventKind::Counter { id: 1 },
        EventKind::DurationBegin,
        EventKind::DurationEnd,
        EventKind::DurationComplete { end: 2_000 },
        EventKind::AsyncBegin { id: 2 },
        EventKind::AsyncInstant { id: 2 },
        EventKind::AsyncEnd { id: 2 },
        EventKind::FlowBegin { id: 3 },
        EventKind::FlowStep { id: 3 },
        EventKind::FlowEnd { id: 3 },
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        put(&Event {
            kind,
            timestamp: 1_000 + i as u64,
            thread: MAIN_THREAD,
            category: CATEGORY,
            name: NAME,
            args: &[],
        });
    }

    // Every argument type, with indexed and inline names and string values.
    let mut args = vec![
        Arg::new(KEY, ArgValue::Null),
        Arg::new(StringRef::Inline("i32"), ArgValue::I32(-32)),
        Arg::new(StringRef::Inline("u32"), ArgValue::U32(32)),
        Arg::new(StringRef::Inline("i64"), ArgValue::I64(-1 << 40)),
        Arg::new(StringRef::Inline("u64"), ArgValue::U64(1 << 40)),
        Arg::new(StringRef::Inline("f64"), ArgValue::F64(-0.25)),
        Arg::new(StringRef::Inline("str"), ArgValue::Str(NAME)),
        Arg::new(
            StringRef::Inline("inline"),
            ArgValue::Str(StringRef::Inline("héllo")),
        ),
        Arg::new(StringRef::Inline("pointer"), ArgValue::Pointer(0xdead_beef)),
        Arg::new(StringRef::Inline("koid"), ArgValue::Koid(101)),
        Arg::new(StringRef::Inline("bool"), ArgValue::Bool(true)),
    ];
    if !portable {
        args.push(Arg::new(
            StringRef::Inline("blob"),
            ArgValue::Blob(b"bytes"),
        ));
    }
    // Inline thread, category and name.
    put(&Event {
        kind: EventKind::Instant,
        timestamp: 1_100,
        thread: OTHER_THREAD,
        category: StringRef::Inline("inline category"),
        name: StringRef::Inline("every argument"),
        args: &args,
    });

    // Blobs, objects, scheduling and logs.
    put(&Blob {
        name: NAME,
        blob_type: BlobType::Data,
        payload: b"indexed name",
    });
    put(&Blob {
        name: StringRef::Inline("perfetto"),
        blob_type: BlobType::Perfetto,
        payload: &[0x0a, 0x00],
    });
    put(&UserspaceObject {
        pointer: 0x1000,
        process: ProcessRef::Index(1),
        name: NAME,
        args: &args[..1],
    });
    put(&UserspaceObject {
        pointer: 0x2000,
        process: ProcessRef::Inline(100),
        name: StringRef::Inline("object"),
        args: &[],
    });
    put(&KernelObject {
        koid: 100,
        object_type: OBJ_TYPE_PROCESS,
        name: NAME,
        args: &[],
    });
    let process_arg = [Arg::new(StringRef::Inline("process"), ArgValue::Koid(100))];
    put(&KernelObject {
        koid: 101,
        object_type: OBJ_TYPE_THREAD,
        name: StringRef::Inline("main thread"),
        args: &process_arg,
    });
    let weights = [
        Arg::new(StringRef::Inline("incoming_weight"), ArgValue::I32(2)),
        Arg::new(StringRef::Inline("outgoing_weight"), ArgValue::I32(3)),
    ];
    put(&ContextSwitch {
        timestamp: 1_200,
        cpu: 1,
        outgoing_state: ThreadState::Blocked,
        outgoing_thread: 101,
        incoming_thread: 102,
        args: &weights,
    });
    put(&ThreadWakeup {
        timestamp: 1_201,
        cpu: 1,
        waking_thread: 101,
        args: &weights[..1],
    });
    if !portable {
        put(&LegacyContextSwitch {
            timestamp: 1_202,
            cpu: 1,
            outgoing_state: ThreadState::Suspended,
            outgoing_thread: MAIN_THREAD,
            incoming_thread: OTHER_THREAD,
            outgoing_priority: 10,
            incoming_priority: 20,
        });
    }
    put(&Log {
        timestamp: 1_300,
        thread: MAIN_THREAD,
        message: "log with an indexed thread",
    });
    put(&Log {
        timestamp: 1_301,
        thread: OTHER_THREAD,
        message: "log with an inline thread",
    });
    put(&LargeBlobWithMetadata {
        category: CATEGORY,
        name: StringRef::Inline("large with metadata"),
        timestamp: 1_400,
        thread: MAIN_THREAD,
        args: &args[..2],
        payload: &[7; 40],
    });
    put(&LargeBlobNoMetadata {
        category: StringRef::Inline("large"),
        name: NAME,
        payload: &[8; 9],
    });
    put(&ProviderEvent {
        provider_id: 1,
        event: 0, // a buffer filled up
    });

    // A second provider has its own tables: index 1 means something else.
    put(&ProviderInfo {
        provider_id: 2,
        name: "second provider",
    });
    put(&Initialization {
        ticks_per_second: 1_000_000_000,
    });
    put(&StringRecord {
        index: 1,
        value: "second category",
    });
    put(&Event {
        kind: EventKind::Instant,
        timestamp: 1_500,
        thread: OTHER_THREAD,
        category: StringRef::Index(1),
        name: StringRef::Inline("in provider 2"),
        args: &[],
    });
    // Back to provider 1 and its tables.
    put(&ProviderSection { provider_id: 1 });
    put(&Event {
        kind: EventKind::Instant,
        timestamp: 1_600,
        thread: MAIN_THREAD,
        category: CATEGORY,
        name: StringRef::Inline("back in provider 1"),
        args: &[],
    });
    words
}

#[allow(dead_code)] // tests/python_reader.rs includes this file for `all_records`.
fn main() -> std::io::Result<()> {
    let mut path = None;
    let mut portable = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--portable" => portable = true,
            _ => path = Some(arg),
        }
    }
    let Some(path) = path else {
        eprintln!("usage: all_records OUT.fxt [--portable]");
        std::process::exit(2);
    };
    let words = all_records(portable);
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
    fxt_format::encode::write_words(&mut file, &words)?;
    std::io::Write::flush(&mut file)?;
    println!("wrote {} bytes to {path}", words.len() * 8);
    Ok(())
}
