//! No import circle among the modules of any folder of any crate of the
//! workspace: within each folder (`src/` itself, `decode/`, `stats/`,
//! `export/`, …) the modules it holds (a file `m.rs` or a folder `m/`)
//! name each other (`crate::…`, `super::…`, `self::…`) without a cycle,
//! so that each folder reads bottom to top as `tests/layers.rs` makes the
//! top level do. A name a folder's `mod.rs` re-exports (`pub use
//! view::StrRef`) counts as its module's. The files are read as tokens
//! (`syn`): comments and strings are not counted, paths inside macro calls
//! are; test items (`#[cfg(test)]`) and `tests.rs`/`tests/` modules are
//! left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Item, UseTree};

mod source;
use source::{attrs, files, is_test, path_sep};

/// A module's path from its crate's root (`decode/view.rs` → `[decode,
/// view]`).
type ModPath = Vec<String>;

/// The module path of a file under `src/` (`decode/mod.rs` → `[decode]`;
/// `lib.rs`, `main.rs` → `[]`; a binary `bin/x.rs` is its own crate).
fn module_path(rel: &Path) -> ModPath {
    let mut parts: ModPath = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "main" || l == "lib")
    {
        parts.pop();
    }
    parts
}

/// The paths one file names, relative as written (`[super, view,
/// StrRef]`), and the names it re-exports from its own child modules
/// (`pub use view::StrRef` → `StrRef → view`).
#[derive(Default)]
struct Names {
    paths: BTreeSet<ModPath>,
    reexports: BTreeMap<String, String>,
}

/// Every full path of a `use` tree (`a::{b, c::d}` → `a::b`, `a::c::d`),
/// with the name it binds.
fn use_paths(tree: &UseTree, prefix: &mut ModPath, out: &mut Vec<(ModPath, Option<String>)>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => {
            let mut p = prefix.clone();
            p.push(n.ident.to_string());
            out.push((p, Some(n.ident.to_string())));
        }
        UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push((p, Some(r.rename.to_string())));
        }
        UseTree::Glob(_) => out.push((prefix.clone(), None)),
        UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// Every `crate::…`, `super::…` or `self::…` path in `tokens` (outside
