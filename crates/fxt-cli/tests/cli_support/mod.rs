//! Shared helpers of the `fxt` command's tests: build traces with
//! `fxt_format::encode`, run the binary, read its output.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub use fxt_format::encode::*;

pub mod duckdb;
pub mod perfetto;

/// `CLOCK_MONOTONIC_RAW` in nanoseconds: the clock of the archives `fxt
/// record` and `fxt trace` write.
#[cfg(unix)]
pub fn raw_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid, writable timespec; the clock exists on every Unix
    // this builds for.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_RAW, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A trace under construction.
#[derive(Default)]
pub struct Trace {
    pub words: Vec<u64>,
}

impl Trace {
    /// An empty trace (no magic number).
    pub fn new() -> Trace {
        Trace::default()
    }

    /// Magic, provider info `(id, name)`, initialization.
    pub fn with_provider(id: u32, name: &str, ticks_per_second: u64) -> Trace {
        Trace::new()
            .push(&MagicNumber)
            .push(&ProviderInfo {
                provider_id: id,
                name,
            })
            .push(&Initialization { ticks_per_second })
    }

    /// Appends a string record for each `(index, text)`.
    pub fn strings(self, strings: &[(u16, &str)]) -> Trace {
        strings.iter().fold(self, |t, &(index, value)| {
            t.push(&StringRecord { index, value })
        })
    }

    /// Appends a record.
    pub fn push(mut self, record: &dyn EncodeDyn) -> Trace {
        record.append(&mut self.words);
        self
    }

    /// Appends raw words.
    pub fn raw(mut self, words: &[u64]) -> Trace {
        self.words.extend_from_slice(words);
        self
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    /// The trace file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        words_to_bytes(&self.words)
    }

    /// Writes the trace to a fresh temporary file.
    pub fn file(&self, name: &str) -> PathBuf {
        let path = tmp(name);
        std::fs::write(&path, self.bytes()).unwrap();
        path
    }
}

/// `Encode` made object safe for `Trace::push`.
pub trait EncodeDyn {
    fn append(&self, out: &mut Vec<u64>);
}

impl<T: Encode> EncodeDyn for T {
    fn append(&self, out: &mut Vec<u64>) {
        encode_into_vec(self, out).expect("record encodes");
    }
}

/// An event record.
pub fn event<'a>(
    kind: EventKind,
    timestamp: u64,
    thread: ThreadRef,
    category: StringRef<'a>,
    name: StringRef<'a>,
    args: &'a [Arg<'a>],
) -> Event<'a> {
    Event {
        kind,
        timestamp,
        thread,
        category,
        name,
        args,
    }
}

/// A fresh path in this test process's temporary directory.
pub fn tmp(name: &str) -> PathBuf {
    let dir = process_dir("fxt-cli-tests-");
    std::fs::create_dir_all(dir).unwrap();
    dir.join(name)
}

/// This test process's temporary folder, `PREFIX<pid>` in the system's.
/// The first call removes the folders of test processes that have exited:
/// a test binary has no hook at its exit, and without this every run would
/// leave its traces behind (hundreds of megabytes a run).
fn process_dir(prefix: &str) -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let temp = std::env::temp_dir();
        // Where processes cannot be looked up, nothing is removed.
        if std::path::Path::new("/proc/self").exists() {
            let entries = std::fs::read_dir(&temp).into_iter().flatten().flatten();
            for entry in entries {
                let name = entry.file_name();
                let pid = name.to_str().and_then(|n| n.strip_prefix(prefix));
                let exited = pid.is_some_and(|pid| {
                    pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(pid).exists()
                });
                if exited {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        temp.join(format!("{prefix}{}", std::process::id()))
    })
}

/// Runs `fxt` with `args` (stdin empty).
pub fn fxt(args: &[&str]) -> Output {
    fxt_stdin(args, &[])
}

/// Runs `fxt` with `args`, feeding `input` on stdin.
pub fn fxt_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fxt runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// Stdout as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

/// Stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("utf-8 stderr")
}

/// A path as `&str`.
pub fn p(path: &std::path::Path) -> &str {
    path.to_str().unwrap()
}

