//! `fxt flame`: folded stacks by self time that add up to `fxt stats`'
//! durations, and an inferno SVG whose frames nest and are as wide as
//! their counts, rendered by a browser.

mod cli_support;
use cli_support::*;

#[allow(dead_code)]
#[path = "../../../examples/quickstart.rs"]
mod quickstart;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The trace the quickstart example writes (run once per test binary).
fn quickstart_trace() -> &'static Path {
    static TRACE: OnceLock<PathBuf> = OnceLock::new();
    TRACE.get_or_init(|| {
        let path = tmp("quickstart.fxt");
        // The only test code that sets the environment, once.
        std::env::set_var("FXT_OUTPUT", &path);
        quickstart::main();
        std::env::remove_var("FXT_OUTPUT");
        path
    })
}

/// `fxt flame --folded ARGS`: stack → nanoseconds.
fn folded(args: &[&str]) -> BTreeMap<String, u64> {
    let out = fxt(&[&["flame", "--folded"], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').expect("`stack count`");
            (stack.to_owned(), n.parse().expect("a count"))
        })
        .collect()
}

/// The frames of a stack.
fn frames(stack: &str) -> Vec<&str> {
    stack.split(';').collect()
}

/// `fxt stats --json`: category/name → total duration in ns.
fn stats_totals(file: &Path) -> BTreeMap<String, u64> {
    let out = fxt(&["stats", "--json", p(file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["durations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["name"].as_str().unwrap().to_owned(),
                d["total_ns"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn quickstart_stacks_nest_per_thread_and_add_up_to_stats_totals() {
    let trace = quickstart_trace();
    let stacks = folded(&[p(trace)]);
    // What the quickstart emits: `setup` around `run` on the main thread;
    // `run` starts the workers, each with its own stack of `batch` around
    // `collatz_steps` (a thread's stack cannot continue another's).
    let mut shapes: Vec<Vec<&str>> = stacks
        .keys()
        .map(|s| {
            let f = frames(s);
            let thread = f[0].split(" [").next().unwrap();
            let thread = if thread.starts_with("worker-") {
                "worker"
            } else {
                thread
            };
            std::iter::once(thread)
                .chain(f[1..].iter().copied())
                .collect()
        })
        .collect();
    shapes.sort();
    shapes.dedup();
    let expected: Vec<Vec<&str>> = vec![
        vec!["main", "setup"],
        vec!["main", "setup", "run"],
        vec!["worker", "batch"],
        vec!["worker", "batch", "collatz_steps"],
    ];
    assert!(shapes.iter().all(|s| expected.contains(s)), "{shapes:?}");
    assert!(
        shapes.contains(&expected[1]) && shapes.contains(&expected[3]),
        "{shapes:?}"
    );
    assert_eq!(
        stacks
            .keys()
            .filter(|s| s.ends_with(";batch;collatz_steps"))
            .count(),
        4,
        "one stack per worker: {stacks:?}"
    );

    // The lines under a frame add up to its duration, as `fxt stats` sums
    // it: every name appears once per stack, so its total is the sum of
    // the stacks that hold it.
    let totals = stats_totals(trace);
    for name in ["setup", "run", "batch", "collatz_steps"] {
        let under: u64 = stacks
            .iter()
            .filter(|(s, _)| frames(s)[1..].contains(&name))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(under, totals[name], "{name}");
    }
    // Per thread, the self times add up to its outermost durations.
    let of = |prefix: &str| -> u64 {
        stacks
            .iter()
            .filter(|(s, _)| s.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(of("main ["), totals["setup"]);
    assert_eq!(of("worker-"), totals["batch"]);
}

/// A frame of an inferno SVG.
#[derive(Debug)]
struct Frame {
    name: String,
    title: String,
    /// Left edge and width, percent of the image's drawing width.
    x: f64,
    width: f64,
    y: u64,
    /// Samples (nanoseconds) before it and in it.
    fg_x: u64,
    fg_w: u64,
}

/// The value of attribute `name` in `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let at = tag
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("{name} in {tag}"));
    let rest = &tag[at + name.len() + 3..];
    &rest[..rest.find('"').unwrap()]
}

fn svg_frames(svg: &str) -> Vec<Frame> {
    svg.split("<g><title>")
        .skip(1)
        .map(|g| {
            let title = g[..g.find("</title>").unwrap()].to_owned();
            let rect = &g[g.find("<rect").unwrap()..];
            let rect = &rect[..rect.find("/>").unwrap()];
            let name = title[..title.rfind(" (").unwrap()].to_owned();
            let pct = |v: &str| v.trim_end_matches('%').parse::<f64>().unwrap();
            Frame {
                name,
                title: title.clone(),
                x: pct(attr(rect, "x")),
                width: pct(attr(rect, "width")),
                y: attr(rect, "y").parse().unwrap(),
                fg_x: attr(rect, "fg:x").parse().unwrap(),
                fg_w: attr(rect, "fg:w").parse().unwrap(),
            }
        })
        .collect()
}

/// The frame that `f` sits on: one row below, spanning it.
fn parent<'a>(frames: &'a [Frame], f: &Frame) -> Option<&'a Frame> {
    frames.iter().find(|p| {
        p.y > f.y && p.y - f.y == 16 && p.fg_x <= f.fg_x && f.fg_x + f.fg_w <= p.fg_x + p.fg_w
    })
}

/// The stack of a frame, from the thread down (without inferno's `all`).
fn stack_of(frames: &[Frame], f: &Frame) -> String {
    let mut names = vec![f.name.as_str()];
    let mut at = f;
    while let Some(p) = parent(frames, at) {
        names.push(&p.name);
        at = p;
    }
    names.pop();
    names.reverse();
    names.join(";")
}

/// `fxt flame QUICKSTART -o SVG ARGS...`.
fn svg_of(name: &str, args: &[&str]) -> PathBuf {
    let svg = tmp(name);
    let out = fxt(&[&["flame", p(quickstart_trace()), "-o", p(&svg)], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    svg
}

fn quickstart_svg() -> &'static Path {
    static SVG: OnceLock<PathBuf> = OnceLock::new();
    SVG.get_or_init(|| svg_of("quickstart.svg", &[]))
}

/// Checks every frame of `svg` against the folded stacks of `args`: as
/// wide as its count, which is the sum of the stacks it holds.
fn check_widths(svg: &str, args: &[&str]) -> Vec<Frame> {
    let stacks = folded(&[&[p(quickstart_trace())], args].concat());
    // Interactive: inferno's search and zoom script.
    assert!(
        svg.contains("<script") && svg.contains("search"),
        "interactive"
    );
    let frames = svg_frames(svg);
    let all = frames
        .iter()
        .find(|f| f.name == "all")
        .expect("the root frame");
    let total: u64 = stacks.values().sum();
    assert_eq!(all.fg_w, total);
    for f in &frames {
        // Width in percent of the whole, to inferno's 4 decimals.
        let expected = f.fg_w as f64 / total as f64 * 100.0;
        assert!((f.width - expected).abs() < 1e-4, "{f:?}: {expected}");
        assert!(
            (f.x - f.fg_x as f64 / total as f64 * 100.0).abs() < 1e-4,
            "{f:?}"
        );
        assert!(
            f.title.ends_with("%)") && f.title.contains(" ns, "),
            "{f:?}"
        );
        if f.name == "all" {
            continue;
        }
        // Each frame's count: the folded counts of the stacks it holds.
        let stack = stack_of(&frames, f);
        let under: u64 = stacks
            .iter()
            .filter(|(s, _)| **s == stack || s.starts_with(&format!("{stack};")))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(f.fg_w, under, "{stack}");
    }
    frames
}

/// Every frame named `inner` sits on one named `outer`.
fn nested(frames: &[Frame], inner: &str, outer: &str) {
    let inners: Vec<&Frame> = frames.iter().filter(|f| f.name == inner).collect();
    assert!(!inners.is_empty(), "{inner} drawn");
    for f in inners {
        let on = parent(frames, f).map(|p| p.name.as_str());
        assert!(on.is_some_and(|o| o.starts_with(outer)), "{f:?} on {on:?}");
    }
}

#[test]
fn svg_frames_nest_and_are_as_wide_as_their_folded_counts() {
    let svg = std::fs::read_to_string(quickstart_svg()).unwrap();
    let frames = check_widths(&svg, &[]);
    nested(&frames, "run", "setup");
    nested(&frames, "setup", "main [");
    // One worker alone, so that its frames are wide enough to be drawn
    // whatever the main thread's share (inferno leaves out frames under
    // 0.1 pixel).
    let svg = std::fs::read_to_string(svg_of("worker-0.svg", &["--thread", "worker-0"])).unwrap();
    let frames = check_widths(&svg, &["--thread", "worker-0"]);
    nested(&frames, "collatz_steps", "batch");
    nested(&frames, "batch", "worker-0 [");
}

/// A headless browser, if one is installed.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
    .find(|p| p.is_file())
}

#[test]
fn the_svg_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have chromium (.ci/run installs it)"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install chromium)");
        return;
    };
    let svg = std::fs::canonicalize(quickstart_svg()).unwrap();
    let png = tmp("quickstart-svg.png");
    let profile = tmp("chromium-profile");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            &format!("--user-data-dir={}", p(&profile)),
            &format!("--screenshot={}", p(&png)),
            "--window-size=1200,800",
        ])
        .arg(&svg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!("chromium did not finish its screenshot");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "chromium: {status}");

    let mut decoder =
        png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (1200, 800));
    let channels = info.line_size / info.width as usize;
    assert!(channels >= 3, "{info:?}");
    // Flame colors are warm (red high, blue low); the page is white and
    // inferno's background a pale yellow gradient (blue at least 0xb0).
    let flame = pixels[..info.buffer_size()]
        .chunks_exact(channels)
        .filter(|px| px[0] > 180 && px[2] < 120)
        .count();
    let area = (info.width * info.height) as usize;
    // The root, thread, `setup` and `run` rows alone span the width.
    assert!(
        flame > area / 50,
        "{flame} flame-colored pixels of {area}: the screenshot is blank"
    );
}

