//! The fresh-process tables and the targets checked against
//! their medians.

use super::*;

/// The targets checked against the fresh-mode medians.
pub(crate) fn verdicts(o: &Options, fresh: &Samples) -> String {
    let mut out = String::from("Targets (fresh sessions, medians of this run):\n");
    let mark = |ok: bool| if ok { "met" } else { "**missed**" };
    let goals = [
        Scenario::Instant,
        Scenario::InstantArg,
        Scenario::Counter,
        Scenario::DurationAttr,
    ];
    for tracer in ["fxt", "fxt-prefault"] {
        for s in goals {
            for t in o.threads.iter().copied().filter(|&t| t <= 2) {
                if let (Some(v), Some(floor)) =
                    (fresh.median(s, t, tracer), fresh.median(s, t, "floor"))
                {
                    // Beside it, the ratio to the floor faulting fresh memory in
                    // as it goes (what the kernel's part of a fresh buffer costs).
                    let cold = match fresh.median(s, t, "floor-fresh") {
                        Some(c) => format!("; {:.2}x floor-fresh ({} ns)", v / c, fmt_ns(c)),
                        None => String::new(),
                    };
                    let _ = writeln!(
                        out,
                        "* {tracer}, {}, {t} thread(s): ≤1.15x the floor: {:.2}x ({} vs {} ns{cold}) — {}",
                        s.describe(),
                        v / floor,
                        fmt_ns(v),
                        fmt_ns(floor),
                        mark(v / floor <= 1.15)
                    );
                }
            }
        }
    }
    for s in goals {
        let mut parts = Vec::new();
        for tracer in ["floor", "floor-fresh", "fxt", "fxt-prefault", "fxt-memory"] {
            if let (Some(one), Some(two)) = (fresh.median(s, 1, tracer), fresh.median(s, 2, tracer))
            {
                parts.push((tracer, two / one));
            }
        }
        if let Some(&(_, fxt)) = parts.iter().find(|p| p.0 == "fxt") {
            let text: Vec<String> = parts.iter().map(|(n, r)| format!("{n} {r:.2}x")).collect();
            let _ = writeln!(
                out,
                "* {}, 2 threads' aggregate ≤0.6x of 1 thread's: {} — {}",
                s.describe(),
                text.join(", "),
                mark(fxt <= 0.6)
            );
        }
        if let (Some(two), Some(four)) = (fresh.median(s, 2, "fxt"), fresh.median(s, 4, "fxt")) {
            let floor = match (fresh.median(s, 2, "floor"), fresh.median(s, 4, "floor")) {
                (Some(a), Some(b)) => format!(" (floor {:.2}x)", b / a),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "* {}, 4 threads do not collapse (4-thread aggregate ≤1.2x of 2 threads' on 2 cores): {:.2}x{floor} — {}",
                s.describe(),
                four / two,
                mark(four / two <= 1.2)
            );
        }
    }
    alternatives_verdict(o, fresh, &mut out);
    out
}

/// [`verdicts()`]' last line: fxt against the other tracers, in every cell
/// both were measured.
pub(crate) fn alternatives_verdict(o: &Options, fresh: &Samples, out: &mut String) {
    let mark = |ok: bool| if ok { "met" } else { "**missed**" };
    let alternatives = ["fastrace", "tracy", "puffin", "tracing-chrome"];
    let mut slower = Vec::new();
    let mut compared = 0;
    for &s in &o.scenarios {
        if s == Scenario::Disabled {
            continue;
        }
        for &t in &o.threads {
            let Some(fxt) = fresh.median(s, t, "fxt") else {
                continue;
            };
            for a in alternatives {
                if let Some(v) = fresh.median(s, t, a) {
                    compared += 1;
                    if fxt >= v {
                        slower.push(format!("{} x{t} vs {a} ({fxt:.1} vs {v:.1})", s.id()));
                    }
                }
            }
        }
    }
    if compared > 0 {
        let _ = writeln!(
            out,
            "* fxt (default) faster than fastrace, tracy, puffin and tracing-chrome in every cell: {compared} cells compared{} — {}",
            if slower.is_empty() {
                String::new()
            } else {
                format!("; slower in {}", slower.join(", "))
            },
            mark(slower.is_empty())
        );
    }
}

/// The fresh-process tables (oneshot, then the modes) and their verdicts.
pub(crate) fn fresh_section(o: &Options, text: &mut String) {
    let samples = fresh(o);
    let has = |names: &[&str]| o.tracers.iter().any(|t| names.contains(&t.as_str()));
    let main_columns: Vec<&str> = o
        .tracers
        .iter()
        .map(String::as_str)
        .filter(|t| !t.starts_with("fxt-circular") && !t.starts_with("fxt-streaming"))
        .collect();
    let ratio_columns: Vec<&str> = ["floor-fresh", "fxt", "fxt-prefault", "fxt-memory"]
        .into_iter()
        .filter(|t| main_columns.contains(t))
        .collect();
    let _ = writeln!(
            text,
            "\n### Fresh session per repetition (oneshot)\n\n\
             Aggregate ns per event (wall time of all threads / all events), median (min–max) of {} fresh processes per cell, each a new session, {} events per thread after 1 000 untimed (tracing-chrome: a tenth of that):\n",
            o.reps, o.events
        );
    let _ = writeln!(
        text,
        "{}",
        event_table(o, &samples, &main_columns, &ratio_columns)
    );
    let modes = [
        "fxt-circular",
        "fxt-circular-prefault",
        "fxt-streaming",
        "fxt-streaming-prefault",
    ];
    if has(&modes) {
        let mut columns = vec!["floor"];
        columns.extend(modes.iter().filter(|m| o.tracers.iter().any(|t| t == *m)));
        let _ = writeln!(
            text,
                "\n### Circular (8 MiB, wraps) and streaming (64 MiB, drained to a file) modes, fresh session per repetition\n"
            );
        let _ = writeln!(
            text,
            "{}",
            event_table(o, &samples, &columns, &columns[1..])
        );
    }
    let n = notes(&samples);
    if !n.is_empty() {
        let _ = writeln!(text, "{n}");
    }
    let _ = writeln!(text, "{}", verdicts(o, &samples));
}