/// The golden trace most tests start from: provider "app" (id 1, 1 GHz),
/// strings 1 "demo", 2 "work", 3 "n", thread 1 = 10/11 named "main", a
/// duration complete event and an instant with inline refs.
pub fn golden() -> Trace {
    Trace::with_provider(1, "app", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "demo",
        })
        .push(&StringRecord {
            index: 2,
            value: "work",
        })
        .push(&StringRecord {
            index: 3,
            value: "n",
        })
        .push(&ThreadRecord {
            index: 1,
            process: 10,
            thread: 11,
        })
        .push(&KernelObject {
            koid: 11,
            object_type: OBJ_TYPE_THREAD,
            name: StringRef::Inline("main"),
            args: &[Arg::new(StringRef::Inline("process"), ArgValue::Koid(10))],
        })
        .push(&event(
            EventKind::DurationComplete { end: 1500 },
            1000,
            ThreadRef::Index(1),
            StringRef::Index(1),
            StringRef::Index(2),
            &[
                Arg::new(StringRef::Index(3), ArgValue::U64(3)),
                Arg::new(
                    StringRef::Inline("label"),
                    ArgValue::Str(StringRef::Inline("x")),
                ),
            ],
        ))
        .push(&event(
            EventKind::Instant,
            1200,
            ThreadRef::Inline {
                process: 10,
                thread: 11,
            },
            StringRef::Inline("demo"),
            StringRef::Inline("tick"),
            &[],
        ))
}

/// Runs `body` in a fresh engine session configured by `config` and
/// returns the trace it wrote. Sessions are process-wide: the tests of one
/// binary take them one at a time.
pub fn engine_trace(config: fxt::Config, body: impl FnOnce()) -> Vec<u8> {
    let (bytes, stats) = engine_session(config, body);
    assert_eq!(stats.records_dropped, 0, "{stats:?}");
    bytes
}

/// [`engine_trace`] for a session that takes CPU samples: a sample whose
/// signal arrives while its thread's writer is busy (registering, taking a
/// chunk, in the middle of a record) is dropped and counted, by design, so
/// a loaded machine may drop one; more than one in a hundred is a fault.
pub fn sampled_engine_trace(config: fxt::Config, body: impl FnOnce()) -> Vec<u8> {
    let (bytes, stats) = engine_session(config, body);
    assert!(stats.samples > 0, "{stats:?}");
    assert!(stats.records_dropped * 100 <= stats.samples, "{stats:?}");
    bytes
}

fn engine_session(config: fxt::Config, body: impl FnOnce()) -> (Vec<u8>, fxt::Stats) {
    static SESSION: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    let session = fxt::start(config).expect("session starts");
    body();
    session.finish_to_vec().expect("collected")
}

/// Burns `cpu_ms` of the calling thread's CPU time, in a function whose
/// name samples must show (`…::burn_in_sampled_program`).
#[inline(never)]
pub fn burn_in_sampled_program(cpu_ms: u64) -> u64 {
    let cpu = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is valid for the call.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let end = cpu() + cpu_ms * 1_000_000;
    let mut x = 1u64;
    while cpu() < end {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
    }
    x
}

/// The trace of a program that samples itself at 1 kHz and was built as
/// the `fxt` crate's users build it by default: without the symbolizer
/// (feature `symbolize`), so the trace names its modules, not its samples.
/// It burns CPU time inside a slice named "sampled phase".
pub fn unsymbolized_program_trace() -> Vec<u8> {
    let bytes = sampled_engine_trace(fxt::Config::new().sample_hz(1000), || {
        let _phase = fxt::trace_duration_scope!("work", "sampled phase");
        std::hint::black_box(burn_in_sampled_program(300));
    });
    let text = |name: &str| memchr_in(&bytes, name.as_bytes());
    assert!(text("fxt.sample") && text("fxt.modules"));
    assert!(
        !text("fxt.symbols") && !text("fxt.perfetto"),
        "the program named its samples: is feature `symbolize` on?"
    );
    bytes
}

