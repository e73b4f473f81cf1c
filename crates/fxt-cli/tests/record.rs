//! `fxt record -- CMD`: a process tree traced into one archive.
//!
//! ```text
//! cargo test -p fxt-cli --test record
//! ```
//!
//! The test binary is also the traced program (environment variable
//! `FXT_TREE_ROLE`): the root starts two children at the same time and a
//! victim; each child starts a leaf (a grandchild of the root); every one
//! of them traces with `Config::from_env()` from two threads (`EVENTS`
//! instants `ev` each, with arguments `pid` and `seq`) plus one `mark`
//! instant carrying the `CLOCK_MONOTONIC_RAW` time read just before it.
//! The root kills the victim with SIGKILL once it published its events,
//! waits for its children and exits with status 3. The archive must hold
//! six providers named after the process, each with its own pid and every
//! event it wrote, on one time base (each `mark` within 10 µs of the time
//! it carries), read alike by our decoder and the PyPI `fxt` parser.

mod cli_support;

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cli_support::raw_ns;
use fxt::trace_instant;
use fxt_format::decode::{decode_all, ArgValue, EventKind, Record, Thread};

const ROLE: &str = "FXT_TREE_ROLE";
const EVENTS: u64 = 2_000;
const THREADS: u64 = 2;
const MARKS: usize = 8;

/// Traces this process's share: marks and `THREADS` × `EVENTS` instants.
fn trace_share() {
    let pid = u64::from(std::process::id());
    marks();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(move || {
                for seq in 0..EVENTS {
                    trace_instant!("tree", "ev", "pid" => pid, "seq" => seq);
                }
            });
        }
    });
    marks();
}

/// Instants that carry the raw clock's time read just before them: the
/// event's timestamp is that time or later (later when preempted between
/// the two reads), so the smallest difference measures the time base.
fn marks() {
    for _ in 0..MARKS {
        trace_instant!("tree", "mark", "raw_ns" => raw_ns());
    }
}

fn spawn_role(role: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .env(ROLE, role)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn a role")
}

