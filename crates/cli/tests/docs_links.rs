//! Every reference in the Markdown documentation (README.md, ARCHITECTURE.md, docs/**/*.md)
//! resolves: each relative link `[..](path)` or `[..](path#anchor)` names a file or folder that
//! exists (and, for a Markdown page, a heading of it), and each repository path written in code
//! (`docs/...`, `scripts/...`, `crates/...`, in backticks or in a fenced block) exists. Numbers in
//! the docs are traced to raw results and scripts through these paths, so a moved file must take
//! its references with it.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Where repository paths written in code start.
const ROOTS: &[&str] = &["docs/", "scripts/", "crates/"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// README.md, ARCHITECTURE.md and every .md under docs/, sorted.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).expect("a docs folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    walk(&root.join("docs"), &mut files);
    files.sort();
    files
}

/// A Markdown line, and whether it is inside a fenced code block.
fn lines(text: &str) -> Vec<(usize, &str, bool)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        out.push((i + 1, line, fenced));
    }
    out
}

/// The line split at its backticks: the text outside code spans, and the code spans. A code
/// span can go on from the line before (`in_code`); returns whether one goes on to the next.
fn split_code(line: &str, mut in_code: bool) -> (String, Vec<&str>, bool) {
    let mut prose = String::new();
    let mut code = Vec::new();
    for (i, part) in line.split('`').enumerate() {
        if i > 0 {
            in_code = !in_code;
        }
        if in_code {
            code.push(part);
        } else {
            prose.push_str(part);
        }
    }
    (prose, code, in_code)
}

/// The targets of the inline links and images in prose: what follows `](` up to `)`.
fn link_targets(prose: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = prose;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find([')', ' ']).unwrap_or(rest.len());
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// Repository paths in code: words starting with one of ROOTS, without trailing punctuation;
/// globs and placeholders (`docs/policies/*.json`, `$OUT/...`) are not paths.
fn repo_paths(code: &str) -> Vec<&str> {
    code.split(|c: char| c.is_whitespace() || "=(),;\"'[]".contains(c))
        .map(|w| w.trim_end_matches(['.', ':', ',']))
        .filter(|w| ROOTS.iter().any(|r| w.starts_with(r)))
        .filter(|w| !w.contains(['*', '<', '>', '{', '}', '$', '…']))
        .collect()
}

/// The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
/// hyphens.
fn heading_anchors(text: &str) -> BTreeSet<String> {
    lines(text)
        .into_iter()
        .filter(|(_, _, fenced)| !fenced)
        .filter_map(|(_, line, _)| {
            let title = line.trim_start_matches('#');
            (title.len() < line.len() && title.starts_with(' ')).then_some(title.trim())
        })
        .map(|title| {
            title
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// `base/target` with `.` and `..` resolved, without touching the file system.
fn join(base: &Path, target: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for part in base.join(target).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_external(target: &str) -> bool {
    let scheme = target.split(':').next().unwrap_or("");
    target.contains(':')
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
}

/// Every broken reference of one page, as `file:line: what`, and how many were checked.
fn broken_references(root: &Path, page: &Path) -> (Vec<String>, usize) {
    let text = fs::read_to_string(page).expect("a Markdown page");
    let name = page
        .strip_prefix(root)
        .unwrap_or(page)
        .display()
        .to_string();
    let dir = page.parent().expect("a folder");
    let mut broken = Vec::new();
    let mut checked = 0;
    let mut in_code = false;
    for (number, line, fenced) in lines(&text) {
        // A code span ends with its paragraph at the latest.
        in_code &= !line.trim().is_empty() && !fenced;
        let (prose, code) = if fenced {
            (String::new(), vec![line])
        } else {
            let (prose, code, open) = split_code(line, in_code);
            in_code = open;
            (prose, code)
        };
        for target in link_targets(&prose) {
            if is_external(target) || target.is_empty() {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                page.to_path_buf()
            } else {
                join(dir, file)
            };
            if !path.exists() {
                broken.push(format!("{name}:{number}: link to {target}: no such file"));
            } else if !anchor.is_empty() && path.extension().is_some_and(|e| e == "md") {
                let anchors = heading_anchors(&fs::read_to_string(&path).expect("a page"));
                if !anchors.contains(anchor) {
                    broken.push(format!(
                        "{name}:{number}: link to {target}: no such heading"
                    ));
                }
            }
        }
        for code in code {
            for path in repo_paths(code) {
                checked += 1;
                if !root.join(path).exists() {
                    broken.push(format!("{name}:{number}: path {path}: no such file"));
                }
            }
        }
    }
    (broken, checked)
}

#[test]
fn every_link_and_repository_path_in_the_docs_resolves() {
    let root = repo_root();
    let pages = markdown_files(&root);
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let (b, c) = broken_references(&root, page);
        broken.extend(b);
        checked += c;
    }
    assert!(
        broken.is_empty(),
        "{} broken references in the docs:\n{}",
        broken.len(),
        broken.join("\n")
    );
    // A parser that found nothing would pass vacuously.
    assert!(
        pages.len() > 10 && checked > 200,
        "only {checked} references in {} pages",
        pages.len()
    );
}

#[test]
fn the_checker_finds_links_paths_and_anchors() {
    let (prose, code, open) = split_code(
        "see [`levels`](../levels/README.md#reading-it) and ![a](b.png), `scripts/x.sh arg`",
        false,
    );
    assert!(!open);
    assert_eq!(
        link_targets(&prose),
        ["../levels/README.md#reading-it", "b.png"]
    );
    assert_eq!(code, ["levels", "scripts/x.sh arg"]);
    assert_eq!(
        repo_paths("OUT=docs/a.json python3 scripts/b.py docs/policies/*.json (crates/c)."),
        ["docs/a.json", "scripts/b.py", "crates/c"]
    );
    assert!(
        heading_anchors("# A\n## `baton doctor` confirms it\n```\n# not a heading\n```")
            .contains("baton-doctor-confirms-it")
    );
    assert!(!heading_anchors("```\n# not a heading\n```").contains("not-a-heading"));
    assert_eq!(
        join(Path::new("docs/benchmarks/levels"), "../../BENCHMARKS.md"),
        Path::new("docs/BENCHMARKS.md")
    );
    let (prose, code, open) = split_code("docs/a.md` and `crates/b", true);
    assert_eq!(
        (prose.as_str(), code, open),
        (" and ", vec!["docs/a.md", "crates/b"], true)
    );
    assert!(is_external("https://rustup.rs") && !is_external("a.md#b:c"));
    assert!(is_external("chrome://tracing"));
    assert!(!is_external("../daemon/README.md"));
}
