//! Property tests: any sequence of records the encoders can produce decodes
//! back to itself, with references resolved.
//!
//! A generated trace is a list of operations: (re)defining strings and
//! threads, switching providers, and records whose string and thread refs
//! are empty, inline, or indexed (sometimes to an index that was never
//! defined). A model of the per-provider tables, updated in trace order,
//! gives the value each record must decode to.

use std::collections::HashMap;
use std::io::{self, Read};
use std::sync::Arc;

use fxt_format::decode::{self, Record, Text};
use fxt_format::encode::{self, ProcessRef, StringRef, ThreadRef};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Str {
    Empty,
    Index(u16),
    Inline(String),
}

#[derive(Debug, Clone)]
enum Thr {
    Index(u8),
    Inline(u64, u64),
}

#[derive(Debug, Clone)]
enum Val {
    Null,
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F64(u64),
    Str(Str),
    Pointer(u64),
    Koid(u64),
    Bool(bool),
    Blob(Vec<u8>),
}

#[derive(Debug, Clone)]
struct A {
    name: Str,
    value: Val,
}

#[derive(Debug, Clone)]
enum Op {
    DefineString(u16, String),
    DefineThread(u8, u64, u64),
    Section(u32),
    Init(u64),
    ProviderEvent(u32, u8),
    Event {
        kind: encode::EventKind,
        ts: u64,
        thread: Thr,
        category: Str,
        name: Str,
        args: Vec<A>,
    },
    Blob {
        name: Str,
        blob_type: u8,
        payload: Vec<u8>,
    },
    Userspace {
        pointer: u64,
        process: Result<u8, u64>,
        name: Str,
        args: Vec<A>,
    },
    Kernel {
        koid: u64,
        object_type: u8,
        name: Str,
        args: Vec<A>,
    },
    ContextSwitch {
        ts: u64,
        cpu: u16,
        state: u8,
        outgoing: u64,
        incoming: u64,
        args: Vec<A>,
    },
    Wakeup {
        ts: u64,
        cpu: u16,
        waking: u64,
        args: Vec<A>,
    },
    Legacy {
        ts: u64,
        cpu: u8,
        state: u8,
        outgoing: Thr,
        incoming: Thr,
        priorities: (u8, u8),
    },
    Log {
        ts: u64,
        thread: Thr,
        message: String,
    },
    LargeWithMetadata {
        category: Str,
        name: Str,
        ts: u64,
        thread: Thr,
        args: Vec<A>,
        payload: Vec<u8>,
    },
    LargeNoMetadata {
        category: Str,
        name: Str,
        payload: Vec<u8>,
    },
}

// ------------------------------------------------------------ strategies

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_.]{0,12}",
        "\\PC{0,10}", // any printable Unicode, multi-byte included
    ]
}

fn str_ref() -> impl Strategy<Value = Str> {
    prop_oneof![
        1 => Just(Str::Empty),
        3 => (1u16..=10).prop_map(Str::Index), // 9 and 10 are never defined
        2 => text().prop_map(Str::Inline),
    ]
}

