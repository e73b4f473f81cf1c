//! The documentation says what the code does: the environment table of
//! `docs/guide/configuration.md` lists exactly the `FXT_*` variables the code reads, and
//! `docs/ARCHITECTURE.md` lists the engine's modules in the order of
//! `crates/fxt-runtime/tests/layers.rs`'s `LAYERS`. Both read the files
//! themselves, so a variable or a module added without its line fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Every `.rs` file under `dir` (build output aside).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names `FXT_…` that occur as whole string literals (`"FXT_MODE"`) in
/// `text`.
fn quoted_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices("\"FXT_") {
        let rest = &text[i + 1..];
        let len = rest
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(rest.len());
        if len > "FXT_".len() && rest[len..].starts_with('"') {
            names.insert(rest[..len].to_string());
        }
    }
    names
}

/// The `FXT_*` names in string literals of the Rust files under `dirs`
/// (relative to the repository root).
fn names_in(dirs: &[&str]) -> BTreeSet<String> {
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root().join(dir), &mut files);
    }
    let this = root().join("tests/docs.rs");
    files
        .iter()
        .filter(|file| **file != this)
        .flat_map(|file| quoted_names(&std::fs::read_to_string(file).unwrap()))
        .collect()
}

/// The `FXT_*` variables that fxt reads: the libraries' and the `fxt`
/// command's sources (`src/` of the root crate and of every crate).
fn variables_read() -> BTreeSet<String> {
    let mut dirs = vec!["src".to_string()];
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            dirs.push(src.strip_prefix(root()).unwrap().display().to_string());
        }
    }
    names_in(&dirs.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The guide's page of every setting.
const CONFIGURATION: &str = "docs/guide/configuration.md";

/// The variables of the configuration page's environment table (the table
/// whose first column is `variable`), and of such tables in the other
/// guide pages (`docs/guide/*.md`: a feature's page documents its own
/// variables).
fn documented_variables() -> BTreeSet<String> {
    let mut names = table_variables(&read(CONFIGURATION));
    assert!(
        !names.is_empty(),
        "{CONFIGURATION} has no `| variable |` table"
    );
    for page in std::fs::read_dir(root().join("docs/guide")).unwrap() {
        let path = page.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            names.extend(table_variables(&std::fs::read_to_string(path).unwrap()));
        }
    }
    names
}

/// The `FXT_*` names in the first column of `text`'s `| variable |` table.
fn table_variables(text: &str) -> BTreeSet<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("| variable |"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|row| row.split('|').nth(1))
        .filter_map(|cell| cell.trim().strip_prefix('`')?.strip_suffix('`'))
        .filter(|name| name.starts_with("FXT_"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_configuration_page_lists_every_environment_variable_the_code_reads() {
    let read = variables_read();
    let listed = documented_variables();
    // The scan must find the settings every session reads, as written in
    // `config.rs` (a tuple list) and `output.rs` (a constant).
    for name in ["FXT_OUTPUT", "FXT_DRAIN", "FXT_RECORD"] {
        assert!(read.contains(name), "the scan misses {name}: {read:?}");
    }
    let missing: Vec<_> = read.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "read by fxt, not in {CONFIGURATION}'s table (or a guide page's): {missing:?}"
    );
    // Beyond those, the table may name the test suite's own knobs
    // (`FXT_PYTHON`), as long as some code still reads them.
    let anywhere = names_in(&["src", "crates", "tests", "examples"]);
    let stale: Vec<_> = listed.difference(&anywhere).collect();
    assert!(
        stale.is_empty(),
        "in {CONFIGURATION}'s table, read by no code: {stale:?}"
    );
}

#[test]
fn the_scan_takes_whole_string_literals_only() {
    let text = [
        "var(\"FXT_A\") \"FXT_Bc\" \"FXT_\" \"FXT_D_2\" FXT_E",
        "\"FXT_F",
    ]
    .concat();
    let names = quoted_names(&text);
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["FXT_A", "FXT_D_2"]);
}

/// `LAYERS` of `crates/fxt-runtime/tests/layers.rs`, bottom to top.
fn layers_in_test() -> Vec<String> {
    let text = read("crates/fxt-runtime/tests/layers.rs");
    let start = text.find("const LAYERS").expect("layers.rs defines LAYERS");
    let body = &text[start..];
    let body = &body[body.find("= &[").expect("LAYERS = &[...]") + 4..];
    let body = &body[..body.find("];").expect("LAYERS ends with ];")];
    body.split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The engine's modules as `docs/ARCHITECTURE.md` lists them: lines of the
/// form `NN  module.rs` or `NN  module/` in its layer list, bottom to top.
fn layers_in_architecture() -> Vec<(usize, String)> {
    let doc = read("docs/ARCHITECTURE.md");
    let section = doc
        .split("## `fxt-runtime`: the layers")
        .nth(1)
        .expect("ARCHITECTURE.md has its layer section");
    let block = section
        .split("```text")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the layer section has a text block");
    let mut layers: Vec<(usize, String)> = block
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let level = words.next()?.parse().ok()?;
            let module = words.next()?;
            let module = module
                .strip_suffix(".rs")
                .or_else(|| module.strip_suffix('/'))?;
            Some((level, module.to_string()))
        })
        .collect();
    layers.sort();
    layers
}

#[test]
fn architecture_lists_the_layers_of_layers_rs_in_order() {
    let expected: Vec<(usize, String)> = layers_in_test().into_iter().enumerate().collect();
    assert!(expected.len() > 10, "LAYERS parsed: {expected:?}");
    assert_eq!(
        layers_in_architecture(),
        expected,
        "docs/ARCHITECTURE.md's layer list (level, module) differs from LAYERS"
    );
}
