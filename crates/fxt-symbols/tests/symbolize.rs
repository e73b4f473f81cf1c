//! Symbolization of this test binary's own code (real addresses, real
//! debug info), and the appendix a trace of its samples gets: modules,
//! symbols and Perfetto packets that decode to the same names.

use std::collections::HashMap;

use fxt_format::decode::{join_split_blobs, BlobType, Record};
use fxt_format::samples::{SampleBlob, SampleRecord, Walk};
use fxt_symbols::{appendix, process_modules, Request, Symbolizer};

#[inline(never)]
fn probe_outer(x: u64) -> u64 {
    probe_inlined(x).wrapping_mul(3)
}

#[inline(always)]
fn probe_inlined(x: u64) -> u64 {
    std::hint::black_box(x).rotate_left(7) ^ 0x5a5a
}

#[inline(never)]
fn probe_leaf(x: u64) -> u64 {
    std::hint::black_box(x) + 1
}

fn address_of(f: fn(u64) -> u64) -> u64 {
    f as usize as u64
}

fn is_hashless(name: &str) -> bool {
    // A legacy-mangled Rust name ends in `::h` and 16 hex digits.
    !name
        .rsplit("::")
        .next()
        .is_some_and(|last| last.len() == 17 && last.starts_with('h'))
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "reads this test binary's own DWARF, which the release profile leaves out"
)]
fn own_functions_resolve_to_demangled_names_with_file_and_line() {
    let modules = process_modules(std::process::id()).unwrap().modules;
    let mut symbolizer = Symbolizer::new();
    let frames = symbolizer.resolve(&modules, address_of(probe_leaf), false);
    let outer = frames.last().expect("resolved");
    assert!(
        outer.function.ends_with("symbolize::probe_leaf"),
        "{frames:?}"
    );
    assert!(is_hashless(&outer.function), "{}", outer.function);
    assert!(outer.file.ends_with("tests/symbolize.rs"), "{frames:?}");
    assert!(outer.line > 0);
    // As a return address: the byte before is looked up, still inside.
    let frames = symbolizer.resolve(&modules, address_of(probe_leaf) + 1, true);
    assert!(frames.last().unwrap().function.ends_with("probe_leaf"));
    // An address no mapping holds resolves to nothing.
    assert!(symbolizer.resolve(&modules, 8, false).is_empty());
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "reads this test binary's own DWARF, which the release profile leaves out"
)]
fn inlined_frames_come_innermost_first() {
    let modules = process_modules(std::process::id()).unwrap().modules;
    let mut symbolizer = Symbolizer::new();
    let start = address_of(probe_outer);
    // Some instruction of probe_outer belongs to the inlined call.
    let inlined = (0..512)
        .map(|k| symbolizer.resolve(&modules, start + k, false))
        .find(|frames| frames.len() >= 2)
        .expect("an address inside the inlined callee");
    assert!(
        inlined[0].function.ends_with("probe_inlined"),
        "{inlined:?}"
    );
    assert!(
        inlined.last().unwrap().function.ends_with("probe_outer"),
        "{inlined:?}"
    );
    assert!(inlined[0].line > 0 && inlined[0].file.ends_with("symbolize.rs"));
}

#[test]
fn a_different_build_id_is_not_trusted() {
    let mut modules = process_modules(std::process::id()).unwrap().modules;
    for m in &mut modules {
        m.build_id = vec![0xee; 20];
    }
    assert!(Symbolizer::new()
        .resolve(&modules, address_of(probe_leaf), false)
        .is_empty());
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
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(message, optional, tag = "12")]
        pub interned_data: Option<Interned>,
        #[prost(message, optional, tag = "66")]
        pub perf_sample: Option<Sample>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Interned {
        #[prost(message, repeated, tag = "5")]
        pub function_names: Vec<Str>,
        #[prost(message, repeated, tag = "6")]
        pub frames: Vec<Frame>,
        #[prost(message, repeated, tag = "7")]
        pub callstacks: Vec<Callstack>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Str {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(bytes = "vec", optional, tag = "2")]
        pub str: Option<Vec<u8>>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Frame {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(uint64, optional, tag = "2")]
        pub function_name_id: Option<u64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Callstack {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(uint64, repeated, packed = "false", tag = "2")]
        pub frame_ids: Vec<u64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint32, optional, tag = "2")]
        pub pid: Option<u32>,
        #[prost(uint32, optional, tag = "3")]
        pub tid: Option<u32>,
        #[prost(uint64, optional, tag = "4")]
        pub callstack_iid: Option<u64>,
    }
}

