//! A figure quoted on several pages is the figure of the page that measured it: each page a
//! user reads for guidance (the README, the usage and policy pages, the benchmarks' summary,
//! the multi-GPU page, `baton run --help`) gives the time-sliced hand-over's cost as the
//! matrix's page states it, so the pages cannot drift apart when it is measured again.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The hand-over's cost as the matrix's page states it first: "+A–B ms".
fn measured() -> String {
    let page = fs::read_to_string(repo().join("docs/benchmarks/matrix/README.md"))
        .expect("the matrix's page");
    let at = page
        .find("a hand-over of the GPU at each request's start (+")
        .expect("the matrix's page states the hand-over's cost");
    let rest = &page[at..];
    let start = rest.find('+').expect("a figure");
    let end = rest[start..].find(" ms").expect("in ms") + start + 3;
    rest[start..end].to_string()
}

/// The sentences of `text` (lines joined) that mention a hand-over and a figure in ms.
fn handover_figures(text: &str) -> Vec<String> {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .split(". ")
        .filter(|s| s.contains("hand-over") && s.contains(" ms"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_page_gives_the_hand_overs_cost_the_matrix_measured() {
    let figure = measured();
    let help = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "--help"])
        .output()
        .expect("baton run --help");
    let mut pages = vec![(
        "baton run --help".to_string(),
        String::from_utf8_lossy(&help.stdout).into_owned(),
    )];
    for page in [
        "README.md",
        "docs/USAGE.md",
        "docs/POLICIES.md",
        "docs/BENCHMARKS.md",
        "docs/MULTI_GPU.md",
    ] {
        let text = fs::read_to_string(repo().join(page)).expect("a page");
        pages.push((page.to_string(), text));
    }
    let mut quoted = 0;
    for (page, text) in &pages {
        for sentence in handover_figures(text) {
            let per_hand_over = sentence.contains("costs") || sentence.contains("a hand-over of");
            if per_hand_over {
                assert!(
                    sentence.contains(&figure),
                    "{page} gives the hand-over's cost otherwise than the matrix's {figure}: \
                     {sentence:?}"
                );
                quoted += 1;
            }
        }
    }
    assert!(
        quoted >= 4,
        "the figure was found quoted only {quoted} times: the test no longer reads the pages"
    );
}
