//! `fxt check`: strict validation with byte offsets and exit status.

mod cli_support;
use cli_support::*;

#[test]
fn clean_trace_passes() {
    let file = golden().file("check_clean.fxt");
    let out = fxt(&["check", p(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(stdout(&out), format!("{}: ok, 10 records\n", p(&file)));
}

fn ev<'a>(kind: EventKind, ts: u64, thread: ThreadRef, category: u16, name: u16) -> Event<'a> {
    event(
        kind,
        ts,
        thread,
        StringRef::Index(category),
        StringRef::Index(name),
        &[],
    )
}

#[test]
fn every_kind_of_problem_is_reported_with_its_offset() {
    let t1 = ThreadRef::Index(1);
    let mut t = Trace::with_provider(1, "app", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "c",
        })
        .push(&StringRecord {
            index: 2,
            value: "n",
        })
        .push(&ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        });
    let mut expect = Vec::new();

    // A string record with reserved bit 31 set.
    let at = t.offset();
    let mut words = encode_to_vec(&StringRecord {
        index: 3,
        value: "x",
    })
    .unwrap();
    words[0] |= 1 << 31;
    t = t.raw(&words);
    expect.push(format!(
        "offset {at:#x}: reserved bits 0x0000000080000000 of the string record header are set"
    ));

    // A bool argument with a reserved bit set.
    let at = t.offset();
    let args = [Arg::new(StringRef::Index(2), ArgValue::Bool(true))];
    let mut words = encode_to_vec(&event(
        EventKind::Instant,
        1,
        t1,
        StringRef::Index(1),
        StringRef::Index(2),
        &args,
    ))
    .unwrap();
    words[2] |= 1 << 40;
    t = t.raw(&words);
    expect.push(format!(
        "offset {at:#x}: reserved bits 0x0000010000000000 of the argument header are set"
    ));

    // References to undefined strings and threads.
    let at = t.offset();
    t = t.push(&ev(EventKind::Instant, 2, t1, 9, 2));
    expect.push(format!(
        "offset {at:#x}: the category refers to undefined string #9"
    ));
    let at = t.offset();
    t = t.push(&ev(EventKind::Instant, 3, ThreadRef::Index(4), 1, 2));
    expect.push(format!(
        "offset {at:#x}: the thread refers to undefined thread #4"
    ));

    // A complete event that ends before it begins.
    let at = t.offset();
    t = t.push(&ev(EventKind::DurationComplete { end: 5 }, 10, t1, 1, 2));
    expect.push(format!(
        "offset {at:#x}: duration complete event n ends (ts 5) before it begins (ts 10)"
    ));

    // An end with no begin, then a begin never ended.
    let at = t.offset();
    t = t.push(&ev(EventKind::DurationEnd, 11, t1, 1, 2));
    expect.push(format!(
        "offset {at:#x}: duration end n on thread 1/2 has no matching begin"
    ));
    let at = t.offset();
    t = t.push(&ev(EventKind::DurationBegin, 12, t1, 1, 2));
    expect.push(format!(
        "offset {at:#x}: duration begin n on thread 1/2 is never ended"
    ));

    // A cut record.
    let at = t.offset();
    let mut bytes = t.bytes();
    bytes.extend_from_slice(&0x0000_0000_0000_0034u64.to_le_bytes());
    expect.push(format!(
        "offset {at:#x}: truncated record at offset {at:#x}: needs 24 bytes, the input holds 8; \
         nothing after it can be read"
    ));

    let file = tmp("check_problems.fxt");
    std::fs::write(&file, &bytes).unwrap();
    let out = fxt(&["check", p(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let name = p(&file);
    let mut want: Vec<String> = expect.iter().map(|e| format!("{name}: {e}")).collect();
    want.push(format!("{name}: 8 problems in 13 records"));
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), want);
}

/// Argument names and string values by index are checked against the
/// table like an event's own; inline texts and the empty string are never
/// undefined, whatever the table holds. Every event but one problem clean,
/// so that each line comes from the test of that one field.
#[test]
fn undefined_argument_strings_are_reported_and_defined_ones_not() {
    let (c, n) = (StringRef::Index(1), StringRef::Index(2));
    let t1 = ThreadRef::Index(1);
    let mut t = Trace::with_provider(1, "app", 1_000_000_000)
        .push(&StringRecord {
            index: 1,
            value: "c",
        })
        .push(&StringRecord {
            index: 2,
            value: "n",
        })
        .push(&ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        });
    let mut expect = Vec::new();
    let cases: [(&[Arg], Option<&str>); 6] = [
        (
            &[Arg::new(StringRef::Index(77), ArgValue::U64(1))],
            Some("the argument name refers to undefined string #77"),
        ),
        (
            &[
                Arg::new(n, ArgValue::I64(-1)),
                Arg::new(c, ArgValue::Str(StringRef::Index(0x7fff))),
            ],
            Some("the string argument value refers to undefined string #32767"),
        ),
        (
            &[Arg::new(
                StringRef::Inline("x"),
                ArgValue::Str(StringRef::Index(300)),
            )],
            Some("the string argument value refers to undefined string #300"),
        ),
        (
            &[Arg::new(
                StringRef::Inline("x"),
                ArgValue::Str(StringRef::Inline("y")),
            )],
            None,
        ),
        (
            &[
                Arg::new(StringRef::Empty, ArgValue::Str(StringRef::Empty)),
                Arg::new(n, ArgValue::Str(c)),
            ],
            None,
        ),
        (
            &[
                Arg::new(n, ArgValue::Bool(true)),
                Arg::new(c, ArgValue::Null),
            ],
            None,
        ),
    ];
    for (args, problem) in cases {
        let at = t.offset();
        t = t.push(&event(EventKind::Instant, 1, t1, c, n, args));
        if let Some(problem) = problem {
            expect.push(format!("offset {at:#x}: {problem}"));
        }
    }
    let file = tmp("check_argument_refs.fxt");
    std::fs::write(&file, t.bytes()).unwrap();
    let out = fxt(&["check", p(&file)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let name = p(&file);
    let mut want: Vec<String> = expect.iter().map(|e| format!("{name}: {e}")).collect();
    want.push(format!("{name}: 3 problems in 12 records"));
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), want);
}

/// An event the check found clean is checked again when the same words
/// come after a record that changed the tables: here a switch to a
/// provider that defined neither its strings nor its thread, then back.
#[test]
fn an_event_repeated_word_for_word_is_checked_again_after_a_provider_switch() {
    let (c, n) = (StringRef::Index(1), StringRef::Index(2));
    let args = [Arg::new(StringRef::Index(3), ArgValue::U64(7))];
    let e = event(EventKind::Instant, 1, ThreadRef::Index(1), c, n, &args);
    let mut t =
        Trace::with_provider(1, "app", 1_000_000_000).strings(&[(1, "c"), (2, "n"), (3, "a")]);
    t = t
        .push(&ThreadRecord {
            index: 1,
            process: 1,
            thread: 2,
        })
        .push(&e)
        .push(&e)
        .push(&ProviderInfo {
            provider_id: 2,
            name: "other",
        });
    let at = t.offset();
    t = t.push(&e);
    let again = t.offset();
    t = t
        .push(&e)
        .push(&ProviderSection { provider_id: 1 })
        .push(&e);
    let mut want = Vec::new();
    for offset in [at, again] {
        for problem in [
            "the category refers to undefined string #1",
            "the name refers to undefined string #2",
            "the argument name refers to undefined string #3",
            "the thread refers to undefined thread #1",
        ] {
            want.push(format!("offset {offset:#x}: {problem}"));
        }
    }
    let file = tmp("check_repeated_event.fxt");
    std::fs::write(&file, t.bytes()).unwrap();
    let out = fxt(&["check", p(&file)]);
    let name = p(&file);
    let mut want: Vec<String> = want.iter().map(|e| format!("{name}: {e}")).collect();
    want.push(format!("{name}: 8 problems in 14 records"));
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), want);
}

