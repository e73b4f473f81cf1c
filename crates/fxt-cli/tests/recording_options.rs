//! One recording contract: `fxt record` and `fxt trace start` take the
//! same options (buffer, mode, categories, sample rate), checked by the
//! same parsers (`fxt_control::recording`), so that a value out of range
//! is refused by both with the same words and exit status 2 before
//! anything runs: the command not started, no window opened.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "fxt-recording-options-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `fxt ARGS` with its runtime folder (where providers and windows are
/// found) inside `dir`.
fn fxt(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(args)
        .env("XDG_RUNTIME_DIR", dir.join("xdg"))
        .current_dir(dir)
        .output()
        .unwrap()
}

/// An exit status and the stderr.
type Ended = (Option<i32>, String);

/// `fxt record OPTION VALUE -- touch MARKER` and `fxt trace start OPTION
/// VALUE`: how each ended, and whether the command ran.
fn both(dir: &Path, option: &str, value: &str) -> (Ended, bool, Ended) {
    let marker = dir.join("ran");
    let _ = std::fs::remove_file(&marker);
    let marker_arg = marker.to_str().unwrap();
    let record = [
        "record", option, value, "-o", "r.fxt", "--", "touch", marker_arg,
    ];
    let r = fxt(dir, &record);
    let s = fxt(dir, &["trace", "start", option, value]);
    let ended = |o: &Output| {
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    (ended(&r), marker.exists(), ended(&s))
}

#[test]
fn both_commands_refuse_the_same_values_alike() {
    let dir = scratch("refuse");
    let over_rate = (fxt_format::samples::MAX_SAMPLE_HZ + 1).to_string();
    let over_buffer = format!("{}", fxt_control::MAX_BUFFER + 1);
    let cases: &[(&str, &str, &str)] = &[
        ("--sample", &over_rate, "outside the limits"),
        ("--sample", "99999999999", "outside the limits"),
        ("--sample", "fast", "not a rate in Hz"),
        ("--buffer", "1K", "outside the limits"),
        ("--buffer", &over_buffer, "outside the limits"),
        ("--buffer", "17G", "outside the limits"),
        ("--buffer", "lots", "not a size"),
        ("--alloc-sample", "2G", "outside the limits"),
        ("--alloc-sample", "lots", "not a size"),
        ("--mode", "sometimes", "unknown mode"),
        ("--categories", "a\nb", "line break"),
    ];
    for (option, value, words) in cases {
        let ((r_status, r_err), ran, (s_status, s_err)) = both(&dir, option, value);
        assert_eq!(r_status, Some(2), "record {option} {value:?}: {r_err}");
        assert_eq!(s_status, Some(2), "trace start {option} {value:?}: {s_err}");
        assert!(!ran, "record {option} {value:?} ran the command");
        assert_eq!(r_err, s_err, "{option} {value:?}: the two messages differ");
        assert!(
            r_err.starts_with("error: ") && r_err.contains(option) && r_err.contains(words),
            "{option} {value:?}: {r_err}"
        );
        assert!(
            !dir.join("r.fxt").exists(),
            "record {option} {value:?} wrote an archive"
        );
        assert!(
            !dir.join("xdg/fxt/window").exists(),
            "trace start {option} {value:?} opened a window"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_limits_themselves_are_taken() {
    let dir = scratch("limits");
    let marker = dir.join("ran");
    let limit = fxt_format::samples::MAX_SAMPLE_HZ.to_string();
    let out = fxt(
        &dir,
        &[
            "record",
            "--buffer",
            "256K",
            "--sample",
            &limit,
            "--mode",
            "Circular",
            "--categories",
            "a,b",
            "-o",
            "r.fxt",
            "--",
            "touch",
            marker.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // `touch` links no fxt: "nothing was traced" (status 1), but it ran.
    assert_ne!(out.status.code(), Some(2), "{stderr}");
    assert!(marker.exists(), "the command did not run: {stderr}");
    // Every value parses: `start` gets as far as looking for providers
    // (there are none here).
    let out = fxt(
        &dir,
        &[
            "trace",
            "start",
            "--buffer",
            "16G",
            "--sample",
            "0",
            "--mode",
            "streaming",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("invalid value"), "{stderr}");
    assert!(stderr.contains("provider"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
