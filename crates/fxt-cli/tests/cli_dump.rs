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
fn dump_follows_string_indices_that_change_meaning() {
    let file = redefined_strings_trace().file("dump_redefined.fxt");
    let out = fxt(&["dump", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<_> = stdout(&out)
        .lines()
        .filter(|l| l.starts_with("instant") || l.starts_with("blob"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        events,
        [
            r#"instant ts=1 thread=1/2 category="x" name="x" k=7"#,
            r#"instant ts=2 thread=1/2 category="y\"q" name="y\"q" k=7"#,
            "instant ts=3 thread=1/2 category=<undefined string #1> name=<undefined string #1> <undefined string #2>=7",
            r#"instant ts=4 thread=1/2 category="y\"q" name="y\"q" k=7"#,
            r#"instant ts=5 thread=1/2 category="k" name="k" fxt.blob.size=4 fxt.blob.parts=1"#,
            r#"blob name="k" type=Data size=4 (joined from 1 blob records)"#,
        ]
    );
    let out = fxt(&["dump", "--no-join", p(&file)]);
    assert!(stdout(&out).contains("blob name=\"k\" type=Data size=4\n"));
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
    // Deterministic pseudo-random bytes after a magic record (without
    // it, the file is not a trace and nothing is decoded).
    let mut x = 0x1234_5678_9abc_def0u64;
    let mut bytes = Trace::new().push(&MagicNumber).bytes();
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
fn dump_empty_file_is_not_a_trace() {
    let file = tmp("dump_empty.fxt");
    std::fs::write(&file, b"").unwrap();
    let out = fxt(&["dump", p(&file)]);
    assert_eq!(out.status.code(), Some(2));
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

/// The hex `dump --payloads` prints after `payload=` (or in `blob(N bytes: ..)`).
fn unhex(line: &str, after: &str) -> Vec<u8> {
    let start = line.find(after).expect("a payload") + after.len();
    let hex: &str = line[start..]
        .split(|c: char| !c.is_ascii_hexdigit())
        .next()
        .unwrap();
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn dump_joins_a_split_blob_group_and_shows_its_parts_on_request() {
    let payload: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    let thread = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let blob = SplitBlob::new(
        StringRef::Inline("c"),
        StringRef::Inline("image"),
        5,
        thread,
        &payload,
    );
    let t = Trace::new().push(&MagicNumber);
    let group_at = t.offset();
    let t = t.push(&blob);
    let first_part_at = group_at
        + encode_to_vec(&event(
            EventKind::Instant,
            5,
            thread,
            StringRef::Inline("c"),
            StringRef::Inline("image"),
            &[
                Arg::new(StringRef::Inline("fxt.blob.size"), ArgValue::U64(70_000)),
                Arg::new(StringRef::Inline("fxt.blob.parts"), ArgValue::U64(3)),
            ],
        ))
        .unwrap()
        .len() as u64
            * 8;
    let file = t.file("dump_split_blob.fxt");

    let out = fxt(&["dump", "--offsets", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        [
            "0x00000000 magic".to_string(),
            format!("{group_at:#010x} instant ts=5 thread=1/2 category=\"c\" name=\"image\" fxt.blob.size=70000 fxt.blob.parts=3"),
            format!("{first_part_at:#010x} blob name=\"image\" type=Data size=70000 (joined from 3 blob records)"),
        ]
    );

    let out = fxt(&["dump", "--payloads", p(&file)]);
    let text = stdout(&out);
    let line = text.lines().nth(2).unwrap();
    assert_eq!(unhex(line, "payload="), payload);

    let out = fxt(&["dump", "--no-join", "--offsets", p(&file)]);
    let text = stdout(&out);
    let parts: Vec<(u64, usize)> = text
        .lines()
        .filter(|l| l.contains(" blob "))
        .map(|l| {
            let offset = u64::from_str_radix(&l[2..10], 16).unwrap();
            (offset, l.rsplit("size=").next().unwrap().parse().unwrap())
        })
        .collect();
    assert_eq!(parts.len(), 3, "{text}");
    assert_eq!(parts[0].0, first_part_at);
    assert_eq!(parts.iter().map(|p| p.1).sum::<usize>(), 70_000);
    assert!(
        parts[1].1 == parts[0].1 && parts[2].1 < parts[0].1,
        "{parts:?}"
    );

    // A malformed record between two parts breaks the group: shown as written.
    let mut words = t.words.clone();
    let second_part = (parts[1].0 / 8) as usize;
    // A string record whose stream is not UTF-8 (size intact: skipped).
    words.splice(
        second_part..second_part,
        [0x0000_0001_0002_0022u64 | (2 << 32), 0xffff],
    );
    let broken = tmp("dump_split_blob_broken.fxt");
    std::fs::write(&broken, words_to_bytes(&words)).unwrap();
    let out = fxt(&["dump", p(&broken)]);
    let text = stdout(&out);
    assert!(!text.contains("joined"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("blob ")).count(), 3);
    assert!(stderr(&out).contains("record skipped"), "{}", stderr(&out));
}

#[test]
fn dump_shows_the_bytes_of_an_engine_blob_whole_split_or_large() {
    let blob: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    for large in [false, true] {
        let bytes = engine_trace(fxt::Config::new().large_records(large), || {
            fxt::trace_blob!("app", "image", &blob);
            fxt::trace_blob!("app", "arg", [1u8, 2, 3]);
            fxt::trace_instant!("app", "with blob", "b" => &[9u8, 8][..]);
        });
        let file = tmp(&format!("dump_engine_blob_{large}.fxt"));
        std::fs::write(&file, &bytes).unwrap();
        let out = fxt(&["dump", "--payloads", p(&file)]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("blob ") && l.contains("name=\"image\""))
            .collect();
        let heads: Vec<&str> = lines.iter().map(|l| &l[..l.len().min(120)]).collect();
        assert_eq!(lines.len(), 1, "large records: {large}: {heads:?}");
        if large {
            assert!(lines[0].starts_with("large_blob "), "{}", heads[0]);
        } else {
            assert!(lines[0].starts_with("blob "), "{}", heads[0]);
            assert!(lines[0].ends_with(" (joined from 4 blob records)"));
        }
        assert!(lines[0].contains(" size=100000 "), "{}", heads[0]);
        assert!(
            unhex(lines[0], "payload=") == blob,
            "large records: {large}"
        );
        let small = text.lines().find(|l| l.contains("name=\"arg\"")).unwrap();
        assert!(small.ends_with("size=3 payload=010203"), "{small}");
        let arg = text
            .lines()
            .find(|l| l.contains("name=\"with blob\""))
            .unwrap();
        assert!(arg.ends_with("b=blob(2 bytes: 0908)"), "{arg}");
    }
}

#[test]
fn dump_on_several_threads_prints_what_one_thread_prints() {
    // Cut at many places, with every option: split blob groups straddle
    // the cuts (joined, or shown as written), as do malformed records and
    // the damaged tail.
    for (i, options) in [
        &[][..],
        &["--offsets"],
        &["--payloads", "--offsets"],
        &["--no-join", "--offsets"],
        &["--no-join", "--payloads"],
    ]
    .into_iter()
    .enumerate()
    {
        let mut args = vec!["dump"];
        args.extend_from_slice(options);
        args.push("{}");
        let (one, _) = assert_same_when_cut(&format!("dump_cut_{i}.fxt"), &args, None);
        let (text, err) = (stdout(&one), stderr(&one));
        let joined = text.matches("blob records)").count();
        if options.contains(&"--no-join") {
            assert_eq!(joined, 0, "{options:?}");
        } else {
            assert!(joined > 100, "{joined} groups joined");
        }
        assert_eq!(err.matches("record skipped").count(), 27, "{err}");
        assert!(err.contains("up to the damage"), "{err}");
    }
    // Cut once, where one thread reads the default ranges.
    assert_same_on_any_threads("dump_threads.fxt", &["dump", "--offsets", "{}"]);
}

#[test]
fn dump_prints_string_and_float_arguments_as_each_event_is_decoded() {
    // Threads taking turns, events repeated (the second of each is the
    // usual one, written from its view in blocks), arguments strings by
    // index (escaped, long, redefined) and floats of every form.
    let long = "a string value longer than one block of a line, to be written piece by piece";
    let strings = [
        "demo",
        "frame",
        "phase",
        "steady",
        "bytes",
        "say \"hi\"",
        long,
    ];
    let mut trace = Trace::with_provider(1, "app", 1_000_000_000);
    for (i, value) in strings.into_iter().enumerate() {
        let index = i as u16 + 1;
        trace = trace.push(&StringRecord { index, value });
    }
    for index in 1..=2 {
        let (process, thread) = (10, 10 + u64::from(index));
        trace = trace.push(&ThreadRecord {
            index,
            process,
            thread,
        });
    }
    let floats = [0.5, 0.1 + 0.2, 1e20, -2.25, f64::NAN, 0.0, 1e-7, 123456.789];
    let mut ts = 1000;
    for round in 0..2 {
        if round == 1 {
            trace = trace.push(&StringRecord {
                index: 4,
                value: "paused",
            });
        }
        for &x in &floats {
            for thread in [1, 2] {
                for value in [4, 6, 7] {
                    let args = [
                        Arg::new(StringRef::Index(3), ArgValue::Str(StringRef::Index(value))),
                        Arg::new(StringRef::Index(5), ArgValue::F64(x)),
                        Arg::new(StringRef::Index(5), ArgValue::U64(7)),
                    ];
                    let (kind, name) = match value {
                        4 => (EventKind::DurationBegin, 2),
                        _ => (EventKind::Counter { id: 3 }, 5),
                    };
                    let ev = event(
                        kind,
                        ts,
                        ThreadRef::Index(thread),
                        StringRef::Index(1),
                        StringRef::Index(name),
                        &args,
                    );
                    trace = trace.push(&ev);
                    ts += 1;
                }
            }
        }
    }
    let file = trace.file("dump_string_float_args.fxt");
    let out = fxt(&["dump", p(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // With offsets, every event is written piece by piece.
    let with_offsets = fxt(&["dump", "--offsets", p(&file)]);
    let with_offsets = stdout(&with_offsets);
    let pieces: Vec<&str> = with_offsets
        .lines()
        .map(|l| l.split_once(' ').unwrap().1)
        .collect();
    assert_eq!(text.lines().collect::<Vec<_>>(), pieces);
    let events: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("duration_begin") || l.starts_with("counter"))
        .collect();
    assert_eq!(events.len(), 2 * floats.len() * 2 * 3);
    for (i, line) in events.iter().enumerate() {
        let x = floats[i / 6 % floats.len()];
        let thread = 11 + i / 3 % 2;
        let value = match (i % 3, i < events.len() / 2) {
            (0, true) => "\"steady\"".to_string(),
            (0, false) => "\"paused\"".to_string(),
            (1, _) => r#""say \"hi\"""#.to_string(),
            _ => format!("{long:?}"),
        };
        let head = match i % 3 {
            0 => format!("duration_begin ts={}", 1000 + i),
            _ => format!("counter ts={} id=3", 1000 + i),
        };
        let name = if i % 3 == 0 { "frame" } else { "bytes" };
        assert_eq!(
            *line,
            format!(
                "{head} thread=10/{thread} category=\"demo\" name=\"{name}\" phase={value} bytes={x:?} bytes=7"
            )
        );
    }
}

/// Threads taking turns, two of them in one slot of the pieces kept by
/// thread (koids 3 and 67) with two names in one slot (indices 3 and 35),
/// and then two thread indices and both names redefined (one thread kept,
/// whose pieces would read the old names if kept under the indices
/// alone): every line's thread, category and name are its own, whether
/// written in blocks or piece by piece (`--offsets`).
#[test]
fn dump_lines_of_threads_taking_turns_carry_their_own_thread_and_names() {
    let args = [Arg::new(StringRef::Index(2), ArgValue::U64(7))];
    let mut t = Trace::with_provider(1, "a", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "c",
        })
        .push(&StringRecord {
            index: 2,
            value: "k",
        });
    let kinds = [
        EventKind::Instant,
        EventKind::DurationBegin,
        EventKind::DurationEnd,
        EventKind::DurationComplete { end: 0 },
        EventKind::Counter { id: 0 },
    ];
    let mut expected = Vec::new();
    let mut ts = 0;
    let rounds = [
        ([(1, 3), (1, 67), (2, 4)], ["n", "w"]),
        ([(9, 67), (9, 3), (2, 4)], ["m", "v"]),
    ];
    for (round, (koids, names)) in rounds.into_iter().enumerate() {
        for (index, &(process, thread)) in koids.iter().enumerate() {
            t = t.push(&ThreadRecord {
                index: index as u8 + 1,
                process,
                thread,
            });
        }
        for (index, value) in [3, 35].into_iter().zip(names) {
            t = t.push(&StringRecord { index, value });
        }
        for i in 0..40 {
            let thread = i % 3;
            // Each thread's events two by two under one name: thread 2/4,
            // the same in both rounds, starts round 1 with the name it
            // ended round 0 with.
            let name = i / 6 % 2;
            let kind = match kinds[(i / 3 + round) % kinds.len()] {
                EventKind::DurationComplete { .. } => EventKind::DurationComplete { end: ts + 5 },
                other => other,
            };
            let with_args = if i % 4 < 2 { &args[..] } else { &[][..] };
            ts += 10;
            t = t.push(&event(
                kind,
                ts,
                ThreadRef::Index(thread as u8 + 1),
                StringRef::Index(1),
                StringRef::Index([3, 35][name]),
                with_args,
            ));
            let (head, more) = match kind {
                EventKind::Instant => ("instant", String::new()),
                EventKind::DurationBegin => ("duration_begin", String::new()),
                EventKind::DurationEnd => ("duration_end", String::new()),
                EventKind::DurationComplete { end } => ("duration_complete", format!(" end={end}")),
                _ => ("counter", " id=0".to_string()),
            };
            let (process, thread) = koids[thread];
            let k = if with_args.is_empty() { "" } else { " k=7" };
            expected.push(format!(
                "{head} ts={ts}{more} thread={process}/{thread} category=\"c\" name=\"{}\"{k}",
                names[name]
            ));
        }
    }
    let file = t.file("dump_threads_taking_turns.fxt");
    // On one thread in one range, and on two cutting the trace where its
    // thread and string records are read in another range than its events.
    for (threads, range_bytes) in [(1, 1 << 20), (2, 512)] {
        for offsets in [false, true] {
            let mut args = vec!["dump", p(&file)];
            if offsets {
                args.insert(1, "--offsets");
            }
            let out = fxt_cut(threads, range_bytes, &args);
            assert!(out.status.success(), "{}", stderr(&out));
            let text = stdout(&out);
            let got: Vec<&str> = text
                .lines()
                .map(|l| {
                    if offsets {
                        l.split_once(' ').unwrap().1
                    } else {
                        l
                    }
                })
                .filter(|l| l.contains(" ts="))
                .collect();
            assert_eq!(got, expected, "{threads} threads, ranges of {range_bytes}");
        }
    }
}

/// Thread indices in one slot of the pieces kept by thread, inline koids
/// of the same numbers, threads and strings each defined anew alone
/// ([`indices_and_koids_trace`]): every line's thread and name are its
/// own, written in blocks or piece by piece (`--offsets`), on one thread
/// and cut in small ranges.
#[test]
fn dump_lines_keep_thread_indices_koids_and_epochs_apart() {
    let args = [Arg::new(StringRef::Index(2), ArgValue::U64(7))];
    let (t, events) = indices_and_koids_trace(&args);
    let expected: Vec<String> = events
        .iter()
        .enumerate()
        .map(|(i, (ts, process, thread, name))| {
            let k = if i % 36 % 4 < 2 { " k=7" } else { "" };
            format!("instant ts={ts} thread={process}/{thread} category=\"c\" name=\"{name}\"{k}")
        })
        .collect();
    let file = t.file("dump_indices_and_koids.fxt");
    for (threads, range_bytes) in [(1, 1 << 20), (2, 512)] {
        for offsets in [false, true] {
            let mut args = vec!["dump", p(&file)];
            if offsets {
                args.insert(1, "--offsets");
            }
            let out = fxt_cut(threads, range_bytes, &args);
            assert!(out.status.success(), "{}", stderr(&out));
            let text = stdout(&out);
            let got: Vec<&str> = text
                .lines()
                .map(|l| match offsets {
                    true => l.split_once(' ').unwrap().1,
                    false => l,
                })
                .filter(|l| l.contains(" ts="))
                .collect();
            assert_eq!(got, expected, "{threads} threads, ranges of {range_bytes}");
        }
    }
}
