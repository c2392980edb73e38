//! Rules every crate's source keeps, checked on the text (ARCHITECTURE.md, "Invariants across
//! crates"):
//!
//! - no circle of imports among a crate's files (a parent module and its children included):
//!   each crate reads one way, and a newcomer can start at the bottom of it;
//! - library crates report errors as types, never as `Result<_, String>`;
//! - the interposer and the agent, which run inside applications, never print by themselves
//!   (`baton_agent::log` is their only voice);
//! - the daemon's core reads no wall clock and holds no runtime type.
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

/// A module path inside a crate: `[]` is the crate root, `["xqueue", "shared"]` is
/// `src/xqueue/shared.rs`.
type ModPath = Vec<String>;

/// The module a source file is, from its path under `src`.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path
        .last()
        .is_some_and(|l| ["mod", "lib", "main"].contains(&l.as_str()))
    {
        path.pop();
    }
    path
}

/// The names a crate root re-exports from its top-level modules (`pub use shared::Thing;`).
fn root_reexports(root_code: &str) -> BTreeMap<String, String> {
    let mut reexports = BTreeMap::new();
    for stmt in root_code.split(';') {
        let s = stmt.trim();
        let Some(at) = s.find("use ") else { continue };
        if !s[..at].contains("pub") {
            continue;
        }
        let path = s[at + 4..].trim();
        let module = ident(path);
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
    reexports
}

/// The paths the `use`s and qualified names of `code` (the file of module `me`) name, each
/// as its segments after resolving `crate`, `super` and `self`; a name qualified by a child
/// module's name (`shared::State`) counts too.
fn paths_named(code: &str, me: &[String], modules: &BTreeSet<ModPath>) -> Vec<ModPath> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let starts = is_ident(bytes[i] as char)
            && (i == 0 || !(is_ident(bytes[i - 1] as char) || bytes[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let word = ident(&code[i..]);
        let after = &code[i + word.len()..];
        i += word.len();
        if !after.starts_with("::") {
            continue;
        }
        let mut base: ModPath = match word {
            "crate" => Vec::new(),
            "self" => me.to_vec(),
            "super" => me[..me.len().saturating_sub(1)].to_vec(),
            w => {
                let mut child = me.to_vec();
                child.push(w.to_string());
                if !modules.contains(&child) {
                    continue;
                }
                child
            }
        };
        // Follow `::segment`s (and further `super`s) up to a brace group or the path's end.
        let mut rest = &after[2..];
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let end = block_end(rest, 0);
                for entry in group[..end.saturating_sub(2)].split(',') {
                    let head = ident(entry.trim());
                    let mut p = base.clone();
                    if !head.is_empty() && head != "self" {
                        p.push(head.to_string());
                    }
                    out.push(p);
                }
                break;
            }
            let seg = ident(rest);
            if seg.is_empty() {
                out.push(base.clone());
                break;
            }
            if seg == "super" {
                base.pop();
            } else {
                base.push(seg.to_string());
            }
            rest = &rest[seg.len()..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => {
                    out.push(base.clone());
                    break;
                }
            }
        }
    }
    out
}

/// The import graph between a crate's files: each file (as its module path) → the files it
/// names. The crate root only assembles the crate and is left out.
fn file_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<PathBuf> = rust_files(src)
        .into_iter()
        .filter(|f| !f.ends_with("tests.rs") && !f.components().any(|c| c.as_os_str() == "bin"))
        .collect();
    let modules: BTreeSet<ModPath> = files.iter().map(|f| module_of(src, f)).collect();
    let root = files
        .iter()
        .find(|f| module_of(src, f).is_empty())
        .map(|f| code_of(&std::fs::read_to_string(f).unwrap()))
        .unwrap_or_default();
    let reexports = root_reexports(&root);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let me = module_of(src, f);
        if me.is_empty() {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        let mut to = BTreeSet::new();
        for mut p in paths_named(&code, &me, &modules) {
            if p.len() == 1 && !modules.contains(&p) {
                if let Some(m) = reexports.get(&p[0]) {
                    p = vec![m.clone()];
                }
            }
            while !p.is_empty() && !modules.contains(&p) {
                p.pop();
            }
            if !p.is_empty() && p != me {
                to.insert(p.join("::"));
            }
        }
        edges.insert(me.join("::"), to);
    }
    let named: Vec<String> = edges.values().flatten().cloned().collect();
    for t in named {
        edges.entry(t).or_default();
    }
    edges
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

/// The one circle the code cannot avoid, and why.
const INHERENT: &[(&str, &[&str], &str)] = &[(
    "interposer",
    &["hooks", "hooks::procaddr", "hooks::table"],
    "`cuGetProcAddress`'s hook hands out every hook, itself included: the table of hooks names \
     it (through the hooks' module), and it reads the table",
)];

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let src = dir.path().join("src");
        if !src.is_dir() {
            continue;
        }
        let krate = dir.file_name().to_string_lossy().into_owned();
        for c in circles(&file_graph(&src)) {
            let inherent = INHERENT
                .iter()
                .any(|(k, files, _)| *k == krate && c.iter().eq(files.iter()));
            if !inherent {
                found.push(format!("{krate}: {}", c.join(" ↔ ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "files that import each other in a circle (move what both need into a file below \
         them): {found:#?}"
    );
}

#[test]
fn the_circle_finder_finds_circles() {
    let modules: BTreeSet<ModPath> = [vec!["a"], vec!["b"], vec!["b", "c"], vec!["d"]]
        .into_iter()
        .map(|p| p.into_iter().map(String::from).collect())
        .collect();
    let me: ModPath = vec!["b".into()];
    let code = code_of(
        "use crate::{a::X, d};\nuse super::a;\nuse self::c::Y;\nc::f();\nbaton_crate::d::Z;\n\
         // crate::d::W",
    );
    let named: BTreeSet<String> = paths_named(&code, &me, &modules)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let want: BTreeSet<String> = ["a", "d", "b::c::Y", "b::c::f"].map(String::from).into();
    assert_eq!(named, want);
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

/// The daemon's core is plain state: time comes from its injected clock and agents from
/// `AgentLink`, so its tests run in virtual time without a runtime. Its test module may use
/// tokio's channels to build events; the core itself may not.
#[test]
fn the_daemon_core_reads_no_wall_clock_and_no_runtime() {
    let mut offenders = Vec::new();
    for f in rust_files(&crates_dir().join("daemon/src/core")) {
        if f.ends_with("tests.rs") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&f).unwrap());
        for (i, line) in code.lines().enumerate() {
            if ["tokio", "Instant", "SystemTime"]
                .iter()
                .any(|w| line.contains(w))
            {
                offenders.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}