#[test]
fn mismatched_end_names() {
    let t1 = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let t = Trace::new()
        .push(&MagicNumber)
        .push(&StringRecord {
            index: 1,
            value: "a",
        })
        .push(&StringRecord {
            index: 2,
            value: "b",
        });
    let begin_at = t.offset();
    let t = t.push(&ev(EventKind::DurationBegin, 1, t1, 1, 1));
    let end_at = t.offset();
    let t = t.push(&ev(EventKind::DurationEnd, 2, t1, 1, 2));
    let file = t.file("check_names.fxt");
    let out = fxt(&["check", p(&file)]);
    assert_eq!(out.status.code(), Some(1));
    let name = p(&file);
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        [
            format!("{name}: offset {end_at:#x}: duration end b closes duration begin a (offset {begin_at:#x})"),
            format!("{name}: 1 problem in 5 records"),
        ]
    );
}

#[test]
fn garbage_is_not_a_trace() {
    let file = tmp("check_garbage.fxt");
    std::fs::write(&file, b"not a trace at all!").unwrap();
    let out = fxt(&["check", p(&file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not an FXT trace"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn check_on_several_threads_prints_what_one_thread_prints() {
    // Problems on both sides of every cut: ends with no begin, begins
    // never ended, ends whose name is not their begin's.
    assert_same_on_any_threads("check_threads.fxt", &["check", "{}"]);
    // Cut at many places: two providers' tables, renamed strings, open
    // begins, malformed records and a damaged tail on both sides of cuts.
    let (one, _) = assert_same_when_cut("check_cut.fxt", &["check", "{}"], None);
    assert_eq!(one.status.code(), Some(1), "{}", stdout(&one));
    assert_same_when_long_cut("check_long_cut.fxt", &["check", "{}"]);
}

/// A thread index redefined between a duration begin and its end names
/// another thread: the end closes nothing and the begin is never ended,
/// on one thread and cut into ranges.
#[test]
fn an_end_after_its_thread_index_is_redefined_is_on_another_thread() {
    let (c, n) = (StringRef::Index(1), StringRef::Index(2));
    let on_1 = ThreadRef::Index(1);
    let mut t = Trace::with_provider(1, "app", 1_000_000_000).strings(&[(1, "c"), (2, "a")]);
    let thread = |thread| ThreadRecord {
        index: 1,
        process: 1,
        thread,
    };
    t = t
        .push(&thread(11))
        .push(&event(EventKind::DurationBegin, 1, on_1, c, n, &[]))
        .push(&event(EventKind::DurationBegin, 2, on_1, c, n, &[]))
        .push(&event(EventKind::DurationEnd, 3, on_1, c, n, &[]))
        .push(&thread(12))
        .push(&event(EventKind::DurationEnd, 4, on_1, c, n, &[]));
    let file = t.file("check_thread_redefined.fxt");
    for out in [
        fxt(&["check", p(&file)]),
        fxt_cut(3, 64, &["check", p(&file)]),
    ] {
        let text = stdout(&out);
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[0].contains("duration begin a on thread 1/11 is never ended"),
            "{text}"
        );
        assert!(
            lines[1].contains("duration end a on thread 1/12 has no matching begin"),
            "{text}"
        );
        assert!(lines[2].ends_with("2 problems in 11 records"), "{text}");
    }
}
