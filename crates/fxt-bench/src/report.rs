//! Where `bench-table` puts its tables: one generated region per section
//! of `docs/PERFORMANCE.md`, between `<!-- bench-table SECTION -->` and
//! `<!-- /bench-table SECTION -->`. A run replaces the regions of the
//! sections it ran and leaves the others (and the hand-written text around
//! them) as they are, so `--sections sinks` regenerates one table without
//! discarding the rest of the report.

use std::path::{Path, PathBuf};

/// The sections of the report, in the order a run measures them.
pub const SECTIONS: [&str; 9] = [
    "sinks",
    "fresh",
    "realtime",
    "long",
    "latency",
    "lifecycle",
    "tracing",
    "instructions",
    "checks",
];

/// The report file of the workspace this crate was built in.
pub fn default_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/PERFORMANCE.md")
}

fn begin_marker(section: &str) -> String {
    format!("<!-- bench-table {section} -->")
}

fn end_marker(section: &str) -> String {
    format!("<!-- /bench-table {section} -->")
}

/// `doc` with the region of `section` holding `body`; a section without a
/// region yet gets one at the end of the document.
pub fn replace_section(doc: &str, section: &str, body: &str) -> String {
    let (begin, end) = (begin_marker(section), end_marker(section));
    let region = format!("{begin}\n\n{}\n\n{end}", body.trim());
    let span = doc.find(&begin).and_then(|start| {
        let end_at = start + doc[start..].find(&end)? + end.len();
        Some((start, end_at))
    });
    match span {
        Some((start, end_at)) => format!("{}{region}{}", &doc[..start], &doc[end_at..]),
        None => format!("{}\n\n{region}\n", doc.trim_end()),
    }
}

/// Writes each `(section, body)` into its region of the file at `path`.
pub fn write_sections(path: &Path, sections: &[(&str, String)]) -> std::io::Result<()> {
    let mut doc = std::fs::read_to_string(path)?;
    for (section, body) in sections {
        doc = replace_section(&doc, section, body);
    }
    std::fs::write(path, doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_replaced_and_the_text_around_it_kept() {
        let doc = "intro\n<!-- bench-table sinks -->\nold\n<!-- /bench-table sinks -->\noutro\n";
        let new = replace_section(doc, "sinks", "new table\n");
        assert_eq!(
            new,
            "intro\n<!-- bench-table sinks -->\n\nnew table\n\n<!-- /bench-table sinks -->\noutro\n"
        );
        // Replacing again with the same body changes nothing.
        assert_eq!(replace_section(&new, "sinks", "new table"), new);
    }

    #[test]
    fn a_missing_region_is_appended_and_others_are_untouched() {
        let doc = "intro\n<!-- bench-table fresh -->\nkept\n<!-- /bench-table fresh -->\n";
        let new = replace_section(doc, "sinks", "t");
        assert!(new.starts_with(doc.trim_end()));
        assert!(new.ends_with("<!-- bench-table sinks -->\n\nt\n\n<!-- /bench-table sinks -->\n"));
    }

    #[test]
    fn the_report_has_a_region_for_every_section() {
        let doc = std::fs::read_to_string(default_path()).expect("docs/PERFORMANCE.md");
        for section in SECTIONS {
            assert!(doc.contains(&begin_marker(section)), "{section}");
            assert!(doc.contains(&end_marker(section)), "{section}");
        }
    }
}