#[test]
fn appendix_names_the_samples_in_symbols_and_perfetto_packets() {
    use prost::Message;
    let pid = u64::from(std::process::id());
    // Stacks as a sampler would see them: leaf pc, then return addresses.
    let stack = [address_of(probe_leaf) + 2, address_of(probe_outer) + 5];
    let samples: Vec<SampleRecord> = (0..50u64)
        .map(|i| SampleRecord {
            timestamp: 2_000 + i * 1_000,
            pid,
            tid: pid + 1,
            walk: Walk::FramePointers,
            truncated: false,
            frames: stack.to_vec(),
            raw_stack: None,
        })
        .collect();
    let request = Request {
        samples: &samples,
        allocs: &[],
        ticks_per_second: 500_000_000, // 2 ns a tick
        modules: &[process_modules(std::process::id()).unwrap()],
        symbols: &[],
    };
    let out = appendix(&request, &mut Symbolizer::new()).unwrap();
    assert_eq!(
        (out.processes, out.samples, out.addresses, out.resolved),
        (1, 50, 2, 2)
    );

    let bytes: Vec<u8> = out.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut names = HashMap::new();
    let mut stream = Vec::new();
    let mut modules = 0;
    for joined in join_split_blobs(&bytes) {
        let Ok(Record::Blob(blob)) = joined.item else {
            continue;
        };
        if blob.blob_type == BlobType::Perfetto {
            stream.extend_from_slice(&blob.payload);
            continue;
        }
        match SampleBlob::from_blob(&blob).unwrap().unwrap() {
            SampleBlob::Modules(m) => {
                assert_eq!(m.pid, pid);
                modules += 1;
            }
            SampleBlob::Symbols(s) => {
                for e in s.symbols {
                    names.insert(e.address, e.frames.last().unwrap().function.clone());
                }
            }
            SampleBlob::Sample(_) => panic!("the appendix holds no samples"),
        }
    }
    // The modules came with the request: the appendix does not repeat them.
    assert_eq!(modules, 0);
    assert!(names[&stack[0]].ends_with("probe_leaf"));
    assert!(names[&stack[1]].ends_with("probe_outer"));

    let trace = read::Trace::decode(stream.as_slice()).unwrap();
    let mut function_names = HashMap::new();
    let mut frame_names = HashMap::new();
    let mut callstacks = HashMap::new();
    for p in &trace.packet {
        if let Some(d) = &p.interned_data {
            for s in &d.function_names {
                function_names.insert(
                    s.iid.unwrap(),
                    String::from_utf8(s.str.clone().unwrap()).unwrap(),
                );
            }
            for f in &d.frames {
                frame_names.insert(
                    f.iid.unwrap(),
                    function_names[&f.function_name_id.unwrap()].clone(),
                );
            }
            for c in &d.callstacks {
                callstacks.insert(c.iid.unwrap(), c.frame_ids.clone());
            }
        }
    }
    let sampled: Vec<_> = trace
        .packet
        .iter()
        .filter(|p| p.perf_sample.is_some())
        .collect();
    assert_eq!(sampled.len(), 50);
    for (i, p) in sampled.iter().enumerate() {
        assert_eq!(p.timestamp, Some((2_000 + i as u64 * 1_000) * 2));
        let s = p.perf_sample.as_ref().unwrap();
        assert_eq!((s.pid, s.tid), (Some(pid as u32), Some(pid as u32 + 1)));
        let frames = &callstacks[&s.callstack_iid.unwrap()];
        // Root first: probe_outer, then (after any inlined frames) probe_leaf.
        assert!(
            frame_names[&frames[0]].ends_with("probe_outer"),
            "{frames:?}"
        );
        assert!(frame_names[frames.last().unwrap()].ends_with("probe_leaf"));
    }
}

