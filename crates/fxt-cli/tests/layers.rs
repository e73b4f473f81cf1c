//! The command line's modules import only downward: each top-level module
//! of `src/` may name (`crate::m`, `super::…`, `use crate::{m, ..}`) only
//! modules that come before it in [`LAYERS`], the order `src/main.rs`
//! gives; nothing names an item of `main.rs` itself (the crate root only
//! parses and dispatches); and a command (`src/commands/NAME.rs` or
//! `src/commands/NAME/`) never names another command. Test code
//! (`#[cfg(test)] mod … { … }`) and comments are not counted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom to top.
const LAYERS: &[&str] = &[
    "error",
    "progress",
    "names",
    "input",
    "problems",
    "durations",
    "keep",
    "archive",
    "recording",
    "commands",
];

/// The layer holding one module per subcommand.
const COMMANDS: &str = "commands";

/// Every `.rs` file under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/` (`commands/stats/mod.rs` →
/// `[commands, stats]`; `main.rs` → `[]`).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "main") {
        parts.pop();
    }
    parts
}

/// The text without line comments and without `#[cfg(test)]` items.
fn code(text: &str) -> String {
    let no_comments: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = no_comments.as_str();
    while let Some(i) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        // Skip the attribute's item: up to its matching closing brace (or
        // its semicolon, for `mod tests;`).
        let (Some(open), semi) = (after.find('{'), after.find(';')) else {
            rest = "";
            break;
        };
        if semi.is_some_and(|s| s < open) {
            rest = &after[semi.unwrap() + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (j, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The leading `a::b` of `s` as components (at most two: the layer, and
/// the command within `commands`).
fn path_prefix(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while out.len() < 2 {
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push(ident.clone());
        match rest[ident.len()..].strip_prefix("::") {
            Some(r) if !r.starts_with('{') && !r.starts_with('*') => rest = r,
            _ => break,
        }
    }
    out
}

/// Every path `code` names through `crate::` or `super::`, made absolute
/// from the module `at`: `[layer]`, or `[commands, command]`.
fn imports(code: &str, at: &[String]) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let word_start = i == 0 || {
            let prev = code[..i].chars().next_back().unwrap();
            !(prev.is_alphanumeric() || prev == '_' || prev == ':')
        };
        let (base, after): (Vec<String>, &str) = if !word_start {
            i += rest.chars().next().unwrap().len_utf8();
            continue;
        } else if let Some(after) = rest.strip_prefix("crate::") {
            (Vec::new(), after)
        } else if rest.starts_with("super::") {
            let mut after = rest;
            let mut up = 0;
            while let Some(a) = after.strip_prefix("super::") {
                after = a;
                up += 1;
            }
            (at[..at.len().saturating_sub(up)].to_vec(), after)
        } else {
            i += rest.chars().next().unwrap().len_utf8();
            continue;
        };
        let consumed = rest.len() - after.len();
        let mut add = |tail: Vec<String>| {
            let mut p = base.clone();
            p.extend(tail);
            p.truncate(if p.first().is_some_and(|l| l == COMMANDS) {
                2
            } else {
                1
            });
            found.insert(p);
        };
        if let Some(group) = after.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',').filter(|p| !p.trim().is_empty()) {
                add(path_prefix(part));
            }
        } else {
            add(path_prefix(after));
        }
        i += consumed;
    }
    found
}

/// What is wrong with `from` (a module path) naming `used` (absolute).
fn violation(from: &[String], used: &[String]) -> Option<String> {
    let level = |m: &str| LAYERS.iter().position(|l| *l == m);
    let target = used.first().map(String::as_str).unwrap_or("");
    let Some(to) = level(target) else {
        return Some(format!(
            "names `{}` of the crate root (main.rs only dispatches; move it into a module)",
            used.join("::")
        ));
    };
    let own = level(&from[0]).unwrap();
    if to > own {
        return Some(format!("imports {target}, a higher layer"));
    }
    if to == own && target == COMMANDS {
        let other = used.get(1).map(String::as_str).unwrap_or("");
        if from.get(1).map(String::as_str) != Some(other) {
            return Some(format!(
                "a command naming another command (`{}`): move what they share below the commands",
                used.join("::")
            ));
        }
    }
    None
}

#[test]
fn modules_import_only_downward_and_commands_never_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    for path in &all {
        let rel = path.strip_prefix(&src).unwrap();
        let at = module_path(rel);
        let text = std::fs::read_to_string(path).unwrap();
        if at.is_empty() {
            continue; // main.rs: the top, it may name anything
        }
        assert!(
            LAYERS.contains(&at[0].as_str()),
            "{} is not in LAYERS: place it in a layer",
            rel.display()
        );
        seen.insert(at[0].clone());
        for used in imports(&code(&text), &at) {
            if let Some(v) = violation(&at, &used) {
                violations.push(format!("{}: {v}", rel.display()));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "imports that run up: {violations:#?}"
    );
    let missing: Vec<_> = LAYERS.iter().filter(|m| !seen.contains(**m)).collect();
    assert!(
        missing.is_empty(),
        "LAYERS names no such module: {missing:?}"
    );
}

#[test]
fn every_command_exports_args_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(COMMANDS);
    let mut commands = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = if path.is_dir() {
            path.join("mod.rs")
        } else if path.file_name().is_some_and(|n| n != "mod.rs") {
            path.clone()
        } else {
            continue;
        };
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for item in ["pub struct Args", "pub fn run(args: Args)"] {
            assert!(text.contains(item), "{} lacks `{item}`", file.display());
        }
        commands += 1;
    }
    assert!(commands >= 8, "found only {commands} commands");
}

#[test]
fn the_checker_sees_imports() {
    let at = |p: &str| p.split('/').map(String::from).collect::<Vec<_>>();
    let text = "use crate::{input::Input, error};\nuse super::check::Reason;\n\
                // crate::archive\nfn f() { crate::Error::msg(\"\"); }\n\
                #[cfg(test)]\nmod tests { use crate::commands::dump; }\n";
    let found = imports(&code(text), &at("commands/recover"));
    let expect: BTreeSet<Vec<String>> = ["input", "error", "commands/check", "Error"]
        .into_iter()
        .map(at)
        .collect();
    assert_eq!(found, expect);
    let from = at("commands/recover");
    assert!(violation(&from, &at("input")).is_none());
    assert!(violation(&from, &at("commands/recover")).is_none());
    assert!(violation(&from, &at("commands/check")).is_some());
    assert!(violation(&from, &at("Error")).is_some());
    assert!(violation(&at("input"), &at("archive")).is_some());
    assert!(violation(&at("archive"), &at("input")).is_none());
    // `super::` from a top-level module reaches the crate root.
    let up = imports("use super::Cli;", &at("input"));
    assert!(violation(&at("input"), up.first().unwrap()).is_some());
    // Within a command's own folder, `super::` is the command itself.
    let own = imports(
        "use super::scheduling::Sched;",
        &at("commands/stats/scheduling"),
    );
    assert_eq!(own.first().unwrap(), &at("commands/stats"));
    assert!(violation(&at("commands/stats/scheduling"), &at("commands/stats")).is_none());
}
