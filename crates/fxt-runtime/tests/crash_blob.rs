//! Crash-safe files keep large blobs: a process killed with `SIGKILL` after
//! `trace_blob!` returned leaves a file where the blob comes back whole,
//! and which a viewer sizing every record by header bits 4–15 walks record
//! for record as our decoder does; one killed while blobs are being written
//! leaves every earlier blob whole and at most one group cut short.
//! (Blobs that do not fit in the file's 2 MiB large region reach the file
//! only when the session finishes.)
//!
//! ```text
//! cargo test -p fxt-runtime --test crash_blob
//! ```
//!
//! The test re-executes itself as the traced process (environment variable
//! `FXT_CRASH_BLOB_CHILD=case:path`).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use fxt_format::compat::framing::{decoder_walk, framing_issues, viewer_walk};
use fxt_format::decode::{decode_all, join_split_blobs, Record};
use fxt_runtime::__macro_support::{blob, Callsite, KeyCache};
use fxt_runtime::Config;

const CHILD: &str = "FXT_CRASH_BLOB_CHILD";
const EVENTS: u64 = 1_000;
/// The size of the blobs written while the process is killed.
const DURING: usize = 300_000;

static KEYS: [KeyCache; 0] = [];
static BLOB: Callsite = Callsite::new("data", "payload", &[], &KEYS);

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + n / 3) as u8).collect()
}

fn write_blob(n: usize) {
    if let Some(site) = BLOB.site() {
        blob(site, &payload(n));
    }
}

fn child(spec: &str) -> ! {
    let (case, path) = spec.split_once(':').unwrap();
    let session = fxt_runtime::start(
        Config::new()
            .buffer_size(64 << 20)
            .output(path)
            .crash_safe(true),
    )
    .expect("start");
    std::mem::forget(session);
    match case {
        "after" => {
            for i in 0..EVENTS {
                common::emit(0, i);
            }
            write_blob(100_000);
            write_blob(1 << 20);
            for i in EVENTS..2 * EVENTS {
                common::emit(0, i);
            }
            println!("published");
        }
        "during" => {
            // Six fit in the file's 2 MiB large region.
            for i in 0..6 {
                write_blob(DURING);
                println!("blob {i}");
            }
        }
        c => panic!("unknown case {c}"),
    }
    std::thread::sleep(Duration::from_secs(60));
    std::process::exit(1)
}

/// Runs a child, kills it once it printed `lines` lines, returns its file.
fn killed(case: &str, lines: usize) -> Vec<u8> {
    let path = common::temp_path(&format!("crash-blob-{case}.fxt"));
    let mut c = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, format!("{case}:{}", path.display()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(c.stdout.take().unwrap());
    for _ in 0..lines {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
    }
    c.kill().unwrap();
    c.wait().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// The file is valid as it is and framed alike by viewers and the decoder;
/// returns the joined blobs' payloads and the cut-short groups.
fn blobs(bytes: &[u8]) -> (Vec<Vec<u8>>, usize, Vec<Record>) {
    let records = decode_all(bytes).expect("a killed crash-safe file decodes whole");
    assert!(
        framing_issues(bytes).is_empty(),
        "{:?}",
        framing_issues(bytes)
    );
    assert_eq!(viewer_walk(bytes), decoder_walk(bytes));
    let mut whole = Vec::new();
    let mut parts = 0;
    for j in join_split_blobs(bytes) {
        match j.item.unwrap() {
            Record::Blob(b) if j.joined_parts > 0 => whole.push(b.payload),
            // A part of a group the kill cut short (left unjoined).
            Record::Blob(_) => parts += 1,
            _ => {}
        }
    }
    (whole, parts, records)
}

fn after() {
    let (whole, parts, records) = blobs(&killed("after", 1));
    assert_eq!(whole, [payload(100_000), payload(1 << 20)]);
    assert_eq!(parts, 0);
    common::assert_exactly_once(&common::stress_events(&records), 1, 2 * EVENTS);
}

fn during() {
    let (whole, _, records) = blobs(&killed("during", 3));
    assert!(whole.len() >= 3, "every blob written before the kill");
    assert!(whole.iter().all(|b| *b == payload(DURING)));
    // Groups announced (their instants) beyond the whole ones: at most the
    // one being written when the process died.
    let announced = records
        .iter()
        .filter(|r| matches!(r, Record::Event(e) if e.name.as_str() == Some("payload")))
        .count();
    assert!(
        announced - whole.len() <= 1,
        "{announced} vs {}",
        whole.len()
    );
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        child(&spec);
    }
    let tests: [(&str, fn()); 2] = [
        ("killed after the blobs were written", after),
        ("killed while blobs are written", during),
    ];
    for (name, test) in tests {
        test();
        println!("test {name} ... ok");
    }
}
