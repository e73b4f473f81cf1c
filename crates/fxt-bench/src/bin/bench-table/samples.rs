//! The samples of the event tables, their formatting, and the runs that
//! gather them (fresh processes, or one long session per cell).

use super::*;

/// Key of an event-table cell: (scenario, threads, tracer).
pub(crate) type Key = (Scenario, usize, String);

/// ns-per-event samples of each cell (`None`: the tracer has no such
/// event).
#[derive(Default)]
pub(crate) struct Samples {
    values: HashMap<Key, Vec<f64>>,
    unsupported: std::collections::HashSet<Key>,
    notes: HashMap<Key, String>,
}

impl Samples {
    pub(crate) fn get(&self, s: Scenario, t: usize, tracer: &str) -> Option<&[f64]> {
        self.values
            .get(&(s, t, tracer.to_string()))
            .map(Vec::as_slice)
            .filter(|v| !v.is_empty())
    }

    pub(crate) fn median(&self, s: Scenario, t: usize, tracer: &str) -> Option<f64> {
        self.get(s, t, tracer)
            .map(|v| median(&mut v.to_vec()))
            .filter(|v| !v.is_nan())
    }
}

pub(crate) fn fmt_ns(v: f64) -> String {
    if v.is_nan() {
        "failed".into()
    } else if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// `median (min–max)` of samples.
pub(crate) fn fmt_spread(v: &[f64]) -> String {
    let med = median(&mut v.to_vec());
    if v.len() < 2 {
        return fmt_ns(med);
    }
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{} ({}–{})", fmt_ns(med), fmt_ns(min), fmt_ns(max))
}

/// Prints an event table: rows scenario × threads, one column per tracer
/// (median and spread), then `name ÷ floor` columns for `ratio_of`.
pub(crate) fn event_table(
    o: &Options,
    samples: &Samples,
    columns: &[&str],
    ratio_of: &[&str],
) -> String {
    let mut out = String::from("| scenario | threads |");
    for c in columns {
        let _ = write!(out, " {c} |");
    }
    for r in ratio_of {
        let _ = write!(out, " {r} ÷ floor |");
    }
    out.push_str("\n|---|---:|");
    for _ in 0..columns.len() + ratio_of.len() {
        out.push_str("---:|");
    }
    out.push('\n');
    for &s in &o.scenarios {
        for &t in &o.threads {
            let _ = write!(out, "| {} | {t} |", s.describe());
            for c in columns {
                match samples.get(s, t, c) {
                    Some(v) => {
                        let _ = write!(out, " {} |", fmt_spread(v));
                    }
                    None => out.push_str(" n/a |"),
                }
            }
            let floor = samples.median(s, t, "floor");
            for r in ratio_of {
                match (samples.median(s, t, r), floor) {
                    (Some(a), Some(b)) if b > 0.0 && s != Scenario::Disabled => {
                        let _ = write!(out, " {:.2}x |", a / b);
                    }
                    _ => out.push_str(" |"),
                }
            }
            out.push('\n');
        }
    }
    out
}

/// The cells' notes (records dropped...), except the circular mode's
/// overwrites, which are that mode's purpose and are summed up in one line.
pub(crate) fn notes(samples: &Samples) -> String {
    let mut n: Vec<_> = samples.notes.iter().collect();
    n.sort_by_key(|(k, _)| format!("{:?}", k));
    let mut out = String::new();
    let mut overwritten = 0;
    for ((s, t, tr), note) in n {
        if note.contains("overwritten (circular)") {
            overwritten += 1;
            continue;
        }
        let _ = writeln!(out, "* {tr}, {s}, {t} thread(s): {note}");
    }
    if overwritten > 0 {
        let _ = writeln!(
            out,
            "* circular cells: in {overwritten} of them most records were overwritten (the 8 MiB ring wraps many times; that is the mode)"
        );
    }
    out
}

// ---------------------------------------------------------------------------
// Sections.

/// Fresh mode: each repetition of each cell is its own process.
pub(crate) fn fresh(o: &Options) -> Samples {
    let mut samples = Samples::default();
    let mut cells = Vec::new();
    for &s in &o.scenarios {
        for &t in &o.threads {
            for tr in &o.tracers {
                cells.push((s, t, tr.clone()));
            }
        }
    }
    for rep in 0..o.reps {
        eprintln!("fresh: repetition {}/{}", rep + 1, o.reps);
        for cell in &cells {
            if samples.unsupported.contains(cell) {
                continue;
            }
            let args = strings(&[&"--cell", &cell.2, &cell.0.id(), &cell.1, &o.events, &1, &0]);
            let entry = samples.values.entry(cell.clone()).or_default();
            match child(&args, "RESULT ") {
                Some(words) if words.first().map(String::as_str) == Some("n/a") => {
                    samples.unsupported.insert(cell.clone());
                }
                Some(words) => {
                    entry.push(words[0].parse().unwrap_or(f64::NAN));
                    if words.len() > 1 {
                        samples.notes.insert(cell.clone(), words[1..].join(" "));
                    }
                }
                None => entry.push(f64::NAN),
            }
        }
    }
    samples
}

/// Long-session mode: one process and session per cell; one untimed pass,
/// then `reps` timed passes in the same session.
pub(crate) fn long(o: &Options, tracers: &[&str]) -> Samples {
    let mut samples = Samples::default();
    for &s in &o.scenarios {
        for &t in &o.threads {
            for tr in tracers {
                eprintln!("long: {s} {t} {tr}");
                let key = (s, t, tr.to_string());
                // A oneshot buffer that holds every pass (fresh pages all
                // along, as a long oneshot session has); the other modes
                // keep their own sizes (circular wraps, streaming drains).
                let buffer = match adapters::fxt_variant(tr) {
                    Some((fxt::Mode::Oneshot, ..)) => {
                        (t * (o.events as usize + 1000) * MAX_EVENT_BYTES * (o.reps + 1))
                            .next_power_of_two()
                    }
                    _ => 0,
                };
                let args = strings(&[
                    &"--cell",
                    tr,
                    &s.id(),
                    &t,
                    &o.events,
                    &(o.reps + 1),
                    &buffer,
                ]);
                match child(&args, "RESULT ") {
                    Some(words) if words.first().map(String::as_str) == Some("n/a") => {}
                    Some(words) => {
                        let v: Vec<f64> = words[0]
                            .split(',')
                            .skip(1)
                            .map(|x| x.parse().unwrap_or(f64::NAN))
                            .collect();
                        samples.values.insert(key.clone(), v);
                        if words.len() > 1 {
                            samples.notes.insert(key, words[1..].join(" "));
                        }
                    }
                    None => {
                        samples.values.insert(key, vec![f64::NAN]);
                    }
                }
            }
        }
    }
    samples
}