fn memchr_in(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A program's worth of the engine's record kinds, on two threads: nested
/// durations (scopes and begin/end pairs), instants with arguments of
/// several types, counters, async and flow events, a log record and a
/// small blob.
pub fn engine_workload() {
    fxt::set_thread_name("main");
    fn nest(depth: u32) {
        let _d = fxt::trace_duration_scope!("work", "nest", "depth" => depth);
        if depth > 0 {
            nest(depth - 1);
            fxt::trace_instant!("work", "leaf", "depth" => depth, "label" => "text", "ok" => true);
        }
    }
    for i in 0..20u64 {
        nest(4);
        fxt::trace_counter!("mem", "heap", "used" => i * 10, "free" => 1.5f64);
        fxt::trace_duration_begin!("io", "flush", "bytes" => 4096u32);
        fxt::trace_duration_end!("io", "flush");
    }
    let id = fxt::next_async_id();
    fxt::trace_async_begin!("rpc", "request", id = id, "method" => "get");
    fxt::trace_flow_begin!("ipc", "message", id = id);
    std::thread::spawn(move || {
        fxt::set_thread_name("helper");
        let _d = fxt::trace_duration_scope!("ipc", "receive");
        fxt::trace_flow_end!("ipc", "message", id = id);
        fxt::trace_async_end!("rpc", "request", id = id);
        nest(3);
    })
    .join()
    .unwrap();
    fxt::trace_log!("app", "done after {} rounds", 20);
    fxt::trace_blob!("app", "small", [7u8; 100]);
}

/// A Python interpreter that imports every module of `packages` (module
/// name, pinned pip requirement): `$FXT_PYTHON` if set (CI installs them
/// there), else the virtual environment of the cargo target directory
/// (`target/pyfxt-venv`, which the root package's `python_reader` test
/// also uses), created and completed here if needed. Fails, never skips.
pub fn python_with(packages: &[(&str, &str)]) -> PathBuf {
    let imports = |python: &std::path::Path| {
        let script = packages
            .iter()
            .map(|(m, _)| format!("import {m}"))
            .collect::<Vec<_>>()
            .join("; ");
        Command::new(python)
            .args(["-c", &script])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(p) = std::env::var_os("FXT_PYTHON") {
        let python = PathBuf::from(p);
        assert!(
            imports(&python),
            "FXT_PYTHON={} cannot import {packages:?}",
            python.display()
        );
        return python;
    }
    // Test binaries of this package run one after the other, but the
    // tests of one binary in parallel: one installs, the others wait.
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp dir has a parent")
        .join("pyfxt-venv");
    let python = venv.join("bin").join("python");
    if imports(&python) {
        return python;
    }
    if !python.exists() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .is_ok_and(|s| s.success());
        assert!(made, "cannot create {} (set FXT_PYTHON)", venv.display());
    }
    let installed = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(packages.iter().map(|(_, spec)| spec))
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        installed && imports(&python),
        "cannot install {packages:?} into {} (set FXT_PYTHON)",
        venv.display()
    );
    python
}

/// A trace of about 10 MB that the reading commands cut into several
/// ranges (one per thread): two providers taking turns by provider section
/// records, each with string and thread tables defined as it goes (and a
/// string redefined half-way), durations nested deep and long (an outer
/// one open from the first record to the last), complete, counter, async
/// and instant events, ends with no begin, and thread names given half-way.
pub fn long_trace() -> Trace {
    let mut t = Trace::with_provider(1, "first", 1_000_000_000)
        .push(&ProviderInfo {
            provider_id: 2,
            name: "second",
        })
        .push(&Initialization {
            ticks_per_second: 3_000_000_000,
        });
    for provider in [1, 2] {
        t = t.push(&ProviderSection {
            provider_id: provider,
        });
        for (index, value) in [(1, "cat"), (2, "outer"), (3, "inner"), (4, "n")] {
            t = t.push(&StringRecord { index, value });
        }
        t = t.push(&ThreadRecord {
            index: 1,
            process: 10 * u64::from(provider),
            thread: 11,
        });
    }
    let outer = |kind, ts, thread| {
        event(
            kind,
            ts,
            thread,
            StringRef::Index(1),
            StringRef::Index(2),
            &[],
        )
    };
    t = t.push(&outer(EventKind::DurationBegin, 1, ThreadRef::Index(1)));
    let mut ts = 10;
    for i in 0..60_000u64 {
        let provider = 1 + (i / 1000 % 2) as u32;
        if i % 1000 == 0 {
            t = t.push(&ProviderSection {
                provider_id: provider,
            });
        }
        if i == 30_000 {
            let name = StringRecord {
                index: 3,
                value: "inner, renamed half-way through the trace",
            };
            t = t.push(&name).push(&ThreadRecord {
                index: 2,
                process: 10 * u64::from(provider),
                thread: 12,
            });
        }
        let thread = ThreadRef::Index(1 + (i % 3 == 0 && i > 30_000) as u8);
        let args = [Arg::new(StringRef::Index(4), ArgValue::U64(i))];
        let inner = |kind, ts| {
            event(
                kind,
                ts,
                thread,
                StringRef::Index(1),
                StringRef::Index(3),
                &args,
            )
        };
        ts += 7;
        t = t.push(&inner(EventKind::DurationBegin, ts));
        if i % 97 == 0 {
            // Opened here, closed a few thousand records later.
            t = t.push(&outer(EventKind::DurationBegin, ts + 1, thread));
        }
        if i % 97 == 50 && i > 97 {
            t = t.push(&outer(EventKind::DurationEnd, ts + 2, thread));
        }
        t = t.push(&inner(EventKind::Counter { id: 1 }, ts + 3));
        t = t.push(&inner(EventKind::AsyncBegin { id: i }, ts + 3));
        t = t.push(&inner(EventKind::DurationComplete { end: ts + 5 }, ts + 4));
        t = t.push(&inner(EventKind::AsyncEnd { id: i }, ts + 5));
        t = t.push(&inner(EventKind::DurationEnd, ts + 6));
        if i % 5000 == 1 {
            t = t.push(&inner(EventKind::DurationEnd, ts + 6)); // no begin
            t = t.push(&KernelObject {
                koid: 11,
                object_type: 2,
                name: StringRef::Inline("worker"),
                args: &[Arg::new(
                    StringRef::Inline("process"),
                    ArgValue::Koid(10 * u64::from(provider)),
                )],
            });
        }
    }
    t.push(&ProviderSection { provider_id: 1 }).push(&outer(
        EventKind::DurationEnd,
        ts + 100,
        ThreadRef::Index(1),
    ))
}

