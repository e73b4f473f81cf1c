//! Every command that reads a trace refuses what is not one, with exit
//! status 2 and a message naming the file, before it writes anything: a
//! text file (`/etc/passwd`'s kind), the same on stdin, an empty file, a
//! file holding only the first half of the magic record, and a directory.
//! A trace damaged after its magic record is still a trace: each command
//! reads it up to the damage as it always did (exit status 0, 1 for the
//! checks, which report the damage).

mod cli_support;
use cli_support::*;

use std::path::{Path, PathBuf};

const PASSWD: &[u8] = b"root:x:0:0:root:/root:/bin/bash\n\
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n";

/// A reading command: its arguments for input `input`, writing (if it
/// writes) to `out`.
struct Cmd {
    name: &'static str,
    args: fn(input: &str, out: &str) -> Vec<String>,
    /// The exit status for a trace with a damaged tail.
    damaged_status: i32,
    /// Names the damage's offset (`check --perfetto` reports only what
    /// the viewers would read differently, and a cut tail is not that).
    names_damage: bool,
    /// Reads `-` as stdin.
    stdin: bool,
}

fn v(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

fn commands() -> Vec<Cmd> {
    vec![
        Cmd {
            name: "stats",
            args: |i, _| v(&["stats", i]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "stats --json",
            args: |i, _| v(&["stats", "--json", i]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "dump",
            args: |i, _| v(&["dump", i]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "json",
            args: |i, o| v(&["json", i, "-o", o]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "flame",
            args: |i, o| v(&["flame", i, "-o", o]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "check",
            args: |i, _| v(&["check", i]),
            damaged_status: 1,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "check --perfetto",
            args: |i, _| v(&["check", "--perfetto", i]),
            damaged_status: 0,
            names_damage: false,
            stdin: true,
        },
        Cmd {
            name: "convert --perfetto",
            args: |i, o| v(&["convert", "--perfetto", i, "-o", o]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "recover",
            args: |i, o| v(&["recover", i, "-o", o]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "merge",
            args: |i, o| v(&["merge", i, "-o", o]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "export parquet",
            args: |i, o| v(&["export", "parquet", i, "-o", o, "--host", "h"]),
            damaged_status: 0,
            names_damage: true,
            stdin: true,
        },
        Cmd {
            name: "diff",
            args: |i, o| v(&["diff", &good(), i, "-o", o]),
            // diff's own rule: a comparison cut short by damage fails.
            damaged_status: 2,
            names_damage: true,
            stdin: true,
        },
        // Served once fetched: not run on a trace here (cli_open.rs does).
        Cmd {
            name: "open",
            args: |i, _| v(&["open", i, "--no-browser", "--port", "0"]),
            damaged_status: -1,
            names_damage: false,
            stdin: true,
        },
    ]
}

/// A good trace, for the commands that read two.
fn good() -> String {
    // Written once: the tests run at once.
    static GOOD: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    p(GOOD.get_or_init(|| golden().file("good.fxt"))).to_owned()
}

/// A fresh output path for `cmd`'s case `case` (not created).
fn output(cmd: &Cmd, case: &str) -> PathBuf {
    let name = format!("notfxt-{}-{case}.out", cmd.name.replace([' ', '-'], "_"));
    let path = tmp(&name);
    let _ = std::fs::remove_dir_all(&path);
    let _ = std::fs::remove_file(&path);
    path
}

/// Every file under `path` (none if it does not exist).
fn files_under(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Vec::new();
    };
    if meta.is_file() {
        return vec![path.to_path_buf()];
    }
    std::fs::read_dir(path)
        .unwrap()
        .flat_map(|e| files_under(&e.unwrap().path()))
        .collect()
}

/// Runs every command on `input` (or `-` with `stdin` bytes) and checks
/// that each refuses it with a message containing `message` and writes
/// nothing.
fn refused_by_all(case: &str, input: &str, stdin: Option<&[u8]>, message: &str) {
    for cmd in commands() {
        if stdin.is_some() && !cmd.stdin {
            continue;
        }
        let out_path = output(&cmd, case);
        let args = (cmd.args)(input, p(&out_path));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fxt_stdin(&args, stdin.unwrap_or_default());
        let err = stderr(&out);
        assert_eq!(
            out.status.code(),
            Some(2),
            "fxt {} on {case}: {err}",
            cmd.name
        );
        assert!(
            err.contains(message),
            "fxt {} on {case}: wanted {message:?} in {err:?}",
            cmd.name
        );
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(
            files_under(&out_path),
            Vec::<PathBuf>::new(),
            "fxt {} on {case} wrote something",
            cmd.name
        );
        // Not even an empty folder (export's tables) is left behind.
        assert!(
            !out_path.exists(),
            "fxt {} on {case} created {}",
            cmd.name,
            out_path.display()
        );
        assert_eq!(stdout(&out), "", "fxt {} on {case}", cmd.name);
    }
}

#[test]
fn a_text_file_is_not_a_trace() {
    let file = tmp("passwd");
    std::fs::write(&file, PASSWD).unwrap();
    let want = format!(
        "{}: not an FXT trace (it does not begin with the FXT magic number record)",
        p(&file)
    );
    refused_by_all("text", p(&file), None, &want);
}

#[test]
fn a_text_file_on_stdin_is_not_a_trace() {
    refused_by_all(
        "stdin",
        "-",
        Some(PASSWD),
        "<stdin>: not an FXT trace (it does not begin with the FXT magic number record)",
    );
}

#[test]
fn an_empty_file_is_not_a_trace() {
    let file = tmp("empty.fxt");
    std::fs::write(&file, b"").unwrap();
    let want = format!("{}: not an FXT trace (it is empty)", p(&file));
    refused_by_all("empty", p(&file), None, &want);
    refused_by_all(
        "empty-stdin",
        "-",
        Some(b""),
        "<stdin>: not an FXT trace (it is empty)",
    );
}

#[test]
fn half_a_magic_record_is_not_a_trace() {
    let magic = Trace::new().push(&MagicNumber).bytes();
    let file = tmp("half-magic.fxt");
    std::fs::write(&file, &magic[..4]).unwrap();
    let want = format!("{}: not an FXT trace (it holds only 4 bytes)", p(&file));
    refused_by_all("half", p(&file), None, &want);
}

#[test]
fn a_directory_is_not_a_trace() {
    let dir = tmp("a-directory.fxt");
    std::fs::create_dir_all(&dir).unwrap();
    let want = format!("{}: is a directory, not an FXT trace", p(&dir));
    refused_by_all("dir", p(&dir), None, &want);
}

#[test]
fn a_trace_with_a_damaged_tail_is_read_up_to_the_damage() {
    let good = golden();
    let mut bytes = good.bytes();
    bytes.extend_from_slice(&[0x24, 0, 0]); // a partial header
    let file = tmp("damaged-tail.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let at = format!("offset {:#x}", good.offset());
    for cmd in commands() {
        if cmd.damaged_status < 0 {
            continue;
        }
        let out_path = output(&cmd, "damaged");
        let args = (cmd.args)(p(&file), p(&out_path));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fxt(&args);
        let (err, text) = (stderr(&out), stdout(&out));
        assert_eq!(
            out.status.code(),
            Some(cmd.damaged_status),
            "fxt {}: {err}",
            cmd.name
        );
        // The damage is named where the command reports (the checks on
        // stdout, the others on stderr).
        assert!(
            !cmd.names_damage || err.contains(&at) || text.contains(&at),
            "fxt {}: no {at} in {err:?} / {text:?}",
            cmd.name
        );
        assert!(!err.contains("not an FXT trace"), "{err}");
    }
}

#[test]
fn recover_force_reads_a_trace_that_lost_its_magic_record() {
    // The golden trace without its first word (the magic record).
    let good = golden().bytes();
    let file = tmp("lost-magic.fxt");
    std::fs::write(&file, &good[8..]).unwrap();
    let clean = tmp("lost-magic-recovered.fxt");
    let out = fxt(&["recover", p(&file), "-o", p(&clean)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert!(!clean.exists());

    let out = fxt(&["recover", "--force", p(&file), "-o", p(&clean)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Every record kept, the magic record put back first.
    assert_eq!(std::fs::read(&clean).unwrap(), good);
    assert!(fxt(&["check", p(&clean)]).status.success());
}

#[test]
fn commands_open_their_inputs_as_traces() {
    // The lenient constructors are for the recorder's spool (and
    // `recover --force`): a command that reads what a person names opens
    // it with `Input::open_trace*`, which refuses what is not a trace.
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut lenient = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for call in [
            "Input::open(",
            "Input::open_bytes(",
            "Input::open_streamed(",
        ] {
            if text.contains(call) && !file.ends_with("recover.rs") {
                lenient.push(format!("{}: {call}", file.display()));
            }
        }
    }
    assert!(files.len() > 10, "{files:?}");
    assert_eq!(lenient, Vec::<String>::new());
}
