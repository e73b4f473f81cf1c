//! The command line's modules import only downward: each top-level module
//! of `src/` may name (`crate::m`, `super::…`, `use crate::{m, ..}`) only
//! modules that come before it in [`LAYERS`], the order `src/main.rs`
//! gives; nothing names an item of `main.rs` itself (the crate root only
//! parses and dispatches); and a command (`src/commands/NAME.rs` or
//! `src/commands/NAME/`) never names another command. The files are read
//! as tokens (`syn`), so comments and strings are not counted, paths
//! inside macro calls are; test items (`#[cfg(test)]`) are left out.

use std::collections::BTreeSet;
use std::path::Path;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use syn::Item;

mod source;
use source::{attrs, files, is_test, path_sep};

/// Bottom to top.
const LAYERS: &[&str] = &[
    "error",
    "progress",
    "serve",
    "names",
    "piece",
    "input",
    "clock",
    "walk",
    "usual",
    "epoch",
    "interned",
    "recent",
    "formatted",
    "heads",
    "shapes",
    "problems",
    "durations",
    "folded",
    "samples",
    "keep",
    "archive",
    "recording",
    "commands",
];

/// The layer holding one module per subcommand.
const COMMANDS: &str = "commands";

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

/// The tokens of a file's items, test items (`#[cfg(test)]`) left out.
fn code(text: &str) -> TokenStream {
    let file = syn::parse_file(text).expect("a source file parses");
    let mut tokens = TokenStream::new();
    for item in file.items.iter().filter(|i| !is_test(attrs(i))) {
        item.to_tokens(&mut tokens);
    }
    tokens
}

/// The leading `a::b::…` of `t` as names.
fn leading_path(t: &[TokenTree]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(TokenTree::Ident(id)) = t.get(i) {
        out.push(id.to_string());
        if !path_sep(t, i + 1) {
            break;
        }
        i += 3;
    }
    out
}

/// Every path `tokens` name through `crate::` or `super::`, made
/// absolute from the module `at`: `[layer]`, or `[commands, command]`
/// (`[commands, ""]` for a glob of the commands).
fn imports(tokens: TokenStream, at: &[String]) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    collect(tokens, at, &mut found);
    found
}

fn collect(tokens: TokenStream, at: &[String], found: &mut BTreeSet<Vec<String>>) {
    let t: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < t.len() {
        let (base, next) = match &t[i] {
            TokenTree::Group(g) => {
                collect(g.stream(), at, found);
                i += 1;
                continue;
            }
            TokenTree::Ident(id) if id == "crate" && path_sep(&t, i + 1) => (Vec::new(), i + 3),
            TokenTree::Ident(id) if id == "super" && path_sep(&t, i + 1) => {
                let mut up = 0;
                let mut j = i;
                while matches!(&t.get(j), Some(TokenTree::Ident(s)) if s == "super")
                    && path_sep(&t, j + 1)
                {
                    up += 1;
                    j += 3;
                }
                (at[..at.len().saturating_sub(up)].to_vec(), j)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let mut add = |tail: Vec<String>| {
            let mut p = base.clone();
            p.extend(tail);
            let keep = if p.first().is_some_and(|l| l == COMMANDS) {
                2
            } else {
                1
            };
            p.truncate(keep);
            p.resize(keep, String::new());
            found.insert(p);
        };
        match t.get(next) {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for part in inner.split(|x| matches!(x, TokenTree::Punct(p) if p.as_char() == ','))
                {
                    if !part.is_empty() {
                        add(leading_path(part));
                    }
                }
            }
            _ => add(leading_path(&t[next.min(t.len())..])),
        }
        i = next;
    }
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
        for used in imports(code(&text), &at) {
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
        let items = syn::parse_file(&std::fs::read_to_string(&file).unwrap())
            .unwrap()
            .items;
        let public = |vis: &syn::Visibility| matches!(vis, syn::Visibility::Public(_));
        let args = items
            .iter()
            .any(|i| matches!(i, Item::Struct(s) if s.ident == "Args" && public(&s.vis)));
        let run = items
            .iter()
            .any(|i| matches!(i, Item::Fn(f) if f.sig.ident == "run" && public(&f.vis)));
        assert!(
            args && run,
            "{} lacks `pub struct Args` or `pub fn run`",
            file.display()
        );
        commands += 1;
    }
    assert!(commands >= 8, "found only {commands} commands");
}

#[test]
fn the_checker_sees_imports() {
    let at = |p: &str| p.split('/').map(String::from).collect::<Vec<_>>();
    let text = "use crate::{input::Input, error};\nuse super::check::Reason;\n\
                // crate::archive\nconst S: &str = \"crate::progress\";\n\
                fn f() { crate::Error::msg(format!(\"{}\", crate::names::x())); }\n\
                pub(crate) fn g() {}\n\
                #[cfg(test)]\nmod tests { use crate::commands::dump; }\n";
    let found = imports(code(text), &at("commands/recover"));
    let expect: BTreeSet<Vec<String>> = ["input", "error", "commands/check", "Error", "names"]
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
    let up = imports(code("use super::Cli;"), &at("input"));
    assert!(violation(&at("input"), up.first().unwrap()).is_some());
    // A glob of the commands from a command names them all.
    let glob = imports(code("use super::*;"), &at("commands/dump"));
    assert!(violation(&at("commands/dump"), glob.first().unwrap()).is_some());
    // Within a command's own folder, `super::` is the command itself.
    let own = imports(
        code("use super::scheduling::Sched;"),
        &at("commands/stats/scheduling"),
    );
    assert_eq!(own.first().unwrap(), &at("commands/stats"));
    assert!(violation(&at("commands/stats/scheduling"), &at("commands/stats")).is_none());
}