fn thread_ref() -> impl Strategy<Value = Thr> {
    prop_oneof![
        (1u8..=5).prop_map(Thr::Index), // 5 is never defined
        (any::<u64>(), any::<u64>()).prop_map(|(p, t)| Thr::Inline(p, t)),
    ]
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

fn value() -> impl Strategy<Value = Val> {
    prop_oneof![
        Just(Val::Null),
        any::<i32>().prop_map(Val::I32),
        any::<u32>().prop_map(Val::U32),
        any::<i64>().prop_map(Val::I64),
        any::<u64>().prop_map(Val::U64),
        any::<u64>().prop_map(Val::F64),
        str_ref().prop_map(Val::Str),
        any::<u64>().prop_map(Val::Pointer),
        any::<u64>().prop_map(Val::Koid),
        any::<bool>().prop_map(Val::Bool),
        bytes(40).prop_map(Val::Blob),
    ]
}

fn args() -> impl Strategy<Value = Vec<A>> {
    prop::collection::vec(
        (str_ref(), value()).prop_map(|(name, value)| A { name, value }),
        0..=15,
    )
}

fn event_kind() -> impl Strategy<Value = encode::EventKind> {
    use encode::EventKind as K;
    (0u8..11, any::<u64>()).prop_map(|(k, id)| match k {
        0 => K::Instant,
        1 => K::Counter { id },
        2 => K::DurationBegin,
        3 => K::DurationEnd,
        4 => K::DurationComplete { end: id },
        5 => K::AsyncBegin { id },
        6 => K::AsyncInstant { id },
        7 => K::AsyncEnd { id },
        8 => K::FlowBegin { id },
        9 => K::FlowStep { id },
        _ => K::FlowEnd { id },
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => ((1u16..=8), text()).prop_map(|(i, s)| Op::DefineString(i, s)),
        2 => ((1u8..=4), any::<u64>(), any::<u64>()).prop_map(|(i, p, t)| Op::DefineThread(i, p, t)),
        1 => (1u32..=3).prop_map(Op::Section),
        1 => any::<u64>().prop_map(Op::Init),
        1 => (any::<u32>(), 0u8..16).prop_map(|(p, e)| Op::ProviderEvent(p, e)),
        8 => (event_kind(), any::<u64>(), thread_ref(), str_ref(), str_ref(), args()).prop_map(
            |(kind, ts, thread, category, name, args)| Op::Event { kind, ts, thread, category, name, args }
        ),
        1 => (str_ref(), any::<u8>(), bytes(100)).prop_map(|(name, blob_type, payload)| Op::Blob { name, blob_type, payload }),
        1 => (any::<u64>(), prop_oneof![(1u8..=5).prop_map(Ok), any::<u64>().prop_map(Err)], str_ref(), args())
            .prop_map(|(pointer, process, name, args)| Op::Userspace { pointer, process, name, args }),
        1 => (any::<u64>(), any::<u8>(), str_ref(), args())
            .prop_map(|(koid, object_type, name, args)| Op::Kernel { koid, object_type, name, args }),
        1 => (any::<u64>(), any::<u16>(), 0u8..16, any::<u64>(), any::<u64>(), args()).prop_map(
            |(ts, cpu, state, outgoing, incoming, args)| Op::ContextSwitch { ts, cpu, state, outgoing, incoming, args }
        ),
        1 => (any::<u64>(), any::<u16>(), any::<u64>(), args())
            .prop_map(|(ts, cpu, waking, args)| Op::Wakeup { ts, cpu, waking, args }),
        1 => (any::<u64>(), any::<u8>(), 0u8..16, thread_ref(), thread_ref(), any::<(u8, u8)>()).prop_map(
            |(ts, cpu, state, outgoing, incoming, priorities)| Op::Legacy { ts, cpu, state, outgoing, incoming, priorities }
        ),
        1 => (any::<u64>(), thread_ref(), text()).prop_map(|(ts, thread, message)| Op::Log { ts, thread, message }),
        1 => (str_ref(), str_ref(), any::<u64>(), thread_ref(), args(), bytes(100)).prop_map(
            |(category, name, ts, thread, args, payload)| Op::LargeWithMetadata { category, name, ts, thread, args, payload }
        ),
        1 => (str_ref(), str_ref(), bytes(100))
            .prop_map(|(category, name, payload)| Op::LargeNoMetadata { category, name, payload }),
    ]
}

// --------------------------------------------------------------- encoding

fn sref(s: &Str) -> StringRef<'_> {
    match s {
        Str::Empty => StringRef::Empty,
        Str::Index(i) => StringRef::Index(*i),
        Str::Inline(s) => StringRef::Inline(s),
    }
}

fn tref(t: &Thr) -> ThreadRef {
    match *t {
        Thr::Index(i) => ThreadRef::Index(i),
        Thr::Inline(process, thread) => ThreadRef::Inline { process, thread },
    }
}

fn enc_args(args: &[A]) -> Vec<encode::Arg<'_>> {
    args.iter()
        .map(|a| {
            let value = match &a.value {
                Val::Null => encode::ArgValue::Null,
                Val::I32(v) => encode::ArgValue::I32(*v),
                Val::U32(v) => encode::ArgValue::U32(*v),
                Val::I64(v) => encode::ArgValue::I64(*v),
                Val::U64(v) => encode::ArgValue::U64(*v),
                Val::F64(bits) => encode::ArgValue::F64(f64::from_bits(*bits)),
                Val::Str(s) => encode::ArgValue::Str(sref(s)),
                Val::Pointer(v) => encode::ArgValue::Pointer(*v),
                Val::Koid(v) => encode::ArgValue::Koid(*v),
                Val::Bool(v) => encode::ArgValue::Bool(*v),
                Val::Blob(b) => encode::ArgValue::Blob(b),
            };
            encode::Arg::new(sref(&a.name), value)
        })
        .collect()
}

