//! Every command README and the guide show runs (issue 46): the shell
//! blocks of `README.md`, `docs/README.md` and `docs/guide/*.md` are run
//! in order, one scratch folder per page (a page's later blocks use the
//! files its earlier ones wrote), and a block that exits non-zero, or runs
//! longer than [`BLOCK_TIMEOUT`], fails the test with its output.
//!
//! ```text
//! cargo test -p fxt-cli --test doc_commands
//! ```
//!
//! What counts as a command block, so that none escapes:
//! - a fenced block of language `sh` (or `bash`, `shell`): every line runs,
//!   as one `bash -e` script;
//! - a fenced `console` block: its `$ ` lines run (the rest is output,
//!   not compared: figures differ from machine to machine);
//! - a fenced `sql` block: its queries run in DuckDB (PyPI `duckdb`, from
//!   `$FXT_PYTHON` or `target/pyfxt-venv` as `cli_export.rs` finds it)
//!   over the tables the page's commands exported, `/data/traces` read as
//!   the page's folder `traces`; each query must return rows. Blocks in
//!   another engine's dialect are marked not run;
//! - either one preceded by `<!-- not run: WHY -->` is skipped, and listed
//!   with its reason at the end of the run;
//! - any other fence must name its language (`rust`: compiled by
//!   `cargo test --doc` of the root crate; `text`, `toml`, `json`:
//!   not commands), and an indented code block is refused (it would hide
//!   a command from this test).
//!
//! The commands find `fxt` (this build's binary) and a `cargo` on `PATH`
//! that runs what the test build already compiled, since a nested cargo
//! would build everything again in release: `cargo run [--release]
//! --example NAME [-- ARGS]` runs the example's own `main`, compiled into
//! this test binary (`#[path]`, as the other tests do), `cargo run
//! [--release] -p fxt-cli -- ARGS` runs `fxt`, and `cargo build [--release]
//! --example NAME` puts the example at `target/release/examples/NAME` in
//! the scratch folder; any other cargo command fails its block (mark it
//! not run). Relative links between the pages (`[x](path.md#anchor)`) are
//! checked too: the file exists and has that heading.

mod cli_support;

#[allow(dead_code)]
#[path = "../../../examples/quickstart.rs"]
mod quickstart;

#[allow(dead_code)]
#[path = "../../../examples/samples.rs"]
mod samples;

#[allow(dead_code)]
#[path = "../../../examples/diff_demo.rs"]
mod diff_demo;

#[allow(dead_code)]
#[path = "../../../examples/stress.rs"]
mod stress;

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The examples this binary can be, by the name it is run under.
const EXAMPLES: &[&str] = &["quickstart", "samples", "diff_demo", "stress"];
/// A block that takes longer has hung (a server waiting for a browser).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn main() -> ExitCode {
    let arg0 = std::env::args_os().next().unwrap_or_default();
    let name = Path::new(&arg0)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.as_str() {
        "cargo" => cargo(std::env::args().skip(1).collect()),
        "quickstart" => {
            quickstart::main();
            ExitCode::SUCCESS
        }
        "samples" => {
            samples::main();
            ExitCode::SUCCESS
        }
        "diff_demo" => {
            diff_demo::main();
            ExitCode::SUCCESS
        }
        "stress" => stress::main(),
        _ => run_pages(),
    }
}

/// The `cargo` of the scratch folders (see the module's documentation).
fn cargo(args: Vec<String>) -> ExitCode {
    let (ours, rest) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (&args[..], &[][..]),
    };
    let value = |flag: &str| {
        ours.iter()
            .position(|a| a == flag)
            .and_then(|i| ours.get(i + 1))
    };
    let refuse = |why: &str| {
        eprintln!(
            "doc_commands: `cargo {}` {why}; mark the block `<!-- not run: WHY -->`",
            args.join(" ")
        );
        ExitCode::from(97)
    };
    let example = value("--example").map(String::as_str);
    if let Some(name) = example {
        if !EXAMPLES.contains(&name) || !root().join(format!("examples/{name}.rs")).exists() {
            return refuse("names an example this test does not carry");
        }
    }
    let me = std::env::current_exe().expect("this test binary");
    match (ours.first().map(String::as_str), example) {
        (Some("run"), Some(name)) => {
            let err = Command::new(me).arg0(name).args(rest).exec();
            panic!("exec {name}: {err}")
        }
        (Some("run"), None) if value("-p").map(String::as_str) == Some("fxt-cli") => {
            let err = Command::new(env!("CARGO_BIN_EXE_fxt")).args(rest).exec();
            panic!("exec fxt: {err}")
        }
        (Some("build"), Some(name)) if rest.is_empty() => {
            let dir = Path::new("target/release/examples");
            std::fs::create_dir_all(dir).expect("target/release/examples");
            let link = dir.join(name);
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&me, &link).expect("link the example");
            ExitCode::SUCCESS
        }
        _ => refuse("is not run by the doc test"),
    }
}

