//! Rules every crate's source keeps, checked on the text (ARCHITECTURE.md, "Invariants across
//! crates"):
//!
//! - no circle of imports among a crate's top-level modules: each crate reads one way, and a
//!   newcomer can start at the bottom of it;
//! - library crates report errors as types, never as `Result<_, String>`;
//! - the interposer and the agent, which run inside applications, never print by themselves
//!   (`baton_agent::log` is their only voice).
//!
//! Test code (`tests.rs`, `#[cfg(test)]` modules, `tests/`) is exempt; binaries may use
//! strings at their edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The end of the block whose `{` is at `open` (the index after its `}`).
fn block_end(text: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i + 1;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// `text` without line comments and without `#[cfg(test)] mod … { … }` blocks.
fn code_of(text: &str) -> String {
    let mut code: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    while let Some(at) = code.find("#[cfg(test)]") {
        let rest = &code[at + "#[cfg(test)]".len()..];
        let trimmed = rest.trim_start();
        let skip = rest.len() - trimmed.len();
        let start_of_item = at + "#[cfg(test)]".len() + skip;
        let end = if trimmed.starts_with("mod ") {
            match (trimmed.find('{'), trimmed.find(';')) {
                (Some(b), Some(s)) if s < b => start_of_item + s + 1,
                (Some(b), _) => block_end(&code, start_of_item + b),
                (None, Some(s)) => start_of_item + s + 1,
                (None, None) => code.len(),
            }
        } else {
            // Some other test-only item: drop the attribute alone.
            start_of_item
        };
        code.replace_range(at..end, "");
    }
    code
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The leading identifier of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules `crate::…` paths in `code` name (through `reexports` when the path
/// names an item the crate root re-exports).
fn modules_named(
    code: &str,
    mods: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |name: &str| {
        if mods.contains(name) {
            out.insert(name.to_string());
        } else if let Some(m) = reexports.get(name) {
            out.insert(m.clone());
        }
    };
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code[..at].ends_with(|c: char| is_ident(c) || c == ':') {
            continue; // `baton_crate::…`, `$crate::…`
        }
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = block_end(rest, 0);
            for entry in group[..end.saturating_sub(2)].split(',') {
                add(ident(entry.trim()));
            }
        } else {
            add(ident(rest));
        }
    }
    out
}

/// A crate's top-level modules, the items its root re-exports from each, and each module's
/// files.
struct CrateModules {
    mods: BTreeSet<String>,
    reexports: BTreeMap<String, String>,
    files: BTreeMap<String, Vec<PathBuf>>,
}

fn crate_modules(src: &Path) -> Option<CrateModules> {
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.exists())?;
    let code = code_of(&std::fs::read_to_string(&root).ok()?);
    let mut mods = BTreeSet::new();
    let mut reexports = BTreeMap::new();
    for stmt in code.split(';') {
        let s = stmt.trim();
        let s = s.rsplit('\n').next().unwrap_or(s).trim();
        let s = s
            .strip_prefix("pub(crate) ")
            .or_else(|| s.strip_prefix("pub "))
            .unwrap_or(s);
        if let Some(m) = s.strip_prefix("mod ") {
            if ident(m) == m && m != "tests" {
                mods.insert(m.to_string());
            }
        }
    }
    for stmt in code.split(';') {
        let s = stmt.trim();
        let Some(at) = s.find("use ") else { continue };
        if !s[..at].trim_end().ends_with("pub") && !s[..at].contains("pub(") {
            continue;
        }
        let path = s[at + 4..].trim();
        let module = ident(path);
        if !mods.contains(module) {
            continue;
        }
        let items = path[module.len()..].trim_start_matches("::");
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for entry in items.split(',') {
            let entry = entry.trim();
            let name = match entry.split_once(" as ") {
                Some((_, alias)) => alias.trim(),
                None => entry.rsplit("::").next().unwrap_or(entry),
            };
            if !name.is_empty() && name != "*" {
                reexports
                    .entry(name.to_string())
                    .or_insert_with(|| module.to_string());
            }
        }
    }
    let mut files = BTreeMap::new();
    for m in &mods {
        let mut fs = Vec::new();
        let single = src.join(format!("{m}.rs"));
        if single.exists() {
            fs.push(single);
        }
        fs.extend(
            rust_files(&src.join(m))
                .into_iter()
                .filter(|f| !f.ends_with("tests.rs")),
        );
        files.insert(m.clone(), fs);
    }
    Some(CrateModules {
        mods,
        reexports,
        files,
    })
}