fn encode_op(op: &Op, out: &mut Vec<u64>) {
    let r = match op {
        Op::DefineString(index, value) => encode::encode_into_vec(
            &encode::StringRecord {
                index: *index,
                value,
            },
            out,
        ),
        Op::DefineThread(index, process, thread) => encode::encode_into_vec(
            &encode::ThreadRecord {
                index: *index,
                process: *process,
                thread: *thread,
            },
            out,
        ),
        Op::Section(provider_id) => encode::encode_into_vec(
            &encode::ProviderSection {
                provider_id: *provider_id,
            },
            out,
        ),
        Op::Init(ticks_per_second) => encode::encode_into_vec(
            &encode::Initialization {
                ticks_per_second: *ticks_per_second,
            },
            out,
        ),
        Op::ProviderEvent(provider_id, event) => encode::encode_into_vec(
            &encode::ProviderEvent {
                provider_id: *provider_id,
                event: *event,
            },
            out,
        ),
        Op::Event {
            kind,
            ts,
            thread,
            category,
            name,
            args,
        } => encode::encode_into_vec(
            &encode::Event {
                kind: *kind,
                timestamp: *ts,
                thread: tref(thread),
                category: sref(category),
                name: sref(name),
                args: &enc_args(args),
            },
            out,
        ),
        Op::Blob {
            name,
            blob_type,
            payload,
        } => encode::encode_into_vec(
            &encode::Blob {
                name: sref(name),
                blob_type: encode::BlobType::from_value(*blob_type),
                payload,
            },
            out,
        ),
        Op::Userspace {
            pointer,
            process,
            name,
            args,
        } => encode::encode_into_vec(
            &encode::UserspaceObject {
                pointer: *pointer,
                process: match *process {
                    Ok(i) => ProcessRef::Index(i),
                    Err(koid) => ProcessRef::Inline(koid),
                },
                name: sref(name),
                args: &enc_args(args),
            },
            out,
        ),
        Op::Kernel {
            koid,
            object_type,
            name,
            args,
        } => encode::encode_into_vec(
            &encode::KernelObject {
                koid: *koid,
                object_type: *object_type,
                name: sref(name),
                args: &enc_args(args),
            },
            out,
        ),
        Op::ContextSwitch {
            ts,
            cpu,
            state,
            outgoing,
            incoming,
            args,
        } => encode::encode_into_vec(
            &encode::ContextSwitch {
                timestamp: *ts,
                cpu: *cpu,
                outgoing_state: encode::ThreadState::from_value(*state),
                outgoing_thread: *outgoing,
                incoming_thread: *incoming,
                args: &enc_args(args),
            },
            out,
        ),
        Op::Wakeup {
            ts,
            cpu,
            waking,
            args,
        } => encode::encode_into_vec(
            &encode::ThreadWakeup {
                timestamp: *ts,
                cpu: *cpu,
                waking_thread: *waking,
                args: &enc_args(args),
            },
            out,
        ),
        Op::Legacy {
            ts,
            cpu,
            state,
            outgoing,
            incoming,
            priorities,
        } => encode::encode_into_vec(
            &encode::LegacyContextSwitch {
                timestamp: *ts,
                cpu: *cpu,
                outgoing_state: encode::ThreadState::from_value(*state),
                outgoing_thread: tref(outgoing),
                incoming_thread: tref(incoming),
                outgoing_priority: priorities.0,
                incoming_priority: priorities.1,
            },
            out,
        ),
        Op::Log {
            ts,
            thread,
            message,
        } => encode::encode_into_vec(
            &encode::Log {
                timestamp: *ts,
                thread: tref(thread),
                message,
            },
            out,
        ),
        Op::LargeWithMetadata {
            category,
            name,
            ts,
            thread,
            args,
            payload,
        } => encode::encode_into_vec(
            &encode::LargeBlobWithMetadata {
                category: sref(category),
                name: sref(name),
                timestamp: *ts,
                thread: tref(thread),
                args: &enc_args(args),
                payload,
            },
            out,
        ),
        Op::LargeNoMetadata {
            category,
            name,
            payload,
        } => encode::encode_into_vec(
            &encode::LargeBlobNoMetadata {
                category: sref(category),
                name: sref(name),
                payload,
            },
            out,
        ),
    };
    r.expect("generated records are within the format's limits");
}

