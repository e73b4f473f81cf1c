//! The tables of per-run comparisons ([`super::per_run::Keyed`]) that
//! `fxt diff` prints after its durations, and their JSON: one layout for
//! the CPU samples per function and the allocated bytes per name.

use std::io::{self, Write};

use serde_json::{json, Value};

use super::per_run::Keyed;

/// Rows listed in a table (`--json` lists them all).
const TOP: usize = 20;

/// How one table reads.
pub struct Layout<'a> {
    /// The line above the header.
    pub title: &'a str,
    /// The key column's header (`function`, `name`).
    pub key: &'a str,
    /// The width of the base and new columns.
    pub width: usize,
    /// A per-run value as printed.
    pub value: &'a dyn Fn(f64) -> String,
    /// What the rows are, for the line that counts those left out (no
    /// line when `None`).
    pub more: Option<&'a str>,
}

/// The table (nothing when `rows` is empty), at most [`TOP`] rows.
pub fn write(out: &mut dyn Write, rows: &[Keyed], layout: &Layout<'_>) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let shown = &rows[..rows.len().min(TOP)];
    let keys = shown
        .iter()
        .map(|r| r.key.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 70);
    let w = layout.width;
    writeln!(
        out,
        "\n{}\n{:<keys$}  {:>w$} {:>w$}  {:>8} {:>7}",
        layout.title, layout.key, "base", "new", "change", "p"
    )?;
    for r in shown {
        writeln!(
            out,
            "{:<keys$}  {:>w$} {:>w$}  {:>8} {:>7}{}",
            r.key,
            (layout.value)(r.c.base_per_run),
            (layout.value)(r.c.new_per_run),
            r.c.change
                .map_or("new".into(), |c| format!("{:+.1}%", c * 100.0)),
            p_text(r.c.p_value),
            if r.c.significant { "  *" } else { "" }
        )?;
    }
    match layout.more {
        Some(what) if rows.len() > shown.len() => writeln!(
            out,
            "({} more {what}: --json lists them all)",
            rows.len() - shown.len()
        ),
        _ => Ok(()),
    }
}

/// Every row as a JSON object: the key under `key`, the values in `unit`.
pub fn json(rows: &[Keyed], key: &str, unit: &str) -> Value {
    rows.iter()
        .map(|r| {
            json!({
                key: r.key,
                "unit": unit,
                "base_per_run": r.c.base_per_run,
                "new_per_run": r.c.new_per_run,
                "change": r.c.change,
                "p_value": r.c.p_value,
                "significant": r.c.significant,
            })
        })
        .collect()
}

/// A p-value to three places (`-` where nothing was tested).
pub fn p_text(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
    }
}
