//! The real-time section: the default path under each scheduling
//! policy, beside the floor under the same one.

use super::*;

/// What the realtime section measured, per (row, tracer): ns per event;
/// from the latency runs, the events over `realtime::LONG_EVENT_US` in all
/// and the longest event (ns); and the children's notes.
#[derive(Default)]
pub(crate) struct RealtimeSamples {
    ns: HashMap<(usize, &'static str), Vec<f64>>,
    over: HashMap<(usize, &'static str), u64>,
    longest: HashMap<(usize, &'static str), f64>,
    notes: Vec<String>,
}

/// One child of the realtime section: row `i`, `tracer`, timed as a whole
/// or (`latency`) event by event.
pub(crate) fn realtime_cell(
    o: &Options,
    s: &mut RealtimeSamples,
    i: usize,
    tracer: &'static str,
    latency: bool,
) {
    let row = &realtime::ROWS[i];
    let mut args = strings(&[&"--realtime", &row.policy, &row.helpers, &tracer, &o.events]);
    if latency {
        args.push("latency".to_string());
    }
    let Some(words) = child(&args, "RESULT ") else {
        return;
    };
    if words.first().map(String::as_str) == Some("n/a") {
        s.notes
            .push(format!("{}: {}", row.label, words[1..].join(" ")));
        return;
    }
    let num = |k: usize| {
        words
            .get(k)
            .and_then(|w| w.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    let rest = if latency {
        *s.over.entry((i, tracer)).or_default() += num(0) as u64;
        let longest = s.longest.entry((i, tracer)).or_default();
        *longest = longest.max(num(1));
        &words[2.min(words.len())..]
    } else {
        s.ns.entry((i, tracer)).or_default().push(num(0));
        &words[1.min(words.len())..]
    };
    if !rest.is_empty() {
        s.notes
            .push(format!("{} {tracer}: {}", row.label, rest.join(" ")));
    }
}

/// The realtime table: per row of `realtime::ROWS`, the floor and fxt's
/// default path under that policy, repetitions interleaved across rows.
pub(crate) fn realtime_section(o: &Options, text: &mut String) {
    let mut s = RealtimeSamples::default();
    for rep in 0..o.reps {
        eprintln!("realtime: repetition {}/{}", rep + 1, o.reps);
        for i in 0..realtime::ROWS.len() {
            for tracer in ["floor", "fxt"] {
                realtime_cell(o, &mut s, i, tracer, false);
                realtime_cell(o, &mut s, i, tracer, true);
            }
        }
    }
    let _ = writeln!(
        text,
        "### A real-time writer\n\n\
         One thread records {} instants into a fresh session (`Config::new()`: drained to its file, helpers at their default scheduling) from a process whose main thread set the row's policy (`sched_setscheduler`, priority 1) before starting the session and the writer; the floor runs under the same policy. ns per event, median (min–max) of {} fresh processes per cell, repetitions interleaved across rows. The last row leaves fxt's helper threads the writer's policy (`HelperScheduling::Inherit`, what they had before they set their own). The last two columns come from as many more fresh processes per cell, each event timed on its own (`lfence; rdtsc` around it): the events over 50 µs in all of them and the longest event; the floor's show what the machine itself does to the thread. Read it with the load average above: on a busy machine a writer at a real-time policy takes its core from every other process, and a streamer at the normal policy shares the other core with them.\n",
        o.events, o.reps
    );
    text.push_str(
        "| writer's policy | floor | fxt | fxt ÷ floor | events over 50 µs: floor / fxt | longest event (µs): floor / fxt |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for (i, row) in realtime::ROWS.iter().enumerate() {
        let (floor, fxt) = (
            s.ns.get(&(i, "floor")).map(Vec::as_slice),
            s.ns.get(&(i, "fxt")).map(Vec::as_slice),
        );
        let show = |v: Option<&[f64]>| v.map_or("n/a".to_string(), fmt_spread);
        let ratio = match (fxt, floor) {
            (Some(a), Some(b)) => {
                format!("{:.2}x", median(&mut a.to_vec()) / median(&mut b.to_vec()))
            }
            _ => String::new(),
        };
        let over = |t| {
            s.over
                .get(&(i, t))
                .map_or("n/a".to_string(), u64::to_string)
        };
        let longest = |t| {
            s.longest
                .get(&(i, t))
                .map_or("n/a".to_string(), |ns| format!("{:.1}", ns / 1000.0))
        };
        let _ = writeln!(
            text,
            "| {} | {} | {} | {ratio} | {} / {} | {} / {} |",
            row.label,
            show(floor),
            show(fxt),
            over("floor"),
            over("fxt"),
            longest("floor"),
            longest("fxt")
        );
    }
    let mut notes = s.notes;
    notes.sort();
    notes.dedup();
    for n in notes.iter().filter(|n| !n.ends_with(": ")) {
        let _ = writeln!(text, "\n* {n}");
    }
}