/// `use` items, paths have no groups).
fn token_paths(tokens: TokenStream, out: &mut BTreeSet<ModPath>) {
    let t: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < t.len() {
        match &t[i] {
            TokenTree::Group(g) => token_paths(g.stream(), out),
            TokenTree::Ident(id)
                if (id == "crate" || id == "super" || id == "self")
                    && path_sep(&t, i + 1)
                    && !(i >= 2 && path_sep(&t, i - 2)) =>
            {
                let mut path = vec![id.to_string()];
                let mut j = i + 3;
                while let Some(TokenTree::Ident(next)) = t.get(j) {
                    path.push(next.to_string());
                    if !path_sep(&t, j + 1) {
                        break;
                    }
                    j += 3;
                }
                out.insert(path);
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
}

/// What one file's non-test items name.
fn names(text: &str, children: &BTreeSet<String>) -> Names {
    let file = syn::parse_file(text).expect("a source file parses");
    let mut found = Names::default();
    for item in file.items.iter().filter(|i| !is_test(attrs(i))) {
        match item {
            Item::Use(u) => {
                let mut all = Vec::new();
                use_paths(&u.tree, &mut Vec::new(), &mut all);
                let public = !matches!(u.vis, syn::Visibility::Inherited);
                for (path, bound) in all {
                    let from_child = match path.first().map(String::as_str) {
                        Some("self") => path.get(1),
                        _ => path.first(),
                    };
                    if let (true, Some(child), Some(bound)) = (public, from_child, bound) {
                        if children.contains(child) {
                            found.reexports.insert(bound, child.clone());
                        }
                    }
                    found.paths.insert(path);
                }
            }
            Item::Mod(m) if m.content.is_none() => {}
            other => {
                let mut tokens = TokenStream::new();
                other.to_tokens(&mut tokens);
                token_paths(tokens, &mut found.paths);
            }
        }
    }
    found
}

/// `path` as written in module `at`, made absolute; `None` for paths that
/// leave the crate (`std::…`, another crate) or name a local binding.
fn absolute(at: &[String], path: &[String]) -> Option<ModPath> {
    let mut base: ModPath;
    let mut i = 0;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            i = 1;
        }
        Some("super") | Some("self") => {
            base = at.to_vec();
            while let Some(s) = path.get(i).map(String::as_str) {
                match s {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                i += 1;
            }
        }
        _ => return None,
    }
    base.extend(path[i..].iter().cloned());
    Some(base)
}

/// One crate's modules (by path) and, per folder, the edges among the
/// modules it holds: `folder → {from → {to → the file that names it}}`.
type Edges = BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, String>>>;

fn edges(src: &Path) -> Edges {
    let mut all = Vec::new();
    files(src, &mut all);
    let mut modules: BTreeMap<ModPath, PathBuf> = BTreeMap::new();
    for path in all {
        let rel = path.strip_prefix(src).unwrap();
        // A binary under `src/bin/` is a crate of its own; the checked-in
        // test modules are not counted, as `#[cfg(test)]` items are not.
        if rel.starts_with("bin") {
            continue;
        }
        let at = module_path(rel);
        if at.iter().any(|p| p == "tests") {
            continue;
        }
        modules.insert(at, path);
    }
    let children = |folder: &[String]| -> BTreeSet<String> {
        modules
            .keys()
            .filter(|m| m.len() == folder.len() + 1 && m.starts_with(folder))
            .map(|m| m.last().unwrap().clone())
            .collect()
    };
    let mut read: BTreeMap<ModPath, Names> = BTreeMap::new();
    for (at, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        read.insert(at.clone(), names(&text, &children(at)));
    }
    let mut out = Edges::new();
    for (at, found) in &read {
        for path in &found.paths {
            let Some(used) = absolute(at, path) else {
                continue;
            };
            let k = at.iter().zip(&used).take_while(|(a, b)| a == b).count();
            if k >= at.len() || k >= used.len() {
                continue; // a module naming itself, its own children or an ancestor
            }
            let folder = &at[..k];
            let target = used[k].clone();
            let target = if modules.contains_key(&used[..=k]) {
                target
            } else if let Some(child) = read.get(folder).and_then(|n| n.reexports.get(&target)) {
                child.clone()
            } else {
                continue; // an item of the folder's own `mod.rs`
            };
            if target == at[k] {
                continue;
            }
            out.entry(folder.to_vec())
                .or_default()
                .entry(at[k].clone())
                .or_default()
                .entry(target)
                .or_insert_with(|| at.join("/"));
        }
    }
    out
}

/// The cycles of a graph: its strongly connected components of more than
/// one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.found.push(comp);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

/// Every cycle of a crate, each with the imports that close it.
fn crate_cycles(src: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for (folder, graph) in edges(src) {
        for cycle in cycles(&graph) {
            let mut how = Vec::new();
            for from in &cycle {
                for (to, file) in &graph[from] {
                    if cycle.contains(to) {
                        how.push(format!("{from} → {to} ({file}.rs)"));
                    }
                }
            }
            out.push(format!(
                "{}/{}: {} — {}",
                src.display(),
                folder.join("/"),
                cycle.join(", "),
                how.join("; ")
            ));
        }
    }
    out
}

#[test]
fn no_folder_of_any_crate_has_an_import_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut sources = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            sources.push(src);
        }
    }
    assert!(sources.len() >= 7, "found only {sources:?}");
    let found: Vec<String> = sources.iter().flat_map(|s| crate_cycles(s)).collect();
    assert!(found.is_empty(), "import cycles: {found:#?}");
}

#[test]
fn the_checker_finds_a_cycle_through_a_reexport() {
    let dir = std::env::temp_dir().join(format!("fxt-module-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod decode;\nmod top;\n");
    write("top.rs", "use crate::decode::Reader;\n");
    write(
        "decode/mod.rs",
        "mod args; mod view; mod reader;\npub use view::StrRef;\npub use reader::Reader;\n",
    );
    write(
        "decode/args.rs",
        "use super::StrRef; // crate::decode::reader\n",
    );
    write(
        "decode/view.rs",
        "fn f() { crate::decode::args::parse(); }\n#[cfg(test)]\nmod tests { use super::super::reader::Reader; }\n",
    );
    write("decode/reader.rs", "fn g() { let s = \"super::args\"; }\n");
    let found = crate_cycles(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains(
            "/decode: args, view — args → view (decode/args.rs); view → args (decode/view.rs)"
        ),
        "{found:#?}"
    );
}