/// Durations on two threads at 2 GHz, an async span, a name with `;`.
fn synthetic() -> Trace {
    let main = ThreadRef::Inline {
        process: 10,
        thread: 11,
    };
    let other = ThreadRef::Inline {
        process: 10,
        thread: 12,
    };
    let ev = |kind, ticks, thread, category, name| {
        event(
            kind,
            ticks,
            thread,
            StringRef::Inline(category),
            StringRef::Inline(name),
            &[],
        )
    };
    Trace::with_provider(1, "app", 2_000_000_000)
        .push(&KernelObject {
            koid: 11,
            object_type: OBJ_TYPE_THREAD,
            name: StringRef::Inline("main"),
            args: &[Arg::new(StringRef::Inline("process"), ArgValue::Koid(10))],
        })
        .push(&ev(EventKind::AsyncBegin { id: 7 }, 20, main, "a", "req"))
        .push(&ev(EventKind::DurationBegin, 200, main, "a", "outer"))
        // Written when they end, before the end of `outer`.
        .push(&ev(
            EventKind::DurationComplete { end: 300 },
            240,
            main,
            "b",
            "inner",
        ))
        .push(&ev(
            EventKind::DurationComplete { end: 340 },
            320,
            main,
            "b",
            "inner",
        ))
        .push(&ev(EventKind::AsyncEnd { id: 7 }, 180, main, "a", "req"))
        .push(&ev(EventKind::DurationEnd, 400, main, "a", "outer"))
        .push(&ev(
            EventKind::DurationComplete { end: 100 },
            0,
            other,
            "a",
            "x;y",
        ))
}