// ------------------------------------------------------------------ model

/// The per-provider tables as the trace defines them, in order.
#[derive(Default)]
struct Model {
    current: Option<u32>,
    strings: HashMap<(Option<u32>, u16), Arc<str>>,
    threads: HashMap<(Option<u32>, u8), (u64, u64)>,
}

impl Model {
    fn text(&self, s: &Str) -> Text {
        match s {
            Str::Empty => Text::from(""),
            Str::Inline(s) => Text::from(s.as_str()),
            Str::Index(i) => match self.strings.get(&(self.current, *i)) {
                Some(s) => Text::from(s.clone()),
                None => Text::undefined(*i),
            },
        }
    }

    fn thread(&self, t: &Thr) -> decode::Thread {
        match *t {
            Thr::Inline(process, thread) => decode::Thread::Known { process, thread },
            Thr::Index(i) => match self.threads.get(&(self.current, i)) {
                Some(&(process, thread)) => decode::Thread::Known { process, thread },
                None => decode::Thread::Undefined(i),
            },
        }
    }

    fn args(&self, args: &[A]) -> Vec<decode::Arg> {
        args.iter()
            .map(|a| decode::Arg {
                name: self.text(&a.name),
                value: match &a.value {
                    Val::Null => decode::ArgValue::Null,
                    Val::I32(v) => decode::ArgValue::I32(*v),
                    Val::U32(v) => decode::ArgValue::U32(*v),
                    Val::I64(v) => decode::ArgValue::I64(*v),
                    Val::U64(v) => decode::ArgValue::U64(*v),
                    Val::F64(bits) => decode::ArgValue::F64(f64::from_bits(*bits)),
                    Val::Str(s) => decode::ArgValue::Str(self.text(s)),
                    Val::Pointer(v) => decode::ArgValue::Pointer(*v),
                    Val::Koid(v) => decode::ArgValue::Koid(*v),
                    Val::Bool(v) => decode::ArgValue::Bool(*v),
                    Val::Blob(b) => decode::ArgValue::Blob(b.clone()),
                },
            })
            .collect()
    }