/// Runs `fxt` with `args`, reading on `threads` threads (`FXT_THREADS`).
pub fn fxt_threads(threads: usize, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(args)
        .env("FXT_THREADS", threads.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("fxt runs")
}

/// Asserts that `fxt args` (`{}` standing for the trace) prints the same,
/// byte for byte, and exits alike, on 1 to 4 threads, on [`long_trace`].
pub fn assert_same_on_any_threads(name: &str, args: &[&str]) {
    let bytes = long_trace().bytes();
    assert!(bytes.len() > 8 << 20, "big enough to be cut");
    let path = tmp(name);
    std::fs::write(&path, &bytes).unwrap();
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { p(&path) } else { a })
        .collect();
    let one = fxt_threads(1, &args);
    assert!(!one.stdout.is_empty(), "{}", stderr(&one));
    for threads in 2..=4 {
        let many = fxt_threads(threads, &args);
        assert_eq!(stdout(&many), stdout(&one), "stdout on {threads} threads");
        assert_eq!(stderr(&many), stderr(&one), "stderr on {threads} threads");
        assert_eq!(many.status.code(), one.status.code());
    }
    let _ = std::fs::remove_file(&path);
}

/// Asserts that `fxt args` (`{}` standing for [`long_trace`]) prints the
/// same, byte for byte, and exits alike, on 2 and 5 threads cutting the
/// trace into ranges of 50 kB and 1 MB (durations open across many cuts)
/// as on one thread.
pub fn assert_same_when_long_cut(name: &str, args: &[&str]) {
    let path = long_trace().file(name);
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { p(&path) } else { a })
        .collect();
    let one = fxt_threads(1, &args);
    assert!(!one.stdout.is_empty(), "{}", stderr(&one));
    for range_bytes in [50_000, 1 << 20] {
        for threads in [2, 5] {
            let many = fxt_cut(threads, range_bytes, &args);
            let what = format!("{threads} threads, ranges of {range_bytes} bytes");
            assert!(stdout(&many) == stdout(&one), "stdout on {what}");
            assert_eq!(stderr(&many), stderr(&one), "stderr on {what}");
            assert_eq!(many.status.code(), one.status.code(), "{what}");
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// A string record whose stream is not UTF-8, its size intact: a reader
/// reports it and skips it.
pub const MALFORMED_RECORD: [u64; 2] = [0x0000_0001_0002_0022 | (2 << 32), 0xffff];

/// Appends a split blob group by hand: an instant named `name` whose
/// arguments announce `size` bytes in `parts` parts, then a blob record
/// per slice of `blobs` (name, payload), so that a test can write groups
/// that match, run short, run long or break.
pub fn blob_group(t: Trace, name: &str, size: u64, parts: u64, blobs: &[(&str, &[u8])]) -> Trace {
    let args = [
        Arg::new(StringRef::Inline("fxt.blob.size"), ArgValue::U64(size)),
        Arg::new(StringRef::Inline("fxt.blob.parts"), ArgValue::U64(parts)),
    ];
    let thread = ThreadRef::Index(1);
    let mut t = t.push(&event(
        EventKind::Instant,
        size,
        thread,
        StringRef::Index(1),
        StringRef::Inline(name),
        &args,
    ));
    for (blob_name, payload) in blobs {
        t = t.push(&Blob {
            name: StringRef::Inline(blob_name),
            blob_type: BlobType::Data,
            payload,
        });
    }
    t
}

/// A trace of about a megabyte for cutting at many places
/// (`FXT_RANGE_BYTES`): two providers with indexed strings and threads
/// (one redefined half-way), open duration begins, logs, thread names,
/// and split blob groups of 1 to 40 parts — whole, back to back, followed
/// by a plain blob, cut short by an event, by a part of another name or
/// by a malformed record, announcing the wrong size — and real
/// [`SplitBlob`]s of full parts; it ends in a record cut short.
pub fn cut_trace() -> Trace {
    let mut t = Trace::with_provider(1, "one", 1_000_000_000)
        .push(&ProviderInfo {
            provider_id: 2,
            name: "two",
        })
        .push(&Initialization {
            ticks_per_second: 3_000_000_000,
        });
    for provider in [1, 2] {
        t = t.push(&ProviderSection {
            provider_id: provider,
        });
        for (index, value) in [(1, "cat"), (2, "span"), (3, "n")] {
            t = t.push(&StringRecord { index, value });
        }
        t = t.push(&ThreadRecord {
            index: 1,
            process: 10 * u64::from(provider),
            thread: 11,
        });
    }
    let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let thread = ThreadRef::Index(1);
    for i in 0..240u64 {
        if i % 30 == 0 {
            t = t.push(&ProviderSection {
                provider_id: 1 + (i / 30 % 2) as u32,
            });
        }
        if i == 120 {
            t = t.push(&StringRecord {
                index: 2,
                value: "span, renamed half-way",
            });
        }
        let args = [Arg::new(StringRef::Index(3), ArgValue::U64(i))];
        let span = |kind, ts| {
            event(
                kind,
                ts,
                thread,
                StringRef::Index(1),
                StringRef::Index(2),
                &args,
            )
        };
        t = t.push(&span(EventKind::DurationBegin, 10 * i));
        let parts = 1 + (i * 7 % 40) as usize;
        let part = 8 + (i * 13 % 200) as usize;
        let slices: Vec<(&str, &[u8])> = (0..parts)
            .map(|p| ("img", &bytes[p * part..(p + 1) * part]))
            .collect();
        let size = (parts * part) as u64;
        t = match i % 9 {
            0 | 1 => blob_group(t, "img", size, parts as u64, &slices),
            2 => {
                let t = blob_group(t, "img", size, parts as u64, &slices);
                let t = blob_group(t, "img", size, parts as u64, &slices);
                t.push(&Blob {
                    name: StringRef::Inline("img"),
                    blob_type: BlobType::Data,
                    payload: &bytes[..part],
                })
            }
            3 => blob_group(t, "img", size + 8, parts as u64 + 1, &slices)
                .push(&span(EventKind::Instant, 10 * i + 1)),
            4 => {
                let mut other = slices.clone();
                other[parts / 2].0 = "other";
                blob_group(t, "img", size, parts as u64, &other)
            }
            5 => {
                let t = blob_group(t, "img", size, parts as u64, &slices[..parts / 2]);
                blob_group(t.raw(&MALFORMED_RECORD), "x", 0, 1, &[]).push(&Blob {
                    name: StringRef::Inline("img"),
                    blob_type: BlobType::Data,
                    payload: slices[parts / 2].1,
                })
            }
            6 => blob_group(t, "img", size - 1, parts as u64, &slices),
            7 => t.push(&SplitBlob::new(
                StringRef::Index(1),
                StringRef::Inline("big"),
                10 * i,
                thread,
                &bytes[..(i as usize * 331) % 20_000 + 1],
            )),
            _ => t
                .push(&Log {
                    timestamp: 10 * i,
                    thread,
                    message: "log line",
                })
                .push(&KernelObject {
                    koid: 11,
                    object_type: 2,
                    name: StringRef::Inline("worker"),
                    args: &[Arg::new(StringRef::Inline("process"), ArgValue::Koid(10))],
                }),
        };
    }
    // The last record, cut short: the file ends inside it.
    let last = encode_to_vec(&event(
        EventKind::Instant,
        1,
        thread,
        StringRef::Index(1),
        StringRef::Inline("cut short"),
        &[],
    ))
    .unwrap();
    t.raw(&last[..last.len() - 1])
}

/// Runs `fxt` with `args` on `threads` threads cutting the input into
/// ranges of `range_bytes` (`FXT_RANGE_BYTES`).
pub fn fxt_cut(threads: usize, range_bytes: usize, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(args)
        .env("FXT_THREADS", threads.to_string())
        .env("FXT_RANGE_BYTES", range_bytes.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("fxt runs")
}

/// Asserts that `fxt args` (`{}` standing for [`cut_trace`]) prints the
/// same, byte for byte, on stdout, stderr and into `output` if given, and
/// exits alike, on 2 and 5 threads cutting the trace into ranges of a
/// hundred bytes to a few ten thousand (every blob group straddles some
/// cut) as on one thread; returns the output on one thread and what it
/// wrote into `output`.
pub fn assert_same_when_cut(
    name: &str,
    args: &[&str],
    output: Option<&std::path::Path>,
) -> (Output, Vec<u8>) {
    let path = cut_trace().file(name);
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { p(&path) } else { a })
        .collect();
    let written = || {
        output
            .map(|o| std::fs::read(o).unwrap())
            .unwrap_or_default()
    };
    let one = fxt_threads(1, &args);
    let one_written = written();
    assert!(
        !one.stdout.is_empty() || !one_written.is_empty(),
        "{}",
        stderr(&one)
    );
    for range_bytes in [97, 1000, 6000, 50_000] {
        for threads in [2, 5] {
            let many = fxt_cut(threads, range_bytes, &args);
            let what = format!("{threads} threads, ranges of {range_bytes} bytes");
            assert!(stdout(&many) == stdout(&one), "stdout on {what}");
            assert!(written() == one_written, "output file on {what}");
            assert_eq!(stderr(&many), stderr(&one), "stderr on {what}");
            assert_eq!(many.status.code(), one.status.code(), "{what}");
        }
    }
    let _ = std::fs::remove_file(&path);
    (one, one_written)
}

/// A trace whose string indices change meaning between events of the
/// same shape (for the commands that keep each index's printed bytes):
/// index 1 redefined (to a text that needs escaping), a second provider
/// with fresh tables (its events' indices undefined), a switch back to the
/// first; then a split blob group whose argument names are by index.
pub fn redefined_strings_trace() -> Trace {
    let thread = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let args = [Arg::new(StringRef::Index(2), ArgValue::U64(7))];
    let ev = |ts| {
        event(
            EventKind::Instant,
            ts,
            thread,
            StringRef::Index(1),
            StringRef::Index(1),
            &args,
        )
    };
    let group_args = [
        Arg::new(StringRef::Index(3), ArgValue::U64(4)),
        Arg::new(StringRef::Index(4), ArgValue::U64(1)),
    ];
    Trace::with_provider(1, "a", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "x",
        })
        .push(&StringRecord {
            index: 2,
            value: "k",
        })
        .push(&ev(1))
        .push(&StringRecord {
            index: 1,
            value: "y\"q",
        })
        .push(&ev(2))
        .push(&ProviderInfo {
            provider_id: 2,
            name: "b",
        })
        .push(&ev(3))
        .push(&ProviderSection { provider_id: 1 })
        .push(&ev(4))
        .push(&StringRecord {
            index: 3,
            value: "fxt.blob.size",
        })
        .push(&StringRecord {
            index: 4,
            value: "fxt.blob.parts",
        })
        .push(&event(
            EventKind::Instant,
            5,
            thread,
            StringRef::Index(2),
            StringRef::Index(2),
            &group_args,
        ))
        .push(&Blob {
            name: StringRef::Index(2),
            blob_type: BlobType::Data,
            payload: b"abcd",
        })
}

/// `fxt flame --samples --folded TRACE ARGS`: folded stack → samples.
pub fn folded_samples(
    trace: &std::path::Path,
    args: &[&str],
) -> std::collections::BTreeMap<String, u64> {
    let out = fxt(&[&["flame", "--samples", "--folded", p(trace)], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("a folded line: STACK COUNT");
            (stack.to_owned(), n.parse().expect("a count"))
        })
        .collect()
}

/// Of the CPU samples of `trace` whose stack holds a frame named
/// `function`: how many there are, and how many of them were taken inside
/// a slice named `span` on their own thread, as `fxt flame --samples
/// --inside` joins them (the join of the program's own trace).
pub fn samples_in_function(trace: &std::path::Path, function: &str, span: &str) -> (u64, u64) {
    let count = |args: &[&str]| -> u64 {
        folded_samples(trace, args)
            .iter()
            .filter(|(stack, _)| stack.split(';').any(|f| f == function))
            .map(|(_, n)| n)
            .sum()
    };
    (count(&[]), count(&["--inside", span]))
}

/// Protobuf messages to read Perfetto's sample packets back (only what is
/// checked).
mod perfetto_read {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trace {
        #[prost(message, repeated, tag = "1")]
        pub packet: Vec<Packet>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Packet {
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(message, optional, tag = "66")]
        pub perf_sample: Option<Sample>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint32, optional, tag = "2")]
        pub pid: Option<u32>,
        #[prost(uint32, optional, tag = "3")]
        pub tid: Option<u32>,
    }
}