/// One fenced block of a page.
struct Block {
    page: String,
    line: usize,
    lang: String,
    text: String,
    skip: Option<String>,
}

impl Block {
    /// The script it runs, if it is a command block.
    fn script(&self) -> Option<String> {
        match self.lang.as_str() {
            "sh" | "bash" | "shell" => Some(self.text.clone()),
            // DuckDB's dialect; the other engines' blocks are marked not
            // run (engines.py runs them).
            "sql" => {
                let queries: Vec<String> = self
                    .text
                    .split(';')
                    .map(str::trim)
                    .filter(|q| !q.is_empty())
                    .map(|q| {
                        format!(
                            "'{}'",
                            q.replace("/data/traces", "traces").replace('\'', "'\\''")
                        )
                    })
                    .collect();
                Some(format!(
                    "\"$DOC_PYTHON\" \"$DOC_DUCKDB_QUERY\" . {} > .rows.json\n\
                     \"$DOC_PYTHON\" -c 'import json, sys; rows = json.load(open(\".rows.json\")); \
                     sys.exit(0 if rows and all(rows) else \"a query returned no rows\")'\n",
                    queries.join(" ")
                ))
            }
            "console" => {
                let commands: Vec<&str> = self
                    .text
                    .lines()
                    .filter_map(|l| l.strip_prefix("$ "))
                    .collect();
                (!commands.is_empty()).then(|| commands.join("\n") + "\n")
            }
            _ => None,
        }
    }

    fn place(&self) -> String {
        format!("{}:{}", self.page, self.line)
    }
}

/// Languages a fence may name besides the command blocks'.
const OTHER_LANGUAGES: &[&str] = &["rust", "text", "toml", "json"];

/// The fenced blocks of a page, with their skip markers; a misuse of the
/// conventions is an error naming its line.
fn blocks(page: &str, text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut marker: Option<(usize, String)> = None;
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let n = i + 1;
        if let Some(rest) = line.trim().strip_prefix("<!-- not run:") {
            let why = rest.trim_end().strip_suffix("-->").unwrap_or(rest).trim();
            if why.is_empty() {
                return Err(format!("{page}:{n}: a `not run` marker says why"));
            }
            marker = Some((n, why.to_string()));
            continue;
        }
        if line.starts_with("    ") || line.starts_with('\t') {
            return Err(format!(
                "{page}:{n}: an indented code block; fence it and name its language"
            ));
        }
        let Some(info) = line.strip_prefix("```") else {
            if !line.trim().is_empty() {
                if let Some((m, _)) = marker.take() {
                    return Err(format!("{page}:{m}: a `not run` marker not before a block"));
                }
            }
            continue;
        };
        let lang = info.split([',', ' ']).next().unwrap_or("").to_string();
        let mut body = String::new();
        let mut closed = false;
        for (_, l) in lines.by_ref() {
            if l.starts_with("```") {
                closed = true;
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        if !closed {
            return Err(format!("{page}:{n}: a fence that is never closed"));
        }
        let block = Block {
            page: page.to_string(),
            line: n,
            lang,
            text: body,
            skip: marker.take().map(|(_, why)| why),
        };
        if block.script().is_none() {
            if !OTHER_LANGUAGES.contains(&block.lang.as_str()) && block.lang != "console" {
                return Err(format!(
                    "{}: a fence of language `{}`; use sh, console or one of {OTHER_LANGUAGES:?}",
                    block.place(),
                    block.lang
                ));
            }
            if block.skip.is_some() {
                return Err(format!(
                    "{}: `not run` on a block that is no command",
                    block.place()
                ));
            }
        }
        out.push(block);
    }
    Ok(out)
}

/// README, the guide's index and its pages, relative to the root.
fn pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_string(), "docs/README.md".to_string()];
    let mut guide: Vec<String> = std::fs::read_dir(root().join("docs/guide"))
        .expect("docs/guide")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/guide/{n}"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

