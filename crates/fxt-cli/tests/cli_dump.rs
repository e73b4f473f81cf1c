//! `fxt dump`: exact lines, offsets, stdin, damaged and garbage input.

mod cli_support;
use cli_support::*;

const GOLDEN_LINES: &[&str] = &[
    "magic",
    "provider_info id=1 name=\"app\"",
    "initialization ticks_per_second=1000000000",
    "string index=1 \"demo\"",
    "string index=2 \"work\"",
    "string index=3 \"n\"",
    "thread index=1 process=10 thread=11",
    "kernel_object koid=11 type=2 name=\"main\" process=koid(10)",
    "duration_complete ts=1000 end=1500 thread=10/11 category=\"demo\" name=\"work\" n=3 label=\"x\"",
    "instant ts=1200 thread=10/11 category=\"demo\" name=\"tick\"",
];

#[test]
fn dump_prints_one_line_per_record() {
    let file = golden().file("dump_golden.fxt");
    let out = fxt(&["dump", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), GOLDEN_LINES);
    assert_eq!(stderr(&out), "");
}

#[test]
fn dump_offsets() {
    let trace = golden();
    let file = trace.file("dump_offsets.fxt");
    let out = fxt(&["dump", "--offsets", p(&file)]);
    assert!(out.status.success());
    let text = stdout(&out);
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines[0], "0x00000000 magic");
    assert_eq!(lines[1], "0x00000008 provider_info id=1 name=\"app\"");
    // Provider info (2 words) and initialization (2 words) come before.
    assert_eq!(
        lines[2],
        "0x00000018 initialization ticks_per_second=1000000000"
    );
    assert_eq!(lines.len(), GOLDEN_LINES.len());
}

#[test]
fn dump_reads_stdin() {
    let out = fxt_stdin(&["dump", "-"], &golden().bytes());
    assert!(out.status.success());
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), GOLDEN_LINES);
}

#[test]
fn dump_truncated_file_warns_with_offset_and_keeps_what_precedes() {
    let trace = golden();
    let mut bytes = trace.bytes();
    // The last record, the instant, is 6 words: header, timestamp, inline
    // thread (2), inline category (1), inline name (1).
    let cut_at = bytes.len() - 8;
    bytes.truncate(cut_at);
    let file = tmp("dump_truncated.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let out = fxt(&["dump", p(&file)]);
    assert!(out.status.success(), "damage is a warning, not a failure");
    let lines: Vec<_> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines, GOLDEN_LINES[..GOLDEN_LINES.len() - 1]);
    let err = stderr(&out);
    let last_offset = trace.offset() - 6 * 8;
    assert!(err.contains("warning"), "{err}");
    assert!(err.contains(p(&file)), "names the file: {err}");
    assert!(
        err.contains(&format!("offset {last_offset:#x}")),
        "names the offset: {err}"
    );
}

#[test]
fn dump_garbage_does_not_panic() {
    // Deterministic pseudo-random bytes.
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut bytes = Vec::new();
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&x.to_le_bytes()[..3]);
    }
    let file = tmp("dump_garbage.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let out = fxt(&["dump", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("offset 0x"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn dump_empty_file_prints_nothing() {
    let file = tmp("dump_empty.fxt");
    std::fs::write(&file, b"").unwrap();
    let out = fxt(&["dump", p(&file)]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "");
}

#[test]
fn missing_file_is_an_error_naming_it() {
    let out = fxt(&["dump", "/nonexistent/trace.fxt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/nonexistent/trace.fxt"),
        "{}",
        stderr(&out)
    );
}