/// A CPU sample's process, thread and time in nanoseconds.
pub type SampleAt = (u64, u64, u64);

/// The CPU samples of `trace` as (pid, tid, nanoseconds), sorted: first as
/// its `fxt.sample` records say (each at its provider's ticks per second),
/// then as the `PerfSample` packets of its `fxt.perfetto` records say.
/// Equal when Perfetto places every sample where the trace does.
pub fn fxt_and_perfetto_samples(trace: &[u8]) -> (Vec<SampleAt>, Vec<SampleAt>) {
    use fxt_format::decode::{decode_all, BlobType as DBlobType, Record};
    use prost::Message;
    let scan = fxt_symbols::scan::TraceSamples::read(trace);
    let mut fxt: Vec<_> = scan
        .samples
        .iter()
        .map(|s| {
            // As Perfetto converts the FXT records' ticks, and so as the
            // packets must be stamped.
            let ns = fxt_format::time::ticks_to_ns_as_perfetto(s.timestamp, scan.ticks_per_second);
            (s.pid, s.tid, ns)
        })
        .collect();
    let mut perfetto = Vec::new();
    for record in decode_all(trace).unwrap() {
        let Record::Blob(blob) = record else { continue };
        if blob.blob_type != DBlobType::Perfetto || blob.name != "fxt.perfetto" {
            continue;
        }
        let packets = perfetto_read::Trace::decode(blob.payload.as_slice()).unwrap();
        for packet in packets.packet {
            if let Some(s) = packet.perf_sample {
                let id = |v: Option<u32>| u64::from(v.unwrap_or(0));
                perfetto.push((id(s.pid), id(s.tid), packet.timestamp.unwrap_or(0)));
            }
        }
    }
    fxt.sort_unstable();
    perfetto.sort_unstable();
    (fxt, perfetto)
}

