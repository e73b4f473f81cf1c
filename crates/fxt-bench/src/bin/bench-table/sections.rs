//! The sections measured apart from the event tables: single-event
//! latency, a session's start and finish, the `tracing` route, the long
//! sessions and the instruction counts.

use super::*;

/// The latency section: quiet, then with the neighbour.
pub(crate) fn latency(o: &Options) -> String {
    const TRACERS: [&str; 4] = ["floor", "fxt", "fxt-prefault", "fxt-memory"];
    const SCENARIOS: [Scenario; 2] = [Scenario::Instant, Scenario::DurationAttr];
    let threads: Vec<usize> = o.threads.iter().copied().filter(|&t| t <= 2).collect();
    let mut out = String::from(
        "| load | scenario | threads | tracer | p50 | p99 | p99.99 | max | events > 50 µs |\n\
         |---|---|---:|---|---:|---:|---:|---:|---:|\n",
    );
    // Verdicts of the rows without a neighbour: (scenario, threads, tracer,
    // p99.99 ns, events over 50 µs).
    let mut quiet: Vec<(Scenario, usize, &str, f64, u64)> = Vec::new();
    let exe = std::env::current_exe().expect("own path");
    for loaded in [false, true] {
        let _neighbour = loaded.then(|| {
            load::Neighbour::start(&exe, load::NEIGHBOUR_BYTES, Duration::from_secs(600))
                .expect("start the neighbour process")
        });
        let load_name = if loaded { "neighbour" } else { "no neighbour" };
        for s in SCENARIOS {
            for &t in &threads {
                for tr in TRACERS {
                    eprintln!("latency: {load_name} {s} {t} {tr}");
                    let args = strings(&[&"--latency", &tr, &s.id(), &t, &o.events]);
                    let Some(w) = child(&args, "LAT ") else {
                        continue;
                    };
                    if w.first().map(String::as_str) == Some("n/a") || w.len() < 5 {
                        continue;
                    }
                    let f = |i: usize| w[i].parse::<f64>().map_or("?".into(), fmt_ns);
                    if !loaded {
                        let p9999 = w[2].parse().unwrap_or(f64::NAN);
                        quiet.push((s, t, tr, p9999, w[4].parse().unwrap_or(u64::MAX)));
                    }
                    let _ = writeln!(
                        out,
                        "| {load_name} | {} | {t} | {tr} | {} | {} | {} | {} | {}{} |",
                        s.describe(),
                        f(0),
                        f(1),
                        f(2),
                        f(3),
                        w[4],
                        if w.len() > 5 {
                            format!(" ({})", w[5..].join(" "))
                        } else {
                            String::new()
                        }
                    );
                }
            }
        }
    }
    out.push_str(
        "\nTargets without the neighbour (p99.99 under 1 µs; no event over 50 µs, next to the floor's count in the same run, which is the machine's own preemption):\n",
    );
    for &(s, t, tr, p9999, over) in quiet.iter().filter(|q| q.2 != "floor") {
        let floor_over = quiet
            .iter()
            .find(|q| q.0 == s && q.1 == t && q.2 == "floor")
            .map_or(String::from("?"), |q| q.4.to_string());
        let _ = writeln!(
            out,
            "* {tr}, {}, {t} thread(s): p99.99 {} ns — {}; events over 50 µs: {over} (floor {floor_over}) — {}",
            s.describe(),
            fmt_ns(p9999),
            if p9999 < 1000.0 { "met" } else { "**missed**" },
            if over == 0 { "met" } else { "**missed**" },
        );
    }
    out
}

/// The lifecycle section: start/finish times and the first pass.
pub(crate) fn lifecycle_section(o: &Options) -> String {
    const SIZES: [(usize, &str); 3] =
        [(64 << 20, "64 MiB"), (1 << 30, "1 GiB"), (4 << 30, "4 GiB")];
    let reps = o.reps.clamp(1, 3);
    let mut out = format!(
        "`start()` and `finish()` (one instant recorded in between; finish writes the configured file), median of {reps} fresh processes, ms:\n\n\
         | buffer | start, default | start, crash-safe | finish, default | finish, crash-safe |\n|---|---:|---:|---:|---:|\n"
    );
    for (bytes, label) in SIZES {
        let mut cols = Vec::new();
        for crash_safe in ["0", "1"] {
            let mut starts = Vec::new();
            let mut finishes = Vec::new();
            for _ in 0..reps {
                eprintln!("lifecycle: {label} crash-safe={crash_safe}");
                let args = strings(&[&"--start-finish", &bytes, &crash_safe]);
                if let Some(w) = child(&args, "LIFE ") {
                    starts.push(w[0].parse().unwrap_or(f64::NAN));
                    finishes.push(w[1].parse().unwrap_or(f64::NAN));
                }
            }
            cols.push((starts, finishes));
        }
        let m = |v: &[f64]| {
            if v.is_empty() {
                "failed".to_string()
            } else {
                fmt_spread(v)
            }
        };
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} |",
            m(&cols[0].0),
            m(&cols[1].0),
            m(&cols[0].1),
            m(&cols[1].1)
        );
    }
    let pass_bytes: usize = 1 << 30;
    let _ = write!(
        out,
        "\nFirst pass over a fresh 1 GiB oneshot buffer: one thread writes instants into 90% of it right after `start()`; ns per event and `start()` ms, median of {reps} fresh processes:\n\n\
         | configuration | ns per event | ÷ prefault | start ms |\n|---|---:|---:|---:|\n"
    );
    let mut rows = Vec::new();
    for (label, crash_safe, prefault) in [
        ("default (`Config::new()`)", "0", "0"),
        ("`.prefault(true)`", "0", "1"),
        ("`.crash_safe(true)`", "1", "0"),
    ] {
        let mut ns = Vec::new();
        let mut start = Vec::new();
        for _ in 0..reps {
            eprintln!("first pass: {label}");
            let args = strings(&[&"--first-pass", &pass_bytes, &crash_safe, &prefault]);
            if let Some(w) = child(&args, "PASS ") {
                ns.push(w[0].parse().unwrap_or(f64::NAN));
                start.push(w[1].parse().unwrap_or(f64::NAN));
            }
        }
        rows.push((label, ns, start));
    }
    let base = rows
        .iter()
        .find(|r| r.0.contains("prefault"))
        .filter(|r| !r.1.is_empty())
        .map(|r| median(&mut r.1.clone()));
    for (label, ns, start) in rows {
        if ns.is_empty() {
            let _ = writeln!(out, "| {label} | failed | | |");
            continue;
        }
        let med = median(&mut ns.clone());
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} |",
            fmt_spread(&ns),
            base.map_or(String::new(), |b| format!("{:.2}x", med / b)),
            fmt_spread(&start)
        );
    }
    out
}

