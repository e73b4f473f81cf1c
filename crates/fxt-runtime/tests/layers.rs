//! The engine's layers import only downward: each top-level module of
//! `src/` may name (`crate::m`, `use crate::{m, ..}`) only modules that
//! come before it in [`LAYERS`], the order `src/lib.rs` and
//! `docs/ARCHITECTURE.md` give. Test code (`#[cfg(test)] mod … { … }`) and
//! comments are not counted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Bottom to top.
const LAYERS: &[&str] = &[
    "args",
    "clock",
    "config",
    "stats",
    "output",
    "helpers",
    "stack",
    "memory",
    "ring",
    "durable",
    "large",
    "state",
    "callsite",
    "sample",
    "thread",
    "alloc",
    "emit",
    "collect",
    "macro_support",
    "task",
    "sync",
    "snapshot",
    "session",
    "provider",
];

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

/// The text without line comments and without `#[cfg(test)]` modules.
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

/// The top-level modules `code` names through `crate::`.
fn imports(code: &str) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut found = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let after = &code[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                let name = ident(part.trim());
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            found.insert(ident(after));
        }
    }
    found
}

#[test]
fn layers_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut seen = BTreeSet::new();
    let mut violations = Vec::new();
    for path in &all {
        let rel = path.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let Some(level) = LAYERS.iter().position(|m| *m == module) else {
            panic!("{} is not in LAYERS: place it in a layer", rel.display());
        };
        seen.insert(module.clone());
        let text = std::fs::read_to_string(path).unwrap();
        for used in imports(&code(&text)) {
            if used == module {
                continue;
            }
            match LAYERS.iter().position(|m| *m == used) {
                Some(l) if l < level => {}
                Some(_) => violations.push(format!("{} imports {used}", rel.display())),
                None => {}
            }
        }
    }
    assert!(violations.is_empty(), "upward imports: {violations:#?}");
    let missing: Vec<_> = LAYERS.iter().filter(|m| !seen.contains(**m)).collect();
    assert!(
        missing.is_empty(),
        "LAYERS names no such module: {missing:?}"
    );
}

#[test]
fn the_checker_sees_imports() {
    let text = "use crate::{ring::Cursor, state};\n// crate::session\nfn f() { crate::emit::x(); }\n#[cfg(test)]\nmod tests { use crate::session; }\n";
    let found = imports(&code(text));
    assert_eq!(
        found,
        ["emit", "ring", "state"]
            .map(String::from)
            .into_iter()
            .collect()
    );
}
