//! A sampling session's trace ends with the samples' appendix (issues 31
//! and 42), whatever way the session is collected: drained oneshot (the
//! default), in-memory oneshot, streaming, circular, crash-safe, and
//! `finish_to_path` / `finish_to_writer` / `finish_to_vec`. By default
//! that is `fxt.modules` of this process, from which a reader names the
//! sampled addresses with the binaries (demangled, without the hash); with
//! feature `symbolize` (CI runs this test both ways) also `fxt.symbols`
//! naming them and `fxt.perfetto` packets that decode.
//!
//! A session sampling allocations (this binary's allocator is fxt's
//! sampling wrapper) gets the same appendix, and with `symbolize` a heap
//! profile among the packets: the allocating function named, every
//! sampled allocation counted.
//!
//! No timing is asserted: the worker burns CPU time (not wall time) in one
//! named function, so some samples land in it on a loaded machine too.

mod common;

use std::collections::{HashMap, HashSet};

use fxt_format::decode::{decode_all, join_split_blobs, ArgValue as Value, BlobType, Record};
use fxt_format::samples::PERFETTO_NAME;
use fxt_runtime::__macro_support::{instant, ArgValue, Callsite, KeyCache};
use fxt_runtime::{Config, Mode};
use fxt_symbols::scan::TraceSamples;

#[global_allocator]
static ALLOCATOR: fxt_runtime::alloc::Sampled<std::alloc::System> =
    fxt_runtime::alloc::Sampled::new(std::alloc::System);

static KEYS: [KeyCache; 1] = [KeyCache::NEW];
static START: Callsite = Callsite::new("appendix", "start", &["n"], &KEYS);