/// The `tracing` section.
pub(crate) fn tracing_section(o: &Options) -> String {
    let subscribers = tracing_route::subscribers();
    let mut samples: HashMap<(&str, &str), Vec<f64>> = HashMap::new();
    let mut notes = Vec::new();
    for rep in 0..o.reps {
        eprintln!("tracing: repetition {}/{}", rep + 1, o.reps);
        for (call, _) in tracing_route::CALLS {
            for &sub in &subscribers {
                let args = strings(&[&"--tracing-cell", &sub, &call, &events_for(sub, o.events)]);
                let words = child(&args, "RESULT ").unwrap_or_default();
                let v = words
                    .first()
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(f64::NAN);
                samples.entry((call, sub)).or_default().push(v);
                if words.len() > 1 {
                    notes.push(format!("* {sub}, {call}: {}", words[1..].join(" ")));
                }
            }
        }
    }
    let med = |call: &str, sub: &str| {
        samples
            .get(&(call, sub))
            .map(|v| median(&mut v.clone()))
            .unwrap_or(f64::NAN)
    };
    let mut out = format!(
        "ns per event, 1 thread, median (min–max) of {} fresh processes of {} events (tracing-chrome, tracing-perfetto, tracing-tracy, tracing-perfetto-sdk: a tenth of that); goal: fxt-layer ≤ 1.5 × (registry + fxt-macro-prefault):\n\n| call |",
        o.reps, o.events
    );
    for sub in &subscribers {
        let _ = write!(out, " {sub} |");
    }
    out.push_str(" goal | fxt-layer ÷ goal | fxt-layer-prefault ÷ goal |\n|---|");
    for _ in 0..subscribers.len() + 3 {
        out.push_str("---:|");
    }
    out.push('\n');
    for (call, describe) in tracing_route::CALLS {
        let _ = write!(out, "| {describe} |");
        for sub in &subscribers {
            let _ = write!(out, " {} |", fmt_spread(&samples[&(call, *sub)]));
        }
        let goal = 1.5 * (med(call, "registry") + med(call, "fxt-macro-prefault"));
        let _ = writeln!(
            out,
            " {} | {:.2} | {:.2} |",
            fmt_ns(goal),
            med(call, "fxt-layer") / goal,
            med(call, "fxt-layer-prefault") / goal
        );
    }
    notes.sort();
    notes.dedup();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n{}", notes.join("\n"));
    }
    out
}

/// The long-session table.
pub(crate) fn long_section(o: &Options, text: &mut String) {
    let tracers: Vec<&str> = [
        "floor",
        "fxt",
        "fxt-prefault",
        "fxt-memory",
        "fxt-circular",
        "fxt-circular-prefault",
        "fxt-streaming",
        "fxt-streaming-prefault",
    ]
    .into_iter()
    .filter(|t| o.tracers.iter().any(|x| x == t))
    .collect();
    let samples = long(o, &tracers);
    let _ = writeln!(
            text,
            "\n### Long session\n\nOne process and one session per cell: one untimed pass of {} events per thread, then {} timed passes back to back in the same session (oneshot buffers sized to hold every pass: kept in memory, `fxt-memory`'s passes land on pages no one wrote before; drained, `fxt`'s reuse the chunks written out); median (min–max) over the passes:\n",
            o.events, o.reps
        );
    let _ = writeln!(
        text,
        "{}",
        event_table(o, &samples, &tracers, &tracers[1..])
    );
    let n = notes(&samples);
    if !n.is_empty() {
        let _ = writeln!(text, "{n}");
    }
}

/// The instruction counts.
pub(crate) fn instructions_section(o: &Options, text: &mut String) {
    // The mode and prefault variants run the same instructions on the
    // calling thread as `fxt`; the atomic floors are named alternatives.
    let tracers: Vec<String> = o
        .tracers
        .iter()
        .filter(|t| {
            !matches!(
                t.as_str(),
                "floor-atomic"
                    | "floor-shared"
                    | "fxt-circular-prefault"
                    | "fxt-streaming-prefault"
                    | "fxt-prefault"
                    | "fxt-memory"
            )
        })
        .cloned()
        .collect();
    let _ = writeln!(
        text,
        "{}",
        checks::instruction_table(&tracers, &o.scenarios)
    );
}
