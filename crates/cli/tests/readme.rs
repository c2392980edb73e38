//! The README stays a five-minute read whose commands run: at most 250 lines; the two commands
//! (the demo, every test), the install and a `baton run` example on its first screen; and
//! every `baton` command in its shell blocks is a subcommand of this binary with the flags
//! it uses (`baton SUBCOMMAND --help` lists them).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;

const LIMIT: usize = 250;
/// What a reader sees without scrolling far.
const FIRST_SCREEN: usize = 50;

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    fs::read_to_string(path).expect("README.md")
}

/// The `baton` invocations of the README's shell blocks: each as (subcommand, flags).
fn baton_commands(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") {
            in_sh = !in_sh && (t == "```sh" || t == "```bash");
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = t.split(" #").next().unwrap_or("").trim();
        // The command word, after any `VAR=value` words.
        let words: Vec<&str> = code
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'))
            .collect();
        // `baton …`, `target/release/baton …`, `cargo run … -p baton-cli -- …`.
        let baton = words
            .first()
            .is_some_and(|w| *w == "baton" || w.ends_with("/baton"));
        let rest: Vec<&str> = match baton {
            true => words[1..].to_vec(),
            false if code.starts_with("cargo run") && code.contains("-p baton-cli") => {
                match words.iter().position(|w| *w == "--") {
                    Some(i) => words[i + 1..].to_vec(),
                    None => continue,
                }
            }
            false => continue,
        };
        let Some(sub) = rest.first() else { continue };
        // The program `baton run` starts is not baton's: flags stop at its `--`.
        let flags = rest[1..]
            .iter()
            .take_while(|w| **w != "--")
            .filter(|w| w.starts_with("--"))
            .map(|w| w.split('=').next().unwrap_or(w).to_string())
            .collect();
        out.push((sub.to_string(), flags));
    }
    out
}

#[test]
fn the_readme_is_short_and_leads_with_the_commands() {
    let text = readme();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() <= LIMIT,
        "README.md has {} lines: keep it under {LIMIT} (details go to docs/USAGE.md, numbers to docs/BENCHMARKS.md)",
        lines.len()
    );
    let first = lines[..FIRST_SCREEN.min(lines.len())].join("\n");
    for needle in [
        "cargo run --release -p baton-cli -- demo",
        "scripts/test.sh",
        "pip wheel ./python",
        "pip install dist/baton_gpu-",
        "baton run --priority",
    ] {
        assert!(
            first.contains(needle),
            "the README's first {FIRST_SCREEN} lines lack `{needle}`"
        );
    }
}

#[test]
fn every_baton_command_in_the_readme_exists_with_its_flags() {
    let text = readme();
    let commands = baton_commands(&text);
    assert!(
        commands.iter().any(|(s, _)| s == "run") && commands.iter().any(|(s, _)| s == "demo"),
        "{commands:?}"
    );
    let exe = env!("CARGO_BIN_EXE_baton");
    let mut checked = BTreeSet::new();
    for (sub, flags) in commands {
        let out = Command::new(exe)
            .args([sub.as_str(), "--help"])
            .output()
            .expect("baton runs");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "`baton {sub}` in the README is not a subcommand: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for flag in flags {
            assert!(
                help.contains(&flag),
                "`baton {sub} {flag}` in the README: `baton {sub} --help` lists no {flag}"
            );
            checked.insert(format!("{sub} {flag}"));
        }
    }
    assert!(checked.contains("run --priority"), "{checked:?}");
}

#[test]
fn the_parser_finds_the_commands_of_shell_blocks_only() {
    let text = "```sh\nbaton run --priority 10 -- python serve.py --port 1  # x\n\
                target/release/baton list --json\ncargo run --release -p baton-cli -- demo --check\n\
                ls -l\ninstall target/release/baton /usr/local/bin/\nBATON_LOG=info baton doctor --json\n\
                ```\n```\nbaton top --nope\n```\nbaton hint --all\n";
    assert_eq!(
        baton_commands(text),
        vec![
            ("run".into(), vec!["--priority".into()]),
            ("list".into(), vec!["--json".into()]),
            ("demo".into(), vec!["--check".into()]),
            ("doctor".into(), vec!["--json".into()]),
        ]
    );
}