/// The calling thread's CPU time, in nanoseconds.
fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The function the samples must name.
#[inline(never)]
fn burn_cpu_in_named_function(cpu_ms: u64) -> u64 {
    let end = cpu_ns() + cpu_ms * 1_000_000;
    let mut x = 1u64;
    while cpu_ns() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

/// A traced thread (it registers with its first event, and is sampled from
/// then on) that burns `cpu_ms` of CPU time.
fn work(cpu_ms: u64) {
    std::thread::spawn(move || {
        if let Some(site) = START.site_with_keys(&KEYS) {
            instant(site, &[ArgValue::U64(1)]);
        }
        std::hint::black_box(burn_cpu_in_named_function(cpu_ms));
    })
    .join()
    .unwrap();
}

/// Protobuf messages to read the packets back (only what is checked).
mod read {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<Packet>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Packet {
        #[prost(message, optional, tag = "12")]
        pub interned_data: Option<Interned>,
        #[prost(message, optional, tag = "66")]
        pub perf_sample: Option<Sample>,
        #[prost(message, optional, tag = "37")]
        pub profile_packet: Option<Profile>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub strings: Vec<Str>,
        #[prost(message, repeated, tag = "5")]
        pub process_dumps: Vec<Dump>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Dump {
        #[prost(uint64, optional, tag = "1")]
        pub pid: Option<u64>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<HeapSample>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HeapSample {
        #[prost(uint64, optional, tag = "5")]
        pub alloc_count: Option<u64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Interned {
        #[prost(message, repeated, tag = "5")]
        pub function_names: Vec<Str>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Str {
        #[prost(bytes = "vec", optional, tag = "2")]
        pub str: Option<Vec<u8>>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint32, optional, tag = "2")]
        pub pid: Option<u32>,
        #[prost(uint64, optional, tag = "4")]
        pub callstack_iid: Option<u64>,
    }
}

/// Whether `name` ends with a legacy-mangling hash (`::h` and 16 hex digits).
fn has_hash(name: &str) -> bool {
    name.rsplit("::").next().is_some_and(|last| {
        last.len() == 17
            && last.starts_with('h')
            && last[1..].chars().all(|c| c.is_ascii_hexdigit())
    })
}

/// Checks the appendix of `trace`, collected as `how`.
fn check(trace: &[u8], how: &str) {
    let scan = TraceSamples::read(trace);
    let pid = u64::from(std::process::id());
    assert!(scan.errors.is_empty(), "{how}: {:?}", scan.errors);
    assert!(!scan.samples.is_empty(), "{how}: no samples");
    assert!(
        scan.modules
            .iter()
            .any(|m| m.pid == pid && !m.modules.is_empty()),
        "{how}: no fxt.modules of this process"
    );
    let symbols = if cfg!(feature = "symbolize") {
        assert!(
            scan.is_symbolized(),
            "{how}: a sampled address has no symbol"
        );
        scan.symbols.clone()
    } else {
        // Nothing named in the program: a reader names them from the modules.
        assert!(scan.symbols.is_empty(), "{how}: symbols without symbolize");
        assert_eq!(scan.perfetto_records, 0, "{how}");
        fxt_symbols::names(&scan.request(), &mut fxt_symbols::Symbolizer::new())
    };
    let names: HashMap<u64, String> = symbols
        .iter()
        .flat_map(|r| r.symbols.iter())
        .filter_map(|s| Some((s.address, s.frames.last()?.function.clone())))
        .collect();
    let named = |f: &str| f.ends_with("::burn_cpu_in_named_function");
    assert!(
        names.values().any(|n| named(n)),
        "{how}: no symbol names the burning function: {:?}",
        names.values().collect::<HashSet<_>>()
    );
    assert!(
        names.values().all(|n| !has_hash(n)),
        "{how}: a name keeps its hash"
    );
    if cfg!(feature = "symbolize") {
        check_perfetto(trace, &scan, how);
    }
}

/// The appendix follows the samples, and Perfetto's packets decode into
/// one sample per `fxt.sample`, with the function's name interned.
fn check_perfetto(trace: &[u8], scan: &TraceSamples, how: &str) {
    use prost::Message;
    let pid = u64::from(std::process::id());
    let named = |f: &str| f.ends_with("::burn_cpu_in_named_function");
    let mut stream = Vec::new();
    let mut records = 0;
    for joined in join_split_blobs(trace) {
        if let Ok(Record::Blob(b)) = joined.item {
            if b.blob_type == BlobType::Perfetto && b.name.as_str() == Some(PERFETTO_NAME) {
                stream.extend_from_slice(&b.payload);
                records += 1;
            }
        }
    }
    assert!(records > 0, "{how}: no fxt.perfetto records");
    let decoded = read::Trace::decode(stream.as_slice()).expect("whole packets");
    let samples: Vec<_> = decoded
        .packet
        .iter()
        .filter_map(|p| p.perf_sample.as_ref())
        .collect();
    assert_eq!(samples.len(), scan.samples.len(), "{how}");
    assert!(samples
        .iter()
        .all(|s| s.pid == Some(pid as u32) && s.callstack_iid.is_some()));
    let interned: Vec<String> = decoded
        .packet
        .iter()
        .filter_map(|p| p.interned_data.as_ref())
        .flat_map(|d| d.function_names.iter())
        .filter_map(|s| String::from_utf8(s.str.clone()?).ok())
        .collect();
    assert!(interned.iter().any(|n| named(n)), "{how}: {interned:?}");
}

fn config(name: &str) -> (Config, std::path::PathBuf) {
    let path = common::temp_path(name);
    let c = Config::new()
        .buffer_size(8 << 20)
        .sample_hz(2_000)
        .output(&path);
    (c, path)
}

/// How a case shapes the common configuration.
type Shape = fn(Config) -> Config;

#[test]
fn every_way_of_collecting_appends_modules_symbols_and_perfetto_packets() {
    let _serial = common::serial();
    let cases: [(&str, Shape); 5] = [
        ("drained oneshot", |c| c),
        ("in-memory oneshot", |c| c.drain(false)),
        ("streaming", |c| c.mode(Mode::Streaming)),
        ("circular", |c| c.mode(Mode::Circular)),
        ("crash-safe", |c| c.crash_safe(true)),
    ];
    for (how, make) in cases {
        let (c, path) = config(&format!("appendix-{}", how.replace(' ', "-")));
        let session = fxt_runtime::start(make(c)).unwrap();
        work(60);
        let stats = session.finish().unwrap();
        assert!(stats.samples > 0, "{how}: {stats:?}");
        check(&std::fs::read(&path).unwrap(), how);
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn finishing_to_a_path_a_writer_or_a_vec_appends_them_too() {
    let _serial = common::serial();
    for way in ["path", "writer", "vec"] {
        let (c, path) = config(&format!("appendix-to-{way}"));
        let session = fxt_runtime::start(c.drain(way != "path")).unwrap();
        work(60);
        let other = common::temp_path(&format!("appendix-other-{way}"));
        let trace = match way {
            "path" => {
                session.finish_to_path(&other).unwrap();
                std::fs::read(&other).unwrap()
            }
            "writer" => {
                let mut v = Vec::new();
                session.finish_to_writer(&mut v).unwrap();
                v
            }
            _ => session.finish_to_vec().unwrap().0,
        };
        check(&trace, way);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&other);
    }
}

#[test]
fn a_crash_safe_file_names_the_modules_from_the_start() {
    let _serial = common::serial();
    let (c, path) = config("appendix-crash-safe-start");
    let session = fxt_runtime::start(c.crash_safe(true)).unwrap();
    // What a killed process would leave: the file as it is now.
    let live = TraceSamples::read(&std::fs::read(&path).unwrap());
    let pid = u64::from(std::process::id());
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    assert!(
        live.modules
            .iter()
            .filter(|m| m.pid == pid)
            .flat_map(|m| m.modules.iter())
            .any(|m| std::path::Path::new(&m.path) == exe && !m.build_id.is_empty()),
        "{:?}",
        live.modules
    );
    session.finish().unwrap();
    let _ = std::fs::remove_file(&path);
}

/// The function the allocation samples must name.
#[inline(never)]
fn allocate_in_named_function(blocks: usize) {
    for _ in 0..blocks {
        drop(std::hint::black_box(vec![1u8; std::hint::black_box(1000)]));
    }
}

#[test]
fn a_session_sampling_allocations_appends_a_heap_profile() {
    let _serial = common::serial();
    let path = common::temp_path("appendix-alloc");
    let c = Config::new()
        .buffer_size(8 << 20)
        .alloc_sample_bytes(8192)
        .output(&path);
    let session = fxt_runtime::start(c).unwrap();
    allocate_in_named_function(20_000);
    let stats = session.finish().unwrap();
    assert!(stats.alloc_samples > 100, "{stats:?}");
    let trace = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let scan = TraceSamples::read(&trace);
    assert!(scan.errors.is_empty(), "{:?}", scan.errors);
    let pid = u64::from(std::process::id());
    assert!(scan.modules.iter().any(|m| m.pid == pid));
    let allocs = scan
        .allocs
        .iter()
        .filter(|a| a.kind == fxt_format::samples::AllocKind::Alloc)
        .count() as u64;
    assert!(allocs > 100, "{allocs}");
    let mut stream = Vec::new();
    for joined in join_split_blobs(&trace) {
        if let Ok(Record::Blob(b)) = joined.item {
            if b.blob_type == BlobType::Perfetto && b.name.as_str() == Some(PERFETTO_NAME) {
                stream.extend_from_slice(&b.payload);
            }
        }
    }
    // The heap counter: derived at collection with `symbolize`, one after
    // each record; the runtime itself writes none.
    let counters: Vec<i64> = decode_all(&trace)
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) if e.category == "fxt" && e.name == "heap" => {
                e.args.iter().find_map(|a| match a.value {
                    Value::I64(v) if a.name == "live_bytes" => Some(v),
                    _ => None,
                })
            }
            _ => None,
        })
        .collect();
    if !cfg!(feature = "symbolize") {
        assert!(stream.is_empty(), "packets without symbolize");
        assert!(counters.is_empty(), "a raw trace has no heap counter");
        return;
    }
    let ours: Vec<_> = scan.allocs.iter().filter(|a| a.pid == pid).collect();
    assert_eq!(counters.len(), ours.len(), "a counter after each record");
    assert!(counters.iter().all(|&v| v >= 0));
    use prost::Message;
    let decoded = read::Trace::decode(stream.as_slice()).expect("whole packets");
    let profiles: Vec<_> = decoded
        .packet
        .iter()
        .filter_map(|p| p.profile_packet.as_ref())
        .collect();
    let counted: u64 = profiles
        .iter()
        .flat_map(|p| &p.process_dumps)
        .inspect(|d| assert_eq!(d.pid, Some(pid)))
        .flat_map(|d| &d.samples)
        .filter_map(|s| s.alloc_count)
        .sum();
    assert_eq!(counted, allocs, "every sampled allocation in the profile");
    let named = profiles
        .iter()
        .flat_map(|p| &p.strings)
        .filter_map(|s| String::from_utf8(s.str.clone()?).ok())
        .any(|n| n.ends_with("::allocate_in_named_function"));
    assert!(named, "the allocating function is named");
}