/// Of the CPU samples of `trace` (an archive of `fxt record` or `fxt
/// trace`: every provider at the same ticks per second) whose stack holds
/// a frame named `function`, on a thread with slices named `span`: how
/// many were taken between the first begin and the last end of those
/// slices on their thread, and how many of these inside one of them. A
/// window that opens or closes while the function runs records its
/// samples but not its slice; between the first and the last slice, each
/// call of the function was inside one.
pub fn samples_between_slices(trace: &[u8], function: &str, span: &str) -> (u64, u64) {
    use fxt_format::decode::{decode_all, EventKind, Record, Thread};
    use std::collections::{HashMap, HashSet};
    let scan = fxt_symbols::scan::TraceSamples::read(trace);
    let named: HashSet<(u64, u64)> = scan
        .symbols
        .iter()
        .flat_map(|r| r.symbols.iter().map(move |s| (r.pid, s)))
        .filter(|(_, s)| s.frames.iter().any(|f| f.function == function))
        .map(|(pid, s)| (pid, s.address))
        .collect();
    let mut open: HashMap<(u64, u64), Vec<u64>> = HashMap::new();
    let mut slices: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    for record in decode_all(trace).unwrap() {
        let Record::Event(e) = record else { continue };
        let (Thread::Known { process, thread }, Some(name)) = (e.thread, e.name.as_str()) else {
            continue;
        };
        if name != span {
            continue;
        }
        let key = (process, thread);
        match e.kind {
            EventKind::DurationBegin => open.entry(key).or_default().push(e.timestamp),
            EventKind::DurationEnd => {
                if let Some(begin) = open.get_mut(&key).and_then(Vec::pop) {
                    slices.entry(key).or_default().push((begin, e.timestamp));
                }
            }
            EventKind::DurationComplete { end } => {
                slices.entry(key).or_default().push((e.timestamp, end))
            }
            _ => {}
        }
    }
    let (mut between, mut inside) = (0, 0);
    for s in &scan.samples {
        let in_function = s.frames.iter().any(|a| named.contains(&(s.pid, *a)));
        let Some(slices) = slices.get(&(s.pid, s.tid)).filter(|_| in_function) else {
            continue;
        };
        let first = slices.iter().map(|s| s.0).min().unwrap_or(u64::MAX);
        let last = slices.iter().map(|s| s.1).max().unwrap_or(0);
        if (first..=last).contains(&s.timestamp) {
            between += 1;
            inside += u64::from(slices.iter().any(|(b, e)| (b..=e).contains(&&s.timestamp)));
        }
    }
    (between, inside)
}