/// GitHub's anchor for a heading: lower case, spaces as `-`, punctuation
/// other than `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Relative links to Markdown files that do not exist or lack the anchor.
fn broken_links(page: &str, text: &str) -> Vec<String> {
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        let Some(end) = rest.find(')') else { continue };
        let target = &rest[..end];
        if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
            continue;
        }
        let (file, frag) = target.split_once('#').unwrap_or((target, ""));
        let path = root().join(dir).join(file);
        let Ok(linked) = std::fs::read_to_string(&path) else {
            if !path.exists() {
                broken.push(format!("{page}: link to {target}: no such file"));
            }
            continue;
        };
        if !frag.is_empty() && file.ends_with(".md") {
            let found = linked
                .lines()
                .filter_map(|l| l.strip_prefix('#'))
                .any(|h| anchor(h.trim_start_matches('#')) == frag);
            if !found {
                broken.push(format!("{page}: link to {target}: no such heading"));
            }
        }
    }
    broken
}

/// The folder of `PATH` entries the blocks run with: `fxt` and `cargo`.
fn tools(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    let _ = std::fs::remove_dir_all(&bin);
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fxt"), bin.join("fxt")).unwrap();
    let me = std::env::current_exe().unwrap();
    std::os::unix::fs::symlink(me, bin.join("cargo")).unwrap();
    bin
}

/// Runs one block's script in `dir`; `Err` with its output on failure.
fn run(
    block: &Block,
    script: &str,
    dir: &Path,
    bin: &Path,
    python: Option<&Path>,
) -> Result<Duration, String> {
    let mut path = OsString::from(bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut command = Command::new("bash");
    command
        .args(["-e", "-o", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("XDG_RUNTIME_DIR", dir.join("xdg"))
        .env("DOC_PYTHON", python.unwrap_or(Path::new("python3")))
        .env(
            "DOC_DUCKDB_QUERY",
            root().join("crates/fxt-cli/tests/python/duckdb_query.py"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::from(
            std::fs::File::create(dir.join(".stdout")).unwrap(),
        ))
        .stderr(Stdio::from(
            std::fs::File::create(dir.join(".stderr")).unwrap(),
        ));
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("FXT_") && key != "FXT_PYTHON" {
            command.env_remove(key);
        }
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("bash");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > BLOCK_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = || {
        let out = std::fs::read_to_string(dir.join(".stdout")).unwrap_or_default();
        let err = std::fs::read_to_string(dir.join(".stderr")).unwrap_or_default();
        format!("--- script\n{script}--- stdout\n{out}--- stderr\n{err}")
    };
    match status {
        Some(s) if s.success() => Ok(started.elapsed()),
        Some(s) => Err(format!(
            "{} ({}): {s}\n{}",
            block.place(),
            block.lang,
            output()
        )),
        None => Err(format!(
            "{} ({}): still running after {BLOCK_TIMEOUT:?}\n{}",
            block.place(),
            block.lang,
            output()
        )),
    }
}

fn run_pages() -> ExitCode {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("doc-commands");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let bin = tools(&scratch);
    let (mut ran, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    let mut python: Option<PathBuf> = None;
    let mut other = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).expect("a page");
        failures.extend(broken_links(&page, &text));
        let blocks = match blocks(&page, &text) {
            Ok(blocks) => blocks,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let dir = scratch.join(page.replace('/', "_").trim_end_matches(".md"));
        // The runtime directory of `fxt trace`: private, so that no other
        // test's provider shows up in a page's `fxt trace list`.
        std::fs::create_dir_all(dir.join("xdg")).unwrap();
        let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
        std::fs::set_permissions(dir.join("xdg"), private).unwrap();
        for block in &blocks {
            let Some(script) = block.script() else {
                other += 1;
                continue;
            };
            if let Some(why) = &block.skip {
                skipped.push(format!("{}: {why}", block.place()));
                continue;
            }
            if block.lang == "sql" && python.is_none() {
                python = Some(cli_support::python_with(&[("duckdb", "duckdb==2.0.1")]));
            }
            match run(block, &script, &dir, &bin, python.as_deref()) {
                Ok(took) => {
                    ran += 1;
                    println!(
                        "ran      {} ({}, {:.1} s)",
                        block.place(),
                        block.lang,
                        took.as_secs_f64()
                    );
                }
                Err(e) => failures.push(e),
            }
        }
    }
    for s in &skipped {
        println!("not run  {s}");
    }
    println!(
        "doc_commands: {ran} command blocks ran, {} not run (listed), {} failed; {other} other blocks",
        skipped.len(),
        failures.len()
    );
    // README's first block (the quickstart) runs: the pages were found.
    if ran == 0 {
        failures.push("no command block ran".to_string());
    }
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    for f in &failures {
        eprintln!("\nFAILED {f}");
    }
    ExitCode::FAILURE
}