fn role(role: &str) -> ! {
    let session = fxt::start(fxt::Config::from_env()).expect("start");
    match role {
        "root" => {
            let children = [spawn_role("child"), spawn_role("child")];
            let mut victim = spawn_role("victim");
            trace_share();
            let mut line = String::new();
            BufReader::new(victim.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert_eq!(line.trim(), "published");
            victim.kill().unwrap();
            victim.wait().unwrap();
            for mut c in children {
                assert!(c.wait().unwrap().success());
            }
            session.finish().expect("finish");
            std::process::exit(3);
        }
        "child" => {
            let mut leaf = spawn_role("leaf");
            trace_share();
            assert!(leaf.wait().unwrap().success());
        }
        "leaf" => trace_share(),
        "victim" => {
            trace_share();
            println!("published");
            std::thread::sleep(Duration::from_secs(60));
        }
        "napper" => {
            // Busy CPUs: on an idle CPU the kernel sometimes records
            // neither the wakeup nor the switch from the idle task.
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let spinners: Vec<_> = (0..2)
                .map(|_| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(5));
            for _ in 0..3 {
                nap();
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            for s in spinners {
                s.join().unwrap();
            }
        }
        "spinner" => {
            // About 100 ms of CPU time inside one span, nothing else recorded.
            let _span = fxt::trace_duration_scope!("tree", "spin");
            spin_cpu(100_000_000);
        }
        "sleeper" => {
            println!("ready");
            std::thread::sleep(Duration::from_secs(60));
        }
        r => panic!("unknown role {r}"),
    }
    session.finish().expect("finish");
    std::process::exit(0)
}

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

/// Burns `ns` of the thread's CPU time: a function of its own, so that a
/// sample taken in it is known to lie inside the span around its call.
#[inline(never)]
fn spin_cpu(ns: u64) {
    let start = cpu_ns();
    let mut x = 1u64;
    while cpu_ns() - start < ns {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// A traced function that sleeps 10 ms.
#[fxt::trace_duration(category = "tree")]
fn nap() {
    std::thread::sleep(Duration::from_millis(10));
}

fn fxt_cmd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fxt"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("record-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Per provider of an archive: its name, pid (koid of its threads'
/// process), `ev` count, and mark errors.
#[derive(Debug, Default)]
struct Provider {
    name: String,
    pids: Vec<u64>,
    events: u64,
    seqs: HashMap<(u64, u64), u64>,
    marks: Vec<i64>,
}

fn providers(bytes: &[u8]) -> BTreeMap<u32, Provider> {
    let records = decode_all(bytes).expect("the archive decodes");
    let mut out: BTreeMap<u32, Provider> = BTreeMap::new();
    let mut current = None;
    for r in records {
        match r {
            Record::ProviderInfo { provider_id, name } => {
                out.entry(provider_id).or_default().name = name;
                current = Some(provider_id);
            }
            Record::ProviderSection { provider_id } => current = Some(provider_id),
            Record::Initialization { ticks_per_second } => {
                assert_eq!(ticks_per_second, 1_000_000_000, "one time base: ns");
            }
            Record::Event(e) if e.kind == EventKind::Instant => {
                let p = out.get_mut(&current.expect("a provider")).unwrap();
                let Thread::Known { process, thread } = e.thread else {
                    panic!("undefined thread ref: {e:?}")
                };
                if !p.pids.contains(&process) {
                    p.pids.push(process);
                }
                let arg = |n: &str| {
                    e.args.iter().find(|a| a.name == n).map(|a| match a.value {
                        ArgValue::U64(v) => v,
                        ref v => panic!("{v:?}"),
                    })
                };
                match e.name.as_str() {
                    Some("ev") => {
                        assert_eq!(arg("pid"), Some(process));
                        p.events += 1;
                        *p.seqs.entry((thread, arg("seq").unwrap())).or_default() += 1;
                    }
                    Some("mark") => {
                        p.marks
                            .push(e.timestamp as i64 - arg("raw_ns").unwrap() as i64);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    out
}

/// The PyPI `fxt` parser's count of `ev` instants per provider id.
fn python_counts(path: &Path) -> BTreeMap<u32, u64> {
    let python = python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/dump.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut counts = BTreeMap::new();
    for (id, p) in v["providers"].as_object().unwrap() {
        let n = p["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["record"] == "InstantEventRecord" && r["name"] == "ev")
            .count() as u64;
        counts.insert(id.parse().unwrap(), n);
    }
    counts
}

/// `$FXT_PYTHON`, else the virtual environment the root package's
/// `python_reader` test creates (`target/pyfxt-venv`), created here if
/// missing.
fn python() -> PathBuf {
    cli_support::python_with(&[("fxt", "fxt==0.3.0")])
}

fn process_tree() {
    let dir = scratch("tree");
    let out = dir.join("tree.fxt");
    let result = fxt_cmd()
        .args(["record", "--buffer", "8M", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "root")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(
        result.status.code(),
        Some(3),
        "exit status passed through: {stderr}"
    );
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("fxt record: 6 processes, "))
        .unwrap_or_else(|| panic!("summary: {stderr}"));
    assert!(summary.contains(" 0 dropped -> "), "{summary}");
    // The victim did not finish its session.
    assert!(stderr.contains("did not finish"), "{stderr}");

    let bytes = std::fs::read(&out).unwrap();
    let providers = providers(&bytes);
    assert_eq!(providers.len(), 6, "{providers:#?}");
    let records: u64 = summary
        .split(", ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" records"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(records as usize, decode_all(&bytes).unwrap().len());
    let comm: String = std::env::current_exe()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .chars()
        .take(15)
        .collect();
    let mut pids = Vec::new();
    for p in providers.values() {
        assert_eq!(p.name, comm, "named after the process");
        assert_eq!(p.pids.len(), 1, "one process per provider: {p:?}");
        pids.push(p.pids[0]);
        // Every event of every thread, once (the victim's too: it was
        // killed after publishing them).
        assert_eq!(p.events, THREADS * EVENTS);
        assert_eq!(p.seqs.len() as u64, THREADS * EVENTS);
        assert!(p.seqs.values().all(|&n| n == 1));
        assert_eq!(p.marks.len(), 2 * MARKS);
        let off = p.marks.iter().min().unwrap();
        assert!(off.abs() < 10_000, "one time base: marks off by {off} ns");
    }
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 6, "real, distinct pids");

    let ours: BTreeMap<u32, u64> = providers.iter().map(|(&id, p)| (id, p.events)).collect();
    assert_eq!(python_counts(&out), ours, "the PyPI parser reads the same");
    // The spool is gone.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("tree.fxt")]);
}

/// SIGTERM sent to the recorder reaches the command, and the archive is
/// still written; the recorder ends by the same signal.
fn sigterm_forwarded() {
    let dir = scratch("sigterm");
    let out = dir.join("t.fxt");
    let mut rec = fxt_cmd()
        .args(["record", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "sleeper")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(rec.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(rec.id() as i32, libc::SIGTERM) };
    let status = rec.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let providers = providers(&std::fs::read(&out).unwrap());
    assert_eq!(providers.len(), 1);
}

/// A spool left by a recorder killed with SIGKILL merges later.
fn from_spool() {
    let dir = scratch("spool");
    let out = dir.join("late.fxt");
    let mut rec = fxt_cmd()
        .args(["record", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "victim")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(rec.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "published");
    rec.kill().unwrap();
    rec.wait().unwrap();
    let spool = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".fxt-record.")
        })
        .expect("the spool is left");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&spool).unwrap().permissions().mode() & 0o777,
        0o700,
        "private"
    );
    let merged = fxt_cmd()
        .args(["record", "--from-spool"])
        .arg(&spool)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(merged.status.success());
    let providers = providers(&std::fs::read(&out).unwrap());
    assert_eq!(providers.len(), 1);
    let p = providers.values().next().unwrap();
    assert_eq!(p.events, THREADS * EVENTS);
    let off = p.marks.iter().min().unwrap();
    assert!(off.abs() < 10_000, "marks off by {off} ns");
    // The victim (the recorder's orphan) is still sleeping: end it.
    let pid = p.pids[0] as i32;
    // SAFETY: kill(2) of the orphaned test process.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// The recorder's options reach every process: `--categories` leaves out
/// what the processes record in other categories (here under `--mode
/// streaming`, whose streamed files merge like the crash-safe ones).
fn options_apply() {
    let dir = scratch("options");
    let out = dir.join("o.fxt");
    let r = fxt_cmd()
        .args([
            "record",
            "--categories",
            "other",
            "--mode",
            "streaming",
            "-o",
        ])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "child")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(stderr.contains("fxt record: 2 processes, "), "{stderr}");
    let providers = providers(&std::fs::read(&out).unwrap());
    assert_eq!(providers.len(), 2);
    assert!(providers
        .values()
        .all(|p| p.events == 0 && p.marks.is_empty()));
}

/// A relative `-o`, and a command that changes folder before it traces
/// (as daemons do): the spool handed to it still names the recorder's
/// folder, so its trace is in the archive and nothing is left where it
/// went.
fn relative_output_and_cd() {
    let dir = scratch("relative");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let script = format!(
        "cd '{}' && exec '{}'",
        elsewhere.display(),
        std::env::current_exe().unwrap().display()
    );
    let r = fxt_cmd()
        .args(["record", "-o", "rec.fxt", "--", "sh", "-c", &script])
        .env(ROLE, "leaf")
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(stderr.contains("fxt record: 1 processes, "), "{stderr}");
    let providers = providers(&std::fs::read(dir.join("rec.fxt")).unwrap());
    assert_eq!(providers.len(), 1, "{providers:?}");
    assert_eq!(providers.values().next().unwrap().events, THREADS * EVENTS);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

/// `--sample N` reaches the recorded process (`FXT_SAMPLE_HZ`, over its
/// own config): its CPU samples are in the archive, on its own pid, named
/// by the symbols and Perfetto packets its session appended at finish.
fn sample_option() {
    let dir = scratch("sample");
    let out = dir.join("s.fxt");
    let r = fxt_cmd()
        .args(["record", "--sample", "1000", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "spinner")
        .env_remove("FXT_SAMPLE_HZ")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let records = decode_all(&std::fs::read(&out).unwrap()).unwrap();
    let pids: Vec<u64> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) if b.name.as_str() == Some("fxt.sample") => {
                Some(u64::from_le_bytes(b.payload[8..16].try_into().unwrap()))
            }
            _ => None,
        })
        .collect();
    // 100 ms of CPU time at 1 kHz (a CPU-time timer: at the kernel's tick,
    // 100 Hz or more): some samples whatever the source.
    assert!(pids.len() >= 5, "{} samples; {stderr}", pids.len());
    let pid = records
        .iter()
        .find_map(|r| match r {
            Record::Event(e) if e.name.as_str() == Some("spin") => match e.thread {
                Thread::Known { process, .. } => Some(process),
                _ => None,
            },
            _ => None,
        })
        .expect("the span is in the archive");
    assert!(pids.iter().all(|&p| p == pid), "{pids:?} vs {pid}");
    let scan = fxt_symbols::scan::TraceSamples::read(&std::fs::read(&out).unwrap());
    assert!(scan.modules.iter().any(|m| m.pid == pid), "no fxt.modules");
    assert!(scan.is_symbolized(), "a sampled address has no symbol");
    assert!(scan.perfetto_records > 0, "no fxt.perfetto");
    // The rate asked for is the rate the trace says, with the source that
    // timed the one sampled thread.
    let sampling: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => fxt_format::samples::Sampling::from_blob(b),
            _ => None,
        })
        .collect();
    assert_eq!(sampling.len(), 1, "{sampling:?}");
    let rate = sampling[0].clone().unwrap();
    assert_eq!((rate.pid, rate.hz), (pid, 1000), "{rate:?}");
    assert_eq!(rate.perf_threads + rate.timer_threads, 1, "{rate:?}");
    assert_samples_where_taken(&out, &stderr);
}

/// Every sample taken in `spin_cpu` lies inside the `spin` slice on its
/// thread (the archive's samples are on its clock, as its events),
/// Perfetto's packets place every sample where the `fxt.sample` records do,
/// and Perfetto's importer puts them inside the same slices.
fn assert_samples_where_taken(archive: &Path, stderr: &str) {
    let (taken, inside) = cli_support::samples_in_function(archive, "record::spin_cpu", "spin");
    // 100 ms of CPU time in the function: at the kernel's tick (100 Hz or
    // more) some of its samples unwind through it whatever the source.
    assert!(taken >= 3, "{taken} samples in spin_cpu; {stderr}");
    assert_eq!(inside, taken, "samples of spin_cpu outside the span");
    let (fxt, perfetto) = cli_support::fxt_and_perfetto_samples(&std::fs::read(archive).unwrap());
    assert_eq!(perfetto, fxt, "Perfetto's samples differ from the trace's");
    cli_support::perfetto::assert_perfetto_places_samples(archive, "spin");
}

/// `fxt merge` of two sampled traces (each the program's own, sampled
/// through `FXT_SAMPLE_HZ`): in the archive, every sample taken in
/// `spin_cpu` lies inside the `spin` slice on its thread, and Perfetto's
/// packets place every sample where the `fxt.sample` records do.
fn merge_sampled() {
    let dir = scratch("merge-sampled");
    let traces: Vec<PathBuf> = ["a.fxt", "b.fxt"].iter().map(|n| dir.join(n)).collect();
    for trace in &traces {
        let r = Command::new(std::env::current_exe().unwrap())
            .env(ROLE, "spinner")
            .env("FXT_SAMPLE_HZ", "1000")
            .env("FXT_OUTPUT", trace)
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    let out = dir.join("merged.fxt");
    let r = fxt_cmd()
        .arg("merge")
        .args(&traces)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert_samples_where_taken(&out, &stderr);
}

/// `--sample` over the runtime's limit is refused at the command line
/// (exit status 2) before anything runs; the limit itself runs the command.
fn sample_rate_out_of_range() {
    let dir = scratch("sample-range");
    let (marker, out) = (dir.join("ran"), dir.join("s.fxt"));
    let over = (fxt_format::samples::MAX_SAMPLE_HZ + 1).to_string();
    let r = fxt_cmd()
        .args(["record", "--sample", &over, "-o"])
        .arg(&out)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--sample"), "{stderr}");
    assert!(!marker.exists(), "the command ran");
    assert!(!out.exists(), "an archive was written");
    let limit = fxt_format::samples::MAX_SAMPLE_HZ.to_string();
    let r = fxt_cmd()
        .args(["record", "--sample", &limit, "-o"])
        .arg(&out)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_ne!(
        r.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(marker.exists(), "the command did not run at the limit");
}

/// A tree in which no process used fxt: the recorder says so, and what
/// would be traced, and exits 1 although the command succeeded (a failed
/// command keeps its own status).
/// A descendant that starts tracing only after the command has exited
/// (a shell that starts it in the background and exits at once; it
/// waits 300 ms before its session starts) is waited for: the archive
/// holds its events and the recorder ends as the command did.
fn late_descendant() {
    let dir = scratch("late");
    let out = dir.join("late.fxt");
    let exe = std::env::current_exe().unwrap();
    let r = fxt_cmd()
        .args(["record", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "\"$0\" &"])
        .arg(&exe)
        .env(ROLE, "late")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    let providers = providers(&std::fs::read(&out).unwrap());
    assert_eq!(providers.len(), 1, "{stderr}");
    let leaf = providers.values().next().unwrap();
    assert_eq!(leaf.events, THREADS * EVENTS, "{stderr}");
    assert_eq!(leaf.marks.len(), 2 * MARKS, "{stderr}");
}

fn nothing_traced() {
    let dir = scratch("nothing");
    let out = dir.join("n.fxt");
    for (command, status) in [(&["true"][..], 1), (&["sh", "-c", "exit 5"][..], 5)] {
        let r = fxt_cmd()
            .args(["record", "-o"])
            .arg(&out)
            .arg("--")
            .args(command)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(status), "{command:?}: {stderr}");
        let said = format!(
            "nothing was traced: no process in the tree of `{}` used fxt",
            command[0]
        );
        assert!(stderr.contains(&said), "{stderr}");
        assert!(stderr.contains("linked with the fxt crate"), "{stderr}");
    }
    // A traced tree is not reported so.
    let r = fxt_cmd()
        .args(["record", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "leaf")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(!stderr.contains("nothing was traced"), "{stderr}");
}

/// A symlink at the output is replaced, not written through.
fn output_symlink() {
    let dir = scratch("symlink");
    let target = dir.join("victim-file");
    std::fs::write(&target, b"keep").unwrap();
    let out = dir.join("t.fxt");
    std::os::unix::fs::symlink(&target, &out).unwrap();
    let r = fxt_cmd()
        .args(["record", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "leaf")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    assert!(!out.symlink_metadata().unwrap().file_type().is_symlink());
}

/// `fxt record --sched`: each 10 ms `nap` contains its thread's switch
/// out (blocked), the wakeup, and the switch back in, on the archive's
/// one time base.
fn sched() {
    let dir = scratch("sched");
    let out = dir.join("s.fxt");
    let r = fxt_cmd()
        .args(["record", "--sched", "-o"])
        .arg(&out)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .env(ROLE, "napper")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    if stderr.contains("--sched:") {
        println!(
            "skipped: {}",
            stderr.lines().find(|l| l.contains("--sched:")).unwrap()
        );
        return;
    }
    // The kernel drops samples when the reader falls behind (a loaded
    // machine, one core): that is counted and reported, never silent.
    let lost: u64 = stderr
        .split(" scheduling samples lost -> ")
        .next()
        .and_then(|head| head.rsplit(", ").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("the summary reports the samples lost: {stderr}"));
    let records = decode_all(&std::fs::read(&out).unwrap()).unwrap();
    let mut naps = Vec::new();
    let mut provider = String::new();
    let mut sched_provider = false;
    let cpus = std::thread::available_parallelism().unwrap().get() as u16;
    for r in &records {
        match r {
            Record::ProviderInfo { name, .. } => {
                provider = name.clone();
                sched_provider |= name == "kernel scheduler";
            }
            Record::Event(e) if e.name.as_str() == Some("nap") => {
                let EventKind::DurationComplete { end } = e.kind else {
                    panic!("{e:?}")
                };
                let Thread::Known { thread, .. } = e.thread else {
                    panic!()
                };
                naps.push((thread, e.timestamp, end));
            }
            Record::ContextSwitch(c) => {
                assert_eq!(provider, "kernel scheduler");
                assert!(c.cpu < cpus, "cpu {}", c.cpu);
            }
            _ => {}
        }
    }
    assert!(sched_provider);
    assert_eq!(naps.len(), 3);
    if lost > 0 {
        // Which switches of the naps were among the lost is unknown.
        println!("{lost} scheduling samples lost (reported): nap checks skipped");
        return;
    }
    let mut missed = 0;
    for (tid, begin, end) in naps {
        let within = |t: u64| (begin..=end).contains(&t);
        let out = records.iter().find_map(|r| match r {
            Record::ContextSwitch(c) if c.outgoing_thread == tid && within(c.timestamp) => {
                Some((c.timestamp, c.outgoing_state))
            }
            _ => None,
        });
        let (out, state) = out.expect("switched out during the nap");
        assert_eq!(state, fxt_format::decode::ThreadState::Blocked);
        // The wakeup, then the switch back in. On this kernel a thread woken
        // on an idle CPU sometimes has neither recorded (seen with ftrace
        // too): one nap in three may lack them, not two.
        let woken = records.iter().find_map(|r| match r {
            Record::ThreadWakeup(w)
                if w.waking_thread == tid && within(w.timestamp) && w.timestamp > out =>
            {
                Some(w.timestamp)
            }
            _ => None,
        });
        let Some(woken) = woken else {
            missed += 1;
            continue;
        };
        let back = records.iter().any(|r| {
            matches!(r, Record::ContextSwitch(c)
                if c.incoming_thread == tid && within(c.timestamp) && c.timestamp >= woken)
        });
        assert!(back, "switched back in before the nap ended");
        assert!(
            woken - out >= 9_000_000,
            "the sleep lies between: {}",
            woken - out
        );
    }
    assert!(missed <= 1, "{missed} of 3 naps without their wakeup");
}

fn main() {
    if let Ok(r) = std::env::var(ROLE) {
        if r == "late" {
            // After the shell that started it has exited.
            std::thread::sleep(Duration::from_millis(300));
            role("leaf");
        }
        role(&r);
    }
    let tests: [(&str, fn()); 12] = [
        ("a process tree in one archive", process_tree),
        ("the recorder's options reach every process", options_apply),
        ("--sched: a 10 ms sleep in a traced function", sched),
        ("SIGTERM is forwarded", sigterm_forwarded),
        ("a spool merged after the recorder died", from_spool),
        ("a symlink at the output", output_symlink),
        (
            "a relative -o, a command that changes folder",
            relative_output_and_cd,
        ),
        (
            "--sample: CPU samples of the recorded process",
            sample_option,
        ),
        ("merge: two sampled traces", merge_sampled),
        ("--sample over the limit", sample_rate_out_of_range),
        ("a tree that used no fxt", nothing_traced),
        (
            "a descendant that starts after the command",
            late_descendant,
        ),
    ];
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    for (name, test) in tests {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        test();
        println!("test {name} ... ok");
    }
}
