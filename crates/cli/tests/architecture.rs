//! ARCHITECTURE.md's code map must name every workspace member, and nothing else.

use std::collections::BTreeSet;

#[test]
fn code_map_matches_workspace_members() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let manifest = std::fs::read_to_string(format!("{root}/Cargo.toml")).unwrap();
    let start = manifest.find("members = [").expect("workspace members");
    let end = manifest[start..].find(']').unwrap() + start;
    let members: BTreeSet<String> = manifest[start..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    let arch = std::fs::read_to_string(format!("{root}/ARCHITECTURE.md")).unwrap();
    let mapped: BTreeSet<String> = arch
        .lines()
        .filter_map(|l| l.strip_prefix("### `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_string)
        .collect();
    assert_eq!(
        members, mapped,
        "ARCHITECTURE.md's code map (### `crates/...` headings) differs from the workspace members"
    );
}