fn lines(stacks: &[(&str, u64)]) -> BTreeMap<String, u64> {
    stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect()
}

#[test]
fn self_times_in_ns_with_thread_and_category_filters() {
    let file = synthetic().file("synthetic.fxt");
    let f = p(&file);
    // `outer` 100 ns holds `inner` 30 + 10 ns; `x;y` is one frame.
    assert_eq!(
        folded(&[f]),
        lines(&[
            ("async;req", 80),
            ("main [11];outer", 60),
            ("main [11];outer;inner", 40),
            ("thread 12;x:y", 50),
        ])
    );
    assert_eq!(
        folded(&[f, "--category", "a"]),
        lines(&[
            ("async;req", 80),
            ("main [11];outer", 100),
            ("thread 12;x:y", 50)
        ])
    );
    assert_eq!(
        folded(&[f, "--category", "b"]),
        lines(&[("main [11];inner", 40)])
    );
    let main_only = lines(&[("main [11];outer", 60), ("main [11];outer;inner", 40)]);
    for t in ["main", "11", "main [11]"] {
        assert_eq!(folded(&[f, "--thread", t]), main_only, "--thread {t}");
    }
    assert_eq!(
        folded(&[f, "--thread", "12"]),
        lines(&[("thread 12;x:y", 50)])
    );

    // Without -o: the trace's name with .svg.
    let out = fxt(&["flame", f]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(file.with_extension("svg")).unwrap();
    assert_eq!(
        svg_frames(&svg)
            .iter()
            .find(|f| f.name == "all")
            .unwrap()
            .fg_w,
        230
    );
}

#[test]
fn a_span_ending_after_its_parent_is_cut_and_said() {
    let t = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let complete = |begin, end, name| {
        event(
            EventKind::DurationComplete { end },
            begin,
            t,
            StringRef::Inline("c"),
            StringRef::Inline(name),
            &[],
        )
    };
    let file = Trace::with_provider(1, "app", 1_000_000_000)
        .push(&complete(0, 100, "p"))
        .push(&complete(50, 150, "q"))
        .file("overlap.fxt");
    let out = fxt(&["flame", "--folded", p(&file)]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "thread 2;p 50\nthread 2;p;q 50\n");
    assert!(
        stderr(&out).contains("1 spans end after their parent"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_trace_without_durations_is_a_clear_error() {
    let file = Trace::with_provider(1, "app", 1_000_000_000).file("empty.fxt");
    let out = fxt(&["flame", p(&file), "-o", p(&tmp("empty.svg"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("has no durations"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn flame_on_several_threads_prints_what_one_thread_prints() {
    assert_same_on_any_threads("flame_threads.fxt", &["flame", "--folded", "{}"]);
    // Cut at many places, with a category filter too.
    assert_same_when_long_cut("flame_cut.fxt", &["flame", "--folded", "{}"]);
    let filtered = ["flame", "--folded", "--category", "cat", "{}"];
    assert_same_when_long_cut("flame_cut_category.fxt", &filtered);
}

#[test]
fn ends_without_a_begin_and_begins_never_ended_are_said_however_the_file_is_cut() {
    let t = ThreadRef::Inline {
        process: 1,
        thread: 2,
    };
    let ev = |kind, ticks, name| {
        event(
            kind,
            ticks,
            t,
            StringRef::Inline("c"),
            StringRef::Inline(name),
            &[],
        )
    };
    let file = Trace::with_provider(1, "app", 1_000_000_000)
        .push(&ev(EventKind::DurationEnd, 5, "lost"))
        .push(&ev(EventKind::AsyncEnd { id: 3 }, 6, "lost async"))
        .push(&ev(EventKind::DurationBegin, 10, "kept"))
        .push(&ev(EventKind::DurationEnd, 30, "kept"))
        .push(&ev(EventKind::DurationBegin, 40, "never ended"))
        .file("flame_unmatched.fxt");
    let said = "left out 2 ends without a begin and 1 begins never ended";
    for (threads, range_bytes) in [(1, 1 << 20), (2, 16), (3, 40)] {
        let out = fxt_cut(threads, range_bytes, &["flame", "--folded", p(&file)]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), "thread 2;kept 20\n", "{threads} threads");
        assert!(
            stderr(&out).contains(said),
            "{threads} threads: {}",
            stderr(&out)
        );
    }
}

/// Four threads taking turns, thousands of spans each, as `flame` folds
/// them as it goes: frames of begin/end pairs holding a complete event
/// written when it starts, ties of starts and ends, an end that closes
/// nothing; on thread 11, a complete event written last that holds all the
/// thread wrote; on thread 13 if `late`, complete events that hold a
/// few hundred spans written before them, but not all.
fn turns(late: bool) -> Trace {
    let ev = |kind, ticks, k: u64, name| {
        let thread = ThreadRef::Inline {
            process: 1,
            thread: 10 + k,
        };
        let (category, name) = (StringRef::Inline("c"), StringRef::Inline(name));
        event(kind, ticks, thread, category, name, &[])
    };
    let mut t = Trace::with_provider(1, "app", 1_000_000_000).push(&ev(
        EventKind::DurationEnd,
        1,
        2,
        "lost",
    ));
    let mut ts = 10_000;
    for i in 0..3000u64 {
        for k in 0..4 {
            let end = ts + 9 + i % 3;
            t = t
                .push(&ev(EventKind::DurationBegin, ts, k, "frame"))
                .push(&ev(
                    EventKind::DurationComplete { end: ts + 5 },
                    ts + 1,
                    k,
                    "layout",
                ))
                .push(&ev(EventKind::DurationBegin, ts + 5, k, "draw"))
                .push(&ev(EventKind::DurationEnd, end, k, "draw"))
                .push(&ev(EventKind::DurationEnd, end, k, "frame"));
            if late && k == 3 && i % 700 == 699 {
                let start = ts - 20 * 300;
                let late = EventKind::DurationComplete { end: ts + 15 };
                t = t.push(&ev(late, start, k, "late"));
            }
        }
        ts += 20;
    }
    t.push(&ev(EventKind::DurationComplete { end: ts }, 5, 1, "main"))
}

/// `flame` folds each thread's spans as it goes, on one thread or cut
/// into ranges of a few hundred bytes to a few hundred thousand, and prints
/// what it prints keeping every span (as it does reading a stream):
/// spans that a complete event written later holds, whole or in part,
/// included.
#[test]
fn folding_as_it_goes_prints_what_keeping_every_span_prints() {
    for late in [false, true] {
        let trace = turns(late);
        let file = trace.file(&format!("turns_{late}.fxt"));
        let name = p(&file);
        for selected in [&[][..], &["--thread", "13"][..], &["--category", "c"][..]] {
            let args = [&["flame", "--folded"][..], selected].concat();
            let kept = fxt_stdin(&[&args[..], &["-"]].concat(), &trace.bytes());
            assert!(kept.status.success(), "{}", stderr(&kept));
            assert!(stdout(&kept).contains(";frame;draw "), "{}", stdout(&kept));
            let said = stderr(&kept).replace("<stdin>", name);
            for (threads, range_bytes) in [(1, 1 << 20), (2, 300), (3, 5_000), (2, 400_000)] {
                let folded = fxt_cut(threads, range_bytes, &[&args[..], &[name]].concat());
                let what = format!("late {late}, {selected:?}, {threads} threads, {range_bytes}");
                assert!(stdout(&folded) == stdout(&kept), "stdout, {what}");
                assert_eq!(stderr(&folded), said, "stderr, {what}");
                assert_eq!(folded.status.code(), kept.status.code(), "{what}");
            }
        }
    }
}
