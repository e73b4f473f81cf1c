//! Encoding cost per record and decoding throughput.
//!
//! `cargo bench -p fxt-format -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use fxt_format::decode::{Record, SliceReader, StreamReader};
use fxt_format::encode::{
    self, encode_into_vec, Encode, Event, EventKind, StringRecord, ThreadRecord, ThreadRef,
};
use fxt_format::encode::{Arg, ArgValue, StringRef};

/// An instant with indexed thread, category and name: the hot-path record.
fn instant(timestamp: u64) -> Event<'static> {
    Event {
        kind: EventKind::Instant,
        timestamp,
        thread: ThreadRef::Index(1),
        category: StringRef::Index(1),
        name: StringRef::Index(2),
        args: &[],
    }
}

fn bench_encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode");
    group.throughput(Throughput::Elements(1));
    let mut out = [0u64; 8];
    let mut ts = 0u64;
    group.bench_function("instant_indexed", |b| {
        b.iter(|| {
            ts = ts.wrapping_add(1);
            black_box(instant(black_box(ts)).encode(&mut out).unwrap());
        })
    });
    let args = [Arg::new(StringRef::Index(3), ArgValue::U64(7))];
    group.bench_function("instant_indexed_one_u64_arg", |b| {
        b.iter(|| {
            ts = ts.wrapping_add(1);
            let event = Event {
                args: &args,
                ..instant(black_box(ts))
            };
            black_box(event.encode(&mut out).unwrap());
        })
    });
    group.finish();
}

/// A trace of about `target` bytes: string and thread tables, then small
/// events (16-byte instants, 24-byte complete durations, 32-byte counters
/// with one argument) with indexed refs.
fn small_event_trace(target: usize) -> (Vec<u8>, u64) {
    let mut words = Vec::with_capacity(target / 8 + 64);
    encode_into_vec(&encode::MagicNumber, &mut words).unwrap();
    for (index, value) in [(1, "category"), (2, "event"), (3, "count")] {
        encode_into_vec(&StringRecord { index, value }, &mut words).unwrap();
    }
    for index in 1..=8u8 {
        let thread = ThreadRecord {
            index,
            process: 1,
            thread: u64::from(index),
        };
        encode_into_vec(&thread, &mut words).unwrap();
    }
    let args = [Arg::new(StringRef::Index(3), ArgValue::I32(5))];
    let mut records = 12u64;
    let mut ts = 0u64;
    while words.len() * 8 < target {
        ts += 10;
        let thread = ThreadRef::Index((ts % 8) as u8 + 1);
        let event = match ts % 3 {
            0 => instant(ts),
            1 => Event {
                kind: EventKind::DurationComplete { end: ts + 5 },
                ..instant(ts)
            },
            _ => Event {
                kind: EventKind::Counter { id: 1 },
                args: &args,
                ..instant(ts)
            },
        };
        encode_into_vec(&Event { thread, ..event }, &mut words).unwrap();
        records += 1;
    }
    (encode::words_to_bytes(&words), records)
}

/// Consumes every record (each one is built and dropped, as a real reader
/// would) and returns how many there were.
fn drain<E: std::fmt::Debug>(records: impl Iterator<Item = Result<Record, E>>) -> usize {
    let mut n = 0;
    for record in records {
        black_box(record.unwrap());
        n += 1;
    }
    n
}

fn bench_decode(c: &mut Criterion) {
    let (trace, records) = small_event_trace(64 << 20);
    let mut group = c.benchmark_group("decode_64MiB_small_events");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(trace.len() as u64));
    group.bench_function("slice_bytes", |b| {
        b.iter(|| {
            let n = drain(SliceReader::new(black_box(&trace)));
            assert_eq!(n as u64, records);
        })
    });
    group.bench_function("stream_bytes", |b| {
        b.iter(|| {
            let n = drain(StreamReader::new(black_box(&trace[..])));
            assert_eq!(n as u64, records);
        })
    });
    group.throughput(Throughput::Elements(records));
    group.bench_function("slice_records", |b| {
        b.iter(|| drain(SliceReader::new(black_box(&trace))))
    });
    group.finish();
}

criterion_group!(benches, bench_encode, bench_decode);
criterion_main!(benches);
