//! Nothing lost between processes: two processes given one output both
//! keep their traces, a claim left by a killed process blocks no one,
//! `{pid}` names each process's file, and a process under `fxt record`
//! (`FXT_RECORD`) writes into the spool.
//!
//! ```text
//! cargo test -p fxt-runtime --test claim
//! ```
//!
//! The test re-executes itself as the traced processes (environment
//! variable `FXT_CLAIM_CHILD=crash_safe:events:go_file`): each starts a
//! session with `Config::from_env()` (output from `FXT_OUTPUT`), records
//! `events` instants, prints `started`, waits for `go_file` to exist (so
//! that two children hold their sessions at once), finishes and prints
//! `output PATH emitted N dropped D`.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fxt_format::decode::Record;
use fxt_runtime::Config;

const CHILD: &str = "FXT_CLAIM_CHILD";
const EVENTS: u64 = 5_000;

fn child(spec: &str) -> ! {
    let mut parts = spec.splitn(3, ':');
    let crash_safe = parts.next() == Some("1");
    let events: u64 = parts.next().unwrap().parse().unwrap();
    let go = PathBuf::from(parts.next().unwrap());
    let session = fxt_runtime::start(Config::from_env().crash_safe(crash_safe)).expect("start");
    common::run_threads(1, events);
    println!("started");
    let t0 = Instant::now();
    while !go.exists() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let stats = session.finish().expect("finish");
    println!(
        "output {} emitted {} dropped {}",
        stats.output.expect("a file was written").display(),
        stats.emitted_records_written,
        stats.records_dropped
    );
    std::process::exit(0)
}

/// A traced child with `env`, its stdout read up to `started`.
struct Traced {
    child: Child,
    stdout: BufReader<std::process::ChildStdout>,
}

fn spawn(crash_safe: bool, go: &Path, env: &[(&str, &Path)]) -> Traced {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(
        CHILD,
        format!(
            "{}:{EVENTS}:{}",
            if crash_safe { 1 } else { 0 },
            go.display()
        ),
    )
    .env_remove(fxt_runtime::RECORD_ENV)
    .env_remove("FXT_OUTPUT")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "started", "child did not start");
    Traced { child, stdout }
}

/// Waits for a child that was let go: (output path, emitted, stderr).
fn wait(mut t: Traced) -> (PathBuf, u64, String) {
    let mut rest = String::new();
    t.stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    t.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = t.child.wait().unwrap();
    assert!(status.success(), "child failed: {stderr}");
    let words: Vec<&str> = rest.split_whitespace().collect();
    assert_eq!(words[0], "output", "{rest}");
    assert_eq!(words[5], "0", "nothing dropped: {rest}");
    (PathBuf::from(words[1]), words[3].parse().unwrap(), stderr)
}

/// The "ev" instants of a trace file.
fn events_in(path: &Path) -> u64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    common::decode(&bytes)
        .iter()
        .filter(|r| matches!(r, Record::Event(e) if e.name.as_str() == Some("ev")))
        .count() as u64
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxt-claim-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// No lock file is left once every session finished.
fn no_lock_files(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".lock"), "left behind: {name}");
    }
}

fn same_output(crash_safe: bool) {
    let dir = scratch(if crash_safe { "same-cs" } else { "same" });
    let out = dir.join("same.fxt");
    let go = dir.join("go");
    let a = spawn(crash_safe, &go, &[("FXT_OUTPUT", &out)]);
    let b = spawn(crash_safe, &go, &[("FXT_OUTPUT", &out)]);
    let b_pid = b.child.id();
    std::fs::write(&go, b"").unwrap();
    let (a_out, a_n, a_err) = wait(a);
    let (b_out, b_n, b_err) = wait(b);
    assert_eq!(a_out, out);
    assert_eq!(b_out, dir.join(format!("same.{b_pid}.fxt")));
    assert!(!a_err.contains("another process"), "{a_err}");
    assert!(
        b_err.contains(&format!(
            "{} is being written by another process; this one writes {}",
            out.display(),
            b_out.display()
        )),
        "{b_err}"
    );
    assert_eq!((a_n, b_n), (EVENTS, EVENTS));
    assert_eq!(events_in(&a_out), EVENTS);
    assert_eq!(events_in(&b_out), EVENTS);
    no_lock_files(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn stale_claim() {
    let dir = scratch("stale");
    let out = dir.join("t.fxt");
    let never = dir.join("never");
    let mut killed = spawn(true, &never, &[("FXT_OUTPUT", &out)]);
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    assert!(dir.join(".t.fxt.lock").exists(), "the killed claim's file");
    let go = dir.join("go");
    let next = spawn(false, &go, &[("FXT_OUTPUT", &out)]);
    std::fs::write(&go, b"").unwrap();
    let (path, n, err) = wait(next);
    assert_eq!(path, out, "a dead process's claim blocks no one: {err}");
    assert_eq!(events_in(&path), n);
    no_lock_files(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn pid_placeholder() {
    let dir = scratch("pid");
    let go = dir.join("go");
    std::fs::write(&go, b"").unwrap();
    let t = spawn(false, &go, &[("FXT_OUTPUT", &dir.join("p-{pid}.fxt"))]);
    let pid = t.child.id();
    let (path, n, _) = wait(t);
    assert_eq!(path, dir.join(format!("p-{pid}.fxt")));
    assert_eq!(events_in(&path), n);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn recorded() {
    let dir = scratch("record");
    let spool = dir.join("spool");
    std::fs::create_dir(&spool).unwrap();
    let go = dir.join("go");
    std::fs::write(&go, b"").unwrap();
    let t = spawn(
        false,
        &go,
        &[
            (fxt_runtime::RECORD_ENV, &spool),
            ("FXT_OUTPUT", &dir.join("ignored.fxt")),
        ],
    );
    let pid = t.child.id();
    let (path, n, _) = wait(t);
    assert_eq!(path, spool.join(format!("{pid}.fxt")));
    assert_eq!(events_in(&path), EVENTS);
    assert!(!dir.join("ignored.fxt").exists());
    let stats = std::fs::read_to_string(spool.join(format!("{pid}.stats"))).unwrap();
    assert!(
        stats.contains(&format!("emitted_records_written {n}\n"))
            && stats.contains("records_dropped 0\n"),
        "{stats}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
    }
    let tests: [(&str, fn()); 5] = [
        ("same output, two processes", || same_output(false)),
        ("same output, two crash-safe processes", || {
            same_output(true)
        }),
        ("a killed process's claim", stale_claim),
        ("{pid} in FXT_OUTPUT", pid_placeholder),
        ("FXT_RECORD spool", recorded),
    ];
    for (name, test) in tests {
        test();
        println!("test {name} ... ok");
    }
}