/// Many distinct addresses: the packets are cut into several blob records,
/// each holding whole packets (it decodes on its own) and fitting a record.
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "reads this test binary's own DWARF, which the release profile leaves out"
)]
fn perfetto_chunks_hold_whole_packets_and_fit_a_record() {
    use prost::Message;
    let pid = u64::from(std::process::id());
    let samples: Vec<SampleRecord> = (0..40u64)
        .map(|i| SampleRecord {
            timestamp: i,
            pid,
            tid: pid,
            walk: Walk::UnwindTables,
            truncated: true,
            frames: (0..200)
                .map(|k| address_of(probe_outer) + (i * 200 + k) % 3000)
                .collect(),
            raw_stack: None,
        })
        .collect();
    let request = Request {
        samples: &samples,
        allocs: &[],
        ticks_per_second: 1_000_000_000,
        modules: &[process_modules(std::process::id()).unwrap()],
        symbols: &[],
    };
    let out = appendix(&request, &mut Symbolizer::new()).unwrap();
    assert!(out.perfetto_records > 2, "{}", out.perfetto_records);
    let bytes: Vec<u8> = out.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut samples_seen = 0;
    for joined in join_split_blobs(&bytes) {
        let Ok(Record::Blob(blob)) = joined.item else {
            continue;
        };
        if blob.blob_type == BlobType::Perfetto {
            assert!(blob.payload.len() <= fxt_symbols::perfetto::CHUNK_BYTES);
            let trace = read::Trace::decode(blob.payload.as_slice()).expect("whole packets");
            samples_seen += trace
                .packet
                .iter()
                .filter(|p| p.perf_sample.is_some())
                .count();
        }
    }
    assert_eq!(samples_seen, 40);
}

/// The runtime's entry point: a trace's bytes in, its appendix out.
#[test]
fn appendix_of_trace_reads_the_samples_from_the_trace() {
    use fxt_format::encode::{encode_into_vec, Initialization, MagicNumber, ProviderInfo};
    use fxt_format::samples::Sample;
    let pid = u64::from(std::process::id());
    let mut words = Vec::new();
    encode_into_vec(&MagicNumber, &mut words).unwrap();
    encode_into_vec(
        &ProviderInfo {
            provider_id: 1,
            name: "p",
        },
        &mut words,
    )
    .unwrap();
    encode_into_vec(
        &Initialization {
            ticks_per_second: 1_000_000_000,
        },
        &mut words,
    )
    .unwrap();
    let frames = [address_of(probe_leaf) + 3];
    for t in 0..3 {
        let sample = Sample {
            timestamp: t,
            pid,
            tid: 7,
            walk: Walk::PcOnly,
            truncated: true,
            frames: &frames,
        };
        encode_into_vec(&sample, &mut words).unwrap();
    }
    let found = process_modules(std::process::id()).unwrap();
    let list: Vec<_> = found.modules.iter().map(|m| m.as_module()).collect();
    fxt_format::samples::Modules {
        pid,
        modules: &list,
    }
    .encode_records(
        3,
        fxt_format::encode::ThreadRef::Inline {
            process: pid,
            thread: 7,
        },
        &mut words,
    )
    .unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let out = fxt_symbols::appendix_of_trace(&bytes, &mut Symbolizer::new()).unwrap();
    assert_eq!((out.samples, out.addresses, out.resolved), (3, 1, 1));
    assert!(out.perfetto_records == 1 && !out.words.is_empty());
    // A trace without samples gets nothing.
    let none = fxt_symbols::appendix_of_trace(&bytes[..24], &mut Symbolizer::new()).unwrap();
    assert!(none.words.is_empty());
}

/// A trace names its modules' files, and every `fxt` command that reads
/// it now symbolizes from them: a path that is not a regular file (a FIFO,
/// which blocks whoever opens it to read until a writer comes; a device)
/// is not opened, and its addresses stay unnamed.
#[test]
fn a_module_path_that_is_not_a_regular_file_is_not_opened() {
    let dir = std::env::temp_dir().join(format!("fxt-symbols-fifo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("not-a-binary");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let modules: Vec<_> = ["/dev/zero", fifo.to_str().unwrap()]
        .into_iter()
        .enumerate()
        .map(|(i, path)| fxt_format::samples::ModuleEntry {
            start: 0x10_0000 * (i as u64 + 1),
            end: 0x10_0000 * (i as u64 + 1) + 0x1000,
            offset: 0,
            build_id: vec![1, 2, 3, 4],
            path: path.to_owned(),
        })
        .collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut symbolizer = Symbolizer::new();
        let frames: Vec<_> = modules
            .iter()
            .map(|m| symbolizer.resolve(&modules, m.start + 8, false))
            .collect();
        let _ = tx.send(frames);
    });
    // A generous bound: the resolve takes microseconds, a blocked open
    // forever.
    let frames = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("resolving addresses of a FIFO-backed module blocked");
    assert!(frames.iter().all(Vec::is_empty), "{frames:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
