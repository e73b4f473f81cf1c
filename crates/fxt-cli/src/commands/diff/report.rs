//! What `fxt diff` prints: a table for people, or a JSON document.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::compare::{Row, Status, Summary, Test};
use super::table::p_text;
use crate::durations::readable_ns;

/// What the report says beyond the rows.
pub struct Context<'a> {
    pub base_files: &'a [String],
    pub new_files: &'a [String],
    pub confidence: f64,
    pub fail_above: Option<f64>,
}

impl Context<'_> {
    /// Whether `row` grew significantly by more than `--fail-above`.
    pub fn regression(&self, row: &Row) -> bool {
        match (self.fail_above, row.change) {
            (Some(pct), Some(change)) => row.significant && change > pct / 100.0,
            _ => false,
        }
    }
}

/// The JSON document.
pub fn json(cx: &Context<'_>, rows: &[Row]) -> Value {
    let side = |s: &Option<Summary>| match s {
        Some(s) => json!({
            "runs": s.runs, "count": s.count, "count_per_run": s.count_per_run,
            "total_ns": s.total_ns, "p50_ns": s.p50_ns, "p90_ns": s.p90_ns, "p99_ns": s.p99_ns,
        }),
        None => json!({
            "runs": 0, "count": 0, "count_per_run": 0.0,
            "total_ns": 0, "p50_ns": null, "p90_ns": null, "p99_ns": null,
        }),
    };
    let names: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "category": r.key.0,
                "name": r.key.1,
                "status": match r.status {
                    Status::Both => "both",
                    Status::Appeared => "appeared",
                    Status::Vanished => "vanished",
                },
                "base": side(&r.base),
                "new": side(&r.new),
                "change": r.change,
                "count_change": r.count_change,
                "test": r.test.map(|t| match t {
                    Test::Runs => "runs",
                    Test::Slices => "slices",
                }),
                "p_value": r.p_value,
                "significant": r.significant,
                "regression": cx.regression(r),
                "note": r.note,
            })
        })
        .collect();
    json!({
        "base_files": cx.base_files,
        "new_files": cx.new_files,
        "test": "Wilcoxon-Mann-Whitney rank-sum, two-sided, on per-run medians (on slices when a side has one run)",
        "confidence": cx.confidence,
        "fail_above_percent": cx.fail_above,
        "names": names,
    })
}

/// The table: the names on both sides, then those that appeared or
/// vanished, then the changes in counts.
pub fn table(out: &mut dyn Write, cx: &Context<'_>, rows: &[Row]) -> io::Result<()> {
    let test = if cx.base_files.len() == 1 || cx.new_files.len() == 1 {
        "rank-sum test on the slices (a side has one run: run-to-run noise is not seen)"
    } else {
        "rank-sum test on the runs' medians"
    };
    writeln!(
        out,
        "base: {} run(s), new: {} run(s); significance: {test}, two-sided, {}% confidence",
        cx.base_files.len(),
        cx.new_files.len(),
        percent(cx.confidence)
    )?;
    let width = rows
        .iter()
        .map(|r| label(r).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 60);
    writeln!(
        out,
        "\n{:<width$}  {:>8} {:>9} {:>9} {:>9}  {:>8} {:>9} {:>9} {:>9}  {:>8} {:>7}",
        "name", "base n", "p50", "p90", "p99", "new n", "p50", "p90", "p99", "change", "p"
    )?;
    for r in rows.iter().filter(|r| r.status == Status::Both) {
        let (Some(b), Some(n)) = (&r.base, &r.new) else {
            continue;
        };
        let mark = if cx.regression(r) {
            "  REGRESSION"
        } else if r.significant {
            "  *"
        } else {
            ""
        };
        writeln!(
            out,
            "{:<width$}  {:>8} {:>9} {:>9} {:>9}  {:>8} {:>9} {:>9} {:>9}  {:>8} {:>7}{mark}",
            label(r),
            b.count,
            fmt_ns(b.p50_ns),
            fmt_ns(b.p90_ns),
            fmt_ns(b.p99_ns),
            n.count,
            fmt_ns(n.p50_ns),
            fmt_ns(n.p90_ns),
            fmt_ns(n.p99_ns),
            r.change
                .map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
            p_text(r.p_value),
        )?;
    }
    writeln!(out, "\n* significant at {}%", percent(cx.confidence))?;
    for (status, what) in [
        (Status::Appeared, "appeared"),
        (Status::Vanished, "vanished"),
    ] {
        let names: Vec<String> = rows
            .iter()
            .filter(|r| r.status == status)
            .map(label)
            .collect();
        if !names.is_empty() {
            writeln!(out, "{what} ({}): {}", names.len(), names.join(", "))?;
        }
    }
    counts(out, rows)?;
    notes(out, rows)
}

/// The names whose slices per run changed.
fn counts(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    let mut changed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.count_change.is_some_and(|c| c != 0.0))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    changed.sort_by(|a, b| {
        let size = |r: &Row| r.count_change.unwrap_or(0.0).abs();
        size(b).total_cmp(&size(a))
    });
    writeln!(out, "count per run changed:")?;
    for r in changed {
        let (Some(b), Some(n)) = (&r.base, &r.new) else {
            continue;
        };
        writeln!(
            out,
            "  {}: {:.1} -> {:.1} ({:+.1}%)",
            label(r),
            b.count_per_run,
            n.count_per_run,
            r.count_change.unwrap_or(0.0) * 100.0
        )?;
    }
    Ok(())
}

/// Why some names were not tested.
fn notes(out: &mut dyn Write, rows: &[Row]) -> io::Result<()> {
    for r in rows {
        if let Some(note) = r.note {
            writeln!(out, "not significant: {}: {note}", label(r))?;
        }
    }
    Ok(())
}

/// A fraction as a percentage to a tenth (0.9 → `90`, not `90.00000000000001`).
fn percent(fraction: f64) -> f64 {
    (fraction * 1000.0).round() / 10.0
}

fn label(r: &Row) -> String {
    format!("{}/{}", r.key.0, r.key.1)
}

/// A duration in nanoseconds with a readable unit.
fn fmt_ns(ns: u64) -> String {
    readable_ns(ns as f64)
}