    /// Applies `op` and returns the record it must decode to.
    fn apply(&mut self, op: &Op) -> Record {
        match op {
            Op::DefineString(index, value) => {
                let value: Arc<str> = Arc::from(value.as_str());
                self.strings.insert((self.current, *index), value.clone());
                Record::String {
                    index: *index,
                    value,
                }
            }
            Op::DefineThread(index, process, thread) => {
                self.threads
                    .insert((self.current, *index), (*process, *thread));
                Record::Thread {
                    index: *index,
                    process: *process,
                    thread: *thread,
                }
            }
            Op::Section(id) => {
                self.current = Some(*id);
                Record::ProviderSection { provider_id: *id }
            }
            Op::Init(ticks_per_second) => Record::Initialization {
                ticks_per_second: *ticks_per_second,
            },
            Op::ProviderEvent(provider_id, event) => Record::ProviderEvent {
                provider_id: *provider_id,
                event: *event,
            },
            Op::Event {
                kind,
                ts,
                thread,
                category,
                name,
                args,
            } => Record::Event(decode::Event {
                kind: *kind,
                timestamp: *ts,
                thread: self.thread(thread),
                category: self.text(category),
                name: self.text(name),
                args: self.args(args),
            }),
            Op::Blob {
                name,
                blob_type,
                payload,
            } => Record::Blob(decode::Blob {
                name: self.text(name),
                blob_type: decode::BlobType::from_value(*blob_type),
                payload: payload.clone(),
            }),
            Op::Userspace {
                pointer,
                process,
                name,
                args,
            } => Record::UserspaceObject(decode::UserspaceObject {
                pointer: *pointer,
                process: match *process {
                    Err(koid) => decode::Process::Known(koid),
                    Ok(i) => match self.thread(&Thr::Index(i)) {
                        decode::Thread::Known { process, .. } => decode::Process::Known(process),
                        decode::Thread::Undefined(i) => decode::Process::Undefined(i),
                    },
                },
                name: self.text(name),
                args: self.args(args),
            }),
            Op::Kernel {
                koid,
                object_type,
                name,
                args,
            } => Record::KernelObject(decode::KernelObject {
                koid: *koid,
                object_type: *object_type,
                name: self.text(name),
                args: self.args(args),
            }),
            Op::ContextSwitch {
                ts,
                cpu,
                state,
                outgoing,
                incoming,
                args,
            } => Record::ContextSwitch(decode::ContextSwitch {
                timestamp: *ts,
                cpu: *cpu,
                outgoing_state: decode::ThreadState::from_value(*state),
                outgoing_thread: *outgoing,
                incoming_thread: *incoming,
                args: self.args(args),
            }),
            Op::Wakeup {
                ts,
                cpu,
                waking,
                args,
            } => Record::ThreadWakeup(decode::ThreadWakeup {
                timestamp: *ts,
                cpu: *cpu,
                waking_thread: *waking,
                args: self.args(args),
            }),
            Op::Legacy {
                ts,
                cpu,
                state,
                outgoing,
                incoming,
                priorities,
            } => Record::LegacyContextSwitch(decode::LegacyContextSwitch {
                timestamp: *ts,
                cpu: *cpu,
                outgoing_state: decode::ThreadState::from_value(*state),
                outgoing_thread: self.thread(outgoing),
                incoming_thread: self.thread(incoming),
                outgoing_priority: priorities.0,
                incoming_priority: priorities.1,
            }),
            Op::Log {
                ts,
                thread,
                message,
            } => Record::Log(decode::Log {
                timestamp: *ts,
                thread: self.thread(thread),
                message: message.clone(),
            }),
            Op::LargeWithMetadata {
                category,
                name,
                ts,
                thread,
                args,
                payload,
            } => Record::LargeBlobWithMetadata(decode::LargeBlobWithMetadata {
                category: self.text(category),
                name: self.text(name),
                timestamp: *ts,
                thread: self.thread(thread),
                args: self.args(args),
                payload: payload.clone(),
            }),
            Op::LargeNoMetadata {
                category,
                name,
                payload,
            } => Record::LargeBlobNoMetadata(decode::LargeBlobNoMetadata {
                category: self.text(category),
                name: self.text(name),
                payload: payload.clone(),
            }),
        }
    }
}

/// NaN is not equal to itself: compare floats by their bits instead.
fn comparable(records: Vec<Record>) -> Vec<Record> {
    fn fix(args: &mut [decode::Arg]) {
        for a in args {
            if let decode::ArgValue::F64(x) = a.value {
                a.value = decode::ArgValue::Unknown {
                    arg_type: 0xff,
                    skipped: decode::SkippedArg {
                        header: x.to_bits(),
                        size_words: 0,
                    },
                };
            }
        }
    }
    records
        .into_iter()
        .map(|mut r| {
            match &mut r {
                Record::Event(e) => fix(&mut e.args),
                Record::UserspaceObject(o) => fix(&mut o.args),
                Record::KernelObject(o) => fix(&mut o.args),
                Record::ContextSwitch(c) => fix(&mut c.args),
                Record::ThreadWakeup(w) => fix(&mut w.args),
                Record::LargeBlobWithMetadata(b) => fix(&mut b.args),
                _ => {}
            }
            r
        })
        .collect()
}

fn build(ops: &[Op]) -> (Vec<u8>, Vec<Record>) {
    let mut words = vec![];
    let mut model = Model::default();
    let mut expected = vec![];
    for op in ops {
        encode_op(op, &mut words);
        expected.push(model.apply(op));
    }
    (encode::words_to_bytes(&words), comparable(expected))
}

/// A reader that hands out at most `chunk` bytes per call, to exercise the
/// stream reader's buffering at every alignment.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.chunk.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn encoded_records_decode_to_themselves(ops in prop::collection::vec(op(), 0..40)) {
        let (bytes, expected) = build(&ops);
        let decoded = decode::decode_all(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(comparable(decoded), expected);
    }

    #[test]
    fn stream_reader_agrees_at_any_chunking(
        ops in prop::collection::vec(op(), 0..20),
        chunk in 1usize..64,
    ) {
        let (bytes, expected) = build(&ops);
        let (decoded, error) = decode::read_all_lossy(Chunked { data: &bytes, chunk });
        prop_assert_eq!(error, None);
        prop_assert_eq!(comparable(decoded), expected);
    }
}