/// The strongly connected components of more than one node (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in &self.edges[v] {
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
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_crate_has_a_circle_of_imports_among_its_modules() {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let Some(cm) = crate_modules(&dir.path().join("src")) else {
            continue;
        };
        let mut edges = BTreeMap::new();
        for (m, fs) in &cm.files {
            let mut to = BTreeSet::new();
            for f in fs {
                let code = code_of(&std::fs::read_to_string(f).unwrap());
                to.extend(modules_named(&code, &cm.mods, &cm.reexports));
            }
            to.remove(m);
            edges.insert(m.clone(), to);
        }
        for c in circles(&edges) {
            found.push(format!(
                "{}: {}",
                dir.file_name().to_string_lossy(),
                c.join(" ↔ ")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other in a circle (move what both need below them): \
         {found:#?}"
    );
}

#[test]
fn the_circle_finder_finds_circles() {
    let mods: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let reexports = BTreeMap::from([("Thing".to_string(), "c".to_string())]);
    let named = modules_named(
        &code_of("use crate::{a::X, Thing};\nuse crate::b;\nbaton_crate::d::Y;\n// crate::d"),
        &mods,
        &reexports,
    );
    assert_eq!(named, ["a", "b", "c"].map(String::from).into());
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(circles(&edges), vec![vec!["a", "b", "c"]]);
    let code = code_of("fn f() {}\n#[cfg(test)]\nmod tests {\n use crate::a;\n}\n");
    assert!(!code.contains("crate::a"), "{code}");
}

/// Whether `sig` (the text after `Result<`) has `String` as its error type.
fn errors_as_string(after: &str) -> bool {
    let mut depth = 1usize;
    let mut last_comma = None;
    for (i, c) in after.char_indices() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' | ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return last_comma.is_some_and(|at: usize| after[at + 1..i].trim() == "String");
                }
            }
            ',' if depth == 1 => last_comma = Some(i),
            _ => {}
        }
    }
    false
}

#[test]
fn library_crates_return_typed_errors() {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        // The CLI is the binaries' edge.
        if name == "cli" {
            continue;
        }
        for f in rust_files(&dir.path().join("src")) {
            if f.ends_with("tests.rs") || f.components().any(|c| c.as_os_str() == "bin") {
                continue;
            }
            let code = code_of(&std::fs::read_to_string(&f).unwrap());
            for (at, _) in code.match_indices("Result<") {
                if errors_as_string(&code[at + "Result<".len()..]) {
                    let line = code[..at].lines().count();
                    found.push(format!("{}:{line}", f.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "Result<_, String> in a library (use a thiserror type): {found:#?}"
    );
    assert!(errors_as_string("(), String>"));
    assert!(errors_as_string("Vec<(u8, u8)>, String> {"));
    assert!(!errors_as_string("String, MyError>"));
    assert!(!errors_as_string("Vec<String>>"));
}

#[test]
fn code_inside_applications_does_not_print() {
    let mut found = Vec::new();
    for krate in ["interposer", "agent"] {
        for f in rust_files(&crates_dir().join(krate).join("src")) {
            if f.ends_with("tests.rs") {
                continue;
            }
            let code = code_of(&std::fs::read_to_string(&f).unwrap());
            for m in ["eprintln!", "println!", "eprint!", "print!", "dbg!"] {
                for (at, _) in code.match_indices(m) {
                    if at > 0 && code[..at].ends_with(is_ident) {
                        continue; // `eprintln!` matched as `println!`
                    }
                    let line = code[..at].lines().count();
                    found.push(format!("{}:{line}: {m}", f.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "printing inside an application (use tracing, or baton_agent::log::notice): {found:#?}"
    );
}
