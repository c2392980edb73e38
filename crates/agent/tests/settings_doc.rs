//! docs/USAGE.md's table of `baton run`'s options says what every setting means and states its
//! default; `AgentConfig::SETTINGS` is where the agent takes them from. They agree: every
//! `BATON_*` variable of one is in the other, each XSched alias the table gives is that
//! setting's, and each default the table states is the agent's, written as
//! `SettingDefault::documented` gives it after `(default` (`(default 10000)`,
//! ``(default `on`)``, `(default: the driver's, …)`).

use std::collections::BTreeSet;
use std::path::Path;

use baton_agent::AgentConfig;

/// Variables the table lists that the agent does not read, and who reads them.
const NOT_AGENT_SETTINGS: &[(&str, &str)] = &[
    ("BATON_INTERPOSER", "baton run, to find the interposer"),
    ("BATON_REPORT", "the interposer, at exit"),
];

/// The header of the settings table.
const HEADER: &str = "| option | environment variable (XSched alias) | meaning |";

/// One row of the table: the variables it names (its second column), its meaning (the third)
/// and its line in USAGE.md.
struct Row {
    line: usize,
    variables: String,
    meaning: String,
}

fn usage() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/USAGE.md");
    std::fs::read_to_string(path).expect("docs/USAGE.md")
}

/// The cells of a table line, split at `|` but not at `\|`.
fn cells(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.trim().trim_start_matches('|').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    if out.last().is_some_and(|c| c.trim().is_empty()) {
        out.pop();
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The rows of the settings table, below its header and separator.
fn rows(text: &str) -> Vec<Row> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == HEADER)
        .unwrap_or_else(|| panic!("USAGE.md has no table headed {HEADER:?}"));
    lines[start + 2..]
        .iter()
        .enumerate()
        .take_while(|(_, l)| l.starts_with('|'))
        .map(|(i, l)| {
            let c = cells(l);
            assert_eq!(c.len(), 3, "USAGE.md:{}: three cells: {l}", start + 3 + i);
            Row {
                line: start + 3 + i,
                variables: c[1].clone(),
                meaning: c[2].clone(),
            }
        })
        .collect()
}

/// The words of `text` that start with `prefix` (`BATON_`, `XSCHED_`), in order.
fn names(text: &str, prefix: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(prefix) && w.len() > prefix.len())
        .map(str::to_string)
        .collect()
}

/// What follows each `(default` of a meaning.
fn stated_defaults(meaning: &str) -> Vec<&str> {
    meaning
        .match_indices("(default")
        .map(|(at, d)| &meaning[at + d.len()..])
        .collect()
}

#[test]
fn the_usage_table_lists_every_setting_with_its_default() {
    let text = usage();
    let rows = rows(&text);
    let setting = |name: &str| AgentConfig::SETTINGS.iter().find(|s| s.name == name);
    let mut seen = BTreeSet::new();
    let mut stated = BTreeSet::new();
    for row in &rows {
        let at = format!("USAGE.md:{}", row.line);
        let mut settings = Vec::new();
        for name in names(&row.variables, "BATON_") {
            match setting(&name) {
                Some(s) if !settings.contains(&s) => settings.push(s),
                Some(_) => {}
                None => assert!(
                    NOT_AGENT_SETTINGS.iter().any(|(n, _)| *n == name),
                    "{at}: {name} is not in AgentConfig::SETTINGS: add it there, or to \
                     NOT_AGENT_SETTINGS if the agent does not read it"
                ),
            }
            seen.insert(name);
        }
        for alias in names(&row.variables, "XSCHED_") {
            assert!(
                settings.iter().any(|s| s.alias == Some(alias.as_str())),
                "{at}: {alias} is not the XSched alias of {:?}",
                settings.iter().map(|s| s.name).collect::<Vec<_>>()
            );
        }
        let defaults = stated_defaults(&row.meaning);
        if defaults.is_empty() {
            continue;
        }
        assert_eq!(
            defaults.len(),
            settings.len(),
            "{at}: one `(default …` per setting of the row, in their order"
        );
        for (s, d) in settings.iter().zip(defaults) {
            let want = s.default.documented();
            let wrong = || {
                let d: String = d.chars().take(want.chars().count() + 12).collect();
                format!(
                    "{at}: {} defaults to \"(default{want}…\", not \"(default{d}…\"",
                    s.name
                )
            };
            let rest = d
                .strip_prefix(want.as_str())
                .unwrap_or_else(|| panic!("{}", wrong()));
            assert!(
                !rest.starts_with(|c: char| c.is_alphanumeric()),
                "{}",
                wrong()
            );
            stated.insert(s.name);
        }
    }
    for s in AgentConfig::SETTINGS {
        assert!(seen.contains(s.name), "USAGE.md's table lacks {}", s.name);
        assert!(
            stated.contains(s.name),
            "USAGE.md's table states no default for {}: write \"(default{}\"",
            s.name,
            s.default.documented()
        );
    }
    for (name, who) in NOT_AGENT_SETTINGS {
        assert!(
            seen.contains(*name),
            "{name} ({who}) is no longer in USAGE.md's table"
        );
        assert!(setting(name).is_none(), "{name} is a setting after all");
    }
}

#[test]
fn the_checker_reads_cells_and_defaults() {
    assert_eq!(
        cells("| | `BATON_L3_OFF=on\\|off` | a (default `off`: b) |"),
        ["", "`BATON_L3_OFF=on|off`", "a (default `off`: b)"]
    );
    assert_eq!(
        names(
            "`BATON_THRESHOLD`, `BATON_BATCH` (`XSCHED_X`, `_BATCH_SIZE`)",
            "BATON_"
        ),
        ["BATON_THRESHOLD", "BATON_BATCH"]
    );
    assert_eq!(
        stated_defaults("per stream (default 16) and between (default 8)"),
        [" 16) and between (default 8)", " 8)"]
    );
    assert!(stated_defaults("the default (`auto`)").is_empty());
}