/// The threads of one trace in one round: each index's koids, and the
/// name.
type Round<'a> = ([(u64, u64); 4], &'a str);

/// Thread indices 1, 17 and 65 (in one slot of the pieces kept by thread,
/// 16 or 64 of them) and two threads of inline koids whose thread koids
/// are 1 and 17, taking turns with index 5 (alone in its slot, so that a
/// piece of it is kept from one event of it to the next); then indices
/// 1, 17 and 5 defined anew (1 taking 17's koids, 5 new ones) with no
/// string defined (only the threads epoch changes), then the name defined
/// anew with no thread (only the strings epoch changes). Pieces kept
/// under a thread index that ignored either epoch, or that took an index
/// for koids or another index, would print another thread or name.
/// Returns the trace and, per event, its timestamp, its thread's koids and
/// its name.
pub fn indices_and_koids_trace(args: &[Arg<'_>]) -> (Trace, Vec<(u64, u64, u64, &'static str)>) {
    let mut t = Trace::with_provider(1, "a", 1_000_000_000);
    for (index, value) in [(1, "c"), (2, "k"), (3, "n")] {
        t = t.push(&StringRecord { index, value });
    }
    let indices = [1u8, 17, 65, 5];
    let rounds: [Round<'static>; 3] = [
        ([(1, 17), (1, 1), (2, 65), (4, 5)], "n"),
        ([(1, 1), (3, 17), (2, 65), (4, 50)], "n"),
        ([(1, 1), (3, 17), (2, 65), (4, 50)], "m"),
    ];
    let mut events = Vec::new();
    let mut ts = 0;
    for (round, (koids, name)) in rounds.into_iter().enumerate() {
        if round < 2 {
            for (&index, &(process, thread)) in indices.iter().zip(&koids) {
                t = t.push(&ThreadRecord {
                    index,
                    process,
                    thread,
                });
            }
        } else {
            t = t.push(&StringRecord {
                index: 3,
                value: name,
            });
        }
        for i in 0..36 {
            ts += 10;
            let (thread, (process, koid)) = match i % 6 {
                n @ 0..=3 => (ThreadRef::Index(indices[n]), koids[n]),
                n => {
                    let koid = if n == 4 { 1 } else { 17 };
                    (
                        ThreadRef::Inline {
                            process: 7,
                            thread: koid,
                        },
                        (7, koid),
                    )
                }
            };
            // Index 5's events alternate with and without arguments.
            let with_args = if i % 4 < 2 { args } else { &[][..] };
            t = t.push(&event(
                EventKind::Instant,
                ts,
                thread,
                StringRef::Index(1),
                StringRef::Index(3),
                with_args,
            ));
            events.push((ts, process, koid, name));
        }
    }
    (t, events)
}
